"""What a large run (`engine.HOLD_MAX_SCENARIOS`) holds of each scenario's results document until
its reports are written: its few top-level values (identity, verdict, pass rate, paths) and the
place of its trials in one unlinked temp file (`Spool`), read back each time a report reads them;
the page reads the whole document back from its results file (`Source`).

A run of 100,000 scenarios held every scenario's slim trials (calls, assertions, judges, usage:
about 1.5 KB each) until the last report was written; the reports read them a scenario at a time,
so a run's memory now grows by the heads only. Each read decodes the trials again (microseconds):
the reports that read them (the counts, run.json, the page, the text) do so a few times per
scenario. Where trials cannot be spooled (no temp file, a value orjson does not write) they are
held slim (`slim_record`: `Slim` objects, keys shared), as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from cachelint.spool import Spool

TRIALS = "trials"


@dataclass(frozen=True, slots=True)
class Source:
    """What a large run keeps of a results file it wrote, beside what it holds of the document."""

    run: Sources
    digest: bytes  # `evidence.written_digest` of the bytes written: `read_own` reads them back
    systems: tuple[bytes, ...]  # its `ScenarioReport.system_texts`' keys


class Sources:
    """A large run's results directory, its spool, and the system texts of its scenarios as the
    page shares them: each scenario's keys, and the texts that two or more scenarios sent (a text
    one scenario sent is never shared, and the page reads it from that scenario's file), so the
    page reads each results file once, as it draws it."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.texts: dict[bytes, str] = {}
        self._seen: set[bytes] = set()
        self._keys: dict[tuple[bytes, ...], tuple[bytes, ...]] = {}
        self.spool = Spool()

    def of(self, record: Mapping[str, Any], data: bytes) -> Source:
        """The `Source` of `record`, written as `data`."""
        from cachelint.runner.evidence import written_digest
        from cachelint.runner.reports.htmlscenario import system_texts, text_key

        texts = system_texts(record.get("trials") or ())
        keys = tuple(text_key(body) for body in texts)
        for key, body in zip(keys, texts, strict=True):
            if key in self._seen:
                self.texts.setdefault(key, body)
            else:
                self._seen.add(key)
        # One tuple for all the scenarios that sent the same texts.
        return Source(self, written_digest(data), self._keys.setdefault(keys, keys))

    def held(self, record: Mapping[str, Any]) -> Mapping[str, Any]:
        """What the run holds of `record`: its trials spooled, else its slim record."""
        place = self.spool.put([_light_trial(t, _call) for t in record.get(TRIALS) or ()])
        if place is None:
            return slim_record(record)
        return SpooledRecord(record, self.spool, *place)


# What a report other than the page's conversations never reads of a results document: the
# messages sent and the answers (most of its size), in each trial and each call.
_HEAVY = ("messages", "output", "response")


class Slim(Mapping[str, Any]):
    """An object of a slim results document as a large run holds it: its values in one tuple,
    its keys shared by every object with the same keys (a dict of a dozen keys costs about
    three times as much, and a run holds one for each scenario, trial and call)."""

    __slots__ = ("_index", "_values")
    _shapes: ClassVar[dict[tuple[str, ...], dict[str, int]]] = {}

    def __init__(self, items: Mapping[str, Any]) -> None:
        keys = tuple(items)
        index = Slim._shapes.get(keys)
        if index is None:
            index = Slim._shapes.setdefault(keys, {k: i for i, k in enumerate(keys)})
        self._index = index
        self._values = tuple(items.values())

    def __getitem__(self, key: str) -> Any:
        return self._values[self._index[key]]

    def get(self, key: str, default: Any = None) -> Any:
        at = self._index.get(key)
        return default if at is None else self._values[at]

    def __contains__(self, key: object) -> bool:
        return key in self._index

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)


def slim_record(record: Mapping[str, Any]) -> Mapping[str, Any]:
    """`record` without what only the page's conversations read (`_HEAVY`), each of its objects
    down to the trials' calls a `Slim` (what the reports read of them as `Mapping`s; the lists
    and objects within they hand to run.json stay as decoded)."""

    def trial(t: Mapping[str, Any]) -> Slim:
        light = _light_trial(t, lambda c: Slim(_call(c)))
        kept = {k: _EMPTY if v == [] else v for k, v in light.items()}
        made = kept["calls"]
        # A trial of one call: its usage is that call's (engine.sum_usage keeps integers only,
        # so equal usages are the same JSON).
        if isinstance(made, list) and len(made) == 1 and kept.get("usage") == made[0].get("usage"):
            kept["usage"] = made[0].get("usage")
        return Slim(kept)

    return Slim({**record, TRIALS: [trial(t) for t in record.get(TRIALS) or ()]})


def _light_trial(t: Mapping[str, Any], call: Callable[[Any], Any]) -> dict[str, Any]:
    """A trial without `_HEAVY`, each of its target and judge calls made by `call`."""
    kept = {k: v for k, v in t.items() if k not in _HEAVY}
    for key in ("calls", "judge_calls"):
        listed = t.get(key)
        kept[key] = [call(c) for c in listed] if isinstance(listed, list) else listed
    return kept


def _call(call: Mapping[str, Any]) -> dict[str, Any]:
    """A call of a slim document: without `_HEAVY`, its usage the one object of its counts."""
    kept = {k: v for k, v in call.items() if k not in _HEAVY}
    usage = kept.get("usage")
    if isinstance(usage, dict) and len(_USAGES) < _USAGES_MAX:
        counts = tuple(usage.items())
        if all(type(v) is int for _, v in counts):
            kept["usage"] = _USAGES.setdefault(counts, usage)
    return kept


# The one empty list of every slim document: nothing changes a document the reports read.
_EMPTY: list[Any] = []

# The usages of a large run's calls by their counts (integers only), one object each: a suite's
# calls mostly repeat a few (about 180 bytes a call held apart); bounded, for suites that do not.
_USAGES: dict[tuple[tuple[str, Any], ...], dict[str, Any]] = {}
_USAGES_MAX = 4_096


class SpooledRecord(Slim):
    """A results document whose trials are in a `Spool`: a `Slim` of its other values, its
    `TRIALS` held as None (so its keys keep the document's order) and read from the spool."""

    __slots__ = ("_spool", "_at", "_size")

    def __init__(self, record: Mapping[str, Any], spool: Spool, at: int, size: int) -> None:
        super().__init__({**record, TRIALS: None})
        self._spool = spool
        self._at = at
        self._size = size

    def __getitem__(self, key: str) -> Any:
        if key == TRIALS:
            return self._spool.get(self._at, self._size)
        return self._values[self._index[key]]

    def get(self, key: str, default: Any = None) -> Any:
        if key == TRIALS:
            return self._spool.get(self._at, self._size)
        at = self._index.get(key)
        return default if at is None else self._values[at]
