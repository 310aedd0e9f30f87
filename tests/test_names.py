"""Cache file names git stores but other systems cannot check out or cachelint cannot match:
names that are not valid UTF-8 and `.git` directories in another case."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from cachelint.globs import compile_globs, glob_matcher
from tests.conftest import commit_all, git, run_cachelint
from tests.helpers import assert_findings, put

LATIN1 = b"caf\xe9"  # "café" in Latin-1: not valid UTF-8


def undecodable(repo: Path, name: bytes = LATIN1) -> Path:
    """A committed cache file below a directory whose name is not valid UTF-8."""
    directory = os.fsencode(repo / "eval-cache" / "cache" / "agent" / "tenant") + b"/" + name
    os.makedirs(directory)
    with open(directory + b"/notes.txt", "wb") as f:
        f.write(b"x\n")
    return Path(os.fsdecode(directory))


def test_globs_match_a_name_that_is_not_utf8() -> None:
    path = os.fsdecode(b"eval-cache/" + LATIN1 + b"/notes.txt")
    assert compile_globs(["**/*.txt"]).match_file(path)
    assert glob_matcher(["eval-cache/**"])(path)
    assert not glob_matcher(["*.json"])(path)
    assert not glob_matcher(["caf\u00e9/**"])(path)  # a literal never names the bytes


def test_check_excludes_below_a_name_that_is_not_utf8(git_repo: Path) -> None:
    put(git_repo)
    undecodable(git_repo)
    (git_repo / "pyproject.toml").write_text('[tool.cachelint]\nexclude = ["**/*.txt"]\n')
    (git_repo / ".gitattributes").write_text("eval-cache/** -text\n")
    commit_all(git_repo)
    proc = run_cachelint(git_repo, "check")
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr
    assert "skipped by `exclude`" in proc.stdout


def test_a_name_that_is_not_utf8_is_a_finding(git_repo: Path) -> None:
    put(git_repo)
    undecodable(git_repo)
    commit_all(git_repo)
    [found] = assert_findings(git_repo, "eval-cache-windows-name")
    assert found.path == os.fsdecode(b"eval-cache/cache/agent/tenant/" + LATIN1)
    assert "b'caf\\xe9' is not valid UTF-8" in found.message
    assert "Windows and macOS" in found.message


@pytest.mark.parametrize("name", [".GIT", ".Git", ".git.", "GIT~1"])
def test_a_git_directory_in_another_spelling_gets_advice_git_accepts(
    git_repo: Path, name: str
) -> None:
    put(git_repo)
    (git_repo / ".gitattributes").write_text("eval-cache/** -text\n")
    commit_all(git_repo)
    hidden = git_repo / "eval-cache" / "cache" / "agent" / "tenant" / "hello" / name
    hidden.mkdir()
    (hidden / "notes.txt").write_text("x\n")
    (hidden / "more.txt").write_text("y\n")
    refused = subprocess.run(["git", "add", "--", "eval-cache"], cwd=git_repo, capture_output=True)
    assert b"invalid path" in refused.stderr  # what the old `git add` advice ran into
    proc = run_cachelint(git_repo, "check")
    assert "eval-cache-untracked" not in proc.stdout, proc.stdout
    [line] = [ln for ln in proc.stdout.splitlines() if "eval-cache-invisible" in ln]
    assert line.startswith(f"eval-cache/cache/agent/tenant/hello/{name}: "), line
    assert "2 files can never be committed" in line
    commands = [shlex.split(c) for c in re.findall(r"`((?:mv|git add) -- [^`]*)`", line)]
    assert [c[:2] for c in commands] == [["mv", "--"], ["git", "add"]]
    for command in commands:
        subprocess.run(command, cwd=git_repo, check=True, capture_output=True)
    renamed = commands[0][-1]
    assert git(git_repo, "status", "--porcelain", "--untracked-files=all") == (
        f"A  {renamed}/more.txt\nA  {renamed}/notes.txt\n"
    )
