"""JSON nested deeper than the decoder's stack is bad input, reported like any other invalid JSON:
never an internal error (RecursionError) with exit code 3."""

from __future__ import annotations

from pathlib import Path

from cachelint.runner.assertions import evaluate
from cachelint.runner.output import Output
from cachelint.store import Store
from tests.conftest import commit_all, run_cachelint

DEEP = "[" * 200_000


def test_a_deeply_nested_entry_json_is_a_corrupt_finding(git_repo: Path) -> None:
    (git_repo / ".gitattributes").write_text("eval-cache/** -text\n")
    directory = Store(git_repo / "eval-cache").put(
        "a/t/s", "ab" * 32, {"messages": []}, {"choices": []}, provider="p", model="m"
    )
    (directory / "entry.json").write_text(DEEP)
    commit_all(git_repo)
    proc = run_cachelint(git_repo, "check", "--select", "eval-cache-corrupt")
    assert proc.returncode == 1, proc.stderr
    assert "eval-cache-corrupt: entry.json is not valid JSON (nested too deeply)" in proc.stdout


def test_a_deeply_nested_stamp_is_an_invalid_stamp(git_repo: Path) -> None:
    Store(git_repo / "eval-cache").put(
        "a/t/s", "ab" * 32, {"messages": []}, {"choices": []}, provider="p", model="m"
    )
    (git_repo / "eval-cache" / ".eval-cache-stamp.json").write_text(DEEP)
    commit_all(git_repo)
    proc = run_cachelint(git_repo, "stamp", "--check")
    assert proc.returncode == 1, proc.stderr
    assert "eval-cache-stamp-invalid" in proc.stdout and "nested too deeply" in proc.stdout


def test_a_deeply_nested_model_answer_fails_json_valid() -> None:
    result = evaluate({"type": "json-valid"}, Output(DEEP))
    assert not result.passed
    assert "response is not valid JSON" in result.reason
