"""Values a long run no longer needs in memory, spooled as JSON to one unlinked temp file and read
back by offset: a run of 100,000 scenarios holds each one's place (two integers), not its data.
"""

from __future__ import annotations

import tempfile
import threading
import weakref
from typing import IO, Any

import orjson


class Spool:
    """JSON values spooled to one temp file: written as each lands (from any thread), read back
    by offset. The file is unlinked from the start (`tempfile.TemporaryFile`): nothing is left
    behind, even by a kill."""

    def __init__(self) -> None:
        self._file: IO[bytes] | None = None
        self._end = 0
        self._lock = threading.Lock()
        # The last value put or read: a reader mostly reads one value several times in a row
        # (a report reads one scenario's trials for its calls, its cache hits, its failures).
        self._last: tuple[int, Any] = (-1, None)

    def put(self, value: Any) -> tuple[int, int] | None:
        """Spool `value`; its offset and size, or None when it cannot be spooled."""
        try:
            data = orjson.dumps(value)
        except orjson.JSONEncodeError:  # a lone surrogate, an integer over 64 bits
            return None
        with self._lock:
            at = self._end
            try:
                if self._file is None:  # unbuffered: each read is one seek and one read
                    self._file = tempfile.TemporaryFile(prefix="cachelint-run-", buffering=0)
                    weakref.finalize(self, self._file.close)  # closed with the run's reports
                self._file.seek(at)
                if self._file.write(data) != len(data):
                    return None  # a full disk: the next value writes over this one
            except OSError:
                return None
            self._end += len(data)
            self._last = (at, value)  # read next, most often
        return at, len(data)

    def get(self, at: int, size: int) -> Any:
        last_at, value = self._last
        if last_at != at:
            with self._lock:
                assert self._file is not None  # `put` gave the offset
                self._file.seek(at)
                data = self._file.read(size)
            value = orjson.loads(data)
            self._last = (at, value)
        return value
