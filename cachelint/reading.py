"""One verified read of every entry, in directory order: each taken from its source (the entry
cache, `cachelint.sources`) or read from disk, by this process and the helpers (`cachelint.pooled`);
an invalid one becomes a (path, reason) in `corrupt`."""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import itemgetter
from typing import NamedTuple, cast

from cachelint.config import Config
from cachelint.entries import special_file
from cachelint.fsutil import TEMP_PREFIX
from cachelint.pooled import read_all
from cachelint.progressbar import BarFactory
from cachelint.sources import EntrySource
from cachelint.store import CACHE_DIR, CONTENTS_FILE, ENTRY_FILE, ENTRY_FILES, Entry
from cachelint.walk import Walk

UNREADABLE = (
    "directory cannot be read ({}), so nothing under it was checked; make it readable "
    "(chmod u+rx) and check again"
)

_PAIR = frozenset(ENTRY_FILES)


def cache_prefixes(roots: list[str]) -> tuple[str, ...]:
    """Where entry directories can be: under `<root>/cache/`."""
    return tuple(f"{root.rstrip('/')}/{CACHE_DIR}/" for root in roots)


@dataclass
class Read:
    entries: list[Entry] = field(default_factory=list)
    corrupt: list[tuple[str, str]] = field(default_factory=list)
    entry_dirs: dict[str, frozenset[str]] = field(default_factory=dict)


class Reading(NamedTuple):
    """How the entries no source supplies are read."""

    base: str  # the repository, as the path to open files by
    config: Config
    jobs: int | None  # processes reading at once
    progress: BarFactory | None  # the bar counting them


def read_entries(
    walk: Walk, prefixes: tuple[str, ...], source: EntrySource, reading: Reading
) -> Read:
    """Read (or take from `source`) and verify every entry once. The walk's `holders` are the
    directories with their entry and temp file names; an entry file it found special (a FIFO,
    say) is reported, never opened."""
    ordered = sorted(walk.holders, key=itemgetter(0))  # each directory once
    read = Read()
    # Each entry in directory order, or (for those to read) its directory.
    slots, unread = _slots(ordered, prefixes, walk.special, source, read)
    if not unread:
        read.entries = cast(list[Entry], slots)
        return read
    outcomes = _read_unread(unread, reading)
    for slot in slots:
        outcome = outcomes[slot] if type(slot) is str else slot
        if type(outcome) is str:
            read.corrupt.append((cast(str, slot), outcome))
        else:
            read.entries.append(cast(Entry, outcome))
    return read


def _slots(
    ordered: list[tuple[str, tuple[str, ...]]],
    prefixes: tuple[str, ...],
    special: set[str],
    source: EntrySource,
    read: Read,
) -> tuple[list[Entry | str], list[tuple[str, str]]]:
    """Each whole entry directory's entry when `source` knows it, else its directory, and the
    (directory, prefix) of those to read; a directory holding no whole entry goes to
    `read.corrupt`."""
    whole: list[str] = []  # the directories holding a whole entry
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
        if not names or not directory.startswith(prefixes):
            continue
        read.entry_dirs[directory] = names
        missing = None if names is _PAIR else _missing_file(names)
        if missing is None and special:
            missing = _special_file(directory, names, special)
        if missing is not None:
            read.corrupt.append((directory, missing))
            continue
        whole.append(directory)
    known = list(zip(whole, source.known(whole), strict=True))
    slots = [directory if entry is None else entry for directory, entry in known]
    unread = [(d, _prefix_of(d, prefixes)) for d, entry in known if entry is None]
    return slots, unread


def _read_unread(unread: list[tuple[str, str]], reading: Reading) -> dict[str, Entry | str]:
    bar = reading.progress(len(unread)) if reading.progress is not None else None
    advance = bar.advance if bar is not None else None
    config = reading.config
    try:
        return read_all(
            reading.base,
            unread,
            config.layout,
            config.max_entry_bytes,
            reading.jobs,
            advance,
        )
    finally:
        if bar is not None:
            bar.close()


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


def _prefix_of(directory: str, prefixes: tuple[str, ...]) -> str:
    """The first of `prefixes` that `directory` starts with (one does)."""
    if len(prefixes) == 1:
        return prefixes[0]
    return next(p for p in prefixes if directory.startswith(p))
