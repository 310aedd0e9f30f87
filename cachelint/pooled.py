"""Reading many entries on every core.

Verifying an entry (reading both files, hashing them, decoding entry.json, deriving the key from
the stored request, looking for secrets) is CPU work that threads cannot share under the GIL, and
a first check of a large tree (a fresh clone in CI) does it for every entry. Helper processes
share it. Each reads its share of slices from the front of the list and appends every slice's
valid entries to its own output file, as a line of the entry cache's columns
(`entrycache.pack`); the linter reads from the back, and between its steps takes the lines the
helpers have finished, rebuilt at C speed. When every entry is read or taken, the helpers are
stopped.

Nothing of the linter feeds a helper or waits on one: a helper is given its list once, and its
lines wait in a file until the linter looks, so its work never waits for the linter's GIL, as a
worker of a process pool does for every slice it is handed and answers. Like the linter, a helper
never follows a link in a file's own name nor waits on a FIFO (`read_file`).

Helpers only ever save time. Whatever they have not handed back (an entry they found corrupt, one
whose name JSON cannot carry, everything of a helper that failed) the linter reads itself with the
same `read_entry`, so every finding is worded from the bytes on disk either way.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from contextlib import suppress
from typing import IO

from cachelint import entrycache
from cachelint.childproc import module_command, usable_cores
from cachelint.config import Layout
from cachelint.entries import read_entry
from cachelint.errors import CorruptEntry
from cachelint.store import Entry

# An entry, or why it is corrupt.
Outcome = Entry | str
# (entry directory, the cache root's `<root>/cache/` prefix it lies under)
Item = tuple[str, str]

# Below this many entries to read, a helper's start-up (a fresh interpreter and its imports) costs
# about as much as it saves, so the linter reads them alone unless asked for helpers (`--jobs`).
MIN_PARALLEL = 2_000
# Entries a helper reads before handing them back: one line of its output file.
SLICE = 500
# Entries the linter reads between two looks at the helpers' output.
STEP = 100
MAX_HELPERS = 8


class Helpers:
    """Running helper processes and the files their entries arrive in."""

    def __init__(self) -> None:
        self._running: list[tuple[subprocess.Popen[bytes], str, IO[bytes]]] = []
        self._partial: dict[int, bytes] = {}
        self._lists: list[str] = []

    def start(self, base: str, layout: Layout, limit: int, count: int, listed: str) -> None:
        """`count` helpers reading the entries the file at `listed` names (NUL-separated
        items). A helper that cannot start is left out: its share is read here."""
        for index in range(count):
            try:
                fd, out = tempfile.mkstemp(prefix="cachelint-read-")
            except OSError:
                return
            os.close(fd)
            args = [str(os.getpid()), base, layout.value, str(limit), out, str(index), str(count)]
            try:
                proc = subprocess.Popen(
                    [*module_command("cachelint.pooled"), *args, listed],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            except (OSError, ValueError):  # no interpreter to start (an embedded Python)
                os.unlink(out)
                return
            self._running.append((proc, out, open(out, "rb")))  # noqa: SIM115 (closed in stop)

    def __bool__(self) -> bool:
        return bool(self._running)

    def take(self) -> dict[str, Entry]:
        """The entries the helpers have handed back since the last call."""
        found: dict[str, Entry] = {}
        for number, (_, _, fh) in enumerate(self._running):
            data = self._partial.pop(number, b"") + fh.read()
            whole, _, self._partial[number] = data.rpartition(b"\n")
            for line in whole.split(b"\n") if whole else ():
                try:
                    found.update(entrycache.unpack(line))
                except ValueError:  # a damaged line: its entries are read here
                    continue
        return found

    def stop(self) -> None:
        """Stop every helper and remove its files."""
        for proc, out, fh in self._running:
            proc.kill()
            proc.wait()
            fh.close()
            with suppress(OSError):
                os.unlink(out)
        self._running.clear()
        for path in self._lists:
            with suppress(OSError):
                os.unlink(path)
        self._lists.clear()

    def list_items(self, items: Sequence[Item]) -> str | None:
        """The path of a file naming `items`, removed by `stop`; None when it cannot be
        written."""
        data = b"".join(f"{d}\0{p}\0".encode("utf-8", "surrogateescape") for d, p in items)
        try:
            fd, path = tempfile.mkstemp(prefix="cachelint-list-")
        except OSError:
            return None
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
        except OSError:  # no room: no helper starts, and the file goes now
            with suppress(OSError):
                os.unlink(path)
            return None
        self._lists.append(path)
        return path


def read_all(
    base: str,
    items: Sequence[Item],
    layout: Layout,
    limit: int,
    jobs: int | None = None,
    advance: Callable[[int], object] | None = None,
) -> dict[str, Outcome]:
    """What `read_entry` makes of each item, by directory: read here from the back while helper
    processes, when there are enough items, read from the front. `jobs` is how many processes may
    read at once (None: every core, and only when there are enough entries to be worth it).
    `advance(n)` is told of every n items read or taken."""
    count = _helpers(len(items), jobs)
    helpers = Helpers()
    listed = helpers.list_items(items) if count else None
    if listed is not None:
        helpers.start(base, layout, limit, count, listed)
    found: dict[str, Outcome] = {}
    wanted = {directory for directory, _ in items} if helpers and advance is not None else None
    try:
        position = len(items)
        while position:
            if helpers:
                taken = helpers.take()
                if wanted is not None and advance is not None:
                    advance(sum(1 for d in taken if d in wanted and d not in found))
                found.update(taken)
            while position and items[position - 1][0] in found:
                position -= 1
            start = max(0, position - STEP)
            part = [item for item in items[start:position] if item[0] not in found]
            found.update(read_slice(base, part, layout, limit))
            if advance is not None and part:
                advance(len(part))
            position = start
    finally:
        helpers.stop()
    return found


def _helpers(count: int, jobs: int | None) -> int:
    """How many helpers should read `count` entries beside the linter."""
    if count == 0:
        return 0
    if jobs is None:
        return 0 if count < MIN_PARALLEL else min(usable_cores() - 1, MAX_HELPERS)
    return max(0, min(jobs - 1, MAX_HELPERS, count - 1))


def read_slice(base: str, items: Sequence[Item], layout: Layout, limit: int) -> dict[str, Outcome]:
    found: dict[str, Outcome] = {}
    for directory, prefix in items:
        try:
            found[directory] = read_entry(base, directory, prefix, layout, limit)
        except CorruptEntry as exc:
            found[directory] = str(exc)
    return found


def helper(argv: list[str]) -> None:
    """A helper's work: its share of the items, a line of valid entries per slice. A helper
    whose linter has died (killed by a CI timeout, say) stops and removes its files, which the
    linter would have removed; so does one that finds its list already removed by another."""
    linter, base, layout, limit, out, index, count, listed = argv
    try:
        items = _from_list(listed)
    except OSError:  # the list is gone: its linter stopped, or died
        items = []
    share, every = int(index), int(count)
    with open(out, "ab", buffering=0) as fh:
        for start in range(share * SLICE, len(items), every * SLICE):
            if os.getppid() != int(linter):
                break
            found = read_slice(base, items[start : start + SLICE], Layout(layout), int(limit))
            line, _ = entrycache.pack([e for e in found.values() if not isinstance(e, str)])
            fh.write(line)
    if os.getppid() != int(linter):  # orphaned: adopted by init or a subreaper
        for path in (out, listed):
            with suppress(OSError):  # another helper's, or already gone
                os.unlink(path)


def _from_list(path: str) -> list[Item]:
    with open(path, "rb") as fh:
        fields = fh.read().decode("utf-8", "surrogateescape").split("\0")
    return list(zip(fields[0:-1:2], fields[1:-1:2], strict=True))


if __name__ == "__main__":
    helper(sys.argv[1:])
