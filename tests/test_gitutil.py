"""The background git calls: output through temporary files, and one clear line when those cannot
be written."""

from __future__ import annotations

import errno
import tempfile
from pathlib import Path
from typing import IO, Any

import pytest

from cachelint import gitutil
from cachelint.errors import CachelintError, GitError
from cachelint.gitutil import start_git


def test_a_large_listing_comes_back_whole(git_repo: Path) -> None:
    """Far more than a pipe holds (64 KiB) in and out, through the temp files."""
    paths = [f"eval-cache/{'d' * 40}/{i:06d}/entry.json" for i in range(20_000)]
    stdin = ("\0".join(paths) + "\0").encode()
    result = start_git(["check-attr", "-z", "--stdin", "text"], cwd=git_repo, stdin=stdin).result()
    assert result.out.count(b"\0text\0unspecified\0") == len(paths)
    assert result.out.startswith(paths[0].encode() + b"\0")


def test_a_failing_command_names_itself_and_its_stderr(git_repo: Path) -> None:
    with pytest.raises(GitError, match=r"`git cat-file -p nosuchobject` failed with exit code"):
        start_git(["cat-file", "-p", "nosuchobject"], cwd=git_repo).result()


def test_no_room_for_temp_files_is_one_line(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[IO[bytes]] = []
    real = tempfile.TemporaryFile

    def full_after_one(*args: Any, **kwargs: Any) -> IO[bytes]:
        if made:
            raise OSError(errno.ENOSPC, "No space left on device")
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(gitutil.tempfile, "TemporaryFile", full_after_one)
    with pytest.raises(CachelintError) as caught:
        start_git(["ls-files", "-z"], cwd=git_repo, stdin=b"x")
    message = str(caught.value)
    assert "\n" not in message
    assert "cannot write a temporary file for `git ls-files -z`" in message
    assert "No space left on device" in message and "TMPDIR" in message
    assert made[0].closed  # the one it did open is not left behind
