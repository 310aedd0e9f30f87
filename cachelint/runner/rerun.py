"""`cachelint run --failed [EXECUTION]` and `--resume EXECUTION`: run part of a suite again.

`--failed` runs the scenarios an earlier execution failed or missed (the newest finished one
under the results root, or the one named), read from its `run.json` as evidence
(`runner.evidence`: verdicts must be booleans that agree). `--resume` finishes an execution that
was interrupted (no `run.json` yet): each scenario that already has its results file under
`<results>/<execution>/` (written atomically as it landed, `engine.ResultWriter`) is kept as it
is, the others run and land in the same directory, and the reports show them all.

Neither is a full pass: the run is `filtered`, so the green record is left alone, run.json and
the usage record say `filtered` and a recording marker stays (prune and `green --from-results`
keep refusing until a full run).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cachelint.errors import CachelintError
from cachelint.runner.results import claim_execution, execution_name

RUN_FILE = "run.json"


@dataclass(frozen=True)
class Rerun:
    """What part of an earlier execution to run: `failed` ("" for the newest finished one)."""

    failed: str | None = None
    resume: str | None = None

    def __bool__(self) -> bool:
        return self.failed is not None or self.resume is not None


NO_RERUN = Rerun()


@dataclass(frozen=True)
class Kept:
    """A resumed execution's scenarios already done (their results documents), and the order the
    report lists all in."""

    order: tuple[str, ...] = ()
    records: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def add_options(parser: Any) -> None:
    parser.add_argument(
        "--failed",
        nargs="?",
        const="",
        default=None,
        metavar="EXECUTION",
        help="only the scenarios that failed or missed in the newest finished execution (or "
        "in EXECUTION); not a full pass: the green record is left alone",
    )
    parser.add_argument(
        "--resume",
        default=None,
        metavar="EXECUTION",
        help="finish an interrupted execution: its scenarios with results are kept, the rest "
        "run into <results>/EXECUTION/; not a full pass",
    )


def check(rerun: Rerun, *, execution: str | None) -> None:
    """Options that contradict each other: one usage line."""
    if rerun.failed is not None and rerun.resume is not None:
        raise CachelintError(
            "--failed and --resume contradict each other: --failed starts a new execution, "
            "--resume finishes one; pass one of them"
        )
    if rerun.resume is not None and execution is not None:
        raise CachelintError(
            f"--resume {rerun.resume} writes into that execution; drop --execution {execution}"
        )


def settle(
    rerun: Rerun, selected: list[Any], where: tuple[Path, str | None, str], *, claim: str
) -> tuple[list[Any], Kept, str]:
    """`narrow`, then the execution to write into: the resumed one, else `claim` claimed
    (`where`: the results root, the --execution option, the run's mode)."""
    root, execution, mode = where
    check(rerun, execution=execution)
    selected, kept = narrow(rerun, root, selected, mode=mode)
    name = rerun.resume if rerun.resume is not None else claim_execution(root, claim)
    return selected, kept, name


def narrow(rerun: Rerun, root: Path, selected: list[Any], *, mode: str) -> tuple[list[Any], Kept]:
    """The scenarios still to run out of `selected`, and what a resumed execution keeps."""
    if rerun.failed is not None:
        failed = failed_in(root, rerun.failed)
        chosen = [s for s in selected if s.identity in failed]
        if failed and not chosen:
            shown = ", ".join(sorted(failed)[:5])
            raise CachelintError(
                f"no scenarios selected: none of the scenarios that failed ({shown}) is among "
                "the selected ones; drop the --agent/--tenant/--scenario/--target options "
                "that leave them out, or re-run the datasets that hold them"
            )
        return chosen, Kept()
    if rerun.resume is not None:
        return _resumed(root, rerun.resume, selected, mode)
    return selected, Kept()


def newest_finished(root: Path) -> str:
    from cachelint.runner.reports.model import list_executions

    names = list_executions(root)
    if not names:
        raise CachelintError(
            f"--failed: {root} holds no finished execution (one with {RUN_FILE}); run "
            "`cachelint run` first, or pass --failed EXECUTION"
        )
    return max(names, key=lambda name: _started(root / name / RUN_FILE))


def _started(run_file: Path) -> tuple[str, int]:
    """When a run started, then when its run.json was written: runs under one frozen clock
    (CACHELINT_NOW) or started in the same second are told apart by the second."""
    from cachelint.runner.evidence import SUMMARY_MAX_BYTES, BadEvidence, read_json

    try:
        _, document = read_json(run_file.parent, run_file.name, SUMMARY_MAX_BYTES)
        started = document.get("started") if isinstance(document, dict) else None
        return (str(started or ""), os.stat(run_file).st_mtime_ns)
    except (OSError, BadEvidence):
        return ("", 0)


def failed_in(root: Path, name: str) -> set[str]:
    """The identities an execution's run.json lists as failed (a miss fails its scenario)."""
    from cachelint.runner.evidence import read_summary

    name = execution_name(name) if name else newest_finished(root)
    directory = root / name
    if not (directory / RUN_FILE).is_file():
        how = (
            f"finish it with --resume {name}"
            if _is_directory(directory)
            else "name one under the results directory"
        )
        raise CachelintError(f"--failed {name}: {directory / RUN_FILE} does not exist; {how}")
    summary = read_summary(directory)
    return {s.identity for s in summary.scenarios if not s.passed}


def _is_directory(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _resumed(root: Path, name: str, selected: list[Any], mode: str) -> tuple[list[Any], Kept]:
    name = execution_name(name)
    directory = root / name
    if not _is_directory(directory):
        raise CachelintError(
            f"--resume {name}: {directory} is not an execution directory; pass the name of "
            "an interrupted run's directory under the results directory"
        )
    if os.path.lexists(directory / RUN_FILE):
        raise CachelintError(
            f"--resume {name}: that execution finished ({directory / RUN_FILE} exists); "
            f"re-run what it failed with --failed {name}"
        )
    records: dict[str, Mapping[str, Any]] = {}
    for scenario in selected:
        if os.path.lexists(directory / f"{scenario.identity}.json"):
            records[scenario.identity] = _kept(directory, scenario.identity, mode)
    rest = [s for s in selected if s.identity not in records]
    return rest, Kept(tuple(s.identity for s in selected), records)


def _kept(directory: Path, identity: str, mode: str) -> Mapping[str, Any]:
    """A kept scenario's results document, read as the reports read one (one error line when
    it is not a results file), when it is this scenario's, run in this mode."""
    from cachelint.runner.reports.model import read_document

    shown = directory / f"{identity}.json"
    record = read_document(directory, f"{identity}.json")
    if record.get("scenario") != identity:
        raise CachelintError(
            f"{shown}: not the results of {identity}; remove the file to run the scenario "
            "again, or start a new execution"
        )
    if record.get("mode") != mode:
        raise CachelintError(
            f"{shown}: the execution ran in mode {record.get('mode')!r}; resume it with "
            f"--cache {record.get('mode')}"
        )
    return record
