"""Reading many entries on every core.

Verifying an entry (reading both files, hashing them, decoding entry.json, deriving the key from
the stored request, looking for secrets) is CPU work that threads cannot share under the GIL, and
a first check of a large tree (a fresh clone in CI) does it for every entry. Worker processes
share it: the entries to read are cut into slices, queued for the workers, and the linter's own
process reads too, taking slices from the back of the queue that no worker has started (a future
not yet handed to a worker can be cancelled), so nothing waits on a worker's start-up and no slice
is read twice. A worker hands its entries back as a line of the entry cache's columns
(`entrycache.pack`), which the linter rebuilds at C speed.

Workers only ever save time: a slice whose worker failed or never started is read here, with the
same `read_entry`, so every finding is worded from the bytes on disk either way.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future

from cachelint import entrycache
from cachelint.childproc import usable_cores
from cachelint.config import Layout
from cachelint.entries import read_entry
from cachelint.errors import CorruptEntry
from cachelint.store import Entry

# An entry, or why it is corrupt.
Outcome = Entry | str
# (entry directory, the cache root's `<root>/cache/` prefix it lies under)
Item = tuple[str, str]

# Below this many entries to read, a worker's start-up (a fresh interpreter and its imports) costs
# about as much as it saves, so the linter reads them alone unless asked for workers (`--jobs`).
MIN_PARALLEL = 2_000
# Entries per slice: small enough that the last slices balance the cores, large enough that the
# per-slice cost of queueing and answering stays small beside reading it.
SLICE = 500
MAX_WORKERS = 8


def read_all(
    base: str,
    items: Sequence[Item],
    layout: Layout,
    limit: int,
    jobs: int | None = None,
    advance: Callable[[int], object] | None = None,
) -> dict[str, Outcome]:
    """What `read_entry` makes of each item, by directory. `jobs` is how many processes may read
    at once (None: every core, and only when there are enough entries to be worth it).
    `advance(n)` is told of every n items read, from any thread (a progress bar)."""
    workers = _workers(len(items), jobs)
    size = max(1, min(SLICE, -(-len(items) // (4 * (workers + 1)))))
    if workers == 0 and advance is None:
        return read_slice(base, items, layout, limit)
    slices = [items[i : i + size] for i in range(0, len(items), size)]
    pool = _pool(workers) if workers else None
    if pool is None:  # read alone, a slice at a time to be counted
        return _read_here(base, slices, layout, limit, advance)
    found: dict[str, Outcome] = {}
    try:
        futures = [pool.submit(_read_packed, base, part, layout, limit) for part in slices]
        if advance is not None:
            for part, future in zip(slices, futures, strict=True):
                future.add_done_callback(_counter(advance, len(part)))
        for part, future in zip(reversed(slices), reversed(futures), strict=True):
            if future.cancel():
                found.update(_read_here(base, [part], layout, limit, advance))
        for part, future in zip(slices, futures, strict=True):
            if not future.cancelled():
                found.update(_answer(future) or read_slice(base, part, layout, limit))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return found


def _pool(workers: int) -> Executor | None:
    """Worker processes, or None when this platform cannot start them."""
    try:
        # Imported only here: most checks (a hook's) read too few entries to start workers.
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        return ProcessPoolExecutor(
            workers, mp_context=multiprocessing.get_context("spawn"), initializer=_ignore_sigint
        )
    except (OSError, ValueError, ImportError):
        return None


def _counter(advance: Callable[[int], object], count: int) -> Callable[[Future[_Packed]], None]:
    """A worker's slice counted once it is done, in whichever thread sees it done; a slice taken
    back (cancelled) is counted where it is read."""

    def done(future: Future[_Packed]) -> None:
        if not future.cancelled():
            advance(count)

    return done


def _read_here(
    base: str,
    slices: Sequence[Sequence[Item]],
    layout: Layout,
    limit: int,
    advance: Callable[[int], object] | None,
) -> dict[str, Outcome]:
    found: dict[str, Outcome] = {}
    for part in slices:
        found.update(read_slice(base, part, layout, limit))
        if advance is not None:
            advance(len(part))
    return found


def _workers(count: int, jobs: int | None) -> int:
    if count == 0:
        return 0
    if jobs is None:
        return 0 if count < MIN_PARALLEL else min(usable_cores() - 1, MAX_WORKERS)
    return max(0, min(jobs - 1, MAX_WORKERS, count - 1))


def read_slice(base: str, items: Sequence[Item], layout: Layout, limit: int) -> dict[str, Outcome]:
    found: dict[str, Outcome] = {}
    for directory, prefix in items:
        try:
            found[directory] = read_entry(base, directory, prefix, layout, limit)
        except CorruptEntry as exc:
            found[directory] = str(exc)
    return found


_Packed = tuple[bytes, list[Entry], dict[str, str]]


def _read_packed(base: str, items: Sequence[Item], layout: Layout, limit: int) -> _Packed:
    """A worker's answer: the valid entries as a line of columns (and any JSON cannot hold), and
    the corrupt ones' reasons."""
    found = read_slice(base, items, layout, limit)
    entries = [outcome for outcome in found.values() if not isinstance(outcome, str)]
    line, unpackable = entrycache.pack(entries)
    corrupt = {d: outcome for d, outcome in found.items() if isinstance(outcome, str)}
    return line, unpackable, corrupt


def _answer(future: Future[_Packed]) -> dict[str, Outcome] | None:
    """A worker's slice as outcomes; None when the worker failed (the slice is read here)."""
    try:
        line, unpackable, corrupt = future.result()
        found: dict[str, Outcome] = dict(entrycache.unpack(line))
    except Exception:  # a broken pool, a worker killed, a damaged answer: read it here
        return None
    found.update((entry.directory, entry) for entry in unpackable)
    found.update(corrupt)
    return found


def _ignore_sigint() -> None:
    # Ctrl-C reaches the whole process group: the linter stops the check, and workers must not
    # each print a KeyboardInterrupt traceback while it does.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
