"""`Store.get`: a hit only for the full key, and a corrupt or hand-edited entry is an error."""

from __future__ import annotations

from pathlib import Path

import pytest

from cachelint.errors import CorruptEntry
from cachelint.store import CONTENTS_FILE, ENTRY_FILE, Store

KEY = "ab" * 32


def _recorded(tmp_path: Path) -> tuple[Store, Path]:
    store = Store(tmp_path / "eval-cache")
    directory = store.put("a/t/s", KEY, {"messages": []}, {"choices": []}, provider="p", model="m")
    return store, directory


def test_store_get_verifies_the_full_key(tmp_path: Path) -> None:
    store, _ = _recorded(tmp_path)
    hit = store.get("a/t/s", KEY)
    assert hit is not None and hit.response == {"choices": []}
    other = KEY[:16] + "cd" * 24  # same directory, another full key: a miss, never its answer
    assert store.get("a/t/s", other) is None
    assert store.get("a/t/other", KEY) is None


def test_store_get_raises_corrupt_entries(tmp_path: Path) -> None:
    store, directory = _recorded(tmp_path)
    (directory / CONTENTS_FILE).unlink()
    with pytest.raises(CorruptEntry, match="contents.data is missing"):
        store.get("a/t/s", KEY)
    (directory / ENTRY_FILE).write_text("{not json", encoding="utf-8")
    with pytest.raises(CorruptEntry, match="entry.json is not valid JSON"):
        store.get("a/t/s", KEY)
    (directory / ENTRY_FILE).write_text("[" * 200_000, encoding="utf-8")
    with pytest.raises(CorruptEntry, match="entry.json is not valid JSON .nested too deeply"):
        store.get("a/t/s", KEY)


def test_store_get_refuses_contents_edited_after_recording(tmp_path: Path) -> None:
    store, directory = _recorded(tmp_path)
    (directory / CONTENTS_FILE).write_text('{"choices": ["edited by hand"]}\n', encoding="utf-8")
    with pytest.raises(CorruptEntry, match="does not match the blake3 recorded in entry.json"):
        store.get("a/t/s", KEY)
