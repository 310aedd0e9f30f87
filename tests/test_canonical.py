"""`canonical_bytes` is RFC 8785 (the cache key's input): equal to the reference implementation on
random values, on the edge cases where UTF-16 and code-point order differ, and refusing the same."""

from __future__ import annotations

import math
import random
import struct
from typing import Any

import pytest
import rfc8785

from cachelint.canonical import canonical_bytes, dump_pretty, pretty_chunks

_CHARS = ['"', "\\", "\b", "\f", "\n", "\r", "\t", "\x00", "\x1f", "\x7f", "a", "Z", "é", "€",
          "\u2028", "\ue000", "\uffff", "😀", "𝄞", " ", "/", "<"]  # fmt: skip


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(_CHARS) for _ in range(rng.randint(0, 6)))


def _value(rng: random.Random, depth: int = 0) -> Any:
    pick = rng.randint(0, 9 if depth < 4 else 5)
    if pick == 0:
        return None
    if pick == 1:
        return rng.choice([True, False])
    if pick == 2:
        return rng.choice([0, -1, 7, 2**53 - 1, -(2**53) + 1, 10**15])
    if pick == 3:
        return rng.choice([0.0, -0.0, 1.5, 1e21, 1e-7, 0.1, 123456789.125, 5e-324])
    if pick <= 5:
        return _text(rng)
    if pick <= 7:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {_text(rng): _value(rng, depth + 1) for _ in range(rng.randint(0, 5))}


def test_canonical_bytes_equal_rfc8785_on_random_values() -> None:
    rng = random.Random(8785)
    for _ in range(3000):
        value = _value(rng)
        assert canonical_bytes(value) == rfc8785.dumps(value), value


@pytest.mark.parametrize(
    "value",
    [
        {"\ue000": 1, "😀": 2, "a": 3},  # UTF-16 order differs from code-point order here
        {"messages": [{"role": "user", "content": 'x\u0001\n"y\\'}], "n": 2**53 - 1},
        ("tuple", [True, None]),
    ],
)
def test_canonical_bytes_edge_cases(value: Any) -> None:
    assert canonical_bytes(value) == rfc8785.dumps(value)


@pytest.mark.parametrize("value", [2**53, {"x": float("nan")}, "\ud800", {1: "int key"}])
def test_canonical_bytes_still_refuses_what_rfc8785_refuses(value: Any) -> None:
    with pytest.raises(ValueError, match="not canonicalisable"):
        canonical_bytes(value)


def test_floats_are_written_as_rfc8785_writes_them() -> None:
    """ECMAScript number formatting, against the reference on random doubles (every exponent
    range, both signs, subnormals) and on the boundaries where the notation changes."""
    rng = random.Random(754)
    doubles = [
        struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0] for _ in range(20000)
    ]
    doubles += [round(rng.uniform(-1e3, 1e3), rng.randint(0, 8)) for _ in range(5000)]
    doubles += [1e21, 9.999999999999999e20, 1e-7, 1e-6, 1.5e-6, 5e-324, 2.0**53, 0.1, -0.0, 100.0]
    for value in filter(math.isfinite, doubles):
        assert canonical_bytes([value]) == rfc8785.dumps([value]), repr(value)


def test_a_request_with_floats_is_not_handed_to_the_reference(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The fast path is taken for the usual request, temperature and all."""
    request = {
        "model": "m",
        "temperature": 0.7,
        "top_p": 1.0,
        "messages": [{"role": "user", "content": "é\n"}],
    }
    expected = rfc8785.dumps(request)

    def refuse(value: Any) -> bytes:
        raise AssertionError("rfc8785 called")

    monkeypatch.setattr(rfc8785, "dumps", refuse)
    assert canonical_bytes(request) == expected


def test_nesting_too_deep_is_refused_at_one_depth_on_every_python() -> None:
    """orjson's limit, not the interpreter's stack: the same answer on 3.10 and 3.13."""

    def nested(depth: int) -> Any:
        value: Any = 0.5
        for _ in range(depth):
            value = {"a": [value]}
        return value

    assert canonical_bytes(nested(100)) == rfc8785.dumps(nested(100))
    with pytest.raises(ValueError, match="nested too deeply"):
        canonical_bytes(nested(300))


def test_pretty_chunks_join_to_dump_pretty() -> None:
    """The green record of a large suite is written in pieces: the same bytes as one text."""
    record = {
        "format": 1,
        "datasets": {f"eval-datasets/a/t/s{i}.json": f"{i:064x}" for i in range(20_000)},
        "run": {"scenarios": ["é", "\u2028", 1.5, None, True], "count": 3},
    }
    chunks = list(pretty_chunks(record))
    assert len(chunks) > 1
    assert b"".join(chunks) == dump_pretty(record)
