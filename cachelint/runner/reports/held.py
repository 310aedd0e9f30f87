"""What a large run (`engine.HOLD_MAX_SCENARIOS`) holds of each scenario's results document until
its reports are written (`Source`): the few values every report groups and counts by, and the
place of the rest, slim (`slim_record`: without the messages and answers), in one unlinked temp
file (`Spool`), decoded each time a report draws the scenario; the page reads the whole document
back from its results file.

A run of 100,000 scenarios held each one's slim trials (about 1.5 KB) until the last report was
written, then its top-level values (about 0.5 KB with their place and the file's digest); it now
holds less than half of that. Each report reads each scenario's document once, in a row (a decode
of a few hundred bytes: microseconds); what a report reads out of order or often (its groups,
its verdicts) is held. Where a document cannot be spooled (no temp file, a value orjson does not
write) it is held slim (`Slim` objects, keys shared), as before the spool.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar, cast

from cachelint.runner.evidence import written_digest
from cachelint.runner.reports.htmlscenario import system_texts, text_key
from cachelint.spool import Spool

TRIALS = "trials"

# What the reports read of every scenario, several times or out of order (its groups, verdict and
# dataset; a matrix's pairs): held, so a report reads a scenario's spooled document once, in a
# row with the rest of its values (each is the plan's own object: a reference costs 8 bytes).
KEPT = ("scenario", "agent", "tenant", "path", "passed", "origin", "target")
_KEPT = frozenset(KEPT)


class Source(Mapping[str, Any]):
    """A results document a large run wrote, as it holds it until its reports are written: its
    `KEPT` values and where to read the rest (`document`), with what the page reads the file by:
    its digest and its system texts' keys."""

    __slots__ = ("run", "systems", *KEPT)  # a value the document lacks: its slot left unset

    def __init__(self, run: Sources, record: Mapping[str, Any]) -> None:
        self.run = run
        self.systems: tuple[bytes, ...] = ()  # its `ScenarioReport.system_texts`' keys
        for key in KEPT:
            if key in record:
                setattr(self, key, record[key])

    def document(self) -> Mapping[str, Any]:
        """The slim document (`slim_record`'s values): all of its keys, in its order."""
        raise NotImplementedError

    @property
    def digest(self) -> bytes:
        """`evidence.written_digest` of the bytes written: `evidence.read_own` reads them back."""
        raise NotImplementedError

    def __getitem__(self, key: str) -> Any:
        if key not in _KEPT:
            return self.document()[key]
        try:
            return getattr(self, key)
        except AttributeError:
            raise KeyError(key) from None

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default) if key in _KEPT else self.document().get(key, default)

    def __contains__(self, key: object) -> bool:
        return (
            hasattr(self, key) if isinstance(key, str) and key in _KEPT else key in self.document()
        )

    def __iter__(self) -> Iterator[str]:
        return iter(self.document())

    def __len__(self) -> int:
        return len(self.document())


class SpooledRecord(Source):
    """A `Source` whose slim document and digest are in the run's `Spool`, decoded each time
    they are read (the spool keeps the last: a report reads one scenario's values in a row)."""

    __slots__ = ("_place",)

    def __init__(self, run: Sources, record: Mapping[str, Any], place: int) -> None:
        super().__init__(run, record)
        # offset * 2**32 + size, one integer where two would cost an object more.
        self._place = place

    def _spooled(self) -> Any:
        # The run's last read, by this Source: a report reads a scenario's values one at a time
        # (a Mapping), most of them from the spool's last decoding; one tuple, set at once, as
        # two threads may read (the live lines).
        source, value = self.run.current
        if source is not self:
            value = self.run.spool.get(*divmod(self._place, 1 << 32))
            self.run.current = (self, value)
        return value

    def document(self) -> Mapping[str, Any]:
        return cast("Mapping[str, Any]", self._spooled()[1])

    @property
    def digest(self) -> bytes:
        return bytes.fromhex(self._spooled()[0])


class HeldSource(Source):
    """A `Source` whose slim document a spool could not write (no temp file, a value orjson does
    not write): held in memory (`slim_record`), as before the spool."""

    __slots__ = ("_slim", "_digest")

    def __init__(self, run: Sources, record: Mapping[str, Any], digest: bytes) -> None:
        super().__init__(run, record)
        self._slim = slim_record(record)
        self._digest = digest

    def document(self) -> Mapping[str, Any]:
        return self._slim

    @property
    def digest(self) -> bytes:
        return self._digest


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
        self.current: tuple[Source | None, Any] = (None, None)  # `SpooledRecord._spooled`'s

    def of(self, record: Mapping[str, Any], data: bytes) -> Source:
        """What the run holds of `record`, written as `data`: its slim document spooled (else
        held), its `KEPT` values and its file's digest and system texts."""
        digest = written_digest(data)
        # Its calls' usages are not shared as `_call` shares them: the spool writes them out.
        trials = [_light_trial(t, _light) for t in record.get(TRIALS) or ()]
        place = self.spool.put([digest.hex(), {**record, TRIALS: trials}])
        if place is None or place[1] >> 32:  # its size must fit a `SpooledRecord`'s 32 bits
            source: Source = HeldSource(self, record, digest)
        else:
            source = SpooledRecord(self, record, place[0] << 32 | place[1])
        source.systems = self._systems(record)
        return source

    def _systems(self, record: Mapping[str, Any]) -> tuple[bytes, ...]:
        """The keys of `record`'s system texts, each text kept when a second scenario sends it."""
        texts = system_texts(record.get(TRIALS) or ())
        keys = tuple(text_key(body) for body in texts)
        for key, body in zip(keys, texts, strict=True):
            if key in self._seen:
                self.texts.setdefault(key, body)
            else:
                self._seen.add(key)
        # One tuple for all the scenarios that sent the same texts.
        return self._keys.setdefault(keys, keys)


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


def _light(value: Mapping[str, Any]) -> dict[str, Any]:
    """`value` without `_HEAVY`, its other keys in their order: a copy less three keys costs a
    third of the instructions of a comprehension that asks of each key (a large run makes one
    of each trial and call as it lands)."""
    kept = dict(value)
    for key in _HEAVY:
        kept.pop(key, None)
    return kept


def _light_trial(t: Mapping[str, Any], call: Callable[[Any], Any]) -> dict[str, Any]:
    """A trial without `_HEAVY`, each of its target and judge calls made by `call`."""
    kept = _light(t)
    for key in ("calls", "judge_calls"):
        listed = t.get(key)
        kept[key] = [call(c) for c in listed] if isinstance(listed, list) else listed
    return kept


def _call(call: Mapping[str, Any]) -> dict[str, Any]:
    """A call of a slim document: without `_HEAVY`, its usage the one object of its counts."""
    kept = _light(call)
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
