"""The `pass` policy of a scenario's trials, through `cachelint run` on entries recorded through
the fake provider (three trials: two right answers, one wrong)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cachelint
from tests.fakes import fake_server
from tests.helpers import DEAD, do_run, write_datasets, write_repo

SCRIPT: dict[str, Any] = {
    "rules": [{"match": {}, "reply": {"content": "yes"}, "times": 2}],
    "default": {"content": "no"},
}


def _scenario(policy: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "input": "Ok?",
        "trials": 3,
        "assert": [{"type": "contains", "value": "yes"}],
    }
    return {**data, "pass": policy} if policy is not None else data


@pytest.fixture
def recorded(git_repo: Path) -> Path:
    write_repo(git_repo, DEAD, {"a/b/c": _scenario({"at-least": 2})})
    pyproject = git_repo / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    with fake_server(SCRIPT) as fake:
        pyproject.write_text(text.replace(DEAD, fake.url), encoding="utf-8")
        try:
            done = do_run(git_repo, refresh=True)
        finally:
            pyproject.write_text(text, encoding="utf-8")
    assert done.rc == 0, done.out + done.err
    return git_repo


@pytest.mark.parametrize(
    ("policy", "rc", "shown"),
    [
        ({"at-least": 2}, 0, "PASS  a/b/c  2/3 trials (67%; pass at least 2: pass pass FAIL)"),
        ({"rate": 0.6}, 0, "pass rate 0.6: pass pass FAIL"),
        ({"rate": 0.8}, 1, "FAIL  a/b/c  2/3 trials (67%; pass rate 0.8: pass pass FAIL)"),
        ("all", 1, "pass all: pass pass FAIL"),
        (None, 1, "pass all: pass pass FAIL"),
    ],
)
def test_the_policy_decides_the_scenario_and_the_report_shows_each_trial(
    recorded: Path, policy: Any, rc: int, shown: str
) -> None:
    write_datasets(recorded, {"a/b/c": _scenario(policy)}, None)
    done = run_cachelint(recorded, "run", "--execution", "replay")
    assert done.returncode == rc, done.stdout + done.stderr
    assert shown in done.stdout
    assert "trial 2: contains: contains 'yes': not found" in done.stdout
    record = json.loads((recorded / "eval-results/replay/a/b/c.json").read_text("utf-8"))
    assert [t["passed"] for t in record["trials"]] == [True, True, False]
    assert record["passed"] is (rc == 0)
    green = run_cachelint(recorded, "green", "--from-results", "eval-results/replay")
    assert "disagrees" not in green.stdout + green.stderr


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ({"at-least": 4}, "at-least 4 is more than the 3 trial(s)"),
        ({"at-least": 0}, 'expected "all", {"at-least": k}'),
        ({"rate": 1.5}, "(0 < r <= 1)"),
        ("most", 'expected "all"'),
    ],
)
def test_a_bad_policy_is_one_line_naming_the_field(
    recorded: Path, policy: Any, message: str
) -> None:
    write_datasets(recorded, {"a/b/c": _scenario(policy)}, None)
    done = run_cachelint(recorded, "run")
    assert done.returncode == 2
    assert "eval-datasets/a/b/c.json: field 'pass'" in done.stderr and message in done.stderr
