"""A committed cache file is "modified" by content, not by stat: a touched file is not, an edited
one is, and git's index is listed once for the check (the candidates are then hashed here)."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from cachelint.collect import collect
from cachelint.config import load
from tests.conftest import commit_all, git
from tests.helpers import NOW, put


def _git_logging_to(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Put a `git` first on PATH that logs its arguments, then runs the real git."""
    real = shutil.which("git")
    assert real is not None
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "git.log"
    shim = bin_dir / "git"
    shim.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{real}" "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return log


def test_modified_files_need_one_ls_files_stage(
    git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(3):
        put(git_repo, f"agent/tenant/s{i}", text=f"answer {i}")
    commit_all(git_repo)
    changed, touched, *_ = sorted((git_repo / "eval-cache").rglob("contents.data"))
    changed.write_text(changed.read_text() + " ")
    os.utime(touched, (1, 1))  # diff-files lists it, the content is unchanged
    log = _git_logging_to(tmp_path, monkeypatch)
    facts = collect(load(git_repo), now=NOW)
    assert facts.modified == {changed.relative_to(git_repo).as_posix()}
    calls = [c.split() for c in log.read_text().splitlines()]
    # the candidates were checked by content, hashed here from bytes read without following links
    assert not any(c[0] == "hash-object" for c in calls)
    # the index is listed once per check, whatever its other flags
    assert len([c for c in calls if c[0] == "ls-files" and "--stage" in c]) == 1


def test_a_sha256_repository_is_compared_in_its_own_object_ids(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main", "--object-format=sha256")
    git(repo, "config", "core.autocrlf", "false")
    for i in range(2):
        put(repo, f"agent/tenant/s{i}", text=f"answer {i}")
    commit_all(repo)
    changed, touched = sorted((repo / "eval-cache").rglob("contents.data"))
    changed.write_text(changed.read_text() + " ")
    os.utime(touched, (1, 1))
    facts = collect(load(repo), now=NOW)
    assert facts.modified == {changed.relative_to(repo).as_posix()}
