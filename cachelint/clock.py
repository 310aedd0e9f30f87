"""The current time, in one place so tests and CI can pin it.

`CACHELINT_NOW` (an ISO 8601 timestamp) fixes "now" for every command: expiry findings, recorded
`created`/`expires` and execution names then reproduce byte for byte. Functions that need time take
a `now` argument; only the command layer calls `now()`.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone

from cachelint.errors import CachelintError


def now() -> datetime:
    pinned = os.environ.get("CACHELINT_NOW")
    if not pinned:
        return datetime.now(timezone.utc)
    from cachelint.store import parse_time

    try:
        return parse_time(pinned)
    except ValueError:
        raise CachelintError(
            f"CACHELINT_NOW={pinned!r} is not an ISO 8601 timestamp; use e.g. 2026-01-31T12:00:00Z"
        ) from None
