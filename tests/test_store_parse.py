"""The fast paths of entry validation (orjson, the combined native check, the whole-second
timestamp) must accept, reject and word errors exactly like the field-by-field code."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from cachelint.config import Layout
from cachelint.entries import _decode_entry
from cachelint.errors import CorruptEntry
from cachelint.store import (
    Entry,
    _read_native_checked,
    decode_json,
    parse_entry,
    parse_time,
)

KEY = "0123456789abcdef" + "0" * 48
DIR = "eval-cache/cache/s/0123456789abcdef"


def _native(**changes: object) -> dict[str, object]:
    data: dict[str, object] = {
        "format": 1,
        "key": KEY,
        "scenario": "s",
        "provider": "openai",
        "model": "m",
        "created": "2025-06-01T00:00:00Z",
        "expires": "2026-06-01T00:00:00Z",
        "request": {},
    }
    data.update(changes)
    return {k: v for k, v in data.items() if v is not None}


@pytest.mark.parametrize(
    "value",
    [
        "2025-06-01T00:00:00Z",
        "2025-06-01T00:00:00z",
        " 2025-06-01T00:00:00Z",
        "2025-06-01T00:00:00.1234567Z",
        "2025-06-01T00:00:00+02:00",
        "2025-13-01T00:00:00Z",
        "2025-06-01X00:00:00Z",
        "not a time at all!!Z",
    ],
)
def test_parse_time_fast_path_agrees_with_general_path(value: str) -> None:
    def general(text: str) -> datetime:
        text = text.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        if "." in text:
            head, _, frac = text.partition(".")
            digits = frac[:7].rstrip("+-:0123456789Z") or frac[:7]
            text = f"{head}.{digits[:6].ljust(6, '0')}{frac[7:]}"
        return datetime.fromisoformat(text)

    try:
        expected: datetime | str = general(value)
    except ValueError:
        expected = "error"
    try:
        got: datetime | str = parse_time(value)
    except ValueError as exc:
        assert str(exc) == f"not an ISO 8601 timestamp: {value!r}"
        got = "error"
    assert got == expected
    if isinstance(got, datetime):
        assert got.utcoffset() is not None


def test_parse_time_whole_second_utc() -> None:
    assert parse_time("2025-06-01T12:34:56Z") == datetime(
        2025, 6, 1, 12, 34, 56, tzinfo=timezone.utc
    )


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"format": 2},
        {"key": None},
        {"key": 7},
        {"key": "ffff" + KEY},
        {"request": []},
        {"scenario": None},
        {"provider": 3},
        {"model": None},
        {"created": "yesterday"},
        {"expires": 5},
        {"created": "bad", "provider": None},  # the first failing field in the old order wins
        {"model": None, "scenario": None},
    ],
)
def test_native_fast_path_matches_field_by_field_validation(changes: dict[str, object]) -> None:
    data = _native(**changes)
    try:
        expected: object = _read_native_checked(data, DIR, DIR.rpartition("/")[2])
    except CorruptEntry as exc:
        expected = str(exc)
    try:
        got: object = parse_entry(data, DIR, Layout.AUTO)
    except CorruptEntry as exc:
        got = str(exc)
    assert got == expected
    if not isinstance(got, str):
        assert got == parse_entry(data, DIR, Layout.CACHELINT)


VALID = json.dumps({**_native(), "contents": "0" * 64}).encode()


@pytest.mark.parametrize(
    "raw",
    [
        VALID,
        b"\xef\xbb\xbf" + VALID,
        VALID.replace(b'"format": 1', b'"format": 123456789012345678901234567890'),  # a float
        VALID.replace(b'"key": "', b'"key": 123456789012345678901234567890, "k": "'),
        VALID.replace(b'"model": "m"', b'"model": NaN'),  # json accepts, orjson rejects
        VALID.replace(b'"model": "m"', b'"model": "\\ud800"'),  # a lone surrogate escape
        b'{"a": NaN}',
        b'{"format": 123456789012345678901234567890}',
        b'{"key": 123456789012345678901234567890}',
        b'{"a": "\\ud800"}',
        b"\xef\xbb\xbf{}",
        b'{"a": 1',
        b"[1,]",
        b"\xff\xfe",
        b"",
    ],
)
def test_entry_json_reads_like_the_store(tmp_path: Path, raw: bytes) -> None:
    """The linter's fast read gives the entry, or the words of the finding, that the stdlib
    decoder and parse_entry give (the store's own way of reading)."""
    path = tmp_path / "entry.json"
    path.write_bytes(raw)
    try:
        expected: object = parse_entry(
            decode_json(raw), DIR, Layout.AUTO, digest="d", maybe_secret=False
        )
        assert isinstance(expected, Entry)
    except ValueError as exc:
        expected = f"entry.json is not valid JSON ({exc})"
    except CorruptEntry as exc:
        expected = str(exc)
    try:
        got: object = _decode_entry(path.read_bytes(), DIR, Layout.AUTO, "d", False)[0]
    except CorruptEntry as exc:
        got = str(exc)
    assert got == expected
