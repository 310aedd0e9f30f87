"""A fourth hostile pass (issue 37, "a fresh hostile pass by the team"): each test reproduces one
way a pull request's files got past cachelint, and fails on the code before its fix."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import commit_all, run_cachelint
from tests.helpers import BASIC, DEAD, record, write_repo

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
