"""Fail closed (issue 37, rule 4): a check that could not be decided fails, whatever its kind, and
a closed stdout never turns a failure into success."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cachelint.runner.assertions import evaluate
from cachelint.runner.output import Output, ToolCall
from tests.conftest import PROJECT, commit_all, run_cachelint
from tests.helpers import DEAD, make_checked_repo, record, refund, write_repo

BACKTRACKING = "(a|aa)+$"
ANSWER = Output("a" * 60 + "b")


@pytest.mark.parametrize("kind", ["not-regex"])
def test_a_negated_pattern_that_times_out_fails(kind: str) -> None:
    result = evaluate({"type": kind, "pattern": BACKTRACKING}, ANSWER)
    assert not result.passed  # it passed: "no match" was assumed
    assert "gave up after 1 s" in result.reason


def test_a_tool_argument_pattern_that_backtracks_fails_instead_of_hanging() -> None:
    call = ToolCall("lookup", {"q": "a" * 60 + "b"})
    spec = {"type": "tool-arg", "tool": "lookup", "arg": "q", "regex": BACKTRACKING}
    result = evaluate(spec, Output("", (call,)))
    assert not result.passed and "gave up" in result.reason


def closed_stdout(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """`cachelint ARGS | head -c0`: the reader has gone before the first line is written."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [sys.executable, "-m", "cachelint", *args],
            cwd=repo,
            env={**os.environ, "PYTHONPATH": str(PROJECT)},
            stdout=write,
            stderr=subprocess.PIPE,
            timeout=120,
        )
    finally:
        os.close(write)


def test_a_failed_run_piped_into_a_closed_reader_keeps_exit_1(
    git_repo: Path, recording_env: None
) -> None:
    failing = refund(
        {"assert": [{"type": "contains", "value": "never said"}]}, prompt="prompts/acme.md"
    )
    write_repo(git_repo, DEAD, {"support/acme/refund": failing})
    assert record(git_repo)[0].rc == 1  # recorded, and failed
    commit_all(git_repo)
    proc = closed_stdout(git_repo, "run")
    assert proc.returncode == 1, proc.stderr  # BrokenPipeError was mapped to 0
    assert b"Traceback" not in proc.stderr


def test_a_clean_check_piped_into_a_closed_reader_still_exits_0(git_repo: Path) -> None:
    make_checked_repo(git_repo, attributes=True)
    commit_all(git_repo)
    assert run_cachelint(git_repo, "check").returncode == 0
    proc = closed_stdout(git_repo, "check")
    assert proc.returncode == 0, proc.stderr
    assert b"Exception ignored" not in proc.stderr
