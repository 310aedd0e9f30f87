"""Entries parsed by earlier checks, so an entry git reports unchanged is not read and parsed again.

Reading and validating 100,000 entry.json files is the largest part of a check. A pre-commit hook
runs check on every commit that touches the cache, and nearly every entry is the one it read last
time. This cache lets git say which ones: each row carries the object id git's index had for
entry.json when the row was written, and a row is used only while

- the index still holds that object id for that path, and
- `git diff-files` does not list the path (git's own stat check, racy-git handling included: the
  same trust `git status` and `git commit -a` place in it).

Any other entry is read from disk. Only valid entries get a row; a corrupt one is read every time,
so its finding is always worded from the bytes on disk.

The file (`<git dir>/cachelint/entries.jsonl`, never in the cache tree) is a header line, then one
JSON array per entry sorted by directory. The linter visits entries in that same order, so it
streams the rows beside its own walk instead of holding 100,000 of them (a dict of them cost
85 MB). Losing the file only costs time: an unreadable, foreign or damaged file is ignored and
rewritten, and a failed write is not an error. `cachelint check --no-cache` skips it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from datetime import datetime
from itertools import chain
from pathlib import Path
from typing import IO, Any

import orjson

from cachelint import __version__
from cachelint.config import Layout
from cachelint.fsutil import atomic_write_chunks
from cachelint.store import UNREAD_REQUEST, Entry

# Bump when the meaning of a row changes (or what parse_entry accepts), so older rows are dropped.
FORMAT = 1
CACHE_FILE = "cachelint/entries.jsonl"

# [directory, object id, layout, scenario, key, created, expires, provider, model, iteration]
Row = list[Any]
_LAYOUTS = {layout.value: layout for layout in Layout}


def cache_file(git_dir: Path) -> Path:
    return git_dir / CACHE_FILE


def _header(layout: Layout) -> dict[str, object]:
    """What the rows depend on besides the bytes of entry.json."""
    return {"format": FORMAT, "cachelint": __version__, "layout": layout.value}


class Rows:
    """The rows of the cache file, read in directory order as `lookup` asks for them."""

    def __init__(self, git_dir: Path, layout: Layout) -> None:
        self.read = 0  # rows read from the file so far
        self.used = 0  # rows `lookup` turned into entries
        self._fh: IO[bytes] | None = None
        self._current: Row | None = None
        try:
            fh = open(cache_file(git_dir), "rb")  # noqa: SIM115 - closed by close()
        except OSError:
            return
        self._fh = fh
        if self._decode(fh.readline()) != _header(layout):
            self.close()
            return
        self._advance()

    def lookup(self, directory: str, object_id: str | None) -> Entry | None:
        """The entry of `directory` if its row was written for `object_id` (the object id the
        index has now); None when there is no such row or it is malformed.

        Calls must come in increasing directory order: rows before `directory` are skipped."""
        while self._current is not None and self._current[0] < directory:
            self._advance()
        row = self._current
        if row is None or row[0] != directory:
            return None
        self._advance()
        if object_id is None or row[1] != object_id:
            return None
        try:
            _, _, layout, scenario, key, created, expires, provider, model, iteration = row
            if not (key is None or type(key) is str) or not (
                iteration is None or type(iteration) is str
            ):
                return None  # the other fields fail below: intern and fromisoformat take str
            kind = _LAYOUTS[layout]
            found = Entry(
                kind,
                directory,
                sys.intern(scenario),
                key,
                None if created is None else datetime.fromisoformat(created),
                None if expires is None else datetime.fromisoformat(expires),
                None if provider is None else sys.intern(provider),
                None if model is None else sys.intern(model),
                iteration,
                # As a read leaves it: a native entry's request is validated, then not kept; an
                # MEAI entry has none.
                UNREAD_REQUEST if kind is Layout.CACHELINT else None,
            )
        except (KeyError, TypeError, ValueError):
            return None
        self.used += 1
        return found

    def close(self) -> int:
        """Stop reading; the number of rows the file holds (0 when it is unusable)."""
        if self._fh is None:
            return 0
        if self._current is not None:
            self.read += sum(1 for _ in self._fh)
        self._fh.close()
        self._fh = self._current = None
        return self.read

    def _advance(self) -> None:
        assert self._fh is not None
        row = self._decode(self._fh.readline())
        if isinstance(row, list) and len(row) == 10 and isinstance(row[0], str):
            self.read += 1
            self._current = row
        else:  # the end, or a damaged line: nothing after it is trusted
            self._current = None

    @staticmethod
    def _decode(line: bytes) -> Any:
        try:
            return orjson.loads(line) if line else None
        except orjson.JSONDecodeError:
            return None


def has_rows(git_dir: Path, layout: Layout) -> bool:
    """Whether the cache file holds a row for this layout setting."""
    rows = Rows(git_dir, layout)
    try:
        return rows.read > 0
    finally:
        rows.close()


def save(git_dir: Path, layout: Layout, committed: Iterable[tuple[Entry, str]]) -> None:
    """Replace the cache file with a row per (entry, object id), given in directory order."""
    write(git_dir, layout, encode_rows(committed))


def write(git_dir: Path, layout: Layout, rows: Iterable[bytes]) -> None:
    """Replace the cache file with these encoded rows, atomically and without an fsync (a torn
    file reads as damaged and is rebuilt). Failing to write is not an error."""
    header = orjson.dumps(_header(layout), option=orjson.OPT_APPEND_NEWLINE)
    try:
        atomic_write_chunks(cache_file(git_dir), chain((header,), rows), durable=False)
    except OSError:
        pass


def encode_rows(committed: Iterable[tuple[Entry, str]]) -> Iterator[bytes]:
    """A line per (entry, object id), but for an entry `encode_row` cannot write."""
    for entry, object_id in committed:
        row = encode_row(entry, object_id)
        if row is not None:
            yield row


def encode_row(e: Entry, object_id: str) -> bytes | None:
    """The line of this entry. orjson writes the datetimes (as isoformat() would) and the
    layout's value. An entry whose directory git named with undecodable bytes holds a lone
    surrogate, which JSON cannot: None, so it gets no row and is read from disk each time, and
    the others still get theirs."""
    try:
        return orjson.dumps(
            (e.directory, object_id, e.layout, e.scenario, e.key, e.created, e.expires)
            + (e.provider, e.model, e.iteration),
            option=orjson.OPT_APPEND_NEWLINE,
        )
    except TypeError:  # orjson.JSONEncodeError
        return None
