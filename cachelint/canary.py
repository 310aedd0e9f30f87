"""The offline canary: proof that a replay changed no byte of the cache tree, reading it once.

`cachelint run` in a mode that does not record must leave the cache tree as it found it. Hashing
every file before and after the scenarios read each entry three times; instead (soundness argument:
docs/internals.md, "The offline canary"):

- before the first scenario, one `lstat` per file (`begin`): size, mtime and ctime in
  nanoseconds, inode, device and mode. A file changed so recently that a further change could keep
  its ctime (within `RACY_NS` of the clock, or in its future) is hashed now as well;
- while the scenarios run, the store hands over each file it reads with the `fstat` of the open
  file and the blake3 of the bytes it read (`saw`): the bytes a replay digested anyway, kept
  beside the file's first stat when it was read under that stat;
- after them, one `lstat` per file again (`mutations`), each compared with the first as the walk
  lists it (a second listing is not held). A file whose stat is unchanged and was not
  racy is unchanged: writing a file's data or metadata sets its ctime to the current time, which no
  process can set back, and a file replaced by another has another inode. A racy file is hashed
  again and compared by content; a file whose stat changed is reported changed.

The green record pins a content digest of each root (`digests`): the digests of the bytes the run
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
from cachelint.hashing import SnapshotDiff, hash_file, unreadable, walk_files
from cachelint.meai import make_skip, results_in_roots

# A file whose ctime is this close to the clock when the first listing starts (or past it) may be
# changed again within the same timestamp granule (the kernel's coarse clock ticks every 1-10 ms;
# some filesystems keep whole or even two seconds): its content is hashed instead of trusted.
RACY_NS = 2_000_000_000

# ctime_ns, mtime_ns, size, inode, device, mode of a regular file, packed (a bytes object is a
# third of a tuple of six ints, and a listing holds one per file of the tree); the content itself
# for a link ("symlink:<target>") or anything else ("special"), as `hashing.snapshot` has them.
_STAT = struct.Struct("<qqQQQI")
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
        # path -> stat at `begin`; a file the store read with that same stat holds the blake3 of
        # the bytes it read after it (`saw`): the run holds one object per file, whatever it read.
        self.before: Listing = {}
        self.racy: dict[str, str] = {}  # racy files: repo-relative path -> blake3 at `begin`
        self._prefix = os.path.join(os.fspath(repo), "")
        # True once `mutations` walked the tree again and found every file's stat as at `begin`.
        self._unchanged = False

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
        `digest` is its blake3 when the store computed one. Kept only when the file's stat is
        the one `begin` listed: a file read with another changed since, and `mutations` says so."""
        if "/." in path or "//" in path or os.sep != "/":
            path = os.path.normpath(path)
        if not path.startswith(self._prefix):
            return
        name = path[len(self._prefix) :].replace(os.sep, "/")
        listed = self.before.get(name)
        if isinstance(listed, bytes) and listed[: _STAT.size] == stat_key(info):
            raw = bytes.fromhex(digest) if digest else blake3.blake3(data).digest()
            self.before[name] = listed[: _STAT.size] + raw

    def mutations(self) -> SnapshotDiff:
        """What changed between `begin` and now: by stat, racy files by content. The tree is
        walked again and each file compared as it is listed, not held as a second listing."""
        compared = _Compared(self.before, self.racy, self._hash)
        walk_files(self.repo, self.roots, self.skip, _entry_stat, compared)
        if not compared.changed and not compared.added and compared.matched == len(self.before):
            self._unchanged = True
            return SnapshotDiff(changed=(), added=(), removed=())
        # Something changed (a failing run): listed whole, as it is now, for the findings.
        after = listing(self.repo, self.roots, self.skip)
        before = self.before
        changed = [p for p in before.keys() & after.keys() if not compared.same(p, after[p])]
        return SnapshotDiff(
            changed=tuple(sorted(changed)),
            added=tuple(sorted(after.keys() - before.keys())),
            removed=tuple(sorted(before.keys() - after.keys())),
        )

    def digests(self) -> dict[str, str]:
        """Each root's content digest after the run (`green.cache_digest` of the snapshot
        `hashing.snapshot` would take), for the green record: hashed as the files are taken in
        path order, never held as a snapshot. A file is hashed only when the run did not read
        it with the stat it has now."""
        from cachelint.green import pairs_digest

        listed = self._now()
        out = {
            root: pairs_digest((path, self._digest(path, listed[path])) for path in sorted(paths))
            for root, paths in self._by_root(listed).items()
        }
        self.release()
        return out

    def release(self) -> None:
        """Drop the listing and what the run read (not held while the reports are written)."""
        self.before, self._unchanged = {}, False

    def _now(self) -> Listing:
        """The tree as it is now: the first listing when `mutations` found every stat unchanged
        (the usual run), else listed again."""
        return self.before if self._unchanged else listing(self.repo, self.roots, self.skip)

    def _by_root(self, listed: Listing) -> dict[str, list[str]]:
        tops = {root.replace(os.sep, "/").strip("/"): root for root in self.roots}
        paths: dict[str, list[str]] = {root: [] for root in self.roots}
        for path in listed:
            paths[self._root_of(path, tops)].append(path)
        return paths

    def _digest(self, path: str, now: Stat | str) -> str:
        """The content digest of a file whose stat is `now`: the one of the bytes the run read
        when they were read under that stat, else hashed here."""
        if not isinstance(now, bytes):
            return now
        known = self.before.get(path)
        if (
            isinstance(known, bytes)
            and len(known) > _STAT.size
            and known[: _STAT.size] == now[: _STAT.size]
            and path not in self.racy
        ):
            return known[_STAT.size :].hex()
        return self._hash(path)

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


class _Compared(dict[str, "Stat | str"]):
    """A second listing that keeps nothing: each file the walk lists is compared with the first
    listing there and then (`walk_files` stores into it), only whether anything differs kept."""

    def __init__(self, before: Listing, racy: dict[str, str], hasher: Callable[[str], str]):
        super().__init__()
        self.before, self.racy, self._hash = before, racy, hasher
        self.matched = 0  # files of the first listing listed again
        self.changed = self.added = False

    def __setitem__(self, path: str, now: Stat | str) -> None:
        if path not in self.before:
            self.added = True
            return
        self.matched += 1
        if not self.changed and not self.same(path, now):
            self.changed = True

    def same(self, path: str, now: Stat | str) -> bool:
        """Whether `path`, whose stat is `now`, is as `begin` listed it."""
        was = self.before[path]
        if path in self.racy:
            return isinstance(now, bytes) and self._hash(path) == self.racy[path]
        if isinstance(was, bytes) and isinstance(now, bytes):
            return was[: _STAT.size] == now
        return was == now
