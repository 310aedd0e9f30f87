"""The offline canary: proof that a replay changed no byte of the cache tree, reading it once.

`cachelint run` in a mode that does not record must leave the cache tree as it found it. Hashing
every file before and after the scenarios read each entry three times; instead (soundness argument:
docs/internals.md, "The offline canary"):

- before the first scenario, one `lstat` per file (`begin`): size, mtime and ctime in
  nanoseconds, inode, device and mode. A file changed so recently that a further change could keep
  its ctime (within `RACY_NS` of the clock, or in its future) is hashed now as well;
- while the scenarios run, the store hands over each file it reads with the `fstat` of the open
  file and the blake3 of the bytes it read (`saw`): the bytes a replay digested anyway;
- after them, one `lstat` per file again (`mutations`). A file whose stat is unchanged and was not
  racy is unchanged: writing a file's data or metadata sets its ctime to the current time, which no
  process can set back, and a file replaced by another has another inode. A racy file is hashed
  again and compared by content; a file whose stat changed is reported changed.

The green record pins a content digest of each root (`contents`): the digests of the bytes the run
read when the file's stat stayed what it was when read, a hash of the rest (files no scenario read).
"""

from __future__ import annotations

import os
import stat
import struct
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import blake3

from cachelint.config import Config
from cachelint.hashing import Snapshot, SnapshotDiff, hash_file, unreadable, walk_files
from cachelint.meai import make_skip, results_in_roots

# A file whose ctime is this close to the clock when the first listing starts (or past it) may be
# changed again within the same timestamp granule (the kernel's coarse clock ticks every 1-10 ms;
# some filesystems keep whole or even two seconds): its content is hashed instead of trusted.
RACY_NS = 2_000_000_000

# ctime_ns, mtime_ns, size, inode, device, mode of a regular file, packed (a bytes object is a
# third of a tuple of six ints, and a listing holds one per file of the tree); the content itself
# for a link ("symlink:<target>") or anything else ("special"), as `hashing.snapshot` has them.
_STAT = struct.Struct("<qqQQQI")
_READ = struct.Struct("<I")  # the length of a read file's name
Stat = bytes
Listing = dict[str, Stat | str]


def stat_key(info: os.stat_result) -> Stat:
    return _STAT.pack(
        info.st_ctime_ns, info.st_mtime_ns, info.st_size, info.st_ino, info.st_dev, info.st_mode
    )


def _ctime_ns(key: Stat) -> int:
    return int.from_bytes(key[:8], "little", signed=True)


def listing(repo: Path, roots: Sequence[str], skip: Callable[[str], bool] | None) -> Listing:
    """One `lstat` per file under each root (repo-relative paths, as `hashing.snapshot` names
    them); missing roots contribute nothing."""
    out: Listing = {}
    walk_files(repo, roots, skip, _entry_stat, out)
    return out


def _entry_stat(entry: os.DirEntry[str]) -> Stat:
    return stat_key(entry.stat(follow_symlinks=False))


class Canary:
    """The cache tree under `roots` before a replay, the files it read, and what changed."""

    def __init__(
        self, repo: Path, roots: Sequence[str], tops: Sequence[str], exclude: Sequence[str]
    ) -> None:
        self.repo = repo
        self.roots = list(roots)
        self.skip = make_skip(tops, exclude)
        self.before: Listing = {}
        self.racy: dict[str, str] = {}  # racy files: repo-relative path -> blake3 at `begin`
        # Each file the store read: path, fstat when read, blake3, packed one after another in one
        # buffer: the run holds them to its end, a few objects per read would hold several times
        # the bytes.
        self._reads = bytearray()
        self._prefix = os.path.join(os.fspath(repo), "")
        self._after: Listing | None = None

    @classmethod
    def of(cls, repo: Path, config: Config) -> Canary:
        """The canary of `cachelint run`: every cache root that exists, without `exclude` and
        MEAI's results."""
        roots = [c for c in config.cache if (repo / c).is_dir()]
        return cls(repo, roots, results_in_roots(config, present_only=False), config.exclude)

    def begin(self) -> None:
        """List the tree before the first scenario; hash the files changed too recently."""
        since = time.time_ns() - RACY_NS
        self.before = listing(self.repo, self.roots, self.skip)
        for path, seen in self.before.items():
            if isinstance(seen, bytes) and _ctime_ns(seen) >= since:
                self.racy[path] = self._hash(path)

    def saw(self, path: str, info: os.stat_result, data: bytes, digest: str | None) -> None:
        """The store read `data` from `path` (absolute), whose open file's stat was `info`;
        `digest` is its blake3 when the store computed one."""
        if "/." in path or "//" in path or os.sep != "/":
            path = os.path.normpath(path)
        if path.startswith(self._prefix):
            name = path[len(self._prefix) :].replace(os.sep, "/").encode("utf-8", "surrogateescape")
            raw = bytes.fromhex(digest) if digest else blake3.blake3(data).digest()
            self._reads += _READ.pack(len(name)) + name + stat_key(info) + raw

    def read(self) -> dict[str, tuple[Stat, str]]:
        """The files the store read: repo-relative path -> (fstat when read, blake3 hex)."""
        out: dict[str, tuple[Stat, str]] = {}
        view, at, size = memoryview(self._reads), 0, _STAT.size
        while at < len(view):
            (length,) = _READ.unpack_from(view, at)
            at += _READ.size
            name = bytes(view[at : at + length]).decode("utf-8", "surrogateescape")
            at += length
            out[name] = (bytes(view[at : at + size]), view[at + size : at + size + 32].hex())
            at += size + 32
        return out

    def mutations(self) -> SnapshotDiff:
        """What changed between `begin` and now: by stat, racy files by content."""
        after = self._after = listing(self.repo, self.roots, self.skip)
        before, self.before = self.before, {}  # not held while the reports are built
        if not self.racy and before == after:  # the usual run: compared at C speed
            return SnapshotDiff(changed=(), added=(), removed=())
        changed = []
        for path in before.keys() & after.keys():
            was, now = before[path], after[path]
            if path in self.racy:
                same = isinstance(now, bytes) and self._hash(path) == self.racy[path]
            else:
                same = was == now
            if not same:
                changed.append(path)
        return SnapshotDiff(
            changed=tuple(sorted(changed)),
            added=tuple(sorted(after.keys() - before.keys())),
            removed=tuple(sorted(before.keys() - after.keys())),
        )

    def contents(self) -> dict[str, Snapshot]:
        """Each root's content snapshot after the run (as `hashing.snapshot` takes it), for the
        green record; called after `mutations` found nothing. A file is hashed only when the run
        did not read it with the stat it has now."""
        after = (
            self._after if self._after is not None else listing(self.repo, self.roots, self.skip)
        )
        read = self.read()
        by_root: dict[str, Snapshot] = {root: {} for root in self.roots}
        tops = {root.replace(os.sep, "/").strip("/"): root for root in self.roots}
        for path, now in after.items():
            if isinstance(now, bytes):
                seen = read.get(path)
                if seen is not None and seen[0] == now and path not in self.racy:
                    digest = seen[1]
                else:
                    digest = self._hash(path)
            else:
                digest = now
            by_root[self._root_of(path, tops)][path] = digest
        self._after, self._reads = None, bytearray()
        return by_root

    @staticmethod
    def _root_of(path: str, tops: dict[str, str]) -> str:
        for top, root in tops.items():
            if path.startswith(top + "/"):
                return root
        raise AssertionError(f"{path} is under no cache root")  # listing names only those

    def _hash(self, path: str) -> str:
        full = os.path.join(self.repo, path)
        try:
            if not stat.S_ISREG(os.lstat(full).st_mode):
                return "special"
            return hash_file(full)
        except FileNotFoundError:
            return "removed"
        except OSError as exc:
            raise unreadable(path, exc) from None
