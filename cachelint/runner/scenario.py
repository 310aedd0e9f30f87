"""A scenario as a run holds it: its identity, its file, its tags and digests (the shell, which
every stage reads) and its inputs (messages, options, tools, assertions, judges), which only
running it reads.

A large suite's inputs wait in a spool from the moment its dataset file is parsed until the
scenario runs (`Scenario.spool_inputs`, `Scenario.recall_inputs`): a plan of 100,000 scenarios
holds each one's shell and the place of its inputs, not about a kilobyte of decoded JSON each.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cachelint.passpolicy import ALL, PassPolicy

if TYPE_CHECKING:
    from cachelint.spool import Spool


@dataclass(frozen=True, slots=True)  # a run holds one for each of up to 100,000 scenarios
class Scenario:
    identity: str  # "agent/tenant/scenario"
    path: str  # repo-relative path of the JSON file
    agent: str
    tenant: str
    messages: tuple[Mapping[str, Any], ...]  # chat messages, system prompt FIRST if any
    system_source: str | None  # repo-relative system-file path, if used
    options: Mapping[str, Any]
    tools: tuple[Mapping[str, Any], ...]
    assertions: tuple[Mapping[str, Any], ...]  # validated specs
    judges: tuple[str, ...]
    trials: int
    tags: tuple[str, ...]
    description: str | None
    target: str | None = None  # a named target ([tool.cachelint.targets.NAME]); None: the agent's
    # The green record's content hash of the dataset file as it was loaded ("" when not loaded
    # from a file): the record pins what ran, without reading the file again.
    file_digest: str = ""
    # False: the scenario declares its target answers without a model call (`"model-calls":
    # false`), so a replay that made none is not a bypassed cache.
    model_calls: bool = True
    # When the scenario's trials pass (`"pass"`, else the config's `trials-pass`): all of them,
    # at least k, or a rate; as it applies to the trials run: `ScenarioResult.policy`.
    pass_policy: PassPolicy = ALL
    # A target matrix (`"targets": [...]`, `compare`, `run --target`): the targets this scenario
    # runs against; once expanded (`runner.matrix`), one pair's `column` (its target) and
    # `origin` (the dataset identity whose cache directory and keys the pair uses).
    targets: tuple[str, ...] = ()
    column: str | None = None
    origin: str = ""
    # Where `spool_inputs` put its inputs (None while they are held), and their place in it:
    # offset * 2**32 + size, one integer where a tuple of two would cost three objects more.
    spool: InputSpool | None = field(default=None, compare=False, repr=False)
    place: int = field(default=0, compare=False, repr=False)

    @property
    def cache_identity(self) -> str:
        """The identity the cache knows: a matrix pair's dataset identity, else its own."""
        return self.origin or self.identity

    # Made when asked (an HTTP target's `{name}`): held, it was 65 bytes of each of up to
    # 100,000 scenarios for the whole run (a string and its slot).
    @property
    def name(self) -> str:
        """The last part of its (dataset) identity: "scenario" of "agent/tenant/scenario"."""
        return self.cache_identity.rpartition("/")[2]

    def forget_inputs(self) -> None:
        """Drop what only running it reads (its messages, options, tools, assertions and
        judges), once its results file is written: a run holds every scenario for the green
        record and the counts, and a large suite's decoded inputs are most of its plan. With
        `spool_inputs` and `recall_inputs`, the changes a `Scenario` sees after it loads (in
        place: the plan's lists share it, and a copy of each would briefly hold both)."""
        for name, empty in _INPUTS:
            object.__setattr__(self, name, empty)

    def spool_inputs(self, spool: InputSpool) -> None:
        """Spool its inputs and drop them, until `recall_inputs`. Held as they are when the spool
        cannot write them (a lone surrogate, an integer over 64 bits). Assertions that name a
        python evaluator stay held too: the run imports its evaluators from the plan's
        scenarios, before any of them runs (`evaluators.load_context`)."""
        # A system file's message is the load's one object for every scenario naming the file.
        system = spool.system(self.messages[0]) if self.system_source is not None else -1
        first = 0 if system < 0 else 1
        inputs = [system, self.messages[first:], self.options, self.tools, self.assertions]
        place = spool.values.put([*inputs, self.judges])
        if place is None or place[1] >> 32:  # its size must fit `place`'s 32 bits
            return
        assertions = self.assertions
        self.forget_inputs()
        if any(spec.get("type") == "python" for spec in assertions):
            object.__setattr__(self, "assertions", assertions)
        object.__setattr__(self, "spool", spool)
        object.__setattr__(self, "place", place[0] << 32 | place[1])

    def recall_inputs(self) -> None:
        """Read its spooled inputs back, just before it runs (nothing to do when they are held).
        Not shared with other scenarios as a load shares equal values: they are held only while
        it runs."""
        if self.spool is None:
            return
        at, size = divmod(self.place, 1 << 32)
        system, messages, options, tools, assertions, judges = self.spool.values.get(at, size)
        if system >= 0:
            messages = [self.spool.systems[system], *messages]
        object.__setattr__(self, "messages", tuple(messages))
        object.__setattr__(self, "options", options)
        object.__setattr__(self, "tools", tuple(tools))
        object.__setattr__(self, "assertions", tuple(assertions))
        object.__setattr__(self, "judges", tuple(judges))


# What `Scenario.forget_inputs` drops, and what it leaves in their place.
_INPUTS: tuple[tuple[str, Any], ...] = (
    ("messages", ()),
    ("options", {}),
    ("tools", ()),
    ("assertions", ()),
    ("judges", ()),
)


class InputSpool:
    """Where a large suite's inputs wait from load to run (`Scenario.spool_inputs`): a `Spool`
    of each scenario's, and the system messages of the suite's system files, a handful held
    once each instead of spooled with (and read back for) every scenario that names one."""

    def __init__(self) -> None:
        from cachelint.spool import Spool  # a large suite's: a small run imports no spool

        self.values: Spool = Spool()
        self.systems: list[Mapping[str, Any]] = []
        self._held: dict[int, int] = {}  # id of a held system message -> its index

    def system(self, message: Mapping[str, Any]) -> int:
        """The index of `message` (one object per system file in a load: `dataset._once`)."""
        index = self._held.get(id(message))
        if index is None:
            index = self._held[id(message)] = len(self.systems)
            self.systems.append(message)  # held: its id names no other object while here
        return index
