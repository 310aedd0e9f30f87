"""The entry cache against what the third hostile pass did to it (issue 37): it is never written
or read through a symlinked `.git/cachelint`, an oversized file is no cache, git's weakened stat
checks (`core.trustctime=false`, `core.checkStat=minimal`) do not hide an edit, a forged
entries.jsonl with the right object ids is not believed, a changed cache file above
max-entry-bytes is not hashed, and an unreadable entry directory is reported as unreadable, not
as deleted. Real repositories, real git."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson
import pytest

from cachelint import entrycache, listing
from cachelint.collect import collect
from cachelint.config import load
from cachelint.entrycache import CACHE_FILE, LISTING_FILE
from cachelint.facts import TreeFacts
from cachelint.rules import expiring
from cachelint.store import Entry
from tests.conftest import commit_all, git, run_cachelint
from tests.helpers import NOW, put

FIELDS = Entry._fields[: Entry._fields.index("request")]
Row = dict[str, Any]
LATER = datetime(2100, 1, 1, tzinfo=timezone.utc)  # every recorded entry has expired by then


@pytest.fixture
def repo(git_repo: Path) -> Path:
    (git_repo / ".gitattributes").write_text("eval-cache/** -text\n")
    put(git_repo, scenario="support/acme/a", text="one")
    put(git_repo, scenario="support/acme/b", text="two")
    commit_all(git_repo)
    return git_repo


def facts_of(repo: Path, *, now: datetime = NOW, entry_cache: bool = True) -> TreeFacts:
    return collect(load(repo), now=now, entry_cache=entry_cache)


def forge(repo: Path, change: Callable[[Row], Row]) -> None:
    """Edit every row of the cache file as a hand (or another clone's cachelint) would: the
    header and any other line kept byte for byte, the object ids in the kept listing untouched."""
    path = repo / ".git" / CACHE_FILE
    header, *lines = path.read_bytes().splitlines()
    out = [header]
    for line in lines:
        if not line.startswith(b"[["):
            out.append(line)
            continue
        columns = orjson.loads(line)
        rows = [
            change(dict(zip(FIELDS, values, strict=True))) for values in zip(*columns, strict=True)
        ]
        out.append(orjson.dumps([[row[field] for row in rows] for field in FIELDS]))
    path.write_bytes(b"\n".join(out) + b"\n")


def test_a_symlinked_cache_directory_is_never_written_through(repo: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (repo / ".git" / "cachelint").symlink_to(elsewhere, target_is_directory=True)
    result = run_cachelint(repo, "check", "--select", "eval-cache-corrupt")
    assert result.returncode == 0, result.stdout + result.stderr
    assert list(elsewhere.iterdir()) == []
    assert (repo / ".git" / "cachelint").is_symlink()


def test_a_symlinked_cache_directory_is_not_read_through(repo: Path, tmp_path: Path) -> None:
    facts_of(repo)  # writes the cache, in a real directory
    moved = tmp_path / "moved"
    shutil.move(repo / ".git" / "cachelint", moved)
    (repo / ".git" / "cachelint").symlink_to(moved, target_is_directory=True)
    assert entrycache.written_from(repo / ".git", load(repo).layout) == ""
    assert entrycache.load(repo / ".git", load(repo).layout).entries == {}


def test_an_oversized_cache_file_or_listing_is_no_cache(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cold = facts_of(repo, entry_cache=False)
    facts_of(repo)
    layout = load(repo).layout
    assert entrycache.load(repo / ".git", layout).entries  # signed, within bounds: used
    monkeypatch.setattr(entrycache, "MAX_FILE_BYTES", 64, raising=False)
    assert entrycache.load(repo / ".git", layout).entries == {}
    digest = entrycache.written_from(repo / ".git", layout)
    assert digest and entrycache.load_listing(repo / ".git", digest) is None
    assert facts_of(repo).entries == cold.entries


def test_a_forged_row_cannot_make_an_expired_entry_valid(repo: Path) -> None:
    cold = facts_of(repo, now=LATER, entry_cache=False)
    assert list(expiring.check(cold))  # on disk, every entry has expired by then
    facts_of(repo)
    forge(repo, lambda row: {**row, "expires": "2999-01-01T00:00:00Z", "maybe_secret": False})
    warm = facts_of(repo, now=LATER)
    assert warm.entries == cold.entries
    assert [f.message for f in expiring.check(warm)] == [f.message for f in expiring.check(cold)]


def test_a_cache_signed_by_another_clone_is_not_used(repo: Path, tmp_path: Path) -> None:
    facts_of(repo)
    forge(repo, lambda row: {**row, "scenario": "from-the-cache"})
    key = bytes.fromhex((repo / ".git" / entrycache.KEY_FILE).read_text())
    path = repo / ".git" / CACHE_FILE
    lines = [line + b"\n" for line in path.read_bytes().splitlines()[:-1]]
    path.write_bytes(b"".join(entrycache._signed(lines, key)))  # as that clone would sign it
    assert {e.scenario for e in facts_of(repo).entries} == {"from-the-cache"}  # its own: used

    clone = tmp_path / "clone"
    git(repo, "clone", "-q", str(repo), str(clone))
    git(clone, "config", "core.autocrlf", "false")
    facts_of(clone)  # this clone's own key and cache
    for name in (CACHE_FILE, LISTING_FILE):
        shutil.copy(repo / ".git" / name, clone / ".git" / name)  # as a restored CI cache would
    assert "from-the-cache" not in {e.scenario for e in facts_of(clone).entries}


def test_weakened_stat_checks_do_not_hide_a_same_size_edit(repo: Path) -> None:
    git(repo, "config", "core.trustctime", "false")
    git(repo, "config", "core.checkStat", "minimal")
    entry_json = next((repo / "eval-cache").rglob("entry.json"))
    past = time.time() - 1000  # so the index entry is not racily clean: git trusts its stat data
    os.utime(entry_json, (past, past))
    git(repo, "update-index", "--refresh")
    facts_of(repo)  # the cache now holds the entry
    # git compares whole seconds of ctime (nanoseconds only when built with USE_NSEC): the edit
    # comes in a later second than the index's record, as any edit but an immediate one does.
    time.sleep(1.1)
    before = entry_json.stat()
    text = entry_json.read_text()
    edited = text.replace('"provider": "openai"', '"provider": "OPENAI"')
    assert edited != text and len(edited) == len(text)
    entry_json.write_text(edited)
    os.utime(entry_json, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert git(repo, "diff-files", "--name-only") == ""  # git's own check, so configured, misses it
    facts = facts_of(repo)
    assert "OPENAI" in {e.provider for e in facts.entries}
    assert entry_json.relative_to(repo).as_posix() in facts.modified


def test_a_changed_cache_file_above_max_entry_bytes_is_not_hashed(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (repo / "pyproject.toml").write_text("[tool.cachelint]\nmax-entry-bytes = 1024\n")
    big = repo / "eval-cache" / "notes.bin"
    big.write_bytes(b"x" * 2000)
    small = repo / "eval-cache" / "small.bin"
    small.write_bytes(b"y" * 10)
    commit_all(repo)
    big.write_bytes(b"z" * 3000)
    small.write_bytes(b"w" * 10)
    hashed: list[str] = []
    really_modified = listing.really_modified

    def spy(repo_: Path, candidates: Any, recorded: dict[str, str]) -> set[str]:
        hashed.extend(candidates)
        return really_modified(repo_, candidates, recorded)

    monkeypatch.setattr(listing, "really_modified", spy)
    facts = facts_of(repo)
    assert hashed == ["eval-cache/small.bin"]
    assert {"eval-cache/notes.bin", "eval-cache/small.bin"} <= facts.modified


def entry_dir(repo: Path, scenario: str) -> Path:
    return next((repo / "eval-cache" / "cache" / "support" / "acme" / scenario).iterdir())


def findings(repo: Path) -> subprocess.CompletedProcess[str]:
    return run_cachelint(
        repo, "check", "--no-cache", "--select", "eval-cache-corrupt,eval-cache-missing"
    )


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads any directory")
def test_an_unreadable_entry_directory_is_reported_as_unreadable(repo: Path) -> None:
    directory = entry_dir(repo, "a")
    directory.chmod(0)
    try:
        result = findings(repo)
    finally:
        directory.chmod(0o755)
    rel = directory.relative_to(repo).as_posix()
    assert "eval-cache-missing" not in result.stdout, result.stdout
    assert f"{rel}: eval-cache-corrupt: directory cannot be read (Permission denied)" in (
        result.stdout
    )


def test_a_directory_the_walk_cannot_list_is_not_reported_as_deleted(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same as the test above for a run as root, which reads any directory: the listing's
    refusal comes from the operating system, so it is raised there."""
    directory = entry_dir(repo, "a")
    rel = directory.relative_to(repo).as_posix()
    scandir = os.scandir

    def refusing(path: Any = ".") -> Any:
        if str(path).endswith(rel):
            raise PermissionError(13, "Permission denied", str(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", refusing)
    facts = facts_of(repo, entry_cache=False)
    assert not facts.gone
    assert facts.corrupt == [
        (
            rel,
            "directory cannot be read (Permission denied), so nothing under it was checked; "
            "make it readable (chmod u+rx) and check again",
        )
    ]
