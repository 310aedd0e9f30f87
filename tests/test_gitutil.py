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
from tests.conftest import commit_all, git


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


@pytest.mark.parametrize("tagged", [False, True])
def test_stage_records_read_what_ls_files_writes(git_repo: Path, tagged: bool) -> None:
    (git_repo / "a\tb.txt").write_text("tab in the name\n")
    (git_repo / "sub").mkdir()
    (git_repo / "sub" / "x.json").write_text("{}\n")
    commit_all(git_repo)
    git(git_repo, "update-index", "--assume-unchanged", "sub/x.json")
    args = ["ls-files", "-z", "--stage", *(["-v"] if tagged else [])]
    listing = gitutil.run_git(args, cwd=git_repo).out
    parsed = [gitutil.stage_record(r) for r in listing.split(b"\0")]
    assert parsed[-1] is None  # after the last terminator
    expected = []
    for line in git(git_repo, "ls-files", "--stage", "-z").split("\0")[:-1]:
        meta, path = line.split("\t", 1)
        mode, object_id, number = meta.split(" ")
        expected.append((mode.encode(), object_id.encode(), number.encode(), path.encode()))
    assert parsed[:-1] == expected
    assert gitutil.stage_record(b"not a record") is None


@pytest.mark.parametrize(
    "out", [b"", b"a\0", b"a\0b/c\0", b"a\0b", b"\xff\xfe\0d\xc3\xa9\0", b"\0", b"a\0\0b\0"]
)
def test_iter_z_gives_split_z_s_paths_one_at_a_time(out: bytes) -> None:
    assert list(gitutil.iter_z(out)) == gitutil.split_z(out)
