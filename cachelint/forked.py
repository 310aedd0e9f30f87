"""Work done by a forked copy of this process while the process goes on: a second core for the last
steps of `cachelint run` (the HTML page is the largest, and nothing after it reads the page).

Only where forking is safe: on Linux (macOS forbids using many system libraries after a fork
without exec), with no other thread running (a lock another thread held at the fork would stay
held in the child forever). Elsewhere the work runs here, at once, with the same result.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable

from cachelint.errors import CachelintError


def _can_fork() -> bool:
    return sys.platform == "linux" and _threads() == 1


def _threads() -> int:
    """Threads of this process as the kernel counts them: a library's native threads, which the
    threading module does not see, count too (CPython warns about forking with any)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


class Forked:
    """`work` started in a child (or already done here); `join()` waits for it and raises what it
    raised: a `CachelintError` as the same one-line error, anything else by running `work` again
    here, so an internal error reaches the user as it would have without the child."""

    def __init__(self, work: Callable[[], None]) -> None:
        self._work = work
        self._pid: int | None = None
        self._reader: int | None = None
        if not _can_fork():
            work()
            return
        reader, writer = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: do the work, say how it ended, and leave without cleanup
            os.close(reader)
            code = 0
            try:
                work()
            except CachelintError as exc:
                os.write(writer, str(exc).encode("utf-8", "replace"))
                code = 2
            except BaseException:
                code = 3
            os._exit(code)
        os.close(writer)
        self._pid, self._reader = pid, reader

    def join(self) -> None:
        if self._pid is None or self._reader is None:
            return
        pid, reader = self._pid, self._reader
        self._pid = self._reader = None
        chunks = []
        try:
            while chunk := os.read(reader, 65536):
                chunks.append(chunk)
        finally:
            os.close(reader)
        code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        if code == 2 and chunks:
            raise CachelintError(b"".join(chunks).decode("utf-8", "replace"))
        if code != 0:
            self._work()  # again here: its error surfaces as it would without the child
