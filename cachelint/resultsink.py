"""A child process that writes `cachelint run`'s per-scenario results files.

Creating a file (a temp file, then a rename) costs more than replaying a scenario from the cache.
For a large suite `ResultWriter` hands each finished document to this child through a pipe (one
write of a few kilobytes) and goes on with the next scenario, while the child creates the files on
the second core. A thread cannot do this: it needs the GIL between system calls and slowed every
replayed call down more than it saved (figures: benchmarks/README.md).

The child reads frames (path length, path, data length, data), writes each file as
`ResultWriter` would itself (temp name, then `os.replace`, no fsync: results are not committed
data), and on end of input prints the first failure, if any, as JSON on stdout: the parent turns it
into its one-line error. It ignores Ctrl-C, which the parent handles: the files already sent are
still written, and it ends when the parent closes the pipe (or dies).

Only the standard library is imported here: the child starts in a few tens of milliseconds.
"""

from __future__ import annotations

import json
import os
import signal
import struct
import sys

HEADER = struct.Struct("<II")  # path length, data length
TEMP_MARK = ".cachelint-tmp-"  # fsutil.TEMP_PREFIX; kept equal by a test


def frame(path: str, data: bytes) -> bytes:
    encoded = path.encode("utf-8", "surrogateescape")
    return HEADER.pack(len(encoded), len(data)) + encoded + data


def write_file(path: str, data: bytes, made: set[str]) -> None:
    """One results file: a temp name, then `os.replace`, so a reader never sees half of it."""
    temp = f"{path}.{TEMP_MARK}{os.getpid()}"
    try:
        parent = os.path.dirname(path)
        if parent not in made:
            os.makedirs(parent, exist_ok=True)
            made.add(parent)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.replace(temp, path)
    except OSError:
        # A full disk or a directory where the file goes leaves the temp file behind, among the
        # results, unless it is removed here.
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise


def _read_exactly(stream: object, size: int) -> bytes | None:
    data = stream.read(size)  # type: ignore[attr-defined]
    return data if len(data) == size else None


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    source = sys.stdin.buffer
    made: set[str] = set()
    failure: dict[str, str] | None = None
    while (header := _read_exactly(source, HEADER.size)) is not None:
        path_size, data_size = HEADER.unpack(header)
        path_bytes = _read_exactly(source, path_size)
        data = _read_exactly(source, data_size)
        if path_bytes is None or data is None:
            break  # the parent died mid-frame: nothing whole is left to write
        if failure is not None:
            continue  # keep reading so the parent never blocks on a full pipe
        path = path_bytes.decode("utf-8", "surrogateescape")
        try:
            write_file(path, data, made)
        except OSError as exc:
            failure = {"path": path, "reason": exc.strerror or str(exc)}
    sys.stdout.write(json.dumps(failure))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
