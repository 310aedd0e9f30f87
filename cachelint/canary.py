"""The offline canary: proof that a replay changed no byte of the cache tree, reading it once.

`cachelint run` in a mode that does not record must leave the cache tree as it found it. Hashing
every file before and after the scenarios read each entry three times; instead (soundness argument:
docs/internals.md, "The offline canary"):

- before the first scenario, one `stat` per directory and one `lstat` per file (`begin`): size,
  mtime and ctime in nanoseconds, inode, device and mode. A file changed so recently that a
  further change could keep its ctime (within `RACY_NS` of the clock, or in its future) is hashed
  now as well;
- while the scenarios run, the store hands over each file it reads with the `fstat` of the open
  file and the blake3 of the bytes it read (`saw`): the bytes a replay digested anyway, kept
  beside the file's first stat when it was read under that stat;
- after them (`mutations`), each directory's stat again. A directory whose stat is unchanged and
  was not racy holds the entries it held: adding, removing or renaming an entry sets the
  directory's ctime to the current time, which no process can set back, and a directory replaced
  by another has another inode. Its files are `lstat`ed by the names listed before, without
  listing it again; any other directory is listed again. A file whose stat is unchanged and was
  not racy is unchanged, for the same reason; a racy file is hashed again and compared by
  content; a file whose stat changed is reported changed.

The green record pins a content digest of each root (`digests`): the digests of the bytes the run
read when the file's stat stayed what it was when read, a hash of the rest (files no scenario read).
"""

from __future__ import annotations

import os
import stat
import struct
import time
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import blake3

from cachelint.config import Config
from cachelint.hashing import SnapshotDiff, entries, hash_file, unreadable, walk_files
from cachelint.meai import make_skip, results_in_roots

# A file whose ctime is this close to the clock when the first listing starts (or past it) may be
# changed again within the same timestamp granule (the kernel's coarse clock ticks every 1-10 ms;
# some filesystems keep whole or even two seconds): its content is hashed instead of trusted.
RACY_NS = 2_000_000_000

# Whether a directory's unchanged stat proves its entries unchanged. Not on Windows, where
# `st_ctime` is the creation time (Python 3.12 deprecates it, 3.13 still returns it) and the
# mtime a directory's changes set can be set back: every directory is listed again there.
DIRECTORY_STAT_PROVES = os.name != "nt"

# ctime_ns, mtime_ns, size, inode, device, mode, packed (a bytes object is a third of a tuple of
# six ints, and a listing holds one per file of the tree).
_STAT = struct.Struct("<qqQQQI")
Stat = bytes
Listing = dict[str, Stat | str]
_DIGEST = 32  # the blake3 of a file's bytes
_FILE = _STAT.size + _DIGEST  # a file's record: its stat, then the digest of what the run read
_UNREAD = bytes(_DIGEST)  # a file the run has not read (under that stat)
_ABSENT = bytes(_STAT.size)  # a root that is not there, or not a directory
_OFFSET_BITS = 48  # a record's offset in `_Tree.packed`, under a path hash (`_Build.done`)
_OFFSET_MASK = (1 << _OFFSET_BITS) - 1


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


def _rel(root: str) -> str:
    return root.replace(os.sep, "/").strip("/")


# A directory's entry: its key (its name, a directory's with "/" after it: the key in whose order
# a walk's paths come out sorted), the entry, its path and its value (None: a directory).
Entry = tuple[str, os.DirEntry[str], str, "Stat | str | None"]


def _entries(directory: str, rel: str, skip: Callable[[str], bool] | None) -> list[Entry]:
    """A directory's entries as `hashing.walk_files` takes them, sorted by key."""
    out = [
        (entry.name if value is not None else entry.name + "/", entry, path, value)
        for entry, path, value in entries(directory, rel, skip, _entry_stat)
    ]
    out.sort()
    return out


class _Tree:
    """The tree under the roots at `begin`, packed (a large suite's cache holds 200,000 files).

    `packed` holds the tree in path order: a directory's stat, then its entries, a file as its
    stat and the blake3 of the bytes the run read of it (zeros until then), a subdirectory as a
    directory. `names` holds each directory's entry keys in that order, joined by NUL (one string
    for every directory that lists the same names). A link's or FIFO's value is kept by path in
    `others`, its record zeros. `find` looks a file up by its path's hash, sorted with its
    record's offset in `hashes` and `offsets`, and the stat it was read with."""

    def __init__(self) -> None:
        self.packed = bytearray()
        self.names: list[str] = []
        self.others: dict[str, str] = {}
        self.hashes = array("q")
        self.offsets = array("q")

    def find(self, path: str, key: Stat) -> int | None:
        """The offset of the record of `path`'s file listed with stat `key`. Two paths of one
        hash with one stat are links to one inode: either one's record may take the digest."""
        wanted = hash(path)
        at = bisect_left(self.hashes, wanted)
        while at < len(self.hashes) and self.hashes[at] == wanted:
            offset = self.offsets[at]
            if self.packed[offset : offset + _STAT.size] == key:
                return offset
            at += 1
        return None

    def digest(self, offset: int) -> bytearray:
        """The blake3 of the bytes the run read of the file at `offset` (zeros: none)."""
        return self.packed[offset + _STAT.size : offset + _FILE]


class _Build:
    """Packs the tree as `begin` lists it into a `_Tree`."""

    def __init__(self, skip: Callable[[str], bool] | None, since: int) -> None:
        self.tree = _Tree()
        self.skip, self.since = skip, since
        self.fresh: list[str] = []  # files whose ctime is within RACY_NS of the listing's start
        self._names: dict[str, str] = {}  # one string per distinct list of names
        # Each file's path hash, its record's offset in the low bits: sorted, the index of `find`.
        self._index: list[int] = []

    def directory(self, directory: str, rel: str) -> None:
        # The stat before the entries: an entry added after it sets a later ctime.
        key = _directory_stat(directory, rel)
        entries = _entries(directory, rel, self.skip) if key != _ABSENT else []
        tree = self.tree
        tree.packed += key
        names = "\0".join([name for name, _, _, _ in entries])
        tree.names.append(self._names.setdefault(names, names))
        for _, entry, path, value in entries:
            if value is None:
                self.directory(entry.path, path)
            else:
                self._file(path, value)

    def _file(self, path: str, value: Stat | str) -> None:
        tree = self.tree
        if isinstance(value, str):
            tree.others[path] = value
            tree.packed += bytes(_FILE)
            return
        self._index.append(hash(path) << _OFFSET_BITS | len(tree.packed))
        tree.packed += value
        tree.packed += _UNREAD
        if _ctime_ns(value) >= self.since:
            self.fresh.append(path)

    def done(self) -> _Tree:
        """The tree, its files' hashes sorted for `find`."""
        tree, index = self.tree, self._index
        index.sort()
        tree.hashes = array("q", (entry >> _OFFSET_BITS for entry in index))
        tree.offsets = array("q", (entry & _OFFSET_MASK for entry in index))
        self._index = []
        return tree


class _Cursor:
    """Reads a `_Tree` back in the order `_Build` packed it."""

    def __init__(self, tree: _Tree) -> None:
        self.tree = tree
        self.offset = self.index = 0

    def directory(self) -> tuple[Stat, list[str]]:
        """The next directory's stat and its entries' keys."""
        start = self.offset
        self.offset += _STAT.size
        names = self.tree.names[self.index]
        self.index += 1
        return bytes(self.tree.packed[start : self.offset]), names.split("\0") if names else []

    def file(self) -> int:
        """The next file's record's offset."""
        self.offset += _FILE
        return self.offset - _FILE

    def files(self, rel: str) -> Iterator[tuple[str, int]]:
        """The next directory's files, in path order, with their records' offsets."""
        # Directories being read, innermost last (a generator per level would pass each file
        # up through every level above it).
        open_ = [(rel, iter(self.directory()[1]))]
        while open_:
            rel, keys = open_[-1]
            for key in keys:
                if key.endswith("/"):
                    open_.append((f"{rel}/{key[:-1]}", iter(self.directory()[1])))
                    break
                yield f"{rel}/{key}", self.file()
            else:
                open_.pop()


class Canary:
    """The cache tree under `roots` before a replay, the files it read, and what changed."""

    def __init__(
        self, repo: Path, roots: Sequence[str], tops: Sequence[str], exclude: Sequence[str]
    ) -> None:
        self.repo = repo
        self.roots = list(roots)
        self.skip = make_skip(tops, exclude)
        # The tree at `begin`; a file the store read with the stat listed there holds the blake3
        # of the bytes it read (`saw`).
        self._tree = _Tree()
        self.racy: dict[str, str] = {}  # racy files: repo-relative path -> blake3 at `begin`
        self._since = 0  # ctimes from this on were racy at `begin`
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
        self._since = time.time_ns() - RACY_NS
        build = _Build(self.skip, self._since)
        for root in self.roots:
            build.directory(os.path.join(self.repo, root), _rel(root))
        self._tree = build.done()
        self.racy = {path: self._hash(path) for path in build.fresh}

    def saw(self, path: str, info: os.stat_result, data: bytes, digest: str | None) -> None:
        """The store read `data` from `path` (absolute), whose open file's stat was `info`;
        `digest` is its blake3 when the store computed one. Kept only when the file's stat is
        the one `begin` listed: a file read with another changed since, and `mutations` says so."""
        if "/." in path or "//" in path or os.sep != "/":
            path = os.path.normpath(path)
        if not path.startswith(self._prefix):
            return
        offset = self._tree.find(path[len(self._prefix) :].replace(os.sep, "/"), stat_key(info))
        if offset is None:
            return
        raw = bytes.fromhex(digest) if digest else blake3.blake3(data).digest()
        if len(raw) == _DIGEST:  # the record's size: another would shift every record after it
            self._tree.packed[offset + _STAT.size : offset + _FILE] = raw

    def mutations(self) -> SnapshotDiff:
        """What changed between `begin` and now: by stat, racy files by content. A directory
        whose stat proves its entries unchanged is not listed again (`_Compare`)."""
        walk = _Compare(self)
        for root in self.roots:
            walk.directory(os.path.join(self.repo, root), _rel(root))
        change = SnapshotDiff(
            changed=tuple(sorted(set(walk.changed))),
            added=tuple(sorted(set(walk.added))),
            removed=tuple(sorted(set(walk.removed))),
        )
        self._unchanged = not change
        return change

    def digests(self) -> dict[str, str]:
        """Each root's content digest after the run (`green.cache_digest` of the snapshot
        `hashing.snapshot` would take), for the green record: hashed as the files are taken in
        path order, never held as a snapshot. A file is hashed only when the run did not read
        it with the stat it has now."""
        from cachelint.green import pairs_digest

        if self._unchanged:  # the usual run: the tree is as `begin` packed it
            at = _Cursor(self._tree)
            out = {
                root: pairs_digest(
                    (path, self._digest(path, offset)) for path, offset in at.files(_rel(root))
                )
                for root in self.roots
            }
        else:
            out = {root: self._relisted(root) for root in self.roots}
        self.release()
        return out

    def release(self) -> None:
        """Drop the listing and what the run read (not held while the reports are written)."""
        self._tree, self._unchanged = _Tree(), False

    def _relisted(self, root: str) -> str:
        """A root's content digest from listing it again (its tree changed since `begin`)."""
        from cachelint.green import pairs_digest

        now = listing(self.repo, [root], self.skip)
        return pairs_digest((path, self._relisted_digest(path, now[path])) for path in sorted(now))

    def _relisted_digest(self, path: str, now: Stat | str) -> str:
        if not isinstance(now, bytes):
            return now
        offset = self._tree.find(path, now)
        return self._hash(path) if offset is None else self._digest(path, offset)

    def _digest(self, path: str, offset: int) -> str:
        """The content digest of the file `begin` listed at `path`, its record at `offset`: the
        one of the bytes the run read under that stat, else hashed here."""
        if path in self._tree.others:
            return self._tree.others[path]
        read = self._tree.digest(offset)
        return read.hex() if read != _UNREAD and path not in self.racy else self._hash(path)

    def same(self, path: str, offset: int, now: Stat | str) -> bool:
        """Whether the file `begin` listed at `path` (its record at `offset`) is `now` as it was."""
        if path in self.racy:
            return isinstance(now, bytes) and self._hash(path) == self.racy[path]
        if path in self._tree.others:
            return self._tree.others[path] == now
        return isinstance(now, bytes) and self._tree.packed[offset : offset + _STAT.size] == now

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


class _Compare:
    """`mutations`' walk: the tree now against the one `begin` packed, directory by directory.

    A directory whose stat is the one listed, and was not racy then, holds the entries it held
    (adding, removing or renaming one sets its ctime): its files are looked at by their names,
    one `lstat` each. Any other directory is listed again."""

    def __init__(self, canary: Canary) -> None:
        self.canary = canary
        self.at = _Cursor(canary._tree)
        self.changed: list[str] = []
        self.added: list[str] = []
        self.removed: list[str] = []

    def directory(self, directory: str, rel: str) -> None:
        was, keys = self.at.directory()
        now = _directory_stat(directory, rel)
        settled = DIRECTORY_STAT_PROVES and _ctime_ns(was) < self.canary._since
        if now == was != _ABSENT and settled:
            self._known(directory, rel, keys)
        else:
            self._listed(directory, rel, keys)

    def _known(self, directory: str, rel: str, keys: list[str]) -> None:
        """A directory that holds the entries it held: each looked at by its name."""
        for key in keys:
            if key.endswith("/"):
                self.directory(f"{directory}{os.sep}{key[:-1]}", f"{rel}/{key[:-1]}")
            else:
                path = f"{rel}/{key}"
                self._file(path, _lstat(f"{directory}{os.sep}{key}", path))

    def _listed(self, directory: str, rel: str, keys: list[str]) -> None:
        """A directory that may have changed: listed again, its entries matched by name."""
        now = {entry[0]: entry for entry in _entries(directory, rel, self.canary.skip)}
        for key in keys:
            found = now.pop(key, None)
            if not key.endswith("/"):
                self._file(f"{rel}/{key}", None if found is None else found[3])
            elif found is None:
                self._gone(f"{rel}/{key[:-1]}")
            else:
                self.directory(found[1].path, found[2])
        for _, _, path, value in now.values():  # new since `begin`
            if value is None:
                self.added.extend(listing(self.canary.repo, [path], self.canary.skip))
            else:
                self.added.append(path)

    def _file(self, path: str, now: Stat | str | None) -> None:
        offset = self.at.file()
        if now is None:
            self.removed.append(path)
        elif not self.canary.same(path, offset, now):
            self.changed.append(path)

    def _gone(self, rel: str) -> None:
        """A directory no longer there: every file under it removed."""
        for path, _ in self.at.files(rel):
            self.removed.append(path)


def _directory_stat(directory: str, rel: str) -> Stat:
    """A directory's packed stat (`_ABSENT` when it is not there, or not a directory)."""
    try:
        return stat_key(os.stat(directory))
    except (FileNotFoundError, NotADirectoryError):
        return _ABSENT
    except OSError as exc:
        raise unreadable(rel, exc) from None


def _lstat(full: str, path: str) -> Stat | str | None:
    """What `hashing.walk_files` records of the file `full` (not a directory), None if gone."""
    try:
        info = os.lstat(full)
        if stat.S_ISREG(info.st_mode):
            return stat_key(info)
        if stat.S_ISLNK(info.st_mode):
            return "symlink:" + os.readlink(full)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise unreadable(path, exc) from None
    return "special"
