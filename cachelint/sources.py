"""Where a check's entries come from: the entry cache (entries an earlier check verified, whose
files git holds unchanged: `cachelint.entrycache`), helper processes reading them on the other
cores (`cachelint.pooled`), and the disk. The first two only ever save time: what they do not
supply is read from disk with the same `read_entry`, so every finding is worded from the bytes on
disk either way. The entry cache also keeps the secret scan's memory (`entrycache.Clean`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import NamedTuple, Protocol

import blake3

from cachelint import entrycache, listing
from cachelint.config import Config, Layout
from cachelint.errors import CachelintError
from cachelint.facts import IndexEntry
from cachelint.gitutil import GitResult
from cachelint.store import CONTENTS_FILE, ENTRY_FILE, Entry


class EntrySource(Protocol):
    """Where the linter may take an entry from instead of reading and verifying it again."""

    def known(self, directories: Sequence[str]) -> list[Entry | None]:
        """For each of `directories`, the entry verified earlier whose two files are, by
        content, those on disk now, else None; asked once for all a check's entries."""

    def clean(self, scan: str) -> frozenset[str]:
        """The digests of entries the secret scan found clean, judged as `scan` says."""

    def finish(self, entries: Iterable[Entry], clean: entrycache.Clean | None) -> None:
        """Called once with every valid entry of this check and the secret scan's memory (None:
        no scan ran, the memory kept as it is), to refresh a cache, say."""


class DiskSource:
    """Every entry is read from disk: `cachelint check --no-cache` and a repository without a
    git directory cachelint may write to."""

    def known(self, directories: Sequence[str]) -> list[Entry | None]:
        return [None] * len(directories)

    def clean(self, scan: str) -> frozenset[str]:
        return frozenset()

    def finish(self, entries: Iterable[Entry], clean: entrycache.Clean | None) -> None:
        return None


class CachedSource:
    """Entries verified by an earlier check (`cached`), taken only while git's index holds
    their two files as it did then and git reports neither changed in the working tree (see
    `cachelint.entrycache`).

    `changed` holds the paths whose working tree may differ from the index; `restaged`, when
    the cache was verified against another index listing than this check's (whose digest is
    `index`), those the two listings record differently. An entry with a file in either is read.
    `indexed` tells whether both files of an entry directory are in the index (None: every file
    the walk found is); only such entries, and none with a file in `changed`, are cached."""

    def __init__(
        self,
        git_dir: Path,
        layout: Layout,
        cached: entrycache.Cached,
        changed: set[str],
        restaged: set[str],
        index: str,
        indexed: Callable[[str], bool] | None,
    ) -> None:
        self._git_dir = git_dir
        self._layout = layout
        self._cached = cached
        self._changed = changed
        self._unknown = changed | restaged if restaged else changed
        self._index = index
        self._indexed = indexed
        self._used = 0

    def _cacheable(self, directory: str) -> bool:
        indexed = self._indexed
        return (indexed is None or indexed(directory)) and not _holds(self._changed, directory)

    def known(self, directories: Sequence[str]) -> list[Entry | None]:
        cached, unknown = self._cached.entries.get, self._unknown
        if unknown:
            found = [None if _holds(unknown, d) else cached(d) for d in directories]
        else:  # nothing changed: the usual warm check, one lookup per entry at C speed
            found = list(map(cached, directories))
        self._used += len(found) - found.count(None)
        return found

    def clean(self, scan: str) -> frozenset[str]:
        memory = self._cached.clean
        return memory.digests if memory.scan == scan else frozenset()

    def finish(self, entries: Iterable[Entry], clean: entrycache.Clean | None) -> None:
        """Rewrite the cache file when this check verified entries it lacked, left some unused,
        was verified against another index or changed the secret scan's memory, in the check's
        own process (why not in a forked child: benchmarks/README.md)."""
        entries = list(entries)
        if clean is None or not clean.digests:
            # None: no scan ran. A memory of no digest is none, whatever it was judged by.
            clean = self._cached.clean if clean is None else entrycache.Clean()
        current = same_index(self._cached, self._index) and clean == self._cached.clean
        if current and self._used == len(entries) == len(self._cached.entries):
            return  # every entry came from the cache and none went unused: nothing to rewrite
        if self._indexed is not None or self._changed:
            entries = [entry for entry in entries if self._cacheable(entry.directory)]
        if current and self._used == len(entries) == len(self._cached.entries):
            return  # the others were changed on disk: not cached either way
        entrycache.save(self._git_dir, self._layout, entries, self._index, clean)


def _holds(paths: set[str], directory: str) -> bool:
    """Whether `paths` holds either file of the entry in `directory`."""
    return bool(paths) and (
        f"{directory}/{ENTRY_FILE}" in paths or f"{directory}/{CONTENTS_FILE}" in paths
    )


def same_index(cached: entrycache.Cached, index: str) -> bool:
    """Whether `cached` was written from the index listing whose digest is `index`."""
    return bool(index) and index == cached.index_digest


class Reuse(NamedTuple):
    """What decides which cached entries a check may take."""

    directory: Path  # git's, holding the entry cache
    digest: str  # of this check's index listing
    # Paths the index records otherwise than the listing the cache was checked against; None:
    # that listing is lost, and the cache not used.
    restaged: set[str] | None


def prepare(
    config: Config, stage: Future[GitResult], git_dir: Future[GitResult] | None
) -> Reuse | None:
    """How the entry cache in the git directory `git_dir` names stands to the index listing
    `stage` (None: no cache is used), settled on git's thread while the tree is walked."""
    directory = listing.git_dir(git_dir.result()) if git_dir is not None else None
    if directory is None:
        return None
    try:
        listed = stage.result().out
    except CachelintError:  # reported where the listing is parsed
        return None
    return _reuse(directory, listed, entrycache.written_from(directory, config.layout))


def _reuse(directory: Path, stage: bytes, written: str) -> Reuse:
    """How the cache in git's `directory`, written from the index listing whose digest is
    `written`, stands to this check's listing (`stage`). When it was verified against another
    listing, the kept listing is replaced, before the cache file that follows it."""
    index = blake3.blake3(stage).hexdigest()
    if written == index:
        return Reuse(directory, index, set())
    earlier = entrycache.load_listing(directory, written)
    entrycache.save_listing(directory, stage)
    restaged = None if earlier is None else listing.changed_since(earlier, stage)
    return Reuse(directory, index, restaged)


def entry_source(config: Config, found: listing.Listings, reuse: Reuse | None) -> EntrySource:
    """Where entries come from: the entry cache, whose entries are taken as `reuse` says (None:
    the check does not use one), else the disk."""
    if reuse is None:
        return DiskSource()
    directory = reuse.directory
    # Loaded only now, so the cached entries and the stage listing do not hold memory at once.
    restaged = reuse.restaged
    lost = restaged is None
    cached = entrycache.Cached({}) if lost else entrycache.load(directory, config.layout)
    changed = found.candidates | found.untracked | found.ignored
    indexed = _both_indexed(found.index) if found.strays else None
    return CachedSource(
        directory, config.layout, cached, changed, restaged or set(), reuse.digest, indexed
    )


def _both_indexed(index: dict[str, IndexEntry]) -> Callable[[str], bool]:
    """Whether both files of an entry directory are in the index, unmerged."""

    def indexed(directory: str) -> bool:
        entry = index.get(f"{directory}/{ENTRY_FILE}")
        contents = index.get(f"{directory}/{CONTENTS_FILE}")
        return entry is not None and contents is not None and entry.stage == contents.stage == 0

    return indexed
