"""A `command` target scenario that made no model call in replay fails, as a python target's does
(issue 36.3): its answer did not come from the cache. A scenario that declares it makes none
(`"model-calls": false`) passes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import RUN_NOW, commit_all, run_cachelint
from tests.helpers import command_target, record, result, write_targets_repo

# A program that answers from its own knowledge (or its own cache), never asking the endpoint.
NO_CALL = 'print("Refunds take 30 days.")\n'
SCENARIO = {"input": "How do refunds work?", "assert": [{"type": "contains", "value": "30 days"}]}


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CACHELINT_TEST_KEY", raising=False)
    monkeypatch.delenv("CACHELINT_EXECUTION", raising=False)
    monkeypatch.setenv("CACHELINT_NOW", RUN_NOW)


def _repo(repo: Path, scenario: dict[str, object]) -> Path:
    write_targets_repo(
        repo,
        targets=command_target([Path(sys.executable).as_posix(), "agent.py"]),
        scenarios={"support/acme/refund": scenario},
        files={"agent.py": NO_CALL},
    )
    recorded, requests = record(repo, {"rules": [], "default": {"content": "unused"}})
    assert recorded.rc == 0 and requests == 0, recorded.out + recorded.err  # a recording passes
    commit_all(repo, "a command target that calls no model")
    return repo


def test_a_command_scenario_that_made_no_model_call_fails_in_replay(git_repo: Path) -> None:
    repo = _repo(git_repo, SCENARIO)
    green = (repo / ".eval-green.json").read_bytes()  # the recording's
    proc = run_cachelint(repo, "run", "--execution", "replay", env={"CACHELINT_NOW": RUN_NOW})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    error = result(repo, "support/acme/refund", "replay")["trials"][0]["error"]
    assert error.startswith("scenario support/acme/refund: the target command `"), error
    assert "made no model call through the cache" in error
    assert '"model-calls": false in eval-datasets/support/acme/refund.json' in error
    assert (repo / ".eval-green.json").read_bytes() == green


def test_a_command_scenario_declaring_no_model_call_passes_in_replay(git_repo: Path) -> None:
    repo = _repo(git_repo, {**SCENARIO, "model-calls": False})
    proc = run_cachelint(repo, "run", "--execution", "replay", env={"CACHELINT_NOW": RUN_NOW})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert result(repo, "support/acme/refund", "replay")["passed"] is True


def test_model_calls_must_be_a_boolean(git_repo: Path) -> None:
    write_targets_repo(
        git_repo,
        targets=command_target(["true"]),
        scenarios={"support/acme/refund": {**SCENARIO, "model-calls": "no"}},
    )
    proc = run_cachelint(git_repo, "run")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert (
        "eval-datasets/support/acme/refund.json: field 'model-calls': expected true or false, "
        "got a string"
    ) in proc.stderr
    schema = json.loads(run_cachelint(git_repo, "schema").stdout)
    assert schema["properties"]["model-calls"]["type"] == "boolean"
