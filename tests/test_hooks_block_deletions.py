"""No hook lets a broken cache through: a commit that deletes a whole entry directory or one file
of an entry, or that stages a changed contents.data without its entry.json, is refused by the
plain git hook and by the pre-commit framework's `cachelint-check`, through a real `git commit`.
The framework never passes a deleted path to a hook, so its hook runs on every commit and reads
the staged change itself."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import commit_all, git
from tests.helpers import framework_commit, framework_env, head
from tests.helpers import hook_commit as plain_commit
from tests.trees import copy_bundled, entry_dirs


def delete_directory(repo: Path) -> str:
    gone = entry_dirs(repo)[0].relative_to(repo).as_posix()
    git(repo, "rm", "-r", "-q", gone)
    return "eval-cache-unstamped"


def delete_one_file(repo: Path) -> str:
    gone = (entry_dirs(repo)[0] / "contents.data").relative_to(repo).as_posix()
    git(repo, "rm", "-q", gone)
    return "eval-cache-corrupt"


def stage_contents_alone(repo: Path) -> str:
    contents = entry_dirs(repo)[0] / "contents.data"
    contents.write_bytes(b'{"choices": []}\n')
    git(repo, "add", str(contents.relative_to(repo)))
    return "eval-cache-corrupt"


BREAKAGES = [
    pytest.param(delete_directory, id="whole-entry-directory"),
    pytest.param(delete_one_file, id="one-file-of-an-entry"),
    pytest.param(stage_contents_alone, id="contents-without-entry-json"),
]


@pytest.mark.parametrize("breakage", BREAKAGES)
def test_the_plain_hook_blocks_the_commit(git_repo: Path, breakage: Callable[[Path], str]) -> None:
    repo = copy_bundled(git_repo)
    before = head(repo)
    code = breakage(repo)
    blocked = plain_commit(repo, "break the cache")
    assert blocked.returncode == 1, blocked.stdout + blocked.stderr
    assert f": {code}:" in blocked.stdout + blocked.stderr
    assert head(repo) == before


def test_the_plain_hook_lets_a_re_stamped_deletion_through(git_repo: Path) -> None:
    repo = copy_bundled(git_repo)
    delete_directory(repo)
    subprocess.run([sys.executable, "-m", "cachelint", "stamp"], cwd=repo, check=True)
    git(repo, "add", "-A")
    done = plain_commit(repo, "prune an entry on purpose, re-stamped")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_framework_hook_blocks_every_breakage(
    git_repo: Path, hook_source: tuple[Path, str], pre_commit_home: Path
) -> None:
    src, rev = hook_source
    repo = copy_bundled(git_repo)
    env = framework_env(pre_commit_home)
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {src}\n  rev: {rev}\n  hooks:\n  - id: cachelint-check\n"
    )
    commit_all(repo, "hooks")
    installed = subprocess.run(
        [sys.executable, "-m", "pre_commit", "install"], cwd=repo, env=env, capture_output=True
    )
    assert installed.returncode == 0, installed.stderr
    for breakage in (delete_directory, delete_one_file, stage_contents_alone):
        before = head(repo)
        code = breakage(repo)
        blocked = framework_commit(repo, env, "break the cache")
        assert blocked.returncode == 1, blocked.stdout + blocked.stderr
        assert f": {code}:" in blocked.stdout + blocked.stderr
        assert head(repo) == before
        git(repo, "reset", "-q", "--hard")

    # A commit that touches nothing relevant still passes (the hook runs, finds nothing to lint).
    (repo / "notes.md").write_text("notes\n")
    git(repo, "add", "notes.md")
    done = framework_commit(repo, env, "notes")
    assert done.returncode == 0, done.stdout + done.stderr
