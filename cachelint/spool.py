"""Values a long run no longer needs in memory, spooled as JSON to one unlinked temp file and read
back by offset: a run of 100,000 scenarios holds each one's place (two integers), not its data.
"""

from __future__ import annotations

import os
import tempfile
import threading
import weakref
from typing import IO, Any

import orjson

# Values are written to the file this many bytes at a time, and read back this many at a time:
# a run puts and reads them in the same order (its scenarios'), a few hundred bytes each, and
# each system call cost more than the copy of a few dozen values (figures: benchmarks/README.md).
BATCH_BYTES = 1 << 16


class Spool:
    """JSON values spooled to one temp file: put from any thread, read back by offset. The file
    is unlinked from the start (`tempfile.TemporaryFile`): nothing is left behind, even by a kill.
    Values are gathered in memory and written `BATCH_BYTES` at a time, and read
    `BATCH_BYTES` at a time from where a value was not among the last bytes read.
    A write that fails (a full disk) keeps what it did not write in memory, readable as ever,
    and the spool takes no more values (`put` gives None: the caller holds them)."""

    def __init__(self) -> None:
        self._file: IO[bytes] | None = None
        self._end = 0  # where the next value goes
        self._pending = bytearray()  # the values from `_written` to `_end`, not yet written
        self._written = 0
        self._full = False  # a write failed: `_pending` is held, nothing more is spooled
        self._read_at = 0  # the last bytes read from the file, and where they start
        self._read = b""
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
            if self._full:
                return None
            if self._file is None:
                try:  # unbuffered: the batches are this class's own
                    self._file = tempfile.TemporaryFile(prefix="cachelint-run-", buffering=0)
                except OSError:
                    return None
                weakref.finalize(self, self._file.close)  # closed with the run's reports
            at = self._end
            self._pending += data
            self._end += len(data)
            self._last = (at, value)  # read next, most often
            if len(self._pending) >= BATCH_BYTES:
                self._write()
        return at, len(data)

    def _write(self) -> None:
        """Write the values gathered; on a failure, keep them (the caller holds the lock)."""
        assert self._file is not None
        try:
            written = _write_at(self._file, self._pending, self._written)
        except OSError:
            written = 0
        if written != len(self._pending):  # a short write is a full disk
            self._full = True
            return
        self._written += written
        self._pending = bytearray()

    def get(self, at: int, size: int) -> Any:
        last_at, value = self._last
        if last_at != at:
            with self._lock:
                data = self._bytes(at, size)
            value = orjson.loads(data)
            self._last = (at, value)
        return value

    def _bytes(self, at: int, size: int) -> bytes:
        """The `size` bytes put at `at` (the caller holds the lock)."""
        if at >= self._written:
            start = at - self._written
            return bytes(self._pending[start : start + size])
        start = at - self._read_at
        if start < 0 or start + size > len(self._read):
            assert self._file is not None  # `put` gave the offset
            self._read_at, start = at, 0
            self._read = _read_at(self._file, max(size, BATCH_BYTES), at)
        return self._read[start : start + size]


def _write_at(fh: IO[bytes], data: bytearray, at: int) -> int:
    """`os.pwrite`, or a seek and a write where there is none (Windows; the caller holds the
    spool's lock, so no other call moves the file's position meanwhile)."""
    if hasattr(os, "pwrite"):
        return os.pwrite(fh.fileno(), data, at)
    fh.seek(at)
    return fh.write(data) or 0


def _read_at(fh: IO[bytes], size: int, at: int) -> bytes:
    """`os.pread`, or a seek and a read where there is none (Windows), as `_write_at`."""
    if hasattr(os, "pread"):
        return os.pread(fh.fileno(), size, at)
    fh.seek(at)
    return fh.read(size)
