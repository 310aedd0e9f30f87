"""What a repository names is shown, never obeyed (issue 37, "Output escaping").

The Markdown summary (stdout and $GITHUB_STEP_SUMMARY) escapes every string taken from the
repository or a model: an agent, tenant or scenario name injects no image and no link, `@org/team`
is no live @mention, a URL in an answer is no autolink. JSON outputs write bidi and control
characters from dataset file names as `\\u` escapes. Entries are recorded through the fake
provider; the runs go through the real CLI, and the Markdown is rendered by a CommonMark renderer.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from tests.conftest import run_cachelint
from tests.fakes import fake_server
from tests.helpers import DEAD, do_run, write_repo

# A remote image and links, as an answer would carry them; GitHub autolinks bare URLs and hosts.
ANSWER = "See ![x](https://evil.example/i.png) [here](https://evil.example) or www.evil.example"
# Directory and file names Windows accepts too: `@org` / `team` is the group `@org/team`.
HOSTILE = {
    "@org/team/[click](evil.example)": "a group that is a team mention; a scenario that is a link",
    "![pixel](pixel.png)/www.evil.example/refund": "an agent that is an image, a tenant a host",
}
PRICED = '[tool.cachelint.prices]\n"scripted-v1" = { input = 2.5, output = 10.0 }\n'


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CACHELINT_TEST_KEY", raising=False)
    monkeypatch.delenv("CACHELINT_EXECUTION", raising=False)
    monkeypatch.setenv("CACHELINT_NOW", "2026-01-15T10:00:00Z")


def _hostile_repo(repo: Path) -> None:
    scenario = {"input": "How do refunds work?", "assert": [{"type": "contains", "value": "See"}]}
    write_repo(repo, DEAD, {identity: scenario for identity in HOSTILE}, target=PRICED)
    pyproject = repo / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    with fake_server({"rules": [], "default": {"content": ANSWER}}) as fake:
        pyproject.write_text(text.replace(DEAD, fake.url), encoding="utf-8")
        try:
            recorded = do_run(repo, refresh=True, execution="recorded")
        finally:
            pyproject.write_text(text, encoding="utf-8")
    assert recorded.rc == 0, recorded.out + recorded.err


def _rendered_text(markdown: str) -> tuple[str, str]:
    """The HTML a CommonMark renderer (with GFM tables) makes of `markdown`, and its text."""
    html = MarkdownIt("commonmark").enable("table").render(markdown)
    return html, re.sub(r"<[^>]+>", "", html)


def assert_inert(markdown: str) -> None:
    html, text = _rendered_text(markdown)
    assert "<img" not in html and "<a " not in html, html
    # What GitHub links in rendered text: @mentions, bare hosts and URLs, e-mail addresses.
    assert not re.search(r"@[A-Za-z0-9]", text), text
    assert "www." not in text and "://" not in text, text


def test_names_and_answers_in_the_markdown_summary_inject_nothing(
    git_repo: Path, tmp_path: Path
) -> None:
    _hostile_repo(git_repo)
    # Fail one scenario (so its answer appears as a failure reason) and the budget (notes).
    path = git_repo / "eval-datasets/@org/team/[click](evil.example).json"
    path.write_text(path.read_text(encoding="utf-8").replace('"See"', '"nowhere"'))
    (git_repo / "pyproject.toml").write_text(
        (git_repo / "pyproject.toml").read_text(encoding="utf-8")
        + "[tool.cachelint.reports]\nbudget = 0.0001\n",
        encoding="utf-8",
    )
    summary = tmp_path / "step-summary.md"
    env = {"GITHUB_STEP_SUMMARY": str(summary)}
    for fmt in ("markdown", "github"):
        shown = run_cachelint(git_repo, "run", "--format", fmt, env=env)
        assert shown.returncode == 1, shown.stdout + shown.stderr
    written = summary.read_text(encoding="utf-8")
    assert written.count("## ❌ cachelint run ") == 2
    assert_inert(written)
    # Shown all the same, with the joiner invisible in the text people read.
    _, text = _rendered_text(written)
    visible = text.replace("\u2060", "")
    names = ("@org/team", "![pixel](pixel.png)/www.evil.example", "[click](evil.example)")
    for shown_name in names:
        assert shown_name in visible, shown_name
    assert "![x](https://evil.example/i.png)" in visible  # the answer, as text


def test_the_markdown_renderer_neutralises_each_kind_of_link() -> None:
    from cachelint.runner.reports.prformats import md

    for text in (
        "@org/team",
        "ask @someone",
        "mail me: a@b.example",
        "https://evil.example/x",
        "www.evil.example",
        "![i](//evil.example/i.png)",
        "<img src=//evil.example/i.png>",
        "[l](javascript:alert(1))",
        "&#64;org",
    ):
        assert_inert(md(text))
        assert md(text).replace("\u2060", "") != "" and "\n" not in md(text)


BIDI = "refund\u202egnp.exe"


def test_json_outputs_escape_bidi_characters_from_dataset_file_names(git_repo: Path) -> None:
    scenario = {"input": "How do refunds work?", "assert": [{"type": "contains", "value": "See"}]}
    write_repo(git_repo, DEAD, {f"support/acme/{BIDI}": scenario})
    pyproject = git_repo / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    with fake_server({"rules": [], "default": {"content": ANSWER}}) as fake:
        pyproject.write_text(text.replace(DEAD, fake.url), encoding="utf-8")
        try:
            assert do_run(git_repo, refresh=True, execution="recorded").rc == 0
        finally:
            pyproject.write_text(text, encoding="utf-8")
    shown = run_cachelint(
        git_repo, "run", "--execution", "replay", "--format", "json", "--save-baseline", "main"
    )
    assert shown.returncode == 0, shown.stdout + shown.stderr
    results = git_repo / "eval-results/replay"
    outputs = {
        "stdout": shown.stdout,
        **{p.name: p.read_text(encoding="utf-8") for p in results.rglob("*.json")},
        # the run's entry list and the committed baselines name the scenario too
        "entries-used.json": (git_repo / "eval-results/entries-used.json").read_text("utf-8"),
        "eval-baselines.json": (git_repo / "eval-baselines.json").read_text("utf-8"),
    }
    assert f"{BIDI}.json" in outputs  # the scenario's own results file
    for name, written in outputs.items():
        assert "\u202e" not in written, name
    # The values stay exact: only the bytes are escaped.
    record = json.loads(outputs[f"{BIDI}.json"])
    assert record["scenario"] == f"support/acme/{BIDI}"
    assert json.loads(shown.stdout)["scenarios"][0]["scenario"] == f"support/acme/{BIDI}"
