"""Content snapshots of a cache tree (blake3), for the offline canary and `cachelint guard`.

Compared by content, never by modification time: a tool that rewrites a file with the same bytes
did not change it, and one that restores an old mtime still did. Small files are read whole in one
thread (the open/read syscalls dominate, and a thread pool only adds switching); large ones go
through blake3's mmap path with its own threads.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import blake3

from cachelint.errors import CachelintError
from cachelint.findings import Finding

_MMAP_THRESHOLD = 4 * 1024 * 1024
_FIRST_READ = 64 * 1024
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0)

V = TypeVar("V")  # what `walk_files` records of a regular file
Snapshot = dict[str, str]  # repo-relative path -> blake3 hex digest ("symlink:<target>" for links)


def hash_bytes(data: bytes) -> str:
    """blake3 hex digest of bytes, as `hash_file` gives for a file holding them."""
    return blake3.blake3(data).hexdigest()


def hash_file(path: str | os.PathLike[str]) -> str:
    """blake3 hex digest of a file's bytes."""
    fd = os.open(path, _OPEN_FLAGS)
    try:
        return _hash_fd(fd, path)
    finally:
        os.close(fd)


def _hash_fd(fd: int, path: str | os.PathLike[str]) -> str:
    # One read usually gets the whole (small) file; only a full buffer costs an fstat, which
    # saves the getsize syscall per file that dominated on trees of many small entries.
    data = os.read(fd, _FIRST_READ)
    if len(data) < _FIRST_READ:
        return blake3.blake3(data).hexdigest()
    if os.fstat(fd).st_size >= _MMAP_THRESHOLD:
        hasher = blake3.blake3(max_threads=blake3.blake3.AUTO)
        hasher.update_mmap(path)
        return hasher.hexdigest()
    hasher = blake3.blake3(data)
    while chunk := os.read(fd, _MMAP_THRESHOLD):
        hasher.update(chunk)
    return hasher.hexdigest()


def snapshot(
    repo: Path, roots: Iterable[str], skip: Callable[[str], bool] | None = None
) -> Snapshot:
    """Hash every file under each root (relative to `repo`); missing roots contribute nothing.
    `skip(path)` leaves out a repo-relative file, or a directory with everything under it
    (`exclude`, MEAI's results: `cachelint.meai.skip_matcher`)."""
    result: Snapshot = {}
    walk_files(repo, roots, skip, _hash_entry, result)
    return result


def _hash_entry(entry: os.DirEntry[str]) -> str:
    fd = os.open(entry.path, _OPEN_FLAGS)
    try:
        return _hash_fd(fd, entry.path)
    finally:
        os.close(fd)


def walk_files(
    repo: Path,
    roots: Iterable[str],
    skip: Callable[[str], bool] | None,
    read: Callable[[os.DirEntry[str]], V],
    out: dict[str, V | str],
) -> None:
    """Fill `out` with `read(entry)` for every regular file under each root (repo-relative
    paths), `"symlink:<target>"` for a link and `"special"` for a FIFO or socket (never opened);
    missing roots contribute nothing. The snapshot hashes each file, the canary's listing takes
    its stat data: one walk for both, so they name the same files the same way."""
    for root in roots:
        rel = root.replace(os.sep, "/").strip("/")
        _scan(os.path.join(repo, root), rel, out, skip, read)


def _scan(
    directory: str,
    rel: str,
    out: dict[str, V | str],
    skip: Callable[[str], bool] | None,
    read: Callable[[os.DirEntry[str]], V],
) -> None:
    for entry, path, value in entries(directory, rel, skip, read):
        if value is None:
            _scan(entry.path, path, out, skip, read)
        else:
            out[path] = value


def entries(
    directory: str,
    rel: str,
    skip: Callable[[str], bool] | None,
    read: Callable[[os.DirEntry[str]], V],
) -> Iterator[tuple[os.DirEntry[str], str, V | str | None]]:
    """The entries of `directory` (`rel`, repo-relative) that a walk takes, each with its path
    and what the walk records of it: `read(entry)` for a regular file, `"symlink:<target>"` for a
    link, `"special"` for a FIFO or socket (never opened), None for a directory (walked into).
    Nothing when it is not there or not a directory."""
    # os.scandir's d_type answers "symlink? directory?" without a stat per file, and building the
    # relative path by concatenation avoids os.walk's relpath per directory.
    try:
        with os.scandir(directory) as it:
            listed = list(it)
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as exc:
        raise unreadable(rel, exc) from None
    for entry in listed:
        path = f"{rel}/{entry.name}"
        if skip is not None and skip(path):
            continue
        try:
            value = _value(entry, read)
        except FileNotFoundError:
            continue  # removed while we looked: absent from this snapshot
        except OSError as exc:
            raise unreadable(path, exc) from None
        yield entry, path, value


def _value(entry: os.DirEntry[str], read: Callable[[os.DirEntry[str]], V]) -> V | str | None:
    if entry.is_symlink():
        return "symlink:" + os.readlink(entry.path)
    if entry.is_dir(follow_symlinks=False):
        return None
    if entry.is_file(follow_symlinks=False):
        return read(entry)
    return "special"  # a FIFO or socket: opening it could block forever, and git cannot commit it


def unreadable(path: str, exc: OSError) -> CachelintError:
    # A permission problem (or an I/O error) is the user's to fix, not an internal error.
    return CachelintError(f"{path}: cannot read ({exc.strerror or exc}); check its permissions")


@dataclass(frozen=True)
class SnapshotDiff:
    changed: tuple[str, ...]
    added: tuple[str, ...]
    removed: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.changed or self.added or self.removed)


def diff(before: Snapshot, after: Snapshot) -> SnapshotDiff:
    return SnapshotDiff(
        changed=tuple(sorted(p for p in before.keys() & after.keys() if before[p] != after[p])),
        added=tuple(sorted(after.keys() - before.keys())),
        removed=tuple(sorted(before.keys() - after.keys())),
    )


def mutation_findings(change: SnapshotDiff, *, during: str) -> list[Finding]:
    """One `eval-cache-mutated` finding per changed, added or removed file."""
    fix = (
        "an offline run must write no byte into the committed cache; restore it with "
        "`git checkout -- <path>` (or `git clean` for added files) and find the writer"
    )
    out: list[Finding] = []
    for verb, paths in (
        ("changed", change.changed),
        ("added", change.added),
        ("removed", change.removed),
    ):
        for path in paths:
            out.append(Finding(path, "eval-cache-mutated", f"{verb} by {during}; {fix}"))
    return out
