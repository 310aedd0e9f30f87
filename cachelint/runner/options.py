"""What one `cachelint run` is asked to do, as one value: built once (by the command line,
`cachelint init`, a test or a benchmark) and read by each stage of the run (plan, wire, execute,
publish) instead of a dozen keywords handed down from stage to stage."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from cachelint.runner.reports.publishing import Extras
from cachelint.runner.rerun import NO_RERUN, Rerun

if TYPE_CHECKING:
    from cachelint.runner.wiring import TransportFactory


@dataclass(frozen=True)
class RunOptions:
    """The options as given: `mode`, `fmt` and `shard` are validated when the run is planned."""

    config_path: Path | None = None
    mode: str | None = None  # --cache: replay (the default), auto, live, off
    refresh: bool = False  # --refresh-cache: mode live, for the selected scenarios
    agents: Sequence[str] = ()
    tenants: Sequence[str] = ()
    scenarios: Sequence[str] = ()  # globs over agent/tenant/name
    targets: Sequence[str] = ()  # a matrix; the first is primary
    trials: int | None = None  # per scenario, overriding the dataset's
    jobs: int = 1
    fmt: str = "text"
    execution: str | None = None
    junit: Path | None = None
    html: Path | None = None
    shard: str | None = None  # "I/N"
    extras: Extras = Extras()  # --save-baseline, --baseline
    again: Rerun = NO_RERUN  # --failed, --resume
    now: datetime | None = None  # the run's moment (tests); else the clock's
    # The live transport for a target (tests, benchmarks, `cachelint init`); else the target's own.
    transport_factory: TransportFactory | None = None
