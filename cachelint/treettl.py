"""The time to live a tree's entries really have, for the stamp.

The stamp records the tree's own TTLs (expiration - creation of its entries), shortest and longest,
not cachelint's `ttl-days`: a MEAI tree's TTL is whatever `timeToLiveForCacheEntries` was when it
was recorded, and a tree re-recorded in parts can hold several.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta

from cachelint.store import Entry

_DAY = timedelta(days=1)


def ttl_days(entries: Iterable[Entry], default: int) -> tuple[int, int]:
    """(shortest, longest) TTL of `entries` in whole days, at least 1 (the stamp's `ttlDays` is a
    positive integer; a shorter TTL is eval-cache-short-ttl's to report); `default` for both when
    no entry has both times."""
    spans = [e.expires - e.created for e in entries if e.created and e.expires]
    if not spans:
        return default, default
    return max(1, min(spans) // _DAY), max(1, max(spans) // _DAY)
