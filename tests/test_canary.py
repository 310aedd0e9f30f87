"""`run`'s offline canary: changes seen by stat (ctime cannot be set back), racy files by content,
and the contents it hands the green record equal to hashing every file."""

from __future__ import annotations

import json
import os
import shutil
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cachelint.canary import Canary, listing
from cachelint.config import load
from cachelint.green import cache_digest, cache_digests
from cachelint.hashing import SnapshotDiff, hash_file, snapshot
from cachelint.meai import make_skip
from tests.conftest import commit_all
from tests.helpers import DEAD, do_run, record, refund, write_repo

ROOTS = ["eval-cache", "meai-storage"]
TOPS = ["meai-storage/results"]
EXCLUDE = ["eval-cache/scratch/**"]
ENTRY = "eval-cache/cache/agent/tenant/s1/0123456789abcdef"


def _tree(repo: Path) -> None:
    entry = repo / ENTRY
    entry.mkdir(parents=True)
    (entry / "entry.json").write_bytes(b'{"key": "x"}\r\n')
    (entry / "contents.data").write_bytes(os.urandom(70_000))  # more than one read
    (repo / "eval-cache/scratch").mkdir()
    (repo / "eval-cache/scratch/log.txt").write_text("left out by exclude")
    os.symlink("../../elsewhere", repo / "eval-cache/cache/agent/tenant/link")
    os.mkfifo(repo / "eval-cache/cache/agent/tenant/fifo")
    (repo / os.fsdecode(b"eval-cache/cache/agent/tenant/caf\xe9")).write_text("undecodable name")
    (repo / "meai-storage/cache/S/1/KEY").mkdir(parents=True)
    (repo / "meai-storage/cache/S/1/KEY/contents.data").write_text("{}")
    (repo / "meai-storage/results/Default").mkdir(parents=True)
    (repo / "meai-storage/results/Default/1.json").write_text("left out as MEAI results")


def _settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files written before now count as settled (not racy): the stat path is what is tested.
    The pause puts the test's own writes a clock tick or more after the tree's."""
    monkeypatch.setattr("cachelint.canary.RACY_NS", 0)
    time.sleep(0.05)


def _read(canary: Canary, repo: Path, rel: str, digest: str | None = None) -> None:
    """What the store does for each file it reads."""
    path = os.path.join(repo, rel)
    with open(path, "rb") as f:
        data = f.read()
        canary.saw(path, os.fstat(f.fileno()), data, digest)


def test_an_untouched_tree_is_unchanged_and_its_contents_are_every_files_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(tmp_path)
    _settled(monkeypatch)
    canary = Canary(tmp_path, ROOTS, TOPS, EXCLUDE)
    canary.begin()
    assert canary.racy == {}
    _read(canary, tmp_path, f"{ENTRY}/entry.json")
    _read(canary, tmp_path, f"{ENTRY}/contents.data")
    assert not canary.mutations()
    skip = make_skip(TOPS, EXCLUDE)
    wanted = {root: cache_digest(snapshot(tmp_path, [root], skip)) for root in ROOTS}
    assert canary.digests() == wanted


def test_a_file_read_during_the_run_is_not_read_again_for_its_contents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(tmp_path)
    _settled(monkeypatch)
    canary = Canary(tmp_path, ROOTS, TOPS, EXCLUDE)
    canary.begin()
    told = "ab" * 32  # not the file's digest: only taken from what the store handed over
    _read(canary, tmp_path, f"{ENTRY}/contents.data", digest=told)
    assert not canary.mutations()
    wanted = snapshot(tmp_path, ["eval-cache"], make_skip(TOPS, EXCLUDE))
    assert wanted[f"{ENTRY}/contents.data"] != told
    wanted[f"{ENTRY}/contents.data"] = told
    assert canary.digests()["eval-cache"] == cache_digest(wanted)


def test_writes_removals_additions_and_metadata_changes_are_seen_by_stat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(tmp_path)
    _settled(monkeypatch)
    canary = Canary(tmp_path, ROOTS, TOPS, EXCLUDE)
    canary.begin()
    entry = tmp_path / ENTRY
    (entry / "entry.json").write_bytes(b'{"key": "y"}\r\n')  # same size, other bytes
    (entry / "contents.data").unlink()
    (entry / "stray.json").write_text("{}")
    os.chmod(tmp_path / "meai-storage/cache/S/1/KEY/contents.data", 0o600)
    (tmp_path / "eval-cache/scratch/log.txt").write_text("excluded: never looked at")
    change = canary.mutations()
    assert change.changed == (
        f"{ENTRY}/entry.json",
        "meai-storage/cache/S/1/KEY/contents.data",
    )
    assert change.removed == (f"{ENTRY}/contents.data",)
    assert change.added == (f"{ENTRY}/stray.json",)


def test_a_file_changed_just_before_the_run_is_compared_by_content(tmp_path: Path) -> None:
    # Written within RACY_NS of the first listing: a further change could keep its ctime.
    _tree(tmp_path)
    canary = Canary(tmp_path, ROOTS, TOPS, EXCLUDE)
    canary.begin()
    assert f"{ENTRY}/entry.json" in canary.racy
    entry = tmp_path / ENTRY
    (entry / "entry.json").write_bytes(b'{"key": "x"}\r\n')  # the same bytes again: unchanged
    (entry / "contents.data").write_bytes(b"x" * 70_000)
    assert canary.mutations().changed == (f"{ENTRY}/contents.data",)
    wanted = snapshot(tmp_path, ["eval-cache"], make_skip(TOPS, EXCLUDE))
    assert wanted[f"{ENTRY}/entry.json"] == hash_file(entry / "entry.json")
    assert canary.digests()["eval-cache"] == cache_digest(wanted)


def test_a_replay_reads_each_entry_once_and_pins_the_same_cache_digest(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A suite of a few hundred scenarios: the green record's cache digest, built from the bytes
    the run read, is the one hashing every file gives; each entry file is opened once."""
    scenarios = {f"support/acme/q{n:03d}": refund(prompt="prompts/acme.md") for n in range(300)}
    write_repo(git_repo, DEAD, scenarios)
    assert record(git_repo)[0].rc == 0
    commit_all(git_repo)
    _settled(monkeypatch)
    opened: list[str] = []
    real_open = os.open

    def counting_open(path: object, *args: object, **kw: object) -> int:
        opened.append(os.fsdecode(path))  # type: ignore[arg-type]
        return real_open(path, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", counting_open)
    outcome = do_run(git_repo, fmt="json")
    monkeypatch.setattr(os, "open", real_open)
    assert outcome.rc == 0, outcome.out + outcome.err
    entries = [p for p in opened if "/eval-cache/cache/" in p]
    # Every entry file read, once: a handful more opens per run (not per scenario) are the layout
    # guess reading a root's first entry.json.
    assert len(set(entries)) == 2 * 300 and len(entries) - 2 * 300 <= 10, len(entries)
    green = json.loads((git_repo / ".eval-green.json").read_text(encoding="utf-8"))
    assert green["cache"] == cache_digests(load(git_repo, None))


def test_the_digests_are_the_contents_cache_digests_taken_in_path_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The green record's digest per root, hashed as files are taken without a snapshot, is the
    one of hashing every file; a file read under a stat it no longer has is hashed again."""
    _tree(tmp_path)
    _settled(monkeypatch)
    canary = Canary(tmp_path, ROOTS, TOPS, EXCLUDE)
    canary.begin()
    _read(canary, tmp_path, f"{ENTRY}/entry.json")
    _read(canary, tmp_path, f"{ENTRY}/contents.data", digest="ab" * 32)  # trusted, as read
    assert not canary.mutations()
    skip = make_skip(TOPS, EXCLUDE)
    wanted = {root: snapshot(tmp_path, [root], skip) for root in ROOTS}
    wanted["eval-cache"][f"{ENTRY}/contents.data"] = "ab" * 32
    assert canary.digests() == {root: cache_digest(snap) for root, snap in wanted.items()}

    again = Canary(tmp_path, ROOTS, TOPS, EXCLUDE)
    again.begin()
    _read(again, tmp_path, f"{ENTRY}/contents.data", digest="ab" * 32)
    os.utime(tmp_path / ENTRY / "contents.data", ns=(1, 1))  # its stat is no longer as read
    assert again.mutations().changed == (f"{ENTRY}/contents.data",)
    wanted["eval-cache"][f"{ENTRY}/contents.data"] = hash_file(tmp_path / ENTRY / "contents.data")
    assert again.digests() == {root: cache_digest(snap) for root, snap in wanted.items()}


def _listings(monkeypatch: pytest.MonkeyPatch, repo: Path) -> list[str]:
    """The directories listed from now on (repo-relative), as the canary lists them."""
    listed: list[str] = []
    real_scandir = os.scandir

    def counting_scandir(path: str) -> Any:
        listed.append(Path(path).relative_to(repo).as_posix())
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", counting_scandir)
    return listed


def test_a_file_written_in_a_directory_whose_stat_is_unchanged_is_caught_without_listing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write into a file leaves its directory's stat as it was: the file's own `lstat` catches
    it, and no directory is listed again."""
    _tree(tmp_path)
    _settled(monkeypatch)
    canary = Canary(tmp_path, ROOTS, TOPS, EXCLUDE)
    canary.begin()
    with (tmp_path / ENTRY / "contents.data").open("r+b") as f:
        f.write(b"written in place")
    listed = _listings(monkeypatch, tmp_path)
    assert canary.mutations().changed == (f"{ENTRY}/contents.data",)
    assert listed == []


def _replace_entry(repo: Path) -> None:
    """The entry directory replaced by another holding the same names and bytes."""
    entry = repo / ENTRY
    copy = repo / "elsewhere"
    shutil.copytree(entry, copy)
    entry.rename(repo / "gone")
    copy.rename(entry)


@pytest.mark.parametrize(
    ("change", "listed", "changed", "added", "removed"),
    [
        (lambda e: (e / "stray.json").write_text("{}"), [ENTRY], [], ["stray.json"], []),
        (lambda e: (e / "entry.json").unlink(), [ENTRY], [], [], ["entry.json"]),
        (
            lambda e: (e / "entry.json").rename(e / "entry2.json"),
            [ENTRY],
            [],
            ["entry2.json"],
            ["entry.json"],
        ),
        (
            lambda e: _replace_entry(e.parents[5]),
            [ENTRY.rsplit("/", 1)[0], ENTRY],
            ["contents.data", "entry.json"],
            [],
            [],
        ),
    ],
    ids=["added", "removed", "renamed", "directory-replaced"],
)
def test_entries_added_removed_renamed_or_replaced_are_seen_by_the_directorys_stat(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    change: Callable[[Path], object],
    listed: list[str],
    changed: list[str],
    added: list[str],
    removed: list[str],
) -> None:
    """Each sets the ctime of the directory holding the entry: that directory (and a replaced
    one, whose inode differs) is listed again, and no other."""
    _tree(tmp_path)
    _settled(monkeypatch)
    canary = Canary(tmp_path, ROOTS, TOPS, EXCLUDE)
    canary.begin()
    change(tmp_path / ENTRY)
    seen = _listings(monkeypatch, tmp_path)
    found = canary.mutations()
    assert found.changed == tuple(f"{ENTRY}/{name}" for name in changed)
    assert found.added == tuple(f"{ENTRY}/{name}" for name in added)
    assert found.removed == tuple(f"{ENTRY}/{name}" for name in removed)
    assert seen == listed


def test_a_directory_changed_just_before_the_run_is_listed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A directory whose ctime is within RACY_NS of `begin` could take another entry within the
    same timestamp granule and keep its stat: it is listed again, as every directory is where
    `st_ctime` is not the change time (Windows)."""
    _tree(tmp_path)  # just written: every directory is racy
    canary = Canary(tmp_path, ROOTS, TOPS, EXCLUDE)
    canary.begin()
    listed = _listings(monkeypatch, tmp_path)
    assert not canary.mutations()
    assert ENTRY in listed and "eval-cache" in listed and "meai-storage" in listed
    every = len(listed)

    _settled(monkeypatch)
    canary.begin()
    listed.clear()
    assert not canary.mutations()
    assert listed == []

    monkeypatch.setattr("cachelint.canary.DIRECTORY_STAT_PROVES", False)
    canary.begin()
    listed.clear()
    assert not canary.mutations()
    assert len(listed) == every


def test_findings_are_the_difference_of_the_listings_before_and_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """However the tree changed, the findings are the paths two full listings differ by."""
    _tree(tmp_path)
    tenant = tmp_path / "eval-cache/cache/agent/tenant"
    for name in ("s2/KEY2", "s3", "s5/deep/er"):
        (tenant / name).mkdir(parents=True)
        (tenant / name / "a.json").write_text("{}")
    (tenant / "s3/f").write_text("a file, then a directory")
    _settled(monkeypatch)
    skip = make_skip(TOPS, EXCLUDE)
    before = listing(tmp_path, ROOTS, skip)
    canary = Canary(tmp_path, ROOTS, TOPS, EXCLUDE)
    canary.begin()
    shutil.rmtree(tenant / "s2")
    (tenant / "s4/new").mkdir(parents=True)
    (tenant / "s4/new/b.json").write_text("{}")
    (tenant / "s3/f").unlink()
    (tenant / "s3/f").mkdir()
    (tenant / "s3/f/g").write_text("{}")
    (tenant / "s5/deep").rename(tenant / "s5/moved")
    os.rename(tmp_path / ENTRY / "entry.json", tmp_path / ENTRY / "e.json")
    (tmp_path / "meai-storage/cache/S/1/KEY/contents.data").write_text("[]")
    after = listing(tmp_path, ROOTS, skip)
    assert canary.mutations() == SnapshotDiff(
        changed=tuple(sorted(p for p in before.keys() & after.keys() if before[p] != after[p])),
        added=tuple(sorted(after.keys() - before.keys())),
        removed=tuple(sorted(before.keys() - after.keys())),
    )


def test_the_digests_take_paths_in_sorted_order_whatever_the_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A directory's files come before or after a sibling file by the whole path ("x/f" after
    "x-y", before "x0"): the walk takes them in the order `cache_digest` sorts them."""
    root = tmp_path / "eval-cache"
    for name in ("x/f", "x/y/g", "x-y", "x.z", "x0", "x0d/h", "X", "\u00e9/i"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(name)
    _settled(monkeypatch)
    canary = Canary(tmp_path, ["eval-cache"], [], [])
    canary.begin()
    _read(canary, tmp_path, "eval-cache/x-y")
    assert not canary.mutations()
    assert canary.digests() == {"eval-cache": cache_digest(snapshot(tmp_path, ["eval-cache"]))}


def test_the_listing_holds_under_240_bytes_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A replay's cache, laid out as a suite's (a case directory, a key directory, two files):
    the listing, with the digest of every file the run read, takes under 240 bytes a file (208;
    a dict of paths to stats took 252)."""
    tenant = tmp_path / "eval-cache/cache/agent/tenant"
    files = []
    for n in range(1000):
        key = tenant / f"case{n:04d}" / f"{n:016x}"
        key.mkdir(parents=True)
        for name in ("entry.json", "contents.data"):
            (key / name).write_bytes(b"{}")
            files.append(f"{key.relative_to(tmp_path)}/{name}")
    _settled(monkeypatch)
    canary = Canary(tmp_path, ["eval-cache"], [], [])
    tracemalloc.start()
    try:
        canary.begin()
        for rel in files:
            _read(canary, tmp_path, rel)
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert held / len(files) < 240, held / len(files)
    assert not canary.mutations()
