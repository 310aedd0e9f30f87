"""Content snapshots of a cache tree (blake3), for the offline canary and `cachelint guard`.

Compared by content, never by modification time: a tool that rewrites a file with the same bytes
did not change it, and one that restores an old mtime still did. Small files are read whole (the
open/read syscalls dominate; a thread pool over small files measured 5x slower here); large ones go
through blake3's mmap path with its own threads.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import blake3

from cachelint.findings import Finding

_MMAP_THRESHOLD = 4 * 1024 * 1024

Snapshot = dict[str, str]  # repo-relative path -> blake3 hex digest ("symlink:<target>" for links)


def hash_file(path: str | os.PathLike[str]) -> str:
    size = os.path.getsize(path)
    if size >= _MMAP_THRESHOLD:
        hasher = blake3.blake3(max_threads=blake3.blake3.AUTO)
        hasher.update_mmap(path)
        return hasher.hexdigest()
    with open(path, "rb") as fh:
        return blake3.blake3(fh.read()).hexdigest()


def snapshot(repo: Path, roots: Iterable[str]) -> Snapshot:
    """Hash every file under each root (relative to `repo`); missing roots contribute nothing."""
    result: Snapshot = {}
    for root in roots:
        top = os.path.join(repo, root)
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames.sort()
            rel_dir = os.path.relpath(dirpath, repo).replace(os.sep, "/")
            for name in filenames:
                full = os.path.join(dirpath, name)
                rel = f"{rel_dir}/{name}"
                if os.path.islink(full):
                    result[rel] = "symlink:" + os.readlink(full)
                else:
                    result[rel] = hash_file(full)
            for name in dirnames:
                full = os.path.join(dirpath, name)
                if os.path.islink(full):
                    result[f"{rel_dir}/{name}"] = "symlink:" + os.readlink(full)
    return result


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
    fix = "an offline run must write no byte into the committed cache; restore it with `git checkout -- <path>` (or `git clean` for added files) and find the writer"
    out: list[Finding] = []
    for verb, paths in (("changed", change.changed), ("added", change.added), ("removed", change.removed)):
        for path in paths:
            out.append(Finding(path, "eval-cache-mutated", f"{verb} by {during}; {fix}"))
    return out
