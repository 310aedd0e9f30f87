"""Cache file names git stores but other systems cannot check out or cachelint cannot match:
names that are not valid UTF-8 and `.git` directories in another case."""

from __future__ import annotations

import os
from pathlib import Path

from cachelint.globs import compile_globs, glob_matcher
from tests.conftest import commit_all, run_cachelint
from tests.helpers import put

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
