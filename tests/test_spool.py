"""The run's spool (`cachelint.spool`): values put in batches and read back by offset, whatever
the order, with a full disk losing none of them."""

from __future__ import annotations

import errno
import os
import random
from collections.abc import Callable
from typing import Any

import pytest

from cachelint import spool as spool_module
from cachelint.spool import BATCH_BYTES, Spool


def _values(count: int) -> list[dict[str, Any]]:
    picks = random.Random(44)  # a few dozen values a batch
    longest = 3 * BATCH_BYTES // 100
    return [{"n": n, "text": "x" * picks.randrange(0, longest)} for n in range(count)]


def _counted(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    calls: list[int] = []
    real: Callable[..., Any] = getattr(os, name)

    def counted(*args: Any) -> Any:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(spool_module.os, name, counted)
    return calls


def test_values_read_back_in_any_order_across_batches() -> None:
    values = _values(600)
    spool = Spool()
    places = [spool.put(v) for v in values]
    order = list(range(len(values)))
    random.Random(7).shuffle(order)
    for n in [*order, *range(len(values)), *reversed(range(len(values)))]:
        place = places[n]
        assert place is not None
        assert spool.get(*place) == values[n]


def test_values_read_back_without_pread_and_pwrite(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(spool_module.os, "pread")  # as on Windows, which has neither
    monkeypatch.delattr(spool_module.os, "pwrite")
    test_values_read_back_in_any_order_across_batches()


def test_values_are_written_and_read_a_batch_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    writes, reads = _counted(monkeypatch, "pwrite"), _counted(monkeypatch, "pread")
    values = _values(600)
    spool = Spool()
    places = [spool.put(v) for v in values]
    size = sum(p[1] for p in places if p is not None)
    batches = size // BATCH_BYTES
    assert 0 < len(writes) <= batches
    for place, value in zip(places, values, strict=True):  # in the order put, as a run reads
        assert place is not None and spool.get(*place) == value
    assert 0 < len(reads) <= batches + 1


def test_a_full_disk_keeps_what_was_put_and_takes_no_more(monkeypatch: pytest.MonkeyPatch) -> None:
    spool = Spool()
    kept = [spool.put(v) for v in _values(50)]  # some written, the rest gathered

    def full(*args: Any) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(spool_module.os, "pwrite", full)
    values = _values(400)
    places = []
    for value in values:
        place = spool.put(value)
        if place is None:
            break
        places.append(place)
    assert len(places) < len(values)  # the failed write refused the rest: the caller holds them
    assert spool.put({"more": 1}) is None
    for place, value in zip([*kept, *places], [*_values(50), *values], strict=False):
        assert place is not None and spool.get(*place) == value
