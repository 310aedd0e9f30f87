"""A fourth hostile pass (issue 37, "a fresh hostile pass by the team"): each test reproduces one
way a pull request's files got past cachelint, and fails on the code before its fix."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from tests.conftest import commit_all, git, run_cachelint
from tests.helpers import (
    BASIC,
    CHILD_ANSWER,
    CHILD_SCRIPT,
    DEAD,
    RUN_NOW,
    do_run,
    python_target,
    record,
    record_requests,
    result,
    write_repo,
    write_targets_repo,
)

# An answer a pull request records into the cache: lines GitHub's runner reads as workflow
# commands (it trims leading white space first) when the step's output reaches the job's log.
FORGED = "hello\n::error title=Forged::every eval passed\n  ::stop-commands::tok\n::add-mask::x"


def _recorded_on_main(repo: Path) -> Path:
    write_repo(repo, DEAD, BASIC)
    outcome, _ = record(repo, {"rules": [], "default": {"content": "Acme refunds within 30 days."}})
    assert outcome.rc == 0, outcome.out + outcome.err
    commit_all(repo, "recorded")
    return repo


def test_diff_prints_no_workflow_command_from_a_recorded_answer(git_repo: Path) -> None:
    repo = _recorded_on_main(git_repo)
    new = repo / "eval-datasets" / "support" / "new" / "hello.json"
    new.parent.mkdir(parents=True)
    new.write_text('{"input": "hello there", "assert": [{"type": "contains", "value": "hello"}]}')
    script = {
        "rules": [{"match": {"contains": "hello there"}, "reply": {"content": FORGED}}],
        "default": {"content": "Acme refunds within 30 days."},
    }
    outcome, _ = record(repo, script, execution="pr")
    assert outcome.rc == 0, outcome.out + outcome.err
    commit_all(repo, "a new scenario, recorded")

    shown = run_cachelint(repo, "diff", "--base", "HEAD~1")

    assert shown.returncode == 0, shown.stderr
    assert "new answer:" in shown.stdout  # the scenario recorded for the first time is shown
    assert "every eval passed" in shown.stdout
    commands = [line for line in shown.stdout.splitlines() if line.lstrip().startswith("::")]
    assert commands == []


def test_diff_reads_no_cache_directory_committed_as_a_link(git_repo: Path, tmp_path: Path) -> None:
    repo = _recorded_on_main(git_repo)
    outside = tmp_path / "outside"
    entry = outside / "support" / "acme" / "refund" / "0123456789abcdef"
    entry.mkdir(parents=True)
    recorded = next((repo / "eval-cache" / "cache").rglob("entry.json"))
    (entry / "entry.json").write_bytes(recorded.read_bytes())
    (entry / "contents.data").write_text('{"text": "OUTSIDE-THE-REPOSITORY"}\n', encoding="utf-8")
    git(repo, "rm", "-rq", "eval-cache/cache")
    (repo / "eval-cache").mkdir(exist_ok=True)
    os.symlink(outside, repo / "eval-cache" / "cache")
    commit_all(repo, "the cache directory as a link")

    shown = run_cachelint(repo, "diff", "--base", "HEAD~1")

    assert shown.returncode == 2, shown.stdout + shown.stderr
    assert "OUTSIDE-THE-REPOSITORY" not in shown.stdout + shown.stderr
    assert "eval-cache/cache: is a symbolic link" in shown.stderr


# ---- sys.exit(0) in the team's code is no passing run ------------------------------------------

EXITS = """import sys


def answer(scenario, client):
    sys.exit(0)


def check(scenario, output, options):
    sys.exit(0)
"""


def test_a_python_target_calling_sys_exit_0_fails_its_scenario(git_repo: Path) -> None:
    scenario = {"input": "hi", "assert": [{"type": "contains", "value": "hi"}]}
    write_targets_repo(
        git_repo,
        targets=python_target("exits:answer"),
        scenarios={"support/acme/refund": scenario},
        files={"exits.py": EXITS},
    )

    shown = run_cachelint(git_repo, "run", "--execution", "test")

    assert shown.returncode == 1, shown.stdout + shown.stderr
    assert "FAIL  support/acme/refund" in shown.stdout
    error = result(git_repo, "support/acme/refund")["trials"][0]["error"]
    assert error.startswith("the target called sys.exit(0)"), error


def test_a_python_assertion_calling_sys_exit_0_fails_its_scenario(git_repo: Path) -> None:
    repo = _recorded_on_main(git_repo)
    (repo / "exits.py").write_text(EXITS, encoding="utf-8")
    dataset = repo / "eval-datasets" / "support" / "acme" / "refund.json"
    data = json.loads(dataset.read_text(encoding="utf-8"))
    data["assert"].append({"type": "python", "function": "exits:check"})
    dataset.write_text(json.dumps(data), encoding="utf-8")

    shown = run_cachelint(repo, "run", "--execution", "replay")

    assert shown.returncode == 1, shown.stdout + shown.stderr
    assert "python exits:check: the evaluator raised SystemExit" in shown.stdout


def test_a_target_module_calling_sys_exit_0_when_imported_is_a_config_error(
    git_repo: Path,
) -> None:
    scenario = {"input": "hi", "assert": [{"type": "contains", "value": "hi"}]}
    write_targets_repo(
        git_repo,
        targets=python_target("exits_at_import:answer"),
        scenarios={"support/acme/refund": scenario},
        files={"exits_at_import.py": "import sys\n\nsys.exit(0)\n"},
    )

    shown = run_cachelint(git_repo, "run", "--execution", "test")

    assert shown.returncode == 2, shown.stdout + shown.stderr
    assert "cannot import module 'exits_at_import'" in shown.stderr
    assert "SystemExit" in shown.stderr


# ---- a python assertion imports nothing from outside the repository --------------------------

PASSING_CHECK = "def check(scenario, output, options):\n    return {'name': 'ok', 'value': 1}\n"


def test_a_python_assertion_under_an_installed_package_is_refused_before_importing_it(
    git_repo: Path,
) -> None:
    """Finding `this.x` imports `this`, which prints the Zen of Python into stdout (any installed
    package's import-time code ran on a dataset's word); the repository's own packages, regular
    and namespace, still load."""
    repo = _recorded_on_main(git_repo)
    for package in ("evals", "spaces"):
        (repo / package).mkdir()
        (repo / package / "checks.py").write_text(PASSING_CHECK, encoding="utf-8")
    (repo / "evals" / "__init__.py").write_text("", encoding="utf-8")
    dataset = repo / "eval-datasets" / "support" / "acme" / "refund.json"
    data = json.loads(dataset.read_text(encoding="utf-8"))
    data["assert"] += [
        {"type": "python", "function": "evals.checks:check"},
        {"type": "python", "function": "spaces.checks:check"},
    ]
    dataset.write_text(json.dumps(data), encoding="utf-8")
    ours = run_cachelint(repo, "run", "--execution", "ours")
    assert ours.returncode == 0, ours.stdout + ours.stderr

    data["assert"].append({"type": "python", "function": "this.x:check"})
    dataset.write_text(json.dumps(data), encoding="utf-8")
    shown = run_cachelint(repo, "run", "--format", "json", "--execution", "this")

    assert shown.returncode == 2, shown.stdout + shown.stderr
    assert "Zen of Python" not in shown.stdout + shown.stderr
    assert "function 'this.x:check': not a function of the repository" in shown.stderr


# ---- a python target's own children that ignore Python and Node.js: the proxy sees them -------

CURLING = """
import subprocess


def answer(scenario, client):
    reply = client.chat(scenario.messages)
    subprocess.run(
        ["curl", "-sS", "--max-time", "5", "https://api.example.invalid/v1/models"],
        capture_output=True,
    )
    return reply
"""


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
def test_curl_started_by_a_python_target_fails_its_scenario_in_replay(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CACHELINT_TEST_KEY", raising=False)
    monkeypatch.delenv("CACHELINT_EXECUTION", raising=False)
    monkeypatch.setenv("CACHELINT_NOW", RUN_NOW)
    write_targets_repo(
        git_repo,
        targets=python_target("curling:answer"),
        scenarios={"support/acme/refund": CHILD_ANSWER},
        files={"curling.py": CURLING},
    )
    recorded, _ = record_requests(git_repo, CHILD_SCRIPT)
    assert recorded.rc == 0, recorded.out + recorded.err
    monkeypatch.delitem(sys.modules, "curling", raising=False)

    replay = do_run(git_repo)

    assert replay.rc == 1, replay.out
    error = str(result(git_repo, "support/acme/refund")["trials"][0]["error"])
    assert error.startswith("scenario support/acme/refund: tried to reach api.example.invalid:443")
    assert "HTTPS_PROXY" not in os.environ  # only the C-level environment had it, put back
