"""The HTML report in a real headless Chromium, loaded from file:// (issue 16 item 1).

Chromium comes from Debian's `chromium` package (.ci/run installs it when missing). Without it the
test skips locally and fails under CI=true, so CI cannot pass by skipping.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from cachelint.runner.options import RunOptions
from cachelint.runner.pipeline import run
from tests.conftest import commit_all, run_cachelint
from tests.example import EXAMPLE_SCENARIOS, make_example_repo

HOSTILE = "<img src=x onerror=alert(1)> & </pre><script>alert(2)</script>"


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    if os.environ.get("CI"):
        pytest.fail("CI needs Debian's chromium for the HTML report test; .ci/run installs it")
    pytest.skip("no chromium on this machine (apt-get install chromium)")


class Dom(HTMLParser):
    """Elements with their attributes and the text inside each `data-testid` element."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.roles: dict[str, list[str]] = {}
        self._divs: list[str | None] = []  # the data-role of each open div
        self.body_class: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        self.elements.append((tag, attributes))
        if tag == "body":
            self.body_class = attributes.get("class")
        if tag == "div":
            self._divs.append(attributes.get("data-role"))

    def handle_endtag(self, tag: str) -> None:
        if tag == "div" and self._divs:
            self._divs.pop()

    def handle_data(self, data: str) -> None:
        role = next((r for r in reversed(self._divs) if r), None)
        if role is not None:
            self.roles.setdefault(role, []).append(data)

    def count(self, testid: str) -> int:
        return sum(1 for _, a in self.elements if a.get("data-testid") == testid)


def browse(browser: str, url: str, profile: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            f"--user-data-dir={profile}",
            *extra,
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def assert_trend_and_cost(dom: Dom, page: str, scenarios: int) -> None:
    """The trend over the two executions, with labelled axes and its values; each call shown;
    the cost."""
    assert dom.count("trend") == 1 and dom.count("trend-values") == 1
    assert dom.count("y-axis") == 1 and dom.count("x-axis") == 1
    trends = [a for tag, a in dom.elements if tag == "svg" and a.get("class") == "trend"]
    assert trends and all(a.get("data-points") == "2" for a in trends)
    assert page.count(f">{scenarios - 1}/{scenarios}</text>") == 2
    # The orders and returns agents' larger model has no price, so the cost is a lower bound that
    # names it rather than too low a figure.
    assert "at least $0.0031 (2 calls unpriced: model scripted-large)" in page
    assert "n/a" not in page
    # every call's messages: the orders agent's two calls, and the judge's
    assert dom.count("call") >= scenarios + 2


def test_report_in_headless_chromium(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    browser = chromium()
    monkeypatch.delenv("CACHELINT_EXECUTION", raising=False)
    repo = make_example_repo(
        tmp_path / "example",
        extra_config=(
            "[prices]\nscripted-v1 = { input = 2.5, output = 10 }\n"
            "scripted-mini = { input = 0.5, output = 2 }\n\n"
        ),
    )
    # A scenario whose every string is hostile markup: replay misses (no recorded answer), so it
    # fails, and the page must show its text as text.
    hostile = repo / "eval-datasets/support/acme/hostile.json"
    hostile.write_text(
        json.dumps({"input": HOSTILE, "assert": [{"type": "contains", "value": HOSTILE}]}),
        encoding="utf-8",
    )
    commit_all(repo, "a hostile scenario")
    for name in ("first", "second"):
        assert run(repo, RunOptions(execution=name), out=io.StringIO(), err=io.StringIO()) == 1
    rendered = run_cachelint(repo, "report")
    assert rendered.returncode == 1, rendered.stderr  # the latest execution has a failure
    page = Path(rendered.stdout.splitlines()[-1])
    assert page == repo / "eval-results/second/report.html"

    shown = browse(browser, page.as_uri() + "#failed", tmp_path / "profile", "--dump-dom")
    assert shown.returncode == 0, shown.stderr
    assert [line for line in shown.stderr.splitlines() if ":CONSOLE" in line] == []
    dom = Dom()
    dom.feed(shown.stdout)
    # agent -> tenant -> scenario
    scenarios = [*EXAMPLE_SCENARIOS, "support/acme/hostile"]
    agents = {s.split("/")[0] for s in scenarios}
    tenants = {s.rpartition("/")[0] for s in scenarios}
    shape = (len(agents), len(tenants), len(scenarios))
    listed = sum(
        1
        for tag, a in dom.elements
        if tag in ("details", "div") and "scenario" in (a.get("class") or "").split()
    )
    assert (dom.count("agent"), dom.count("tenant"), listed) == shape
    shown_agents = [a.get("data-agent") for _, a in dom.elements if a.get("data-testid") == "agent"]
    assert shown_agents == sorted(agents)
    # the conversation: system prompt, user input, assistant answer
    assert any("Acme Support assistant" in t for t in dom.roles["system"])
    assert any("I bought a tent 10 days ago" in t for t in dom.roles["user"])
    assert any("Sorry about the leaking tent" in t for t in dom.roles["assistant"])
    assert HOSTILE in "".join(dom.roles["user"])
    # hostile markup stayed text: no element came from it
    assert not any(tag == "img" for tag, _ in dom.elements)
    assert sum(1 for tag, _ in dom.elements if tag == "script") == 1  # the page's own
    assert_trend_and_cost(dom, shown.stdout, len(scenarios))
    # the failed-only filter ran (the #failed fragment ticks it)
    assert dom.body_class == "failed-only"

    shot = tmp_path / "report.png"
    taken = browse(
        browser,
        page.as_uri(),
        tmp_path / "profile",
        f"--screenshot={shot}",
        "--window-size=1200,1600",
    )
    assert taken.returncode == 0, taken.stderr
    assert [line for line in taken.stderr.splitlines() if ":CONSOLE" in line] == []
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
