"""Entries parsed by earlier checks, so an entry git reports unchanged is not read and parsed again.

Reading and validating 100,000 entry.json files is the largest part of a check. A pre-commit hook
runs check on every commit that touches the cache, and nearly every entry is the one it read last
time. This cache lets git say which ones: each entry in it carries the object id git's index had
for its entry.json when it was read, and it is used only while

- the index still holds that object id for that path, and
- `git diff-files` does not list the path (git's own stat check, racy-git handling included: the
  same trust `git status` and `git commit -a` place in it).

Any other entry is read from disk. Only valid entries are kept; a corrupt one is read every time,
so its finding is always worded from the bytes on disk.

The file (`<git dir>/cachelint/entries.jsonl`, never in the cache tree) is a header line, then
lines of columns: each a JSON array holding one array per field (the object id of entry.json,
then an entry's fields up to its request), all of the same length, for up to 10,000 entries. A
check turns a line into entries at C speed; a row per entry took twice as long. The first check
of a clone writes the lines its helpers (`cachelint.readahead`) encoded, as they are. Losing the
file only costs time: an unreadable, foreign or damaged file is ignored and rewritten, and a
failed write is not an error. `cachelint check --no-cache` skips it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from itertools import chain, repeat
from pathlib import Path
from typing import NamedTuple, TypeVar, cast

import orjson

from cachelint import __version__
from cachelint.config import Layout
from cachelint.fsutil import atomic_write_chunks
from cachelint.store import UNREAD_REQUEST, Entry

# Bump when the meaning of a column changes (or what parse_entry accepts), so older files are
# dropped. 1 was a row per entry; 2 read MEAI dates more loosely than MEAI does.
FORMAT = 3
CACHE_FILE = "cachelint/entries.jsonl"

# Entries per line: decoding a line holds all its columns at once, 70 MB for 100,000 entries.
LINE_ENTRIES = 10_000

_REQUEST = Entry._fields.index("request")
_LAYOUTS = {layout.value: layout for layout in Layout}
_T = TypeVar("_T")


class Cached(NamedTuple):
    """Entries by directory, and the object id entry.json had in the index when each was read."""

    entries: dict[str, Entry]
    objects: dict[str, str]


def cache_file(git_dir: Path) -> Path:
    return git_dir / CACHE_FILE


def header(layout: Layout) -> bytes:
    """The first line: what the columns depend on besides the bytes of entry.json."""
    fields = {"format": FORMAT, "cachelint": __version__, "layout": layout.value}
    return orjson.dumps(fields, option=orjson.OPT_APPEND_NEWLINE)


def encode(entries: Sequence[Entry], objects: Sequence[str]) -> bytes:
    """Lines of columns, `LINE_ENTRIES` entries at most each: `objects[i]` is the object id of
    `entries[i]`'s entry.json. No entries, no lines."""
    return b"".join(
        _encode_line(entries[i : i + LINE_ENTRIES], objects[i : i + LINE_ENTRIES])
        for i in range(0, len(entries), LINE_ENTRIES)
    )


def _encode_line(entries: Sequence[Entry], objects: Sequence[str]) -> bytes:
    """orjson writes the datetimes (as isoformat() would) and the layout's value. An entry
    whose directory git named with undecodable bytes holds a lone surrogate, which JSON cannot:
    it is left out, so it is read from disk each time, and the others keep theirs."""
    fields = list(zip(*entries, strict=True))[:_REQUEST] if entries else [()] * _REQUEST
    try:
        return orjson.dumps([objects, *fields], option=orjson.OPT_APPEND_NEWLINE)
    except TypeError:  # orjson.JSONEncodeError
        kept = [i for i, entry in enumerate(entries) if _encodable(entry)]
        return _encode_line([entries[i] for i in kept], [objects[i] for i in kept])


def _encodable(entry: Entry) -> bool:
    try:
        orjson.dumps(entry[:_REQUEST])
    except TypeError:  # orjson.JSONEncodeError
        return False
    return True


def decode(line: bytes, *, objects: bool = True) -> Cached | None:
    """What `encode` wrote; None when it is not that (a damaged line, a wrong type anywhere).
    `objects=False` leaves the object ids out (an empty dict): a check that will not write the
    cache file does not need them."""
    try:
        columns = orjson.loads(line)
        (object_ids, kinds, directories, scenarios, keys) = columns[:5]
        (created, expires, providers, models, iterations) = columns[5:]
        if not (_all_str(object_ids) and _all_str(directories) and _all_str(scenarios)):
            return None
        if not (_all_str(keys, optional=True) and _all_str(iterations, optional=True)):
            return None  # the other columns fail below: intern and fromisoformat take str
        kinds = list(map(_LAYOUTS.__getitem__, kinds))
        # As a read leaves it: a native entry's request is validated, then not kept; an MEAI
        # entry has none.
        requests = [UNREAD_REQUEST if kind is Layout.CACHELINT else None for kind in kinds]
        fields = zip(
            kinds,
            directories,
            map(sys.intern, scenarios),  # thousands of entries share one: one string each
            keys,
            _each(datetime.fromisoformat, created),
            _each(datetime.fromisoformat, expires),
            _each(sys.intern, providers),
            _each(sys.intern, models),
            iterations,
            requests,
            strict=True,
        )
        # tuple.__new__ builds each Entry at C speed; Entry._make is a Python call per entry
        # (which only checks the length, fixed here by the columns).
        built = cast(Iterator[Entry], map(tuple.__new__, repeat(Entry), fields))
        entries = dict(zip(directories, built, strict=True))
        return Cached(entries, dict(zip(directories, object_ids, strict=True)) if objects else {})
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None


def _all_str(column: object, *, optional: bool = False) -> bool:
    """Whether `column` is a list of strings (or None, if `optional`)."""
    if type(column) is not list:
        return False
    kinds = set(map(type, column))  # at C speed
    return kinds <= ({str, type(None)} if optional else {str})


def _each(convert: Callable[[str], _T], values: list[str | None]) -> Iterator[_T | None]:
    """`convert` each value but None; at C speed when there is no None."""
    if None not in values:
        return map(convert, cast(list[str], values))
    return (None if value is None else convert(value) for value in values)


def decode_lines(lines: Iterable[bytes], *, objects: bool = True) -> Cached | None:
    """The entries of these lines, as `decode` reads each; None if any is not a line of
    columns."""
    found = Cached({}, {})
    for line in lines:
        part = decode(line, objects=objects)
        if part is None:
            return None
        found.entries.update(part.entries)
        found.objects.update(part.objects)
    return found


def load(git_dir: Path, layout: Layout) -> Cached:
    """The cache file's entries for this layout setting; none when it is missing, foreign or
    damaged anywhere."""
    try:
        with open(cache_file(git_dir), "rb") as fh:
            if fh.readline() == header(layout) and (found := decode_lines(fh)) is not None:
                return found
    except OSError:
        pass
    return Cached({}, {})


def has_entries(git_dir: Path, layout: Layout) -> bool:
    """Whether the cache file holds an entry for this layout setting, without decoding it: its
    header matches and a line of columns follows whose first column is not empty."""
    try:
        with open(cache_file(git_dir), "rb") as fh:
            return fh.readline() == header(layout) and fh.read(3) == b'[["'
    except OSError:
        return False


def save(git_dir: Path, layout: Layout, committed: Sequence[tuple[Entry, str]]) -> None:
    """Replace the cache file with these (entry, object id) pairs."""
    entries = [entry for entry, _ in committed]
    write(git_dir, layout, [encode(entries, [object_id for _, object_id in committed])])


def write(git_dir: Path, layout: Layout, lines: Iterable[bytes]) -> None:
    """Replace the cache file with these lines of columns, atomically and without an fsync (a
    torn file reads as damaged and is rebuilt). Failing to write is not an error."""
    try:
        atomic_write_chunks(cache_file(git_dir), chain((header(layout),), lines), durable=False)
    except OSError:
        pass
