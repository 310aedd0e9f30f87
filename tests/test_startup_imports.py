"""What a replay's start-up imports: only what it uses (each module costs every `cachelint run`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import PROJECT, commit_all
from tests.helpers import BASIC, DEAD, record, write_repo


def test_run_and_git_helpers_load_no_thread_pool() -> None:
    # concurrent.futures (~5 ms) serves `check`'s git queue only; a replay never builds one.
    probe = "import sys, cachelint.runner.pipeline, cachelint.gitutil; print(sorted(sys.modules))"
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert "'concurrent.futures'" not in loaded


# What `check` parses or opens only when the tree has it: a check of a recorded cache with no
# SQLite cassette, no `normalise`/`redact` rules and no run settings never loads these.
_CHECK_DEFERS = (
    "sqlite3",  # cachelint.sqlite_cache: only when a cassette file is there
    "cachelint.rewrites",  # `normalise` rules
    "cachelint.redact",  # `redact` rules
    "cachelint.settings",  # `reports`, `prices`, `interpretations`
    "cachelint.passpolicy",  # `trials-pass`
)


def _modules_after(
    git_repo: Path, command: str
) -> tuple[str, list[str], subprocess.CompletedProcess[str]]:
    """The exit code of `cachelint COMMAND` run in a fresh interpreter in `git_repo`, the modules
    it had loaded by then, and the process (its output for a failing assertion)."""
    probe = (
        f"import sys\nfrom cachelint.cli import main\nrc = main([{command!r}])\n"
        "print(); print(rc, ' '.join(sorted(sys.modules)))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=git_repo,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    rc, loaded = proc.stdout.splitlines()[-1].split(" ", 1)
    return rc, loaded.split(), proc


def recorded(git_repo: Path) -> None:
    """The basic suite recorded through the fake provider, and committed."""
    write_repo(git_repo, DEAD, BASIC)
    outcome, _ = record(git_repo)
    assert outcome.rc == 0, outcome.out + outcome.err
    commit_all(git_repo, "recorded")


def test_check_of_a_plain_recorded_cache_loads_no_feature_it_lacks(git_repo: Path) -> None:
    recorded(git_repo)
    rc, loaded, proc = _modules_after(git_repo, "check")
    assert rc in ("0", "1"), proc.stdout + proc.stderr  # 1: the unstamped tree's findings
    assert "cachelint.rules.unredacted" in loaded  # every rule ran
    assert [m for m in _CHECK_DEFERS if m in loaded] == []


# What a plain replay (a chat target, answered from the cache, text output, no judges, matrix,
# baseline, shard, --failed or --verbose) never calls, so never loads: each is ~1-3 ms of every run.
_REPLAY_DEFERS = (
    "hashlib",  # OpenSSL (~3 ms): SARIF fingerprints, --shard; a temp name reads os.urandom
    "traceback",  # an internal error's traceback, with --verbose
    "difflib",  # a miss message's closest entry and what differs
    "cachelint.secretscan",  # the scanner: recording and `check` (a run masks with masks.py)
    "cachelint.rewrites",  # `normalise` rules
    "cachelint.redact",  # `redact` rules
    "cachelint.runner.providers",  # the SDK APIs besides chat completions, and the live transport
    "cachelint.runner.review",  # --compare's re-record review
    "cachelint.runner.reports.reviewviews",
    "cachelint.runner.reports.prformats",  # --format markdown, github
    "cachelint.runner.reports.matrixviews",  # a run of several targets
    "cachelint.runner.assertions.pii",  # no-pii assertions
    "cachelint.runner.baselines",  # --baseline, --save-baseline
    "sysconfig",  # python assertions
    "cachelint.runner.reports.held",  # a run or report of more than 5,000 scenarios
    "cachelint.spool",
    "cachelint.runner.metrics",  # python assertions' metrics
)


def test_a_plain_replay_loads_no_module_it_never_calls(git_repo: Path) -> None:
    recorded(git_repo)
    rc, loaded, proc = _modules_after(git_repo, "run")
    assert rc == "0", proc.stdout + proc.stderr
    assert "cachelint.runner.reports.htmlreport" in loaded  # the page was written
    assert [m for m in _REPLAY_DEFERS if m in loaded] == []
