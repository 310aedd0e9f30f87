"""JSON documents written in pieces: a large run's summary lists every scenario, and built whole
it (and its text) would be held at once.

A document's top-level value may be a `Streamed` list: its items are made again each time it is
iterated, and `json_chunks` writes the document with each item encoded on its own, giving the very
bytes `display.json_dumps` gives for the same document with a plain list (a test compares them).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from cachelint.display import json_dumps


class Streamed:
    """A list whose items are made by `make()` on each iteration, never held together."""

    def __init__(self, count: int, make: Callable[[], Iterable[Any]]) -> None:
        self._count = count
        self._make = make

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[Any]:
        return iter(self._make())


def plain(document: Mapping[str, Any]) -> dict[str, Any]:
    """`document` with each `Streamed` value made a list (for a small document, or a test)."""
    return {k: list(v) if isinstance(v, Streamed) else v for k, v in document.items()}


def json_chunks(document: Mapping[str, Any], *, compact: bool = False) -> Iterator[str]:
    """`json_dumps(plain(document), compact=compact)` in pieces: each `Streamed` value's items
    encoded one by one. No trailing newline."""
    streamed = {k: v for k, v in document.items() if isinstance(v, Streamed) and len(v)}
    if not streamed:
        yield json_dumps(plain(document), compact=compact)
        return
    # Each streamed list stands in the document as one unique string, found again in its text:
    # the keys are sorted by the encoder, so the text around the lists is the encoder's own.
    marks = {k: f"cachelint-streamed-{os.urandom(16).hex()}" for k in streamed}
    # Only the marks stand in: a streamed list made here too would be made twice.
    standing = {k: [marks[k]] if k in marks else v for k, v in document.items()}
    text = json_dumps(plain(standing), compact=compact)
    # Top-level values sit at depth 1, a list's items at depth 2 (indent 2).
    pad = "" if compact else "\n    "
    sep = "," + pad
    for key in sorted(streamed, key=lambda k: text.index(f'"{marks[k]}"')):
        head, text = text.split(f'"{marks[key]}"', 1)
        yield head
        if compact:
            yield from _compact_items(streamed[key])
            continue
        for i, item in enumerate(streamed[key]):
            piece = json_dumps(item, compact=compact)
            yield (sep if i else "") + piece.replace("\n", pad)
    yield text


# Compact items encoded this many at a time: a list's compact text is its items' texts joined by
# commas, and the encoder's set-up per call cost about as much as a small item's encoding.
_BATCH = 256


def _compact_items(items: Iterable[Any]) -> Iterator[str]:
    """The items' compact texts, comma-separated, a batch of them at a time."""
    listed = iter(items)
    sep = ""
    while batch := list(itertools.islice(listed, _BATCH)):
        yield sep + json_dumps(batch, compact=True)[1:-1]
        sep = ","
