"""Issue 37's cases that had no test of their own (the catalogue, tests/hostile_cases.py, maps
every case to its tests): a deeply nested entries-used.json, a linked eval-baselines.json, a
backtracking `watch` glob, the guard's documented blind spot, and a cache file swapped for a link
between check's walk and its hashing (not fixed: xfail strict). Real repositories, entries
recorded through the fake provider, the real CLI."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from cachelint import listing
from cachelint.collect import collect
from cachelint.config import load
from cachelint.green import Selector
from tests.conftest import PROJECT, commit_all, run_cachelint
from tests.helpers import BASIC, DEAD, NOW, put, record, write_repo


@pytest.fixture(autouse=True)
def _env(recording_env: None) -> None:
    """No key from outside, the clock pinned."""


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("cachelint: error: "), proc.stderr
    return proc.stderr


def recorded(repo: Path) -> Path:
    """BASIC recorded through the fake provider, results ignored, committed."""
    write_repo(repo, DEAD, BASIC)
    (repo / ".gitignore").write_text("/eval-results/\n", encoding="utf-8")
    outcome, _ = record(repo)
    assert outcome.rc == 0, outcome.out + outcome.err
    commit_all(repo)
    return repo


def entry_dirs(repo: Path) -> set[str]:
    return {str(p.parent) for p in (repo / "eval-cache").rglob("entry.json")}


def test_a_deeply_nested_entries_used_record_is_one_error_not_a_recursion_error(
    git_repo: Path,
) -> None:
    """Issue 37 (Medium, trust): a deep entries-used.json crashed prune and check (exit 3)."""
    recorded(git_repo)
    before = entry_dirs(git_repo)
    (git_repo / "eval-results/entries-used.json").write_text("[" * 200_000, encoding="utf-8")
    line = one_error_line(run_cachelint(git_repo, "prune", "--yes"))
    assert "eval-results/entries-used.json" in line
    assert entry_dirs(git_repo) == before
    line = one_error_line(run_cachelint(git_repo, "check", "--unused"))
    assert "eval-results/entries-used.json: cannot read the last run's entry list" in line


def test_a_linked_baselines_file_is_not_read_through(git_repo: Path, tmp_path: Path) -> None:
    """Issue 37 (Low): `run --baseline` read a symlinked eval-baselines.json."""
    recorded(git_repo)
    saved = run_cachelint(git_repo, "run", "--save-baseline", "main")
    assert saved.returncode == 0, saved.stdout + saved.stderr
    outside = tmp_path / "outside-baselines.json"
    shutil.move(git_repo / "eval-baselines.json", outside)
    (git_repo / "eval-baselines.json").symlink_to(outside)
    for args in (["run", "--baseline", "main"], ["report", "--baseline", "main"]):
        line = one_error_line(run_cachelint(git_repo, *args))
        assert "eval-baselines.json" in line and "symbolic link" in line, line


def test_a_backtracking_watch_glob_matches_a_long_name_fast(tmp_path: Path) -> None:
    """Issue 37 (Medium, config): `watch` globs were backtracking regexes; `exclude` is tested
    in test_config.py. The gate's own selector is what the hooks and `watch` match with."""
    pattern = "*" + "a*" * 30 + "b"
    (tmp_path / "pyproject.toml").write_text(f'[tool.cachelint]\nwatch = ["{pattern}"]\n')
    selector = Selector(load(tmp_path))
    started = time.monotonic()
    assert not selector.watched("prompts/" + "a" * 250)  # one file name git accepts
    assert time.monotonic() - started < 1  # backtracking took minutes
    assert selector.watched("prompts/" + "a" * 40 + "b")


# Where google-re2 is installed, pathspec picks it by itself, so the test above passes on the
# code before the fix too; the fix is that cachelint never falls back to the backtracking engine.
WITHOUT_RE2 = """
import sys
sys.modules["re2"] = None  # as if google-re2 were not installed
from pathlib import Path
from cachelint.config import load
from cachelint.green import Selector
print(Selector(load(Path(sys.argv[1]))).watched("prompts/" + "a" * 250))
"""


def test_without_re2_a_watch_glob_is_refused_not_matched_by_backtracking(tmp_path: Path) -> None:
    pattern = "*" + "a*" * 30 + "b"
    (tmp_path / "pyproject.toml").write_text(f'[tool.cachelint]\nwatch = ["{pattern}"]\n')
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_RE2, str(tmp_path)],
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
        capture_output=True,
        text=True,
        timeout=60,  # the backtracking engine takes minutes
    )
    assert done.returncode != 0 and done.stdout == "", done.stdout
    assert "re2" in done.stderr.splitlines()[-1], done.stderr


def test_the_security_docs_say_what_the_network_guard_cannot_see() -> None:
    """Issue 37 (Medium, guard): native-code connections in a python target's own process are
    not seen; the fix asked for is to say so plainly, and that `_armed` is no boundary."""
    readme = (PROJECT / "README.md").read_text(encoding="utf-8")
    assert "(docs/security.md)" in readme
    security = (PROJECT / "docs/security.md").read_text(encoding="utf-8")
    cannot_see = security.split("What it cannot see:", 1)[1].split("## ", 1)[0]
    assert "**Native code in the target's own process.**" in cannot_see
    assert "`ctypes`" in cannot_see and "connects without being refused or reported" in cannot_see
    assert "**not a security\nboundary**" in security or "**not a security boundary**" in security


def test_a_cache_file_swapped_for_a_link_during_check_is_not_hashed_through_it(
    git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 37 (Low): a cache file swapped for a symlink during check is hashed through the
    link. The link points at a file outside the repository holding the committed bytes, so the
    hash through it matches the index and the swapped file passes as unchanged."""
    (git_repo / ".gitattributes").write_text("eval-cache/** -text\n")
    put(git_repo)
    notes = git_repo / "eval-cache" / "notes.bin"
    notes.write_bytes(b"committed bytes\n")
    commit_all(git_repo)
    past = time.time() - 1000
    os.utime(notes, (past, past))  # stat data differs from the index: a candidate to hash
    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"committed bytes\n")
    really_modified = listing.really_modified

    def swapped_first(repo: Path, candidates: Any, recorded: dict[str, str]) -> set[str]:
        # The swap lands after the walk saw a regular file and before git hashes it.
        notes.unlink()
        notes.symlink_to(outside)
        return really_modified(repo, candidates, recorded)

    monkeypatch.setattr(listing, "really_modified", swapped_first)
    facts = collect(load(git_repo), now=NOW, entry_cache=False)
    assert notes.is_symlink()
    assert "eval-cache/notes.bin" in facts.modified
