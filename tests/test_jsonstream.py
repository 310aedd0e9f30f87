"""`jsonstream.json_chunks` gives the bytes `display.json_dumps` gives for the same document with
its `Streamed` lists made plain, compact and indented, whatever the items (nested, escaped)."""

from __future__ import annotations

from typing import Any

import pytest

from cachelint.display import json_dumps
from cachelint.jsonstream import Streamed, json_chunks, plain

ITEMS: list[Any] = [{"b": [1, {"x": "\u2028\n\u202e"}], "a": None}, {"z": {}}, [], "q", 1.5]


@pytest.mark.parametrize("compact", [True, False])
def test_chunks_are_json_dumps(compact: bool) -> None:
    document = {
        "zeta": Streamed(len(ITEMS), lambda: ITEMS),
        "alpha": {"scenarios": ["not streamed"]},
        "mid": Streamed(2, lambda: ["s", {"k": [1, 2]}]),
        "empty": Streamed(0, list),
        # More than one batch of compact items (`jsonstream._BATCH`): commas between batches too.
        "many": Streamed(len(ITEMS) * 120, lambda: ITEMS * 120),
    }
    assert "".join(json_chunks(document, compact=compact)) == json_dumps(
        plain(document), compact=compact
    )
    assert plain(document)["zeta"] == ITEMS
