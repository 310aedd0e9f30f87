"""Confined reads (issue 37, rule 1): every file cachelint reads from a repository is read by
`confine.read_inside`: below the repository through no link, never in `.git` or a credential
file, a regular file under a bound. A dataset is reviewed like data, so its `system-file` must
never be a way to publish CI's token or the API key into eval-results/."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from cachelint import collect as collect_module
from cachelint import confine
from cachelint.confine import TEXT_BYTES, OutsideRepository, is_dotgit, read_inside
from cachelint.errors import CachelintError
from tests.conftest import commit_all, git, run_cachelint
from tests.helpers import (
    DEAD,
    Outcome,
    cli,
    facts_of,
    make_checked_repo,
    record,
    refund,
    write_repo,
)

TOKEN = "ghs_TOKENPERSISTEDBYCHECKOUT0123456789ab"
API_KEY = "sk-proj-APIKEYFROMTHEENVFILE0123456789abcdefXYZ"


def replay(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Outcome:
    return cli(repo, monkeypatch, capsys, "--execution", "test")


def recorded(repo: Path) -> None:
    write_repo(repo, DEAD, {"support/acme/refund": refund(prompt="prompts/acme.md")})
    assert record(repo)[0].rc == 0
    commit_all(repo)


def point_system_file(repo: Path, target: str) -> None:
    path = repo / "eval-datasets/support/acme/refund.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["system-file"] = target
    path.write_text(json.dumps(data), encoding="utf-8")


def everything_written(repo: Path, outcome: Outcome) -> str:
    results = repo / "eval-results"
    files = [p for p in results.rglob("*") if p.is_file()] if results.exists() else []
    return outcome.out + outcome.err + "".join(p.read_text("utf-8", "replace") for p in files)


@pytest.fixture(autouse=True)
def _env(recording_env: None) -> None:
    """No key from outside, the clock pinned."""


@pytest.mark.parametrize("target", [".git/config", ".GIT/config", "./.git/./config"])
def test_a_system_file_in_git_is_refused_and_the_token_never_written(
    git_repo: Path, target: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    recorded(git_repo)
    git(git_repo, "config", "http.https://github.com/.extraheader", f"AUTHORIZATION: {TOKEN}")
    point_system_file(git_repo, target)
    outcome = replay(git_repo, monkeypatch, capsys)
    assert outcome.rc == 2, outcome.out
    assert "lies inside .git" in outcome.err and len(outcome.err.strip().splitlines()) == 1
    assert TOKEN not in everything_written(git_repo, outcome)


def test_a_system_file_naming_the_env_file_is_refused(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    recorded(git_repo)
    (git_repo / ".env.eval").write_text(f"CACHELINT_TEST_KEY={API_KEY}\n", encoding="utf-8")
    for target in (".env.eval", "prompts/../.env.eval", ".ENV.eval"):
        point_system_file(git_repo, target)
        outcome = replay(git_repo, monkeypatch, capsys)
        assert outcome.rc == 2, outcome.out
        assert API_KEY not in everything_written(git_repo, outcome)


def test_a_hard_link_to_the_env_file_is_refused(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    recorded(git_repo)
    (git_repo / "keys.txt").write_text(f"CACHELINT_TEST_KEY={API_KEY}\n", encoding="utf-8")
    set_env_file = (git_repo / "pyproject.toml").read_text("utf-8").replace(".env.eval", "keys.txt")
    (git_repo / "pyproject.toml").write_text(set_env_file, encoding="utf-8")
    os.link(git_repo / "keys.txt", git_repo / "prompts/innocent.md")
    point_system_file(git_repo, "prompts/innocent.md")
    outcome = replay(git_repo, monkeypatch, capsys)
    assert outcome.rc == 2 and "env-file keys.txt under another name" in outcome.err
    assert API_KEY not in everything_written(git_repo, outcome)


def test_a_dotenv_by_name_is_refused_even_when_no_env_file_is_configured(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(f"OPENAI_API_KEY={API_KEY}\n", encoding="utf-8")
    with pytest.raises(OutsideRepository, match="credential file by its name"):
        read_inside(tmp_path, ".env", "system-file", 1024)


def test_read_inside_refuses_links_special_files_and_oversized_files(tmp_path: Path) -> None:
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (outside / "secret").write_text("OUTSIDE", encoding="utf-8")
    (tmp_path / "dir").symlink_to(outside)
    (tmp_path / "link").symlink_to(outside / "secret")
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "big").write_bytes(b"x" * 2048)
    with pytest.raises(OutsideRepository, match="dir/secret .through dir.: is a symbolic link"):
        read_inside(tmp_path, "dir/secret", "x", 1024)
    with pytest.raises(OutsideRepository, match="link: is a symbolic link"):
        read_inside(tmp_path, "link", "x", 1024)
    with pytest.raises(OSError, match="FIFO"):
        read_inside(tmp_path, "pipe", "x", 1024)  # returns at once: never opened
    with pytest.raises(OSError, match="above the limit of 1024"):
        read_inside(tmp_path, "big", "x", 1024)
    with pytest.raises(OutsideRepository, match="leaves the repository"):
        read_inside(tmp_path / "dir", "../big", "x", 1024)


@pytest.mark.parametrize(
    "name", [".git", ".GIT", ".Git.", ".git ", "git~1", ".g\u200cit", "\ufeff.GIT.", ".git\u202e"]
)
def test_every_spelling_of_dotgit_is_dotgit(name: str) -> None:
    assert is_dotgit(name)
    assert not is_dotgit(".github") and not is_dotgit("git")


def test_no_ignorable_code_point_is_ascii() -> None:
    # is_dotgit takes an ASCII name as it is, without removing ignorable code points.
    assert min(confine._IGNORABLE) > 0x7F


# ---- the stamp and the attributes files: never a hang, never through a link ---------------------

STAMP = "eval-cache/.eval-cache-stamp.json"


def checked(repo: Path) -> Path:
    make_checked_repo(repo, attributes=True)
    commit_all(repo)
    return repo


def test_a_fifo_stamp_is_an_invalid_stamp_not_a_hang(git_repo: Path) -> None:
    checked(git_repo)
    (git_repo / STAMP).unlink()
    os.mkfifo(git_repo / STAMP)
    proc = run_cachelint(git_repo, "check")  # a hang would hit run_cachelint's timeout
    assert proc.returncode == 1 and "FIFO" in proc.stdout, proc.stdout + proc.stderr


def test_a_huge_stamp_is_not_read_whole(git_repo: Path) -> None:
    checked(git_repo)
    with open(git_repo / STAMP, "r+b") as fh:
        fh.truncate(TEXT_BYTES + 1)  # sparse: no disk used
    proc = run_cachelint(git_repo, "check")
    assert proc.returncode == 1 and "above the limit" in proc.stdout, proc.stdout + proc.stderr


def test_a_symlinked_stamp_is_not_read_through(git_repo: Path) -> None:
    checked(git_repo)
    real = git_repo / "elsewhere.json"
    (git_repo / STAMP).rename(real)
    (git_repo / STAMP).symlink_to(real)
    proc = run_cachelint(git_repo, "check")  # refused when the config loads, before any read
    assert proc.returncode == 2 and "symbolic link" in proc.stderr, proc.stdout + proc.stderr


def test_a_gitattributes_symlinked_to_dev_zero_is_not_read(git_repo: Path) -> None:
    checked(git_repo)
    (git_repo / ".gitattributes").unlink()
    (git_repo / ".gitattributes").symlink_to("/dev/zero")
    # It was read until memory ran out (exit 3). git (2.32 and later) does not follow a link to
    # .gitattributes in the working tree and takes the index's version: so does cachelint.
    proc = run_cachelint(git_repo, "check", "--select", "eval-cache-text-attr")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_fifo_gitattributes_in_the_cache_root_is_not_a_hang(git_repo: Path) -> None:
    checked(git_repo)
    # Racily clean entries (written no earlier than the index): git diff-files must read them,
    # and reads attributes to do so. A commit made within the second makes this by chance.
    ahead = time.time_ns() + 3600 * 10**9
    for entry in (git_repo / "eval-cache").rglob("*.json"):
        os.utime(entry, ns=(ahead, ahead))
    git(git_repo, "update-index", "--refresh")
    os.mkfifo(git_repo / "eval-cache/.gitattributes")
    # git check-attr, and diff-files if queued before the walk found the FIFO, waited forever.
    proc = run_cachelint(git_repo, "check")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "eval-cache/.gitattributes: is a FIFO" in proc.stderr


def test_a_fifo_gitattributes_stops_git_already_waiting_on_it(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """diff-files runs while Python walks (collect), so it may read the FIFO before the walk
    finds it: the check must end that git call, not wait for it forever."""
    checked(git_repo)
    ahead = time.time_ns() + 3600 * 10**9
    for entry in (git_repo / "eval-cache").rglob("*.json"):
        os.utime(entry, ns=(ahead, ahead))  # racily clean: diff-files reads attributes
    git(git_repo, "update-index", "--refresh")
    fifo = git_repo / "eval-cache/.gitattributes"
    os.mkfifo(fifo)
    real_walk = collect_module.walk_roots

    def slow_walk(*args: object, **kwargs: object) -> object:
        time.sleep(1.0)  # git has reached diff-files and waits on the FIFO
        return real_walk(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(collect_module, "walk_roots", slow_walk)
    raised: list[BaseException] = []
    checking = threading.Thread(target=lambda: _collect_into(git_repo, raised), daemon=True)
    checking.start()
    checking.join(timeout=30)
    if checking.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # releases git: EOF
        checking.join(timeout=30)
        pytest.fail("the check waited for a git call reading the FIFO")
    assert len(raised) == 1 and "is a FIFO" in str(raised[0]), raised


def test_a_fifo_info_attributes_is_not_a_hang(git_repo: Path) -> None:
    checked(git_repo)
    os.mkfifo(git_repo / ".git/info/attributes")  # git reads it for every path it checks
    proc = run_cachelint(git_repo, "check")
    assert proc.returncode == 2 and ".git/info/attributes: is a FIFO" in proc.stderr, proc.stderr


def _collect_into(repo: Path, raised: list[BaseException]) -> None:
    try:
        facts_of(repo)
    except CachelintError as exc:
        raised.append(exc)
