"""One `cachelint run`, in four stages: plan (validate the options, read the config and the
datasets, choose the scenarios), wire (targets and clients over one store), execute (the scenarios,
each result written as it lands) and publish (the reports, the summary, the green record).

Default mode is `replay`: the real transport is replaced by a refuser, so the run opens no socket
and needs no API key; a miss fails the scenario with a message that says how to re-record it.
Live calls happen only when asked for (`--cache auto|live|off`, `--refresh-cache`). A run that does
not record (replay, off) hashes the cache tree before and after and fails with `eval-cache-mutated`
if any byte changed: that is the offline canary.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from cachelint import clock
from cachelint.canary import Canary
from cachelint.config import Config, load
from cachelint.confine import run_outputs as confine_run_outputs
from cachelint.credentials import configured_keys
from cachelint.errors import CachelintError, ExitCode
from cachelint.findings import Finding
from cachelint.formats import ReportFormat, parse_report_format
from cachelint.fsutil import atomic_write_chunks
from cachelint.gcpolicy import fewer_collections
from cachelint.gitutil import repo_root
from cachelint.green import record_green_run, start_record_listing
from cachelint.hashing import mutation_findings
from cachelint.netguard import armed
from cachelint.progressbar import bars_on
from cachelint.reporters import masked
from cachelint.runner import wiring
from cachelint.runner.assertions.evaluators import eval_context
from cachelint.runner.client import Mode, parse_mode
from cachelint.runner.engine import ResultWriter, run_scenarios
from cachelint.runner.options import RunOptions
from cachelint.runner.progress import live_progress
from cachelint.runner.reports.junit import junit_chunks
from cachelint.runner.reports.model import RunReport, ScenarioReport, scenario_report
from cachelint.runner.reports.publishing import check_extras, encoded, judge, publish_run
from cachelint.runner.reports.text import render_text, text_head, text_tail
from cachelint.runner.rerun import Kept, settle
from cachelint.runner.results import execution_name, release_execution
from cachelint.runner.selection import choose, every_scenario
from cachelint.runner.shards import parse_shard
from cachelint.store import Store, format_time
from cachelint.usage import mark_run_recording, record_run

if TYPE_CHECKING:
    from cachelint.gitutil import GitProcess
    from cachelint.progressbar import Bar
    from cachelint.runner.dataset import Scenario
    from cachelint.runner.engine import ScenarioResult
    from cachelint.runner.progress import OrderedLines
    from cachelint.runner.wiring import Wiring

_PROGRESS_MIN = 20  # scenarios; shorter runs finish before a progress bar is worth drawing


def _resolve_mode(mode: str | None, refresh: bool) -> Mode:
    if refresh:
        if mode is not None and parse_mode(mode) is not Mode.LIVE:
            raise CachelintError(
                f"--refresh-cache re-records (mode live) and contradicts --cache {mode}; "
                "drop one of them"
            )
        return Mode.LIVE
    return parse_mode(mode) if mode is not None else Mode.REPLAY


def _execution_name(execution: str | None, now: datetime) -> str:
    name = execution or os.environ.get("CACHELINT_EXECUTION") or now.strftime("%Y%m%dT%H%M%SZ")
    return execution_name(name)


def _check_counts(jobs: int, trials: int | None) -> None:
    if jobs < 1:
        raise CachelintError(f"--jobs {jobs}: expected 1 or more")
    if trials is not None and trials < 1:
        raise CachelintError(f"--trials {trials}: expected 1 or more")


def _rerecord_command(scenario: Scenario, *, trials: int | None, config_path: Path | None) -> str:
    parts = ["cachelint run", "--scenario", shlex.quote(scenario.cache_identity)]
    if scenario.column is not None:
        parts += ["--target", shlex.quote(scenario.column)]
    parts.append("--refresh-cache")
    if trials is not None:
        parts += ["--trials", str(trials)]
    if config_path is not None:
        parts += ["--config", shlex.quote(str(config_path))]
    return " ".join(parts)


@dataclass(frozen=True)
class RunPlan:
    """What a run will do, settled before anything is wired or executed."""

    options: RunOptions  # as given; what follows is settled from them
    repo: Path
    config: Config
    mode: Mode
    report_format: ReportFormat
    moment: datetime
    execution: str
    every: list[Scenario]
    selected: list[Scenario]
    filtered: bool
    shard: tuple[int, int] | None = None
    # The offline canary (None when the mode records): lists the cache tree before the scenarios
    # and is told of each file the store reads (cachelint.canary).
    canary: Canary | None = None
    kept: Kept = Kept()  # --resume: the scenarios the execution already holds


@dataclass(frozen=True)
class Outcome:
    """What executing a plan produced: the scenarios' reports and what the offline canary
    saw."""

    order: list[str]  # the scenarios run, by identity, in dataset order
    mutations: list[Finding]
    # Per root, the digest the green record pins (`green.cache_digest`), from the canary's hashes
    # instead of reading every entry again; not held as the snapshot while reports are written.
    after_by_root: dict[str, str] | None
    streamed: bool = False  # the text report's scenario blocks were already printed live
    # Each scenario's report, by identity (`ResultWriter.records`; a resumed execution's kept
    # ones are the plan's, `Kept.records`).
    records: Mapping[str, ScenarioReport] = field(default_factory=dict)


def run(start: Path, options: RunOptions, *, out: TextIO, err: TextIO) -> int:
    """Plan, wire, execute and publish one run; return its exit code."""
    with fewer_collections():
        plan = plan_run(start, options)
        try:
            check_extras(plan.repo, options.extras)
            # Until a full run finishes, prune and green refuse: a kill -9 leaves the marker.
            mark_run_recording(plan.config, plan.mode, plan.execution)
            wired = wire(plan)
            outcome = execute(plan, wired, out=out, err=err)
        except BaseException:
            release_execution(plan.repo / plan.config.results, plan.execution)
            raise
        return publish(plan, outcome, out=out, err=err)


def plan_run(start: Path, options: RunOptions) -> RunPlan:
    """Validate the options, read the config and the datasets, and choose the scenarios."""
    o = options
    chosen_mode = _resolve_mode(o.mode, o.refresh)
    report_format = parse_report_format(o.fmt)
    _check_counts(o.jobs, o.trials)
    repo = repo_root(start)
    config = load(repo, o.config_path)
    moment = o.now if o.now is not None else clock.now()
    execution_name = _execution_name(o.again.resume or o.execution, moment)
    confine_run_outputs(config, execution_name, o.junit, o.html)
    canary = None if chosen_mode.records else Canary.of(repo, config)
    every = every_scenario(config)
    chosen_shard = parse_shard(o.shard) if o.shard is not None else None
    chosen = (o.agents, o.tenants, o.scenarios)
    selected = choose(config, every, chosen, chosen_shard, o.targets)
    where = (repo / config.results, o.execution, chosen_mode.value)  # --failed, --resume
    selected, kept, execution_name = settle(o.again, selected, where, claim=execution_name)
    return RunPlan(
        options=options,
        repo=repo,
        config=config,
        mode=chosen_mode,
        report_format=report_format,
        moment=moment,
        execution=execution_name,
        every=every,
        selected=selected,
        # --target chooses other targets than the config's: not a run the green record vouches for
        filtered=bool(any(chosen) or chosen_shard or o.targets or o.again),
        shard=chosen_shard,
        canary=canary,
        kept=kept,
    )


def wire(plan: RunPlan) -> Wiring:
    """Resolve each scenario's target and build its clients over one store (a refuser unless the
    mode calls live); `runner.wiring` holds the parts, this stage only hands them the plan."""
    config, moment = plan.config, plan.moment
    store = Store.configured(config, moment)
    if plan.canary is not None:
        store.witness = plan.canary.saw
    return wiring.wire(
        config,
        scenarios=plan.selected,
        store=store,
        mode=plan.mode,
        rerecord=lambda s: _rerecord_command(
            s, trials=plan.options.trials, config_path=plan.options.config_path
        ),
        transport_factory=plan.options.transport_factory,
    )


def execute(plan: RunPlan, wired: Wiring, *, out: TextIO, err: TextIO) -> Outcome:
    """Run the scenarios, writing each result as it lands, inside the offline canary."""
    repo, config, selected = plan.repo, plan.config, plan.selected
    results_dir = repo / config.results / plan.execution
    if plan.canary is not None:
        plan.canary.begin()

    progress, lines, streamed = _shown_progress(plan, out=out, err=err)
    writer = ResultWriter(
        results_dir,
        execution=plan.execution,
        mode=plan.mode.value,
        expected=len(selected),
        priced=(config.target.model, config.prices),
    )

    on_done = _on_done(writer, progress, lines)
    try:
        with writer, armed(replay=not plan.mode.calls_live):
            run_scenarios(
                selected,
                make_client=wired.make_client,
                target=wired.target,
                trials=plan.options.trials,
                jobs=plan.options.jobs,
                on_done=on_done,
                context=eval_context(repo, selected, config),
                # Nothing: the writer's reports are what the end reads (memory stays flat).
                keep=lambda result: None,
                keys=configured_keys(config),  # masked in every output, whatever their shape
            )
    finally:
        wired.close()
        if progress is not None:
            progress.close()

    mutations, after_by_root = _after(plan)
    return Outcome(
        order=[s.identity for s in selected],
        mutations=mutations,
        after_by_root=after_by_root,
        streamed=streamed,
        records=writer.records,
    )


def _shown_progress(
    plan: RunPlan, *, out: TextIO, err: TextIO
) -> tuple[Bar | None, OrderedLines | None, bool]:
    """The progress bar on a terminal (None elsewhere or for a small suite), the live text lines
    and whether the text report is streamed as scenarios finish (`live_progress`)."""
    bars = bars_on(err, "cachelint run", at_least=_PROGRESS_MIN)
    progress = bars(len(plan.selected)) if bars is not None else None
    lines, streamed = live_progress(
        out=out,
        err=err,
        text_format=plan.report_format is ReportFormat.TEXT,
        head=text_head(plan.execution, plan.mode.value, len(plan.selected)),
        selected=plan.selected,
    )
    return progress, lines, streamed


def _on_done(
    writer: ResultWriter, progress: Bar | None, lines: Callable[[ScenarioReport], object] | None
) -> Callable[[ScenarioResult], None]:
    """What follows each scenario's result: written, counted on the bar, printed as a line (from
    the report the writer made of it)."""

    def on_done(result: ScenarioResult) -> None:
        writer.write(result)
        result.scenario.forget_inputs()  # publishing reads only its identity, path and digest
        if progress is not None:
            progress.advance()
        if lines is not None:
            lines(writer.records[result.scenario.identity])

    return on_done


def _after(plan: RunPlan) -> tuple[list[Finding], dict[str, str] | None]:
    """What the canary saw the run change in the cache tree, and the tree's contents after a run
    a green record may vouch for (whole and unchanged); neither without a canary."""
    if plan.canary is None:
        return [], None
    found = mutation_findings(
        plan.canary.mutations(), during=f"`cachelint run` (mode {plan.mode.value})"
    )
    # Every format prints these findings (the text's FAIL lines through finding_lines, the JSON,
    # the page): masked once, here, as check masks its own.
    keys = configured_keys(plan.config) if found else ()
    mutations = [masked(f, keys) for f in found]
    if mutations or plan.filtered:  # only a green record reads the contents
        plan.canary.release()
        return mutations, None
    return mutations, plan.canary.digests()


def publish(plan: RunPlan, outcome: Outcome, *, out: TextIO, err: TextIO) -> int:
    """Write the reports, print the summary, and record a green run; return the exit code."""
    # A green run ends by recording what git lists in the working tree; that listing runs while
    # the reports are written.
    listing = _start_green_listing(plan, outcome)
    report = _report(plan, outcome)
    text = publish_run(
        report,
        plan.config,
        fmt=plan.report_format.value,
        html=plan.options.html,
        results_dir=plan.repo / plan.config.results / plan.execution,
        extras=plan.options.extras,
        shard=plan.shard,
        filtered=plan.filtered,
    )
    return _conclude(plan, outcome, report, text, listing, out=out, err=err)


def _report(plan: RunPlan, outcome: Outcome) -> RunReport:
    """The run's one report, every format's: its scenarios as written (a resumed execution's
    kept ones from their files), judged on the budget and the baseline before anything is
    written, so every format (and run.json) shows a run they fail as failed."""
    config, kept = plan.config, plan.kept.records
    order = plan.kept.order or outcome.order
    scenarios = [
        scenario_report(kept[identity], config.target.model, config.prices)
        if identity in kept
        else outcome.records[identity]
        for identity in order
    ]
    verdict = judge(scenarios, config, plan.options.extras)
    return RunReport(
        name=plan.execution,
        mode=plan.mode.value,
        started=format_time(plan.moment),
        scenarios=scenarios,
        mutations=tuple(outcome.mutations),
        failures=verdict.failures,
        notes=verdict.notes,
        results_dir=(Path(config.results) / plan.execution).as_posix(),
    )


def _conclude(
    plan: RunPlan,
    outcome: Outcome,
    report: RunReport,
    text: str | Iterable[str] | None,
    listing: GitProcess | None,
    *,
    out: TextIO,
    err: TextIO,
) -> int:
    """Record the entries used, write JUnit and the summary, and record a green run."""
    config = plan.config
    # --trials is a filter here too: entries other trial counts reach are not proven unused.
    filtered = plan.filtered or plan.options.trials is not None
    record_run(config, report, filtered=filtered)
    if plan.options.junit is not None:
        _write_junit(plan.options.junit, report)
    if plan.report_format is ReportFormat.JUNIT:
        text = junit_chunks(report)
    elif text is None:
        text = text_tail(report) if outcome.streamed else render_text(report)
    out.writelines([text] if isinstance(text, str) else text)  # --format json, junit: in pieces
    out.flush()
    if not report.passed:
        if listing is not None:
            listing.discard()
        return int(ExitCode.FINDINGS)
    if plan.filtered:
        # The record vouches for every watched prompt; a filtered run cannot vouch for the rest
        # (even when its filter happens to select everything today).
        err.write(
            f"cachelint: green record not updated: this run was filtered ({len(plan.selected)} "
            f"of {len(plan.every)} scenarios); run them all to prove the watched files\n"
        )
        return int(ExitCode.OK)
    record_green_run(
        config,
        execution=plan.execution,
        mode=plan.mode.value,
        scenarios=(s.identity for s in plan.selected if s.identity == s.cache_identity),
        now=plan.moment,
        cache_snapshots=outcome.after_by_root,
        known={s.path: s.file_digest for s in plan.every if s.file_digest},
        listing=listing,
    )
    return int(ExitCode.OK)


def _start_green_listing(plan: RunPlan, outcome: Outcome) -> GitProcess | None:
    """The green record's git listing, started when the run can still end green (else None)."""
    green = (
        not plan.filtered
        and not outcome.mutations
        and all(outcome.records[identity].passed for identity in outcome.order)
    )
    return start_record_listing(plan.config) if green else None


def _write_junit(path: Path, report: RunReport) -> None:
    try:
        atomic_write_chunks(path, encoded(junit_chunks(report)))
    except OSError as exc:
        raise CachelintError(f"{path}: cannot write report: {exc.strerror}") from None
