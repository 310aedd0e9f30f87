"""Canonical JSON and the cache key.

The key must be the same on every machine and every Python: RFC 8785 (JSON Canonicalization
Scheme) fixes key order, number formatting and string escaping, so dict order, platform line
endings and float repr never change a key. Text inside the request is hashed as given; line
endings are normalised by the request builder, not here, so that a prompt file checked out with
CRLF on Windows and LF on Linux yields one key.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterator
from typing import Any

import blake3
import orjson
import rfc8785

# orjson with sorted keys and no spaces; OPT_STRICT_INTEGER refuses integers beyond 2**53 - 1,
# which RFC 8785 refuses too (a double does not represent them exactly).
_SORTED = orjson.OPT_SORT_KEYS | orjson.OPT_STRICT_INTEGER


# orjson's error for a value nested deeper than it recurses (255 levels).
_TOO_DEEP = "Recursion limit reached"


class _NotPlain(Exception):
    """The value needs the reference implementation."""


def _plain(value: Any) -> Any:
    """`value` in a form orjson writes exactly RFC 8785's bytes for; _NotPlain when it has none.

    For strings, integers, booleans, null, arrays and objects with ASCII keys orjson (sorted keys,
    no spaces) and RFC 8785 agree byte for byte: the same minimal string escapes (quote,
    backslash, the five short forms, other C0 controls as lowercase \\u00xx) and, with ASCII keys,
    code-point order equals the UTF-16 order RFC 8785 sorts by. Floats are the exception: a copy
    holds each as its ECMAScript form (`_number`), already serialised. Non-ASCII keys and any
    other type take the reference implementation.
    """
    floats = False
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str or kind is int or kind is bool or item is None:
            continue
        if kind is dict:
            try:
                ascii_keys = "".join(item).isascii()
            except TypeError:  # a key that is not a string
                raise _NotPlain from None
            if not ascii_keys:
                raise _NotPlain
            stack.extend(item.values())
        elif kind is list or kind is tuple:
            stack.extend(item)
        elif kind is float:
            floats = True
        else:
            raise _NotPlain
    return _with_numbers(value) if floats else value


def _with_numbers(value: Any) -> Any:
    """A copy of a plain value with each float as the fragment RFC 8785 writes for it."""
    kind = type(value)
    if kind is float:
        return orjson.Fragment(_number(value))
    if kind is dict:
        return {key: _with_numbers(item) for key, item in value.items()}
    if kind is list or kind is tuple:
        return [_with_numbers(item) for item in value]
    return value


def _number(value: float) -> str:
    """ECMAScript's Number::toString (ECMA-262 7.1.12.1), which RFC 8785 prescribes: the shortest
    digits that read back as `value` (what repr finds), placed by the decimal exponent."""
    if not math.isfinite(value):
        raise _NotPlain  # RFC 8785 has no form for it; the reference implementation says so
    if value == 0:
        return "0"  # -0 too
    sign = "-" if value < 0 else ""
    mantissa, _, exponent = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    # The value is <digits> times 10**(exponent - len(fraction)), so 0.<digits> times 10**point.
    point = len(digits) + int(exponent or 0) - len(fraction)
    digits = digits.rstrip("0")
    count = len(digits)
    if count <= point <= 21:
        return sign + digits + "0" * (point - count)
    if 0 < point <= 21:
        return sign + digits[:point] + "." + digits[point:]
    if -6 < point <= 0:
        return sign + "0." + "0" * -point + digits
    power = point - 1
    shown = digits if count == 1 else digits[0] + "." + digits[1:]
    return f"{sign}{shown}e{'+' if power > 0 else '-'}{abs(power)}"


def canonical_bytes(value: Any) -> bytes:
    """RFC 8785 canonical UTF-8 bytes of a JSON value; ValueError when it has none (a lone
    surrogate, an integer beyond 2**53, arrays or objects nested 255 deep or more)."""
    try:
        return _canonical_bytes(value)
    except RecursionError:
        raise ValueError("not canonicalisable as JSON: nested too deeply") from None


def _canonical_bytes(value: Any) -> bytes:
    # rfc8785 is pure Python and was the largest per-case cost of a replay (a key per call,
    # three validations per scenario) and of verifying a tree's keys; orjson does the usual
    # request far faster.
    try:
        return orjson.dumps(_plain(value), option=_SORTED)
    except orjson.JSONEncodeError as exc:
        if str(exc) == _TOO_DEEP:  # the same limit on every Python, unlike the stack's
            raise ValueError("not canonicalisable as JSON: nested too deeply") from None
        # a lone surrogate, a large integer: let rfc8785 decide
    except _NotPlain:
        pass
    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as exc:
        raise ValueError(f"not canonicalisable as JSON: {exc}") from None


def cache_key(request: Any) -> str:
    """The full cache key: blake3 hex digest (64 characters) of the canonical request."""
    return blake3.blake3(canonical_bytes(request)).hexdigest()


_PRETTY = json.JSONEncoder(sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)


def dump_pretty(value: Any) -> bytes:
    """The on-disk JSON form: sorted keys, 2-space indent, UTF-8, LF, a final newline."""
    return (_PRETTY.encode(value) + "\n").encode("utf-8")


def pretty_text(value: Any) -> Iterator[str]:
    """`dump_pretty(value)`'s text in pieces, before it is encoded (a caller may escape it)."""
    pieces = itertools.chain(_PRETTY.iterencode(value), ("\n",))
    while batch := list(itertools.islice(pieces, 8192)):
        yield "".join(batch)


def pretty_chunks(value: Any) -> Iterator[bytes]:
    """`dump_pretty(value)` in pieces, for a document too large to hold as one text (the green
    record of a large suite names each of its dataset files)."""
    return (text.encode("utf-8") for text in pretty_text(value))
