"""Live progress on a non-terminal stream, and results hygiene (ids, the results root's ignore)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from cachelint.errors import CachelintError
from cachelint.runner.options import RunOptions
from cachelint.runner.pipeline import run
from cachelint.runner.progress import OrderedLines
from cachelint.runner.results import GITIGNORE
from tests.conftest import git
from tests.example import EXAMPLE_SCENARIOS, make_example_repo

SCENARIOS = EXAMPLE_SCENARIOS


class FlushLog(io.StringIO):
    """A non-terminal stream that keeps what had been written at each flush."""

    def __init__(self) -> None:
        super().__init__()
        self.flushed: list[str] = []

    def flush(self) -> None:
        super().flush()
        self.flushed.append(self.getvalue())


def test_text_report_streams_one_block_per_scenario_flushed(tmp_path: Path) -> None:
    repo = make_example_repo(tmp_path / "example")
    out, err = FlushLog(), io.StringIO()
    assert run(repo, RunOptions(execution="live"), out=out, err=err) == 0
    # Header, then each scenario as it is known, then the summary: the whole text report, built
    # up flush by flush.
    snapshots = out.flushed
    seen = [sum(f"  {s}" in snap for s in SCENARIOS) for snap in snapshots]
    assert seen[: len(SCENARIOS) + 1] == list(range(len(SCENARIOS) + 1))
    assert snapshots[-1] == out.getvalue()
    lines = out.getvalue().splitlines()
    assert lines[0] == f"cachelint run: execution live, mode replay, {len(SCENARIOS)} scenarios"
    assert [line.split()[1] for line in lines if line.startswith("PASS")] == SCENARIOS
    assert lines.count("summary by agent:") == 1


def test_other_formats_print_one_line_per_scenario_on_stderr(tmp_path: Path) -> None:
    repo = make_example_repo(tmp_path / "example")
    out, err = io.StringIO(), FlushLog()
    assert run(repo, RunOptions(execution="json", fmt="json", jobs=3), out=out, err=err) == 0
    assert err.getvalue().splitlines() == [f"cachelint: PASS  {s}" for s in SCENARIOS]
    assert len(err.flushed) >= 1
    assert out.getvalue().startswith("{")


def test_ordered_lines_wait_only_for_earlier_scenarios() -> None:
    class Done:  # a scenario's report, as far as the lines read it
        def __init__(self, identity: str) -> None:
            self.identity = identity

    stream = FlushLog()
    lines = OrderedLines(stream, ["a", "b", "c"], lambda r: r.identity + "\n")
    results: dict[str, Any] = {k: Done(k) for k in "abc"}
    lines(results["c"])
    assert stream.getvalue() == ""
    lines(results["a"])
    assert stream.getvalue() == "a\n"
    lines(results["b"])
    assert stream.getvalue() == "a\nb\nc\n"


def test_same_execution_twice_gets_a_suffix_and_git_status_stays_clean(tmp_path: Path) -> None:
    repo = make_example_repo(tmp_path / "example")
    first, second = io.StringIO(), io.StringIO()
    assert run(repo, RunOptions(execution="same"), out=first, err=io.StringIO()) == 0
    assert run(repo, RunOptions(execution="same"), out=second, err=io.StringIO()) == 0
    assert "results: eval-results/same/" in first.getvalue()
    assert "results: eval-results/same-2/" in second.getvalue()
    root = repo / "eval-results"
    assert (root / "same/run.json").is_file() and (root / "same-2/run.json").is_file()
    assert (root / ".gitignore").read_text(encoding="utf-8") == GITIGNORE
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""


def test_a_run_stopped_by_a_usage_error_leaves_no_execution_directory(tmp_path: Path) -> None:
    repo = make_example_repo(tmp_path / "example")
    (repo / "cachelint.toml").write_text(
        (repo / "cachelint.toml")
        .read_text(encoding="utf-8")
        .replace('type = "openai-compatible"', 'type = "python"\nfunction = "nowhere_x:answer"'),
        encoding="utf-8",
    )
    with pytest.raises(CachelintError, match="nowhere_x"):
        run(repo, RunOptions(execution="broken"), out=io.StringIO(), err=io.StringIO())
    assert not (repo / "eval-results/broken").exists()
