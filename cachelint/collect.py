"""Gathering the facts of one check: one walk of each cache root, a few bulk git listings and one
verified read of every entry (or its reuse from the entry cache).

The git listings run one after another on a single worker thread, queued before the Python walk,
so git works on the other core while Python scans the disk and reads entries; per-file git calls
or GitPython would make a large tree take minutes instead of seconds. The `--others` listings,
which walk the whole tree again inside git, run only when the walk found a path the index lacks.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from itertools import repeat
from operator import itemgetter
from pathlib import Path
from typing import NamedTuple, TextIO, cast

import blake3

from cachelint import entrycache, listing
from cachelint.config import Config
from cachelint.confine import TEXT_BYTES, OutsideRepository, read_inside
from cachelint.entries import CachedSource, DiskSource, EntrySource, special_file
from cachelint.errors import CachelintError
from cachelint.fsutil import TEMP_PREFIX, read_regular
from cachelint.gitqueue import GitQueue
from cachelint.gitutil import GitResult, split_z
from cachelint.pooled import Helpers, ahead, read_all
from cachelint.progressbar import BarFactory, bars_on
from cachelint.store import CACHE_DIR, CONTENTS_FILE, ENTRY_FILE, ENTRY_FILES, Entry
from cachelint.tree import ATTRIBUTES, GITLINK, INFO_ATTRIBUTES, SYMLINK, IndexEntry, TreeFacts
from cachelint.walk import Walk as _Walk
from cachelint.walk import walk_roots as _walk_roots

# How many entries a command must read (those the entry cache cannot supply) before a terminal
# shows a bar counting them: fewer are read in well under a second, where a bar would flicker.
BAR_MIN = 10_000


def entry_bars(stream: TextIO | None) -> BarFactory | None:
    """The bars for `collect(progress=...)` on `stream`, when it is a terminal."""
    return None if stream is None else bars_on(stream, "verifying entries", at_least=BAR_MIN)


@dataclass
class _Read:
    entries: list[Entry] = field(default_factory=list)
    corrupt: list[tuple[str, str]] = field(default_factory=list)
    entry_dirs: dict[str, frozenset[str]] = field(default_factory=dict)


def collect(
    config: Config,
    *,
    now: datetime,
    entry_cache: bool = True,
    jobs: int | None = None,
    progress: BarFactory | None = None,
) -> TreeFacts:
    """Gather every fact the rules need. `entry_cache` reuses entries an earlier check verified
    whose files git holds unchanged (see `cachelint.entrycache`); False reads every entry.
    `jobs` is how many processes may read entries at once (see `cachelint.pooled`); `progress`
    gives the bar, if any, that counts the entries read."""
    repo = config.repo
    roots = [r for r in config.cache if os.path.isdir(repo / r) and not os.path.islink(repo / r)]
    # `:(literal)` so a root named like a glob is never expanded by git.
    spec = ["--", *(f":(literal){r}" for r in config.cache)]
    git = GitQueue(repo)
    base = _opening_base(repo)
    prepared: Future[_Prepared] | None = None
    try:
        # Queued first: none of these needs the walk, so they run while Python walks.
        git_dir = git.submit(["rev-parse", "--absolute-git-dir"]) if entry_cache else None
        stage = git.submit(["ls-files", "-z", "-v", "--stage", *spec])
        prepared = git.call(partial(_prepare, config, base, roots, stage, git_dir, jobs))
        changed = git.submit(_DIFF_FILES + spec)
        # The pins' projects, unless the config names the pin files.
        projects = None if config.pins else git.submit(listing.PROJECTS)
        walk = _walk_roots(config, base, roots)
        plain = [p for p in walk.files if p not in walk.symlinks and p not in walk.special]
        _refuse_special_attributes(repo, config, walk)
        attrs = git.submit_parsed(
            ["check-attr", "-z", "--stdin", "text"],
            listing.nul_joined(plain),
            lambda out: listing.parse_text_attr(out, plain) if plain else {},
        )
        found = _listings(git, spec, walk, stage, changed)
        del stage  # its listing, parsed: not kept while entries are read
        ready = prepared.result()
        source = _entry_source(config, found, ready.reuse)
        prefixes = _cache_prefixes(roots)
        reading = _Reading(jobs, progress, ready.helpers)
        read = _read_entries(base, walk, prefixes, config, source, reading)
        read.corrupt += [(d, _UNREADABLE.format(why)) for d, why in walk.unreadable.items()]
        source.finish(read.entries)
        text_attr = attrs.result()
    finally:
        git.close()  # after which `prepared` is done or cancelled
        if prepared is not None and not prepared.cancelled() and prepared.exception() is None:
            running = prepared.result().helpers
            if running is not None:
                running.stop()
    return TreeFacts(
        repo=repo,
        config=config,
        now=now,
        roots=tuple(roots),
        missing_roots=tuple(r for r in config.cache if r not in roots),
        disk_files=walk.files,
        symlinks=walk.symlinks,
        index=found.index,
        untracked=found.untracked,
        ignored=found.ignored,
        text_attr=text_attr,
        entries=read.entries,
        corrupt=read.corrupt,
        excluded=walk.excluded + found.excluded,
        special=frozenset(walk.special),
        nested_repos=found.nested,
        git_dirs=walk.git_dirs,
        modified=_modified(repo, walk, found, config.max_entry_bytes),
        skip_worktree={p for p, tag in found.flagged.items() if tag in listing.SKIP_WORKTREE},
        ignore_sources=listing.ignore_sources(repo, found.ignored) if found.ignored else {},
        entry_dirs=read.entry_dirs,
        attributes=_read_attributes(repo, config, walk),
        walked_names=walk.names,
        all_indexed=not found.strays,
        projects=None if projects is None else listing.projects(projects.result()),
    )


# Without preloadIndex: its threads would lstat the same files as the walk, on the same two
# cores, for a diff-files that finishes long before the walk anyway. With all of git's stat data
# whatever the config says: with core.trustctime=false or core.checkStat=minimal, a same-size edit
# with its mtime put back looks unchanged to diff-files, and so to the entry cache and the dirty
# rule (a file whose stat data then differs only costs a read: its content decides).
_DIFF_FILES = [
    *(
        "-c",
        "core.preloadIndex=false",
        "-c",
        "core.trustctime=true",
        "-c",
        "core.checkStat=default",
    ),
    *("diff-files", "-z", "--name-only"),
]


class _Reuse(NamedTuple):
    """What decides which cached entries a check may take."""

    directory: Path  # git's, holding the entry cache
    digest: str  # of this check's index listing
    # Paths the index records otherwise than the listing the cache was checked against; None:
    # that listing is lost, and the cache not used.
    restaged: set[str] | None


class _Prepared(NamedTuple):
    """What is settled once the index listing is in, on git's thread while the tree is walked."""

    reuse: _Reuse | None  # how the entry cache stands to the listing; None: no cache is used
    helpers: Helpers | None  # reading entries ahead of the walk


def _prepare(
    config: Config,
    base: str,
    roots: list[str],
    stage: Future[GitResult],
    git_dir: Future[GitResult] | None,
    jobs: int | None,
) -> _Prepared:
    """How the entry cache in the git directory `git_dir` names stands to the index listing
    `stage`, and helpers reading the index's entries while the tree is walked when the check is
    to read them all: it keeps no entry cache, or has none to take entries from."""
    directory = listing.git_dir(git_dir.result()) if git_dir is not None else None
    try:
        listed = stage.result().out
    except CachelintError:  # reported where the listing is parsed
        return _Prepared(None, None)
    written = entrycache.written_from(directory, config.layout) if directory else ""
    helpers = None
    if not written:
        prefixes = _cache_prefixes(roots)
        helpers = ahead(base, prefixes, config.layout, config.max_entry_bytes, listed, jobs)
    reuse = _reuse(directory, listed, written) if directory else None
    return _Prepared(reuse, helpers)


class _Reading(NamedTuple):
    """How the entries no source supplies are read."""

    jobs: int | None  # processes reading at once
    progress: BarFactory | None  # the bar counting them
    helpers: Helpers | None  # started ahead of the read


def _reuse(directory: Path, stage: bytes, written: str) -> _Reuse:
    """How the cache in git's `directory`, written from the index listing whose digest is
    `written`, stands to this check's listing (`stage`). When it was verified against another
    listing, the kept listing is replaced, before the cache file that follows it."""
    index = blake3.blake3(stage).hexdigest()
    if written == index:
        return _Reuse(directory, index, set())
    earlier = entrycache.load_listing(directory, written)
    entrycache.save_listing(directory, stage)
    restaged = None if earlier is None else listing.changed_since(earlier, stage)
    return _Reuse(directory, index, restaged)


def _entry_source(config: Config, found: _Listings, reuse: _Reuse | None) -> EntrySource:
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


@dataclass
class _Listings:
    """What git said about the paths under the roots."""

    index: dict[str, IndexEntry]
    flagged: dict[str, str]  # ls-files -v tag of marked or unmerged paths
    candidates: set[str]  # paths whose working tree may differ from the index
    recorded: dict[str, str]  # the candidates' object ids in the index
    strays: bool  # the walk found a path the index lacks
    nested: set[str] = field(default_factory=set)
    untracked: set[str] = field(default_factory=set)
    ignored: set[str] = field(default_factory=set)
    excluded: int = 0


def _listings(
    git: GitQueue,
    spec: list[str],
    walk: _Walk,
    stage_job: Future[GitResult],
    changed_job: Future[GitResult],
) -> _Listings:
    stage = stage_job.result().out
    index, flagged = listing.parse_stage(stage, same_as=walk.walked)
    # Everything the --others listings can name is on disk and not in the index, so when every
    # walked path is in the index (checked before `exclude` dropped any) neither needs to run.
    strays = not all(map(index.__contains__, walk.walked))
    if strays:
        others = git.submit(["ls-files", "-z", "--others", "--exclude-standard", *spec])
        ignored = git.submit(
            ["ls-files", "-z", "--others", "--ignored", "--exclude-standard", *spec]
        )
    # diff-files skips files marked assume-unchanged or skip-worktree: those are compared like
    # its own candidates, so such a mark hides a change from neither the dirty rule nor the
    # entry cache.
    candidates = set(split_z(changed_job.result().out)) | flagged.keys()
    recorded = listing.index_objects(stage, candidates) if candidates else {}
    found = _Listings(index, flagged, candidates, recorded, strays)
    if _has_mode(index, GITLINK):
        found.nested = {p for p, e in index.items() if e.mode == GITLINK}
    drop = walk.drop
    if drop is not None:
        found.index = {p: e for p, e in index.items() if not drop(p)}
        found.excluded = len(index) - len(found.index)
        found.candidates = {p for p in candidates if not drop(p)}
    if strays:
        found.untracked = set(split_z(others.result().out))
        found.ignored = set(split_z(ignored.result().out))
    for listed in (found.untracked, found.ignored):
        dirs = {p for p in listed if p.endswith("/")}
        listed -= dirs
        found.nested.update(d.rstrip("/") for d in dirs)
    if drop is not None:
        found.untracked = {p for p in found.untracked if not drop(p)}
        found.ignored = {p for p in found.ignored if not drop(p)}
    if walk.unreadable:
        walk.files += _hidden_by(walk.unreadable, found.index)
    return found


def _modified(repo: Path, walk: _Walk, found: _Listings, limit: int) -> set[str]:
    """Tracked files whose content differs from the index: git's candidates, hashed; one above
    `limit` (max-entry-bytes) is not hashed (hash-object would read it whole) and counts as
    modified, as a FIFO does."""
    on_disk = set(walk.files)
    index = found.index
    hashable = {
        p
        for p in found.candidates
        if p in on_disk
        and p not in walk.symlinks
        and p not in walk.special
        and p in index
        and index[p].mode not in (GITLINK, SYMLINK)
    }
    oversized = {p for p in hashable if _size(repo / p) > limit} if hashable else set()
    hashable -= oversized
    modified = listing.really_modified(repo, hashable, found.recorded) if hashable else set()
    # A FIFO or device in place of a tracked file is not what was committed; never hashed.
    return modified | oversized | {p for p in found.candidates if p in walk.special and p in index}


def _size(path: Path) -> int:
    try:
        return os.lstat(path).st_size
    except OSError:  # gone since the walk: hash-object reports it as it would
        return 0


_UNREADABLE = (
    "directory cannot be read ({}), so nothing under it was checked; make it readable "
    "(chmod u+rx) and check again"
)


def _hidden_by(unreadable: dict[str, str], index: dict[str, IndexEntry]) -> list[str]:
    """The index's paths under the directories that could not be listed: on disk as far as
    anyone can tell, and reported through their directory, not as deleted."""
    prefixes = tuple(f"{d}/" for d in unreadable)
    return [p for p in index if p.startswith(prefixes)]


def _has_mode(index: dict[str, IndexEntry], mode: str) -> bool:
    # The index shares one IndexEntry per (mode, stage): a few values to look at, not every path.
    return any(e.mode == mode for e in set(index.values()))


def _cache_prefixes(roots: list[str]) -> tuple[str, ...]:
    """Where entry directories can be: under `<root>/cache/`."""
    return tuple(f"{root.rstrip('/')}/{CACHE_DIR}/" for root in roots)


def _read_entries(
    base: str,
    walk: _Walk,
    prefixes: tuple[str, ...],
    config: Config,
    source: EntrySource,
    reading: _Reading,
) -> _Read:
    """Read (or take from `source`) and verify every entry once; anything invalid becomes a
    (path, reason) in `corrupt`. The walk's `holders` are the directories with their entry and
    temp file names; an entry file it found special (a FIFO, say) is reported, never opened."""
    ordered = sorted(walk.holders, key=itemgetter(0))  # each directory once
    special = walk.special
    whole = None if special else _all_known(ordered, prefixes, source)
    if whole is not None:
        return whole
    read = _Read()
    slots: list[Entry | str] = []  # each entry in directory order, or its directory to read
    unread: list[tuple[str, str]] = []
    # The walk shares one tuple of names between directories holding the same files: each such
    # tuple is sorted into entry files and temp files once, and most directories share one set.
    kinds: dict[tuple[str, ...], tuple[frozenset[str], tuple[str, ...]]] = {}
    for directory, found in ordered:
        kind = kinds.get(found)
        if kind is None:
            names = frozenset(n for n in found if not n.startswith(TEMP_PREFIX))
            kind = kinds[found] = (
                _PAIR if names == _PAIR else names,
                tuple(sorted(set(found) - names)),
            )
        names, temps = kind
        for temp in temps:
            temp_path = f"{directory}/{temp}"
            read.corrupt.append((temp_path, "leftover temp file from an interrupted write"))
        prefix = _prefix_of(directory, prefixes)
        if not names or prefix is None:
            continue
        read.entry_dirs[directory] = names
        missing = None if names is _PAIR else _missing_file(names)
        if missing is None and special:
            missing = _special_file(directory, names, special)
        if missing is not None:
            read.corrupt.append((directory, missing))
            continue
        entry = source.known(directory)
        if entry is None:
            unread.append((directory, prefix))
            slots.append(directory)
        else:
            slots.append(entry)
    if not unread:
        read.entries = cast(list[Entry], slots)
        return read
    bar = reading.progress(len(unread)) if reading.progress is not None else None
    advance = bar.advance if bar is not None else None
    try:
        outcomes = read_all(
            base,
            unread,
            config.layout,
            config.max_entry_bytes,
            reading.jobs,
            advance,
            reading.helpers,
        )
    finally:
        if bar is not None:
            bar.close()
    for slot in slots:
        outcome = outcomes[slot] if type(slot) is str else slot
        if type(outcome) is str:
            read.corrupt.append((cast(str, slot), outcome))
        else:
            read.entries.append(cast(Entry, outcome))
    return read


_PAIR = frozenset(ENTRY_FILES)


def _all_known(
    ordered: list[tuple[str, tuple[str, ...]]], prefixes: tuple[str, ...], source: EntrySource
) -> _Read | None:
    """The usual warm check, taken whole without a step per directory: every directory holds
    exactly an entry's two files under a cache root, and the source holds every one of them
    unchanged. None when anything is otherwise."""
    if not ordered or any(frozenset(found) != _PAIR for found in {f for _, f in ordered}):
        return None
    directories = [directory for directory, _ in ordered]
    if not all(map(str.startswith, directories, repeat(prefixes))):
        return None
    entries = source.known_all(directories)
    if entries is None:
        return None
    return _Read(entries=entries, entry_dirs=dict.fromkeys(directories, _PAIR))


def _special_file(directory: str, names: frozenset[str], special: set[str]) -> str | None:
    for name in ENTRY_FILES:
        if name in names and f"{directory}/{name}" in special:
            return special_file(name)
    return None


def _missing_file(names: frozenset[str]) -> str | None:
    """Why a directory holding these entry files is not a whole entry, if it is not."""
    if ENTRY_FILE not in names:
        return f"{CONTENTS_FILE} without {ENTRY_FILE} (an interrupted write)"
    if CONTENTS_FILE not in names:
        return f"{CONTENTS_FILE} is missing"
    return None


def _prefix_of(directory: str, prefixes: tuple[str, ...]) -> str | None:
    """The first of `prefixes` that `directory` starts with."""
    if not directory.startswith(prefixes):
        return None
    if len(prefixes) == 1:
        return prefixes[0]
    return next(p for p in prefixes if directory.startswith(p))


def _read_attributes(repo: Path, config: Config, walk: _Walk) -> dict[str, list[str]]:
    """The lines of the attributes files that can apply under the roots: those in the
    directories above each root, those the walk found inside, and .git/info/attributes."""
    wanted: set[str] = set()
    if ATTRIBUTES in walk.names:
        wanted = {p for p in walk.files if p.rpartition("/")[2] == ATTRIBUTES}
    for root in config.cache:
        parent = root
        while parent:
            parent = parent.rpartition("/")[0]
            wanted.add(f"{parent}/{ATTRIBUTES}" if parent else ATTRIBUTES)
    wanted.add(INFO_ATTRIBUTES)
    found: dict[str, list[str]] = {}
    for rel in wanted:
        if rel in walk.special:
            continue
        try:
            raw = _read_attributes_file(repo, rel)
        except (OSError, OutsideRepository):
            # Missing, special, too large, or a link: git (2.32 and later) never follows a
            # symbolic link to .gitattributes in the working tree, and neither does cachelint.
            continue
        found[rel] = raw.decode("utf-8", "surrogateescape").splitlines()
    return found


def _refuse_special_attributes(repo: Path, config: Config, walk: _Walk) -> None:
    """A FIFO or device named .gitattributes: git opens it to read attributes (check-attr, and
    hash-object for the dirty rule) and waits forever for a writer, so check stops first."""
    found = [p for p in walk.special if p.rpartition("/")[2] == ATTRIBUTES]
    for root in config.cache:
        parent = root
        while parent:
            parent = parent.rpartition("/")[0]
            rel = f"{parent}/{ATTRIBUTES}" if parent else ATTRIBUTES
            try:
                mode = os.lstat(repo / rel).st_mode
            except OSError:
                continue
            if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode) or stat.S_ISDIR(mode)):
                found.append(rel)
    if found:
        raise CachelintError(
            f"{min(found)}: is a FIFO, socket or device, not a regular file; git blocks reading "
            "attributes from it (check-attr, add), so nothing was checked; remove it"
        )


def _read_attributes_file(repo: Path, rel: str) -> bytes:
    if rel == INFO_ATTRIBUTES:  # git's own, local file: never committed, read as git reads it
        return read_regular(repo / rel, TEXT_BYTES)
    return read_inside(repo, rel, "attributes file", TEXT_BYTES)


def _opening_base(repo: Path) -> str:
    """`repo` as the path to open the files under it by: relative to the working directory when
    that has fewer parts (usually "."), since the kernel resolves a path part by part."""
    absolute = str(repo)
    try:
        relative = os.path.relpath(absolute)
    except (OSError, ValueError):  # no working directory any more; another drive on Windows
        return absolute
    return relative if relative.count(os.sep) < absolute.count(os.sep) else absolute
