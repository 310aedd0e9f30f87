"""Cost is never silently wrong (issue 36 item 5): a run over its budget is ❌ in every summary and
names the budget; a call no price covers makes every total "at least $X (N calls unpriced: model
M)" and, with a budget, fails the run saying how to price M; scenario headers and the `cost`
check agree. Entries are recorded through the fake provider, replays go through the real CLI."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.conftest import run_cachelint
from tests.fakes import fake_server
from tests.helpers import BASIC, DEAD, SCRIPT, do_run, write_repo, write_targets_repo

PRICED = '[tool.cachelint.prices]\n"scripted-v1" = { input = 2.5, output = 10.0 }\n'


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CACHELINT_TEST_KEY", raising=False)
    monkeypatch.delenv("CACHELINT_EXECUTION", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.setenv("CACHELINT_NOW", "2026-01-15T10:00:00Z")


def _record(repo: Path) -> None:
    """Record every scenario through the fake provider (on its URL), then point back at DEAD."""
    pyproject = repo / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    with fake_server(SCRIPT) as fake:
        pyproject.write_text(text.replace(DEAD, fake.url), encoding="utf-8")
        try:
            recorded = do_run(repo, refresh=True, execution="recorded")
        finally:
            pyproject.write_text(text, encoding="utf-8")
    assert recorded.rc == 0, recorded.out + recorded.err


def _with(repo: Path, extra: str) -> None:
    path = repo / "pyproject.toml"
    path.write_text(path.read_text(encoding="utf-8") + extra, encoding="utf-8")


class _Page(HTMLParser):
    """The text of each element carrying a data-testid, by testid."""

    def __init__(self) -> None:
        super().__init__()
        self.text: dict[str, list[str]] = {}
        self._open: list[str | None] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("meta", "input", "br", "img", "circle", "line", "rect", "polyline"):
            return
        testid = dict(attrs).get("data-testid")
        self._open.append(testid)
        if testid:
            self.text.setdefault(testid, []).append("")

    def handle_endtag(self, tag: str) -> None:
        if tag not in ("meta", "input", "br", "img", "circle", "line", "rect", "polyline"):
            if self._open:
                self._open.pop()

    def handle_data(self, data: str) -> None:
        for testid in self._open:
            if testid:
                self.text[testid][-1] += data


def _page(path: Path) -> dict[str, list[str]]:
    parser = _Page()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser.text


def test_a_run_over_budget_is_a_failure_in_every_summary(git_repo: Path, tmp_path: Path) -> None:
    """It exited 1, yet the Markdown summary and $GITHUB_STEP_SUMMARY said ✅, the HTML header
    PASS, run.json `"passed": true`, and JUnit had no failure."""
    write_repo(git_repo, DEAD, BASIC, target=PRICED)
    _record(git_repo)
    _with(git_repo, "[tool.cachelint.reports]\nbudget = 0.0001\n")
    step_summary = tmp_path / "step-summary.md"
    step_summary.write_text("earlier step\n", encoding="utf-8")
    junit, page = git_repo / "eval-results/junit.xml", git_repo / "eval-results/report.html"
    env = {"GITHUB_STEP_SUMMARY": str(step_summary)}
    args = ["--format", "markdown", "--junit", str(junit), "--html", str(page)]
    shown = run_cachelint(git_repo, "run", "--execution", "md", *args, env=env)
    assert shown.returncode == 1, shown.stdout + shown.stderr
    header = shown.stdout.splitlines()[0]
    assert header.startswith("## ❌ cachelint run md (replay): 2/2 passed; over budget: $"), header
    # The figures and the budget's name, in the header itself.
    assert header.endswith("&gt; $0\\.0001 \\(\\[tool\\.cachelint\\.reports\\] budget\\)"), header
    assert step_summary.read_text(encoding="utf-8") == "earlier step\n" + shown.stdout
    assert "- ❌ over budget: $" in shown.stdout

    html = _page(page)
    assert html["verdict"] == ["cachelint run md (replay): FAIL"]
    (failure,) = html["run-failure"]
    assert failure.startswith("FAIL over budget: $") and "budget)" in failure
    assert 'name="cachelint-run"' in junit.read_text(encoding="utf-8")
    assert '<failure message="over budget: $' in junit.read_text(encoding="utf-8")
    summary = json.loads((git_repo / "eval-results/md/run.json").read_text(encoding="utf-8"))
    assert summary["passed"] is False and summary["failures"][0].startswith("over budget: $")

    text = run_cachelint(git_repo, "run", "--execution", "text")
    assert text.returncode == 1
    assert text.stdout.splitlines()[-1].startswith("FAIL  over budget: $")
    as_json = run_cachelint(git_repo, "run", "--execution", "json", "--format", "json")
    assert as_json.returncode == 1 and json.loads(as_json.stdout)["passed"] is False
    github = run_cachelint(git_repo, "run", "--execution", "gh", "--format", "github")
    assert "::error title=cachelint run::over budget: $" in github.stdout
    assert github.stdout.rstrip().endswith("; FAILED")
    # `cachelint report` renders the same verdict from the results files.
    again = run_cachelint(git_repo, "report", "--execution", "md")
    assert again.returncode == 1 and "FAIL  over budget: $" in again.stdout
    assert _page(git_repo / "eval-results/md/report.html")["verdict"] == [
        "cachelint run md (replay): FAIL"
    ]


# The agent's model is priced; its judge answers on another model that is not.
JUDGED = f"""
    [tool.cachelint.target]
    url = "{DEAD}"
    provider = "cachelint-fake"
    model = "agent-model"
    api-key-env = "CACHELINT_TEST_KEY"

    [tool.cachelint.targets.judges]
    url = "{DEAD}"
    provider = "cachelint-fake"
    model = "judge-model"
    api-key-env = "CACHELINT_TEST_KEY"

    [tool.cachelint.judge]
    target = "judges"

    [tool.cachelint.prices]
    "agent-model" = {{ input = 2.5, output = 10.0 }}
"""
REFUND = {
    "input": "How do refunds work?",
    "assert": [{"type": "contains", "value": "know"}, {"type": "cost", "max": 1}],
    "judge": ["relevance"],
}


def _judged_repo(repo: Path) -> None:
    write_targets_repo(repo, targets=JUDGED, scenarios={"support/acme/refund": REFUND})
    _record(repo)


def test_an_unpriced_call_makes_every_total_a_lower_bound_that_says_so(git_repo: Path) -> None:
    """The judge's calls dropped out of every total without a word; the scenario header said
    "cost n/a" beside a passing `cost $0.0...` check."""
    _judged_repo(git_repo)
    page, junit = git_repo / "eval-results/report.html", git_repo / "eval-results/junit.xml"
    text = run_cachelint(git_repo, "run", "--html", str(page), "--junit", str(junit))
    assert text.returncode == 0, text.stdout + text.stderr  # no budget: nothing fails
    gap = "(1 call unpriced: model judge-model)"
    (cost_line,) = [line for line in text.stdout.splitlines() if line.startswith("cost: ")]
    assert re.fullmatch(rf"cost: at least \$0\.\d{{4}} {re.escape(gap)}", cost_line), cost_line
    # The check prices the target's call as the reports do; the header adds the judge's call.
    record = json.loads(
        (git_repo / "eval-results" / _latest(git_repo) / "support/acme/refund.json").read_text(
            encoding="utf-8"
        )
    )
    (check,) = [a for a in record["trials"][0]["assertions"] if a["type"] == "cost"]
    assert check["passed"] and "for 1 call(s), within" in check["reason"]
    html = _page(page)
    (header,) = html["cost"]
    assert header.startswith("at least $") and header.endswith(gap), header
    assert html["run-cost"] == [header]
    assert "n/a" not in page.read_text(encoding="utf-8")
    assert 'name="cost_usd_at_least"' in junit.read_text(encoding="utf-8")

    markdown = run_cachelint(git_repo, "run", "--format", "markdown")
    total = next(line for line in markdown.stdout.splitlines() if "**total**" in line)
    assert "at least $0\\.0" in total and "model judge\\-model" in total, total
    summary = json.loads(
        (git_repo / "eval-results" / _latest(git_repo) / "run.json").read_text(encoding="utf-8")
    )
    assert summary["cost"]["complete"] is False
    assert summary["cost"]["unpriced"] == {"model judge-model": 1}


def test_with_a_budget_an_unpriced_model_fails_the_run_and_says_how_to_price_it(
    git_repo: Path,
) -> None:
    """A budget passed by under-counting: the judge's calls were not in the total it checked."""
    _judged_repo(git_repo)
    _with(git_repo, "[tool.cachelint.reports]\nbudget = 100\n")
    run = run_cachelint(git_repo, "run", "--format", "markdown")
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.stdout.startswith("## ❌ cachelint run ")
    assert "budget $100\\.00 cannot be checked" in run.stdout
    assert (
        "- ❌ no price for model judge\\-model: add it to \\[tool\\.cachelint\\.prices\\], "
        'e\\.g\\. "judge\\-model" = \\{ input = &lt;$ per million tokens&gt;' in run.stdout
    )
    text = run_cachelint(git_repo, "run")
    assert text.returncode == 1
    assert "FAIL  no price for model judge-model: add it to [tool.cachelint.prices]" in text.stdout
    # Priced, the same run passes within the budget.
    path = git_repo / "pyproject.toml"
    path.write_text(
        path.read_text(encoding="utf-8").replace(
            '"agent-model" = { input = 2.5, output = 10.0 }',
            '"agent-model" = { input = 2.5, output = 10.0 }\n'
            '"judge-model" = { input = 1, output = 1 }',
        ),
        encoding="utf-8",
    )
    priced = run_cachelint(git_repo, "run")
    assert priced.returncode == 0, priced.stdout
    assert re.search(r"^cost: \$0\.\d{4} \(budget \$100\.00\)$", priced.stdout, re.M)


def _latest(repo: Path) -> str:
    runs = [p for p in (repo / "eval-results").iterdir() if (p / "run.json").is_file()]
    return max(runs, key=lambda p: (p / "run.json").stat().st_mtime_ns).name


def test_the_text_summary_of_a_run_without_prices_is_unchanged(git_repo: Path) -> None:
    """A team that prices nothing gets no cost lines in the text report (every table cell of the
    other formats still says what it knows)."""
    write_repo(git_repo, DEAD, BASIC)
    _record(git_repo)
    text = run_cachelint(git_repo, "run")
    assert text.returncode == 0 and "cost" not in text.stdout
    markdown = run_cachelint(git_repo, "run", "--format", "markdown")
    assert "at least $0\\.0000 \\(2 calls unpriced: model scripted\\-v1\\)" in markdown.stdout
