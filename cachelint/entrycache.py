"""Entries verified by earlier checks, so an entry whose files git holds unchanged is not read,
hashed and verified again.

Reading and verifying every entry is the largest part of a check, and a pre-commit hook runs
check on every commit that touches the cache, when nearly every entry is the one it verified last
time. The cache keeps the index listing (`git ls-files -v --stage`) its entries were verified
against, whose records hold each file's object id, a content hash. An entry is reused only while

- its two files' records in the index are the ones in that listing (the same object ids), and
- `git diff-files` lists neither path and neither is marked assume-unchanged or skip-worktree
  (git's own check that the working tree file still has the indexed content: the same trust
  `git status` and `git commit -a` place in it).

Anything else is read from disk and verified. Only valid entries are kept; a corrupt one is read
every time, so its finding is always worded from the bytes on disk.

The file (`<git dir>/cachelint/entries.jsonl`, never in the cache tree) is a header line (format,
cachelint version, layout setting, number of entries, the blake3 of the index listing), then lines
of columns: each a JSON array of one array per `store.COLUMNS` field, for up to `LINE_ENTRIES`
entries. The listing itself is kept beside it, as git wrote it (`entries.index`). Losing either
only costs time: an unreadable, foreign or damaged file is ignored and rewritten, and a failed
write is not an error. `cachelint check --no-cache` skips them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import chain, repeat
from operator import attrgetter
from pathlib import Path
from typing import Any, NamedTuple, cast

import blake3
import orjson

from cachelint import __version__
from cachelint.config import Layout
from cachelint.fsutil import atomic_write_chunks, open_regular, read_regular
from cachelint.store import COLUMNS, UNREAD_REQUEST, Entry, unchanged

# Bump when the meaning of a column changes, or what the linter verifies before it caches an
# entry, so older files are dropped. 2 verified entry.json alone; 3 read MEAI dates more loosely
# than MEAI does; 4 had no secret prefilter column; 5 no digest of the index listing; 6 had a
# prefilter blind to a Turkish dotted or dotless I in `authorization`; 7 kept each entry's object
# ids instead of the index listing.
FORMAT = 8
CACHE_FILE = "cachelint/entries.jsonl"
LISTING_FILE = "cachelint/entries.index"

# Entries per line: decoding a line holds all of its columns at once.
LINE_ENTRIES = 10_000


class Cached(NamedTuple):
    """Entries by directory, verified while the index listing was the one whose blake3 is
    `index_digest`: while the listing is byte for byte the same and git reports no file
    changed, every entry still holds."""

    entries: dict[str, Entry]
    index_digest: str = ""


def cache_file(git_dir: Path) -> Path:
    return git_dir / CACHE_FILE


def header(layout: Layout, count: int, index: str = "") -> bytes:
    """The first line: what the columns depend on besides the bytes of the entries, how many
    entries follow, and the digest of the index listing their object ids come from."""
    fields = {"format": FORMAT, "cachelint": __version__, "layout": layout.value}
    fields.update(entries=count, index=index)
    return orjson.dumps(fields, option=orjson.OPT_APPEND_NEWLINE)


def _parse_header(line: bytes, layout: Layout) -> tuple[int, str] | None:
    """The entry count and index digest of a header written for this layout by this cachelint,
    else None."""
    try:
        fields = orjson.loads(line)
        count, index = fields["entries"], fields["index"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None
    if type(count) is not int or type(index) is not str or line != header(layout, count, index):
        return None
    return count, index


def _encode_line(entries: Sequence[Entry]) -> tuple[bytes, int]:
    """One line of columns and how many entries it holds. An entry that JSON cannot hold (a
    directory git named with undecodable bytes holds a lone surrogate) is left out: it is read
    from disk each time."""
    # One tuple per field, in Entry's own order (the assertion under COLUMNS); `request`, the
    # last field, is no column.
    fields = list(zip(*entries, strict=True)) or [()] * len(Entry._fields)
    columns = [
        list(_encoded(column.encode, values))
        for column, values in zip(COLUMNS, fields[: len(COLUMNS)], strict=True)
    ]
    try:
        return orjson.dumps(columns, option=orjson.OPT_APPEND_NEWLINE), len(entries)
    except TypeError:  # orjson.JSONEncodeError
        return _encode_line([entry for entry in entries if _encodable(entry)])


def _encodable(entry: Entry) -> bool:
    try:
        orjson.dumps([c.encode(getattr(entry, c.name)) for c in COLUMNS])
    except TypeError:  # orjson.JSONEncodeError
        return False
    return True


def pack(entries: Sequence[Entry]) -> tuple[bytes, list[Entry]]:
    """`entries` as one line of the cache file, and those JSON cannot hold (to be sent as they
    are); what the linter's worker processes hand back (`cachelint.pooled`)."""
    line, count = _encode_line(entries)
    if count == len(entries):
        return line, []
    return line, [entry for entry in entries if not _encodable(entry)]


def unpack(line: bytes) -> dict[str, Entry]:
    """The entries of a line `pack` wrote, by directory."""
    entries = _decode_line(line)
    if entries is None:
        raise ValueError("not a line of entry columns")
    return entries


def _decode_line(line: bytes) -> dict[str, Entry] | None:
    """What `_encode_line` wrote, by directory; None when it is not that (a damaged line, a
    wrong type)."""
    try:
        columns = orjson.loads(line)
        if type(columns) is not list or len(columns) != len(COLUMNS):
            return None
        values = []
        for column, raw in zip(COLUMNS, columns, strict=True):
            if not _valid(raw, column.kind, needed=column.needed) or len(raw) != len(columns[0]):
                return None
            values.append(list(_decoded(column.decode, raw)))
        # As a read leaves it: a native entry's request was verified, then not kept; an MEAI
        # entry has none.
        layouts = values[COLUMNS.index(_LAYOUT)]
        values.append([UNREAD_REQUEST if kind is Layout.CACHELINT else None for kind in layouts])
        # Fields follow Entry's own order (the assertion under COLUMNS): tuple.__new__ builds
        # each entry at C speed.
        rows = zip(*values, strict=True)
        built = cast(Iterator[Entry], map(tuple.__new__, repeat(Entry), rows))
        return dict(zip(columns[COLUMNS.index(_DIRECTORY)], built, strict=True))
    except (orjson.JSONDecodeError, TypeError, ValueError):
        return None


_DIRECTORY = next(c for c in COLUMNS if c.name == "directory")
_LAYOUT = next(c for c in COLUMNS if c.name == "layout")


def _valid(column: object, kind: type | tuple[type, ...], *, needed: bool) -> bool:
    """Whether `column` is a list of `kind` values (or None, unless `needed`)."""
    if type(column) is not list:
        return False
    kinds = set(map(type, cast(list[object], column)))
    allowed = set(kind) if isinstance(kind, tuple) else {kind}
    return kinds <= (allowed if needed else allowed | {type(None)})


def _encoded(encode: Any, values: Sequence[Any]) -> Iterator[Any]:
    """`encode` of each value, once per distinct value (a tree's entries share a few dates)."""
    if encode is unchanged:
        return iter(values)
    encoded = {value: encode(value) for value in set(values)}
    return map(encoded.__getitem__, values)


def _decoded(decode: Any, raw: list[Any]) -> Iterator[Any]:
    """`decode` of each value, once per distinct value: a tree's entries share a few dates,
    models and scenarios, and decoding each only once also shares one object between them."""
    if decode is unchanged:
        return iter(raw)
    decoded = {value: None if value is None else decode(value) for value in set(raw)}
    return map(decoded.__getitem__, raw)


def written_from(git_dir: Path, layout: Layout) -> str:
    """The digest of the index listing the cache file was written from, read from its header
    alone; "" when there is no usable file."""
    try:
        with open_regular(cache_file(git_dir)) as fh:
            parsed = _parse_header(fh.readline(), layout)
    except OSError:
        return ""
    return "" if parsed is None else parsed[1]


def load(git_dir: Path, layout: Layout) -> Cached:
    """The cache file's entries for this layout setting; none when it is missing, foreign or
    damaged anywhere, or holds another number of entries than its header says."""
    try:
        with open_regular(cache_file(git_dir)) as fh:
            parsed = _parse_header(fh.readline(), layout)
            if parsed is None:
                return Cached({})
            count, index = parsed
            found = Cached({}, index)
            for line in fh:
                part = _decode_line(line)
                if part is None:
                    return Cached({})
                found.entries.update(part)
    except OSError:
        return Cached({})
    return found if len(found.entries) == count else Cached({})


def save(git_dir: Path, layout: Layout, entries: Sequence[Entry], index: str) -> None:
    """Replace the cache file with these entries, verified while the index listing was the one
    whose digest is `index` (kept by `save_listing`), atomically and without an fsync (a torn
    file reads as damaged and is rebuilt), one line encoded at a time so the file is never whole
    in memory. Failing to write is not an error."""
    keep: list[Entry] = []
    for start in range(0, len(entries), LINE_ENTRIES):
        block = entries[start : start + LINE_ENTRIES]
        if _plainly_encodable(block):
            keep += block
        else:
            keep += [entry for entry in block if _plainly_encodable((entry,)) or _encodable(entry)]
    lines = (_encode_line(keep[i : i + LINE_ENTRIES])[0] for i in range(0, len(keep), LINE_ENTRIES))
    try:
        atomic_write_chunks(
            cache_file(git_dir), chain((header(layout, len(keep), index),), lines), durable=False
        )
    except OSError:
        pass


def save_listing(git_dir: Path, listing: bytes) -> None:
    """Keep the index listing the next cache file is verified against. Failing is not an
    error: a listing that does not match the cache file's header is not used."""
    try:
        atomic_write_chunks(git_dir / LISTING_FILE, (listing,), durable=False)
    except OSError:
        pass


def load_listing(git_dir: Path, digest: str) -> bytes | None:
    """The kept index listing whose blake3 is `digest`; None when it is missing or another, or
    `digest` is "" (no cache file names one)."""
    if not digest:
        return None
    try:
        listing = read_regular(git_dir / LISTING_FILE, max_bytes=None)
    except OSError:
        return None
    return listing if blake3.blake3(listing).hexdigest() == digest else None


def _plainly_encodable(entries: Iterable[Entry]) -> bool:
    """True for the usual entries, whose text is all ASCII: JSON holds them (the general test,
    which encodes an entry, is left for the rest)."""
    return "".join(filter(None, chain.from_iterable(map(_TEXT, entries)))).isascii()


_TEXT = attrgetter("directory", "scenario", "key", "provider", "model", "iteration")
