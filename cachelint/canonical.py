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


def canonical_bytes(value: Any) -> bytes:
    """RFC 8785 canonical UTF-8 bytes of a JSON value."""
    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as exc:
        raise ValueError(f"not canonicalisable as JSON: {exc}") from None


def cache_key(request: Any) -> str:
    """The full cache key: blake3 hex digest (64 characters) of the canonical request."""
    return blake3.blake3(canonical_bytes(request)).hexdigest()


def dump_pretty(value: Any) -> bytes:
    """The deterministic on-disk JSON form: sorted keys, 2-space indent, UTF-8, LF, final newline."""
    text = json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)
    return (text + "\n").encode("utf-8")
