"""How long-running commands treat Python's cyclic garbage collector, decided at the command
boundary (figures: benchmarks/README.md).

Both `check` and `run` build objects per entry or per scenario and keep most of them to the end,
so every generational collection rescans a growing heap that holds little garbage. `check` runs
only cachelint's code, which makes no cycles: the collector is off. `run` also runs the team's own
code (SDK clients, async loops), which may: the collector stays on, collecting less often.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

# Allocations between young collections during a run (CPython's default is 700): cyclic garbage
# from a target is still collected, in batches of at most this many objects.
RUN_YOUNG_THRESHOLD = 100_000


@contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """The collector off; reference counting frees what is transient. On leaving, what was built
    is moved to the oldest generation unscanned (freeze, then unfreeze), else the first
    allocation after would run a full collection over all of it."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.freeze()
            gc.unfreeze()
            gc.enable()


@contextmanager
def fewer_collections() -> Iterator[None]:
    """The collector on, its young generation collected every `RUN_YOUNG_THRESHOLD` allocations."""
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], RUN_YOUNG_THRESHOLD), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
