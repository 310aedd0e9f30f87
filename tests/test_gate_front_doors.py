"""Issue 36, "The gate does not cover pytest evals", through the hooks a team installs: a watched
prompt changed, re-recorded and re-run only through `cachelint run`, then staged, must be
refused at `git commit` naming `pytest -m eval`, because the repository's pytest evals (whose
green part is now stale) would miss offline. Real commits: the pre-commit framework's
`cachelint-watch` hook (`pre-commit install`, its environment built from this checkout) and the
plain hook (hooks/pre-commit through core.hooksPath). Select the framework's with `-k precommit`."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from tests.conftest import commit_all, git
from tests.helpers import framework_commit, framework_env, head, hook_commit, pre_commit
from tests.test_front_doors import (
    LATER,
    both_front_doors,
    cachelint,
    change_acme_prompt,
    inner_pytest,
    ok,
    recording,
)

Commit = Callable[[Path, str], subprocess.CompletedProcess[str]]


def green_through_both(repo: Path) -> None:
    """Recorded through both front doors, stamped, replayed through both: committed green."""
    both_front_doors(repo)
    ok(cachelint(repo, "stamp"))
    ok(inner_pytest(repo, "-m", "eval"))
    ok(cachelint(repo, "run"))
    commit_all(repo, "evals, green through both front doors")


def refused_then_let_through(repo: Path, commit: Commit) -> None:
    """The prompt change re-recorded and replayed through `cachelint run` alone is refused,
    naming `pytest -m eval`; after the pytest evals' own re-record and replay it goes in."""
    change_acme_prompt(repo)
    with recording(repo):
        ok(cachelint(repo, "run", "--cache", "auto", now=LATER))
    ok(cachelint(repo, "stamp", now=LATER))
    ok(cachelint(repo, "run", now=LATER))
    git(repo, "add", "-A")
    before = head(repo)
    blocked = commit(repo, "acme prompt, re-recorded through cachelint run only")
    output = blocked.stdout + blocked.stderr
    assert blocked.returncode == 1, output
    assert head(repo) == before
    assert (
        "prompts/acme.md: eval-green-stale: watched file changed since the last green pytest "
        "session" in output
    ), output
    assert "run the evals until they pass: `pytest -m eval`" in output, output
    # `cachelint run`'s own part is fresh: the gate blames only the front door that is behind.
    assert "since the last green run" not in output, output
    assert inner_pytest(repo, "-m", "eval", now=LATER).returncode == 1  # the miss it foresaw

    with recording(repo):
        ok(inner_pytest(repo, "-m", "eval", "--cachelint-cache", "auto", now=LATER))
    ok(cachelint(repo, "stamp", now=LATER))
    ok(inner_pytest(repo, "-m", "eval", now=LATER))
    ok(cachelint(repo, "run", now=LATER))
    git(repo, "add", "-A")
    done = commit(repo, "acme prompt, re-recorded through both front doors")
    assert done.returncode == 0, done.stdout + done.stderr
    assert head(repo) != before
    assert git(repo, "status", "--porcelain") == ""


def test_precommit_watch_hook_names_pytest_when_only_cachelint_run_saw_a_prompt_change(
    git_repo: Path, hook_source: tuple[Path, str], pre_commit_home: Path
) -> None:
    src, rev = hook_source
    env = framework_env(pre_commit_home)
    (git_repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {src}\n  rev: {rev}\n  hooks:\n"
        "  - id: cachelint-check\n  - id: cachelint-watch\n",
        encoding="utf-8",
    )
    green_through_both(git_repo)
    installed = pre_commit(git_repo, env, "install")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    refused_then_let_through(git_repo, lambda repo, msg: framework_commit(repo, env, msg))


def test_plain_hook_names_pytest_when_only_cachelint_run_saw_a_prompt_change(
    git_repo: Path,
) -> None:
    green_through_both(git_repo)
    refused_then_let_through(git_repo, lambda repo, msg: hook_commit(repo, msg))
