"""`fastjson` gives the standard `json` module's values, bytes and errors: orjson where it agrees,
`json` where it does not (large integers, deep nesting, NaN, lone surrogates, floats' spelling,
other types)."""

from __future__ import annotations

import enum
import json
import math
import random
import struct
from typing import Any

import pytest

from cachelint import fastjson
from cachelint.display import escape_json_unsafe, json_dumps
from cachelint.fastjson import dumps_compact, loads, utf8_sig_text

_TEXTS = [
    "",
    "a",
    "é",
    "\u2028",
    "\u202e",
    "\x85",
    "\x7f",
    '"',
    "\\",
    "\n\t\x00\x1f",
    "😀",
    "\uffff",
]


def _float(rng: random.Random) -> float:
    kind = rng.random()
    if kind < 0.4:  # any double: every exponent, subnormals, NaN and infinities
        return float(struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0])
    if kind < 0.8:  # around the points where repr turns to exponents (1e-4, 1e16)
        return rng.choice([1, -1]) * rng.random() * 10.0 ** rng.randint(-9, 22)
    return rng.choice([0.0, -0.0, 1.0, 0.5, 7.1e-05, 1e16, 1e-5, math.inf, -math.inf, math.nan])


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return rng.choice(_TEXTS) + str(rng.randrange(100))
    if kind == 1:
        return rng.choice([0, -1, 2**53, 2**63 - 1, -(2**63), 2**64 - 1, 2**64, -(2**63) - 1])
    if kind == 2:
        return _float(rng)
    if kind == 3:
        return rng.choice([True, False, None])
    if kind in (4, 5):
        return "".join(rng.choice(_TEXTS) for _ in range(rng.randrange(4)))
    if kind == 6:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == 7:
        return tuple(_value(rng, depth + 1) for _ in range(rng.randrange(3)))
    return {rng.choice(_TEXTS) + str(i): _value(rng, depth + 1) for i in range(rng.randrange(5))}


def test_random_documents_encode_and_decode_as_json_does() -> None:
    rng = random.Random(44)
    for _ in range(3000):
        document = _value(rng)
        text = json_dumps(document, compact=True)
        assert dumps_compact(document) == text
        assert repr(loads(text)) == repr(json.loads(text))


def test_del_in_ascii_text_is_escaped_and_the_rest_left_as_json_wrote_it() -> None:
    """DEL is the one ASCII character escaped after json.dumps: ASCII text without it is taken as
    it is, without the expression (`display.escape_json_unsafe`)."""
    assert dumps_compact({"a": "x\x7fy"}) == '{"a":"x\\u007fy"}'
    assert json_dumps(["\x7f", "é\x85"], compact=True) == '["\\u007f","é\\u0085"]'
    plain = '{"a":"say \\"hi\\"\\n\\u001f"}'
    assert escape_json_unsafe(plain) is plain


class Colour(enum.IntEnum):
    RED = 1


class Text(str):
    pass


@pytest.mark.parametrize(
    "document",
    [
        {"n": 2**64, "m": -(2**63) - 1},  # beyond orjson's integers
        {"s": "\ud800"},  # a lone surrogate
        {2: "b", 1: "a"},  # keys json.dumps turns into strings
        {"e": Colour.RED, "t": Text("x")},  # subclasses orjson would write its own way
        {"f": [math.nan, math.inf, -math.inf, 1e-7, 1e22, -0.0]},
        [[[[[[[[[[[[[[[[["deep"]]]]]]]]]]]]]]]]] * 2,
        {"k": [[]] * 3, "ü": {"é": 1, "e": 2, "😀": 3, "\uffff": 4}},
    ],
)
def test_what_orjson_writes_otherwise_is_written_by_json(document: Any) -> None:
    assert dumps_compact(document) == json_dumps(document, compact=True)


def test_only_the_way_to_a_float_orjson_spells_otherwise_is_copied() -> None:
    """A results document's floats (a rate, latencies) orjson mostly spells as json does: the
    document goes to orjson as it stands. A float it spells otherwise (a latency below 1e-4,
    NaN), anywhere, is given as json's text in a copy of the containers on the way to it only:
    the rest of the document is not copied, and nothing in it is changed."""
    trial: dict[str, Any] = {"latency_s": 0.000131, "usage": {"n": 3}, "t": ("a", None, True)}
    document: dict[str, Any] = {"pass_rate": 0.5, "trials": [trial], "zero": -0.0}
    assert fastjson._spelt(document) is document
    assert dumps_compact(document) == json_dumps(document, compact=True)
    for odd in (9e-05, 1e-07, math.nan, -math.inf):
        trial["latency_s"] = odd
        before = json_dumps(document, compact=True)
        spelt = fastjson._spelt(document)
        assert spelt is not document and spelt["trials"][0] is not trial
        assert spelt["trials"][0]["usage"] is trial["usage"]
        assert spelt["trials"][0]["t"] is trial["t"]
        assert dumps_compact(document) == before == json_dumps(document, compact=True)
        assert trial["latency_s"] is odd


def test_nesting_deeper_than_orjson_goes_to_json() -> None:
    deep: Any = "x"
    for _ in range(300):
        deep = [deep]
    assert dumps_compact(deep) == json_dumps(deep, compact=True)
    # json.loads's own limit depends on the Python (3.10-3.12 give up below orjson's 1,024 levels,
    # 3.13 reads 1,000); whatever it does, loads does the same.
    for depth in (600, 1000, 1100, 5000):
        text = "[" * depth + "]" * depth
        assert _outcome(loads, text) == _outcome(json.loads, text)


def test_many_brackets_nested_shallow_are_read_by_orjson(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run summary holds thousands of `[` and `{` a few levels deep: orjson reads it (json.loads
    took three times as long); with 300 levels in it, which orjson does not write again, it goes
    to json.loads."""
    summary = {
        "scenarios": [{"scenario": f"a/t/{i}", "trials": [{"judges": []}]} for i in range(400)]
    }
    deep: Any = 1
    for _ in range(300):
        deep = [deep]
    texts = [json.dumps(summary), json.dumps([deep, summary])]
    expected = [json.loads(text) for text in texts]
    read_by_json: list[str] = []
    real = json.loads

    def spy(text: str, **kwargs: Any) -> Any:
        read_by_json.append(text)
        return real(text, **kwargs)

    monkeypatch.setattr(json, "loads", spy)
    assert [loads(text) for text in texts] == expected
    assert read_by_json == [texts[1]]


def _outcome(decode: Any, text: str) -> tuple[str, Any]:
    try:
        return "value", decode(text)
    except RecursionError:
        return "error", RecursionError


@pytest.mark.parametrize(
    "text",
    [
        "18446744073709551616",
        '{"a": -9223372036854775809}',
        "NaN",
        "[Infinity, -Infinity, 1e400]",
        '"\\ud800"',
        '{"a": 1, "a": 2}',
        "[" * 700 + "]" * 700,
    ],
)
def test_text_orjson_reads_otherwise_is_read_by_json(text: str) -> None:
    assert repr(loads(text)) == repr(json.loads(text))


@pytest.mark.parametrize("text", ['"a\x01"', "[1,]", "01", "", "{} x", "[1] \x00"])
def test_bad_text_is_json_s_own_error(text: str) -> None:
    with pytest.raises(json.JSONDecodeError) as ours:
        loads(text)
    with pytest.raises(json.JSONDecodeError) as theirs:
        json.loads(text)
    assert type(ours.value) is json.JSONDecodeError
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize(
    "raw",
    [b"{}", b"\xef\xbb\xbf[1]", b"\xef\xbb\xbf", b"caf\xc3\xa9", b"\xff{}", b"[\xed\xa0\x80]"],
)
def test_utf8_sig_text_is_the_codec_s_text_or_error(raw: bytes) -> None:
    try:
        expected: Any = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        expected = str(exc)
    try:
        got: Any = utf8_sig_text(raw)
    except UnicodeDecodeError as exc:
        got = str(exc)
    assert got == expected


def test_a_long_number_in_the_bytes_goes_to_json() -> None:
    text = '{"n": 123456789012345678901, "s": "x"}'
    assert loads(text, raw=text.encode()) == json.loads(text)
    assert type(loads(text, raw=text.encode())["n"]) is int
