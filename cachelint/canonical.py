"""Canonical JSON and the cache key.

The key must be the same on every machine and every Python: RFC 8785 (JSON Canonicalization
Scheme) fixes key order, number formatting and string escaping, so dict order, platform line
endings and float repr never change a key. Text inside the request is hashed as given; line
endings are normalised by the request builder, not here, so that a prompt file checked out with
CRLF on Windows and LF on Linux yields one key.
"""

from __future__ import annotations

import json
from typing import Any

import blake3
import rfc8785

# RFC 8785 only accepts integers a double represents exactly.
_SAFE_INT = 2**53 - 1


def _plain_json(value: Any) -> bool:
    """True when the C json encoder writes exactly RFC 8785's bytes for `value`.

    For strings, integers, booleans, null, arrays and objects with ASCII keys both encoders agree
    byte for byte: the same minimal string escapes (quote, backslash, the five short forms, other
    C0 controls as lowercase \\u00xx) and, with ASCII keys, code-point order equals the UTF-16
    order RFC 8785 sorts by. Floats (ECMAScript number formatting), non-ASCII keys and any other
    type take the reference implementation.
    """
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return True
    if kind is int:
        return -_SAFE_INT <= value <= _SAFE_INT
    if kind is list or kind is tuple:
        return all(_plain_json(item) for item in value)
    if kind is dict:
        return all(
            type(key) is str and key.isascii() and _plain_json(item) for key, item in value.items()
        )
    return False


def canonical_bytes(value: Any) -> bytes:
    """RFC 8785 canonical UTF-8 bytes of a JSON value; ValueError when it has none (a lone
    surrogate, an integer beyond 2**53, nesting deeper than the encoders recurse)."""
    try:
        return _canonical_bytes(value)
    except RecursionError:
        raise ValueError("not canonicalisable as JSON: nested too deeply") from None


def _canonical_bytes(value: Any) -> bytes:
    if _plain_json(value):
        # rfc8785 is pure Python and was the largest per-case cost of a replay (a key per call,
        # three validations per scenario); the C encoder does the common case far faster.
        try:
            text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
            return text.encode("utf-8")
        except UnicodeEncodeError:
            pass  # a lone surrogate: let rfc8785 raise its own error below
    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as exc:
        raise ValueError(f"not canonicalisable as JSON: {exc}") from None


def cache_key(request: Any) -> str:
    """The full cache key: blake3 hex digest (64 characters) of the canonical request."""
    return blake3.blake3(canonical_bytes(request)).hexdigest()


def dump_pretty(value: Any) -> bytes:
    """The on-disk JSON form: sorted keys, 2-space indent, UTF-8, LF, a final newline."""
    text = json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)
    return (text + "\n").encode("utf-8")
