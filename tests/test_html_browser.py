"""The HTML report in a real headless Chromium driven through the DevTools protocol (issue 41
items 3 and 4): a plain run, a failing run with regressions and a miss, a target matrix run and a
compare page load without a console error; the search and the status filter answer real key
presses and clicks; with JavaScript off every scenario is still there. A screenshot of each page
is saved under the test's tmp dir (`<tmp>/shots/*.png`) for a person to look at.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cdp import Browser
from tests.conftest import commit_all, run_cachelint
from tests.example import make_example_repo
from tests.test_html_report import HOSTILE, chromium

# What a person sees of a scenario or a section: its summary line or heading (a hidden one is
# collapsed by `content-visibility:hidden`, which leaves its own box but none of its content's).
SEEN = "e => e.firstElementChild.checkVisibility()"
VISIBLE = f"[...document.querySelectorAll('.scenario')].filter({SEEN}).length"
SHOWN = (
    f"[...document.querySelectorAll('.scenario')].filter({SEEN})"
    ".map(e => e.id.slice(2))"  # id="s-<scenario>"
)


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The four pages, rendered by the real CLI from the bundled example."""
    repo = make_example_repo(tmp_path_factory.mktemp("html") / "example")
    out: dict[str, Path] = {}

    def cli(*args: str, ok: tuple[int, ...] = (0,)) -> str:
        done = run_cachelint(repo, *args, env={"CACHELINT_EXECUTION": ""})
        assert done.returncode in ok, done.stdout + done.stderr
        return done.stdout

    cli("run", "--agent", "support", "--execution", "plain", "--html", "plain.html")
    out["plain"] = repo / "plain.html"
    cli("run", "--execution", "matrix", "--html", "matrix.html", "--save-baseline", "main")
    out["matrix"] = repo / "matrix.html"
    # a changed answer: the recorded refund answer no longer holds the assertion's text; and a
    # scenario with nothing recorded (a miss) whose every string is hostile markup
    refund = repo / "eval-datasets/support/acme/refund.json"
    refund.write_text(refund.read_text("utf-8").replace('"30 days"', '"60 days"'), "utf-8")
    hostile = {"input": HOSTILE, "assert": [{"type": "contains", "value": HOSTILE}]}
    (repo / "eval-datasets/support/acme/hostile.json").write_text(json.dumps(hostile), "utf-8")
    commit_all(repo, "a changed answer and a hostile scenario")
    cli("run", "--execution", "failing", "--baseline", "main", "--html", "failing.html", ok=(1,))
    out["failing"] = repo / "failing.html"
    shown = cli("report", "--compare", "matrix", "failing", ok=(1,))
    out["compare"] = Path(shown.splitlines()[-1])
    return out


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    with Browser(chromium(), tmp_path_factory.mktemp("profile")) as opened:
        yield opened


def _load(browser: Browser, page: Path, shots: Path, name: str) -> None:
    browser.errors.clear()
    browser.open(page.as_uri())
    browser.settled()
    shots.mkdir(exist_ok=True)
    assert browser.screenshot(shots / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert browser.errors == []


def test_plain_run_cards_and_search(
    pages: dict[str, Path], browser: Browser, tmp_path: Path
) -> None:
    _load(browser, pages["plain"], tmp_path / "shots", "plain")
    cards = browser.js(
        "Object.fromEntries([...document.querySelectorAll('.card')].map(c => "
        "[c.dataset.testid, c.querySelector('.value').textContent]))"
    )
    total = browser.js("document.querySelectorAll('.scenario').length")
    assert cards["card-scenarios"] == str(total) and total >= 3
    assert cards["card-pass-rate"] == "100%" and cards["card-failed"] == "0"
    assert cards["card-cache-hits"].split("/")[0] == cards["card-cache-hits"].split("/")[1]
    assert browser.js(VISIBLE) == total
    # an answer's words find its scenario (only the recorded answer says "leaking tent")
    browser.click("#search")
    browser.type("Leaking Tent")
    browser.settled()
    assert browser.js(SHOWN) == ["support/acme/refund"]
    assert browser.js("document.getElementById('shown-count').textContent") == (
        f"1 of {total} scenarios shown"
    )
    for _ in "Leaking Tent":
        browser.key("Backspace", 8)
    browser.type("globex/")  # a scenario id
    browser.settled()
    assert browser.js(SHOWN) and all("/globex/" in s for s in browser.js(SHOWN))
    for _ in "globex/":
        browser.key("Backspace", 8)
    browser.type("no such words anywhere")
    browser.settled()
    assert browser.js(VISIBLE) == 0
    assert browser.js(f"[...document.querySelectorAll('section.agent')].filter({SEEN}).length") == 0
    # a tenant hidden whole keeps its scenarios' old state until it is shown again, then is put
    # right: 'globex/' hides acme whole, a pasted answer's words (one input event) show one of it
    for _ in "no such words anywhere":
        browser.key("Backspace", 8)
    browser.settled()
    assert browser.js(VISIBLE) == total
    browser.type("globex/")
    browser.settled()
    browser.js("document.getElementById('search').select()")
    browser.send("Input.insertText", text="leaking tent")
    browser.settled()
    assert browser.js(SHOWN) == ["support/acme/refund"]
    assert browser.errors == []


def test_failing_run_regressions_filter(
    pages: dict[str, Path], browser: Browser, tmp_path: Path
) -> None:
    _load(browser, pages["failing"], tmp_path / "shots", "failing")
    rows = browser.js(
        "[...document.querySelectorAll('[data-testid=regression]')].map(r => "
        "[...r.cells].map(c => c.textContent))"
    )
    assert ["support/acme/refund", "PASS", "FAIL", "verdict"] in rows
    assert browser.js("document.body.innerText").count("REGRESSED") == 0  # the table, not lines
    total = browser.js(VISIBLE)
    browser.click("#status-regressed")
    browser.settled()
    assert browser.js(SHOWN) == ["support/acme/refund"]
    browser.click("#status-missed")
    browser.settled()
    assert browser.js(SHOWN) == ["support/acme/hostile"]
    browser.click("#status-failed")
    browser.settled()
    assert sorted(browser.js(SHOWN)) == ["support/acme/hostile", "support/acme/refund"]
    assert browser.js("document.body.className") == "failed-only"
    browser.click("#status-all")
    browser.settled()
    assert browser.js(VISIBLE) == total
    # the hostile markup stayed text: no element came from it, the page's one script ran
    assert browser.js("document.querySelectorAll('img').length") == 0
    assert browser.js("document.scripts.length") == 1
    cards = browser.js("document.querySelector('[data-testid=card-errors] .value').textContent")
    assert cards == "1 / 1"
    assert browser.errors == []


def test_matrix_run_and_compare_page(
    pages: dict[str, Path], browser: Browser, tmp_path: Path
) -> None:
    _load(browser, pages["matrix"], tmp_path / "shots", "matrix")
    assert browser.js("document.querySelectorAll('[data-testid=matrix] tr.row').length") >= 2
    assert browser.js("document.querySelectorAll('[data-testid=trend-chart]').length") == 0
    assert browser.js("document.querySelectorAll('[data-testid=call]').length") >= 3
    browser.click("#search")
    browser.type("triage")
    browser.settled()
    matrix_rows = (
        "[...document.querySelectorAll('table.matrix tr.row')].filter(e => e.offsetParent)"
    )
    assert all(
        i.startswith("triage/")
        for i in browser.js(f"{matrix_rows}.map(r => r.cells[0].textContent)")
    )
    assert all(s.startswith("triage/") for s in browser.js(SHOWN))

    _load(browser, pages["compare"], tmp_path / "shots", "compare")
    assert browser.js("document.querySelectorAll('[data-testid=compare]').length") == 1
    browser.click("#status-regressed")
    browser.settled()
    assert browser.js(SHOWN) == ["support/acme/refund"]
    assert browser.errors == []


def test_javascript_off_shows_every_scenario(
    pages: dict[str, Path], browser: Browser, tmp_path: Path
) -> None:
    browser.send("Emulation.setScriptExecutionDisabled", value=True)
    try:
        browser.open(pages["failing"].as_uri())
        browser.screenshot(tmp_path / "no-js.png")
        # Runtime.evaluate still runs while the page's scripts may not
        total = browser.js("document.querySelectorAll('.scenario').length")
        assert browser.js(VISIBLE) == total
        assert browser.js("document.getElementById('tools').hidden") is True
        # a passed scenario's turns and checks: elements (its <noscript> read as markup), shown
        turns = browser.js(
            "[...document.querySelectorAll('div.scenario.passed [data-role]')]"
            ".map(e => e.checkVisibility())"
        )
        passed = browser.js("document.querySelectorAll('div.scenario.passed').length")
        assert all(turns) and len(turns) >= 2 * passed > 0
        assert browser.js(
            "[...document.querySelectorAll('div.scenario.passed td.pass')]"
            ".every(e => e.checkVisibility())"
        )
        assert (
            browser.js("getComputedStyle(document.querySelector('table.regressions')).display")
            == "table"
        )
    finally:
        browser.send("Emulation.setScriptExecutionDisabled", value=False)


def test_a_shared_system_text_is_written_once_and_shown_in_each_scenario(
    pages: dict[str, Path], browser: Browser, tmp_path: Path
) -> None:
    """The system prompt several scenarios of a tenant send is written once under the tenant's
    heading; each scenario's turn links to it, and opening the scenario shows the text there."""
    page = pages["plain"].read_text(encoding="utf-8")
    _load(browser, pages["plain"], tmp_path / "shots", "shared")
    shared = browser.js(
        "[...document.querySelectorAll('.shared pre')].map(p => [p.id, p.textContent])"
    )
    assert shared, "the example's tenants share no system prompt"
    ident, text = shared[0]
    # once in the file as a turn's whole text (a judge's prompt quotes it too)
    assert page.count(f">{html.escape(text, quote=False)}<") == 1
    # a closed (passed) scenario's turns are text in <noscript> until it is opened
    linked = browser.js(
        "[...document.querySelectorAll('.scenario.passed noscript')]"
        f".filter(n => n.textContent.includes('href=#{ident}>'))"
        ".map(n => n.closest('.scenario').id)"
    )
    assert linked, ident
    inside = f"document.getElementById('{linked[0]}').querySelectorAll"
    assert browser.js(f"{inside}('[data-role]').length") == 0
    browser.click(f"[id='{linked[0]}'] > button")
    browser.settled()
    assert browser.js(f"{inside}('noscript').length") == 0
    assert browser.js(f"{inside}('p [data-role]').length") == 0  # not in the tokens line
    assert browser.js(f"{inside}(':scope > [data-role=user] > pre').length") == 1
    assert browser.js(f"{inside}(':scope > table td').length") >= 3
    turn = browser.js(
        f"document.getElementById('{linked[0]}').querySelector('[data-role=system] pre')"
        ".textContent"
    )
    assert turn == text
    assert browser.errors == []
