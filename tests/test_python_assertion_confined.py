"""A `python` assertion names a function of the repository itself (issue 37): `builtins:print`
wrote into `--format json` stdout, and any installed callable could be run from a dataset."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cachelint
from tests.helpers import DEAD, record, refund, write_repo

EVALS = """
import json
from builtins import print as shout
from json import dumps as dumped


def words(scenario, output, options):
    return {"name": "words", "value": len(output.text.split())}
"""
DATASET = "eval-datasets/support/acme/refund.json: assert[0]: function"


def repo_asserting(repo: Path, function: str) -> Path:
    scenario = refund(
        {"assert": [{"type": "python", "function": function}]}, prompt="prompts/acme.md"
    )
    write_repo(repo, DEAD, {"support/acme/refund": scenario}, files={"myevals.py": EVALS})
    return repo


@pytest.mark.parametrize(
    ("function", "why"),
    [
        ("builtins:print", "it is built into Python"),
        ("sys:exit", "it is built into Python"),
        ("json:dumps", "an installed package or the standard library"),
        ("pytest:main", "an installed package or the standard library"),
        ("myevals:shout", "it is built into Python"),  # re-exported from builtins
        ("myevals:dumped", "an installed package or the standard library"),
    ],
)
def test_a_function_from_outside_the_repository_is_refused(
    git_repo: Path, function: str, why: str
) -> None:
    repo_asserting(git_repo, function)
    proc = run_cachelint(git_repo, "run", "--format", "json")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == ""
    assert proc.stderr.startswith(f"cachelint: error: {DATASET} {function!r}: not a function")
    assert why in proc.stderr and proc.stderr.count("\n") == 1


def test_a_function_of_the_repository_still_runs(git_repo: Path) -> None:
    repo_asserting(git_repo, "myevals:words")
    outcome, _ = record(git_repo)
    assert outcome.rc == 0, outcome.out + outcome.err
    proc = run_cachelint(git_repo, "run", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    [scenario] = json.loads(proc.stdout)["scenarios"]
    assert scenario["trials"][0]["assertions"][0]["passed"]
