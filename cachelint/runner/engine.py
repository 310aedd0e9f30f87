"""Run scenarios through a target and a caching client; collect results as data.

The engine does no printing and reads no clock or environment: `run_scenarios` takes the
scenarios, a client factory and a target, and returns one `ScenarioResult` per scenario in dataset
order, whatever `jobs` is (EvalCore and the team standard both report in dataset order under
concurrency, so two runs diff cleanly). Assertions gate; judges are reported only.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cachelint import resultsink
from cachelint.childproc import module_command
from cachelint.errors import CachelintError
from cachelint.fastjson import dumps_compact
from cachelint.passpolicy import PassPolicy
from cachelint.runner.assertions import AssertionResult, has_deterministic
from cachelint.runner.assertions.evaluators import EvalContext, evaluate_all
from cachelint.runner.client import CacheMiss, CachingClient, CallRecord
from cachelint.runner.dataset import Scenario
from cachelint.runner.judges import JUDGE_OPTIONS, judge_messages, parse_score
from cachelint.runner.masking import Masker
from cachelint.runner.output import Output, output_from_completion
from cachelint.runner.pytarget import Target

if TYPE_CHECKING:
    from cachelint.runner.cost import Price
    from cachelint.runner.metrics import Metric
    from cachelint.runner.reports.held import Sources
    from cachelint.runner.reports.model import ScenarioReport

RESULT_FORMAT = 1

ClientFactory = Callable[[Scenario, int], CachingClient]


@dataclass(frozen=True)
class JudgeScore:
    metric: str
    score: int | None  # 1-5, None when the judge could not score (reason says why)
    reason: str
    key: str | None = None
    hit: bool | None = None


@dataclass(frozen=True)
class TrialResult:
    trial: int
    passed: bool
    error: str | None  # a miss, a transport error, a target exception, "checks nothing"
    output: Output | None
    assertions: tuple[AssertionResult, ...]
    judges: tuple[JudgeScore, ...]
    calls: tuple[CallRecord, ...]  # target calls, in call order
    judge_calls: tuple[CallRecord, ...]
    latency_s: float  # provider latency of the target calls (recorded or live)
    metrics: tuple[Metric, ...] = ()  # from custom evaluators, in dataset order

    @property
    def usage(self) -> dict[str, int]:
        return sum_usage(self.calls)

    @functools.cached_property
    def cache_hit(self) -> bool:
        return bool(self.calls) and all(c.hit for c in self.calls)


@dataclass(frozen=True)
class ScenarioResult:
    scenario: Scenario
    trials: tuple[TrialResult, ...]

    # The verdict and its policy are read by every report, many times a scenario: each worked out
    # once (a result is frozen, and its trials with it).
    @functools.cached_property
    def policy(self) -> PassPolicy:
        """The scenario's `pass` policy (its own, the config's `trials-pass`, else all) as it
        applies to the trials run (`run --trials` may run fewer than the dataset's): what the
        verdict follows and every report names."""
        return self.scenario.pass_policy.for_trials(len(self.trials))

    @functools.cached_property
    def passed(self) -> bool:
        """Whether the trials pass under the scenario's effective `pass` policy."""
        errored = any(t.error is not None for t in self.trials)
        verdicts = [t.passed for t in self.trials]
        return self.policy.passes(verdicts, errored)

    @property
    def passed_trials(self) -> int:
        return sum(1 for t in self.trials if t.passed)

    @property
    def pass_rate(self) -> float:
        return self.passed_trials / len(self.trials) if self.trials else 0.0


def sum_usage(calls: Sequence[CallRecord]) -> dict[str, int]:
    total: dict[str, int] = {}
    for call in calls:
        for name, value in (call.usage or {}).items():
            if isinstance(value, int) and not isinstance(value, bool):
                total[name] = total.get(name, 0) + value
    return total


def checks_nothing(scenario: Scenario) -> str:
    return (
        f"scenario {scenario.identity} checks nothing: it has no deterministic assertion, and "
        f"judges never gate; add one (e.g. contains, regex, json-valid, tool-called) to the "
        f"'assert' list in {scenario.path}"
    )


def run_trial(
    scenario: Scenario,
    trial: int,
    *,
    make_client: ClientFactory,
    target: Target,
    context: EvalContext | None = None,
) -> TrialResult:
    client = make_client(scenario, trial)
    if not has_deterministic(scenario.assertions):
        # Fail before any model call: a live run would spend tokens on a scenario that gates on
        # nothing, and a green result would mean nothing.
        return TrialResult(trial, False, checks_nothing(scenario), None, (), (), (), (), 0.0)
    output: Output | None = None
    error: str | None = None
    try:
        output = target(scenario, client)
    except CacheMiss as exc:
        error = str(exc)
    except CachelintError as exc:
        error = str(exc)
    except Exception as exc:  # the team's agent code failed: a failed scenario, not a crash
        error = f"the target raised {type(exc).__name__}: {exc}"
    if client.misses:
        # The target swallowed the CacheMiss (a broad `except`), or an SDK turned the endpoint's
        # miss into its own error: a miss is never a pass or a skip, and its explanation wins.
        error = client.misses[0]
    calls = tuple(client.calls)
    assertions: tuple[AssertionResult, ...] = ()
    judges: tuple[JudgeScore, ...] = ()
    judge_calls: tuple[CallRecord, ...] = ()
    metrics: tuple[Metric, ...] = ()
    if output is not None and error is None:
        assertions, metrics = evaluate_all(scenario, output, calls, context or EvalContext())
        if scenario.judges:
            # A judge's score never gates, but a judge call the cache cannot answer is a miss
            # like any other: it fails the scenario with its explanation, never a skip.
            judges, judge_calls, error = _judge(scenario, output, client)
    passed = error is None and all(a.passed for a in assertions)
    latency = sum(c.latency_s for c in calls)
    return TrialResult(
        trial, passed, error, output, assertions, judges, calls, judge_calls, latency, metrics
    )


def _judge(
    scenario: Scenario, output: Output, client: CachingClient
) -> tuple[tuple[JudgeScore, ...], tuple[CallRecord, ...], str | None]:
    """Score each metric through the same cache (so judges replay offline); the scores never
    gate. The third item is the first judge call's miss explanation, if one missed."""
    scores: list[JudgeScore] = []
    miss: str | None = None
    # [tool.cachelint.judge] target may name another target (another model) for the judges.
    judge_client = dataclasses.replace(
        client.judge_client or client, purpose="judge", calls=[], misses=[]
    )
    for metric in scenario.judges:
        judge_client.purpose = f"judge:{metric}"
        before = len(judge_client.calls)
        try:
            completion = judge_client.chat(
                judge_messages(metric, scenario, output, client.rubrics.get(metric)),
                options=JUDGE_OPTIONS,
            )
        except CachelintError as exc:
            first = str(exc).splitlines()[0]
            hint = ""
            if isinstance(exc, CacheMiss):
                hint = f" (re-record: {client.recorder.command})"
                miss = miss or f"judge {metric}: {exc}"
            scores.append(JudgeScore(metric, None, f"not judged: {first}{hint}"))
            continue
        score, reason = parse_score(output_from_completion(completion).text)
        call = judge_client.calls[before] if len(judge_client.calls) > before else None
        scores.append(
            JudgeScore(
                metric,
                score,
                reason,
                key=call.key if call else None,
                hit=call.hit if call else None,
            )
        )
    return tuple(scores), tuple(judge_client.calls), miss


def run_scenario(
    scenario: Scenario,
    *,
    trials: int | None,
    make_client: ClientFactory,
    target: Target,
    context: EvalContext | None = None,
) -> ScenarioResult:
    scenario.recall_inputs()  # a large suite's inputs wait in the plan's spool until now
    count = trials if trials is not None else scenario.trials
    return ScenarioResult(
        scenario,
        tuple(
            run_trial(scenario, t, make_client=make_client, target=target, context=context)
            for t in range(count)
        ),
    )


def run_scenarios(
    scenarios: Sequence[Scenario],
    *,
    make_client: ClientFactory,
    target: Target,
    trials: int | None = None,
    jobs: int = 1,
    on_done: Callable[[ScenarioResult], None] | None = None,
    context: EvalContext | None = None,
    keep: Callable[[ScenarioResult], ScenarioResult | None] | None = None,
    keys: Sequence[str] = (),
) -> list[ScenarioResult]:
    """Run every scenario; the result list is in the order given, whatever finishes first.
    Each result has the configured `keys` masked (`runner.masking`) before anything sees it.
    `keep` says what the list holds of each (None: nothing; a run holds `on_done`'s reports)."""
    masker = Masker(keys)

    def one(scenario: Scenario) -> ScenarioResult | None:
        result = run_scenario(
            scenario, trials=trials, make_client=make_client, target=target, context=context
        )
        if masker:
            result = masker.value(result)
        if on_done is not None:
            on_done(result)
        return result if keep is None else keep(result)

    if jobs <= 1 or len(scenarios) <= 1:
        return [r for s in scenarios if (r := one(s)) is not None]
    return _run_daemon_pool(one, scenarios, jobs)


def _run_daemon_pool(
    one: Callable[[Scenario], ScenarioResult | None], scenarios: Sequence[Scenario], jobs: int
) -> list[ScenarioResult]:
    """`one` over `scenarios` on `jobs` daemon threads, results in the order given.

    Not a ThreadPoolExecutor: its workers are joined at interpreter exit, so after Ctrl-C a
    target stuck in a slow call would hold the process until it returned. Daemon workers are
    abandoned: the main thread waits in short slices (so KeyboardInterrupt arrives at once),
    tells the workers to stop taking scenarios, and lets the process exit."""
    import queue  # a replay runs one job: not imported for it

    results: list[ScenarioResult | None] = [None] * len(scenarios)
    failure: list[BaseException] = []
    todo: queue.SimpleQueue[int] = queue.SimpleQueue()
    for i in range(len(scenarios)):
        todo.put(i)
    stop = threading.Event()

    def work() -> None:
        while not stop.is_set():
            try:
                i = todo.get_nowait()
            except queue.Empty:
                return
            try:
                results[i] = one(scenarios[i])
            except BaseException as exc:  # re-raised in the caller's thread
                failure.append(exc)
                stop.set()
                return

    workers = [
        threading.Thread(target=work, name=f"cachelint-run-{n}", daemon=True)
        for n in range(min(jobs, len(scenarios)))
    ]
    for worker in workers:
        worker.start()
    try:
        for worker in workers:
            while worker.is_alive():
                worker.join(0.1)
    except BaseException:
        stop.set()
        raise
    if failure:
        raise failure[0]
    return [r for r in results if r is not None]


# ---- results on disk ----------------------------------------------------------------------------


def call_record(call: CallRecord, *, exchange: bool = True) -> dict[str, Any]:
    record: dict[str, Any] = {
        "purpose": call.purpose,
        "key": call.key,
        "entry": call.entry,
        "cache_hit": call.hit,
        "latency_s": round(call.latency_s, 6),
        "usage": dict(call.usage) if call.usage is not None else None,
        "model": call.model,
        # What the call sent, always: a target adds its own system prompt, tools and turns, so
        # the scenario's messages are not what any call carried (the report shows every one).
        "messages": [dict(m) for m in call.messages],
    }
    if exchange:
        record["response"] = call.response
    return record


def output_record(output: Output | None) -> dict[str, Any] | None:
    if output is None:
        return None
    return {
        "text": output.text,
        "tool_calls": [{"name": c.name, "arguments": c.arguments} for c in output.tool_calls],
    }


def scenario_record(result: ScenarioResult, *, execution: str, mode: str) -> dict[str, Any]:
    """The per-scenario results document written to `<results>/<execution>/<identity>.json`."""
    s = result.scenario
    pair = {"origin": s.origin, "target": s.column} if s.column is not None else {}
    return {
        **pair,
        "format": RESULT_FORMAT,
        "execution": execution,
        "mode": mode,
        "scenario": s.identity,
        "agent": s.agent,
        "tenant": s.tenant,
        "path": s.path,
        "passed": result.passed,
        "pass_rate": result.pass_rate,
        "pass_policy": result.policy.describe(),
        "trials": [
            {
                "trial": t.trial,
                "passed": t.passed,
                "error": t.error,
                "messages": [dict(m) for m in s.messages],
                "output": output_record(t.output),
                "response": t.calls[-1].response if t.calls else None,
                "assertions": [
                    {"type": a.type, "passed": a.passed, "reason": a.reason} for a in t.assertions
                ],
                "judges": [
                    {"metric": j.metric, "score": j.score, "reason": j.reason, "key": j.key}
                    for j in t.judges
                ],
                "metrics": [m.as_dict() for m in t.metrics],
                "latency_s": round(t.latency_s, 6),
                "usage": t.usage,
                "cache_hit": t.cache_hit,
                "keys": [c.key for c in t.calls],
                # A single call's response is the trial's own: not written twice.
                "calls": [call_record(c, exchange=len(t.calls) > 1) for c in t.calls],
                "judge_calls": [call_record(c) for c in t.judge_calls],
            }
            for t in result.trials
        ],
    }


# Up to this many scenarios a run keeps each results document whole for the reports; above, only
# its top-level values, its trials spooled to a temp file (`reports.held`), the page reading each
# file back as it is drawn, so memory stays flat however large the suite.
HOLD_MAX_SCENARIOS = 5_000

# From this many scenarios a child creates the results files: below it, its start-up (~40 ms of
# the other core, and a wait at the end) is more than the files cost here.
SINK_MIN_SCENARIOS = 200


class ResultWriter:
    """Writes one results file per scenario as it lands, cheaply enough for a suite of many
    thousands.

    Results are not committed data, so they skip what the cache needs: no fsync (it costs more
    than the whole replay of a case) and compact JSON (the indenting encoder is pure Python; the
    compact one runs in C). A temp name plus `os.replace` still means a reader never sees half a
    file. When `expected` scenarios are many, the files are created by a child process on the
    second core (`cachelint.resultsink`), otherwise by the caller's thread; a background thread,
    tried, made each replayed call slower than the writes it took over (figures:
    benchmarks/README.md).
    A failed write stops further writes and is one `CachelintError` line at `close` (or on leaving
    the context manager), after the scenarios have run. If the child fails in any other way, the
    files are written here at `close` (a large suite's, whose documents are not held: one line).

    `records` holds each scenario's report by identity (`reports.model.scenario_report`, priced
    with `priced`: the config's model and prices): its whole document up to `HOLD_MAX_SCENARIOS`
    expected scenarios; above, what the reports group and count it by, its slim document spooled
    and its file's digest (`reports.held.Source`).
    """

    def __init__(
        self,
        directory: Path,
        *,
        execution: str,
        mode: str,
        expected: int = 0,
        priced: tuple[str, Mapping[str, Price]] = ("", {}),
    ) -> None:
        self.directory = directory
        self.execution = execution
        self.mode = mode
        self._base = os.fspath(directory)
        self._made: set[str] = set()
        self._failure: tuple[str, str] | None = None
        child = expected >= SINK_MIN_SCENARIOS
        self._sink: subprocess.Popen[bytes] | None = _start_sink() if child else None
        self._sink_broken = False
        # Each written document's report by scenario identity: the reports read the same
        # documents, and building them again cost as much as writing them.
        self.records: dict[str, ScenarioReport] = {}
        self._priced = priced
        from cachelint.runner.reports.model import scenario_report

        # Looked up once: an import statement in `_kept` cost ~8,000 instructions a scenario.
        self._report = scenario_report
        self._sources: Sources | None = None
        if expected > HOLD_MAX_SCENARIOS:
            from cachelint.runner.reports.held import Sources

            self._sources = Sources(directory)

    def __enter__(self) -> ResultWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def write(self, result: ScenarioResult) -> None:
        """Write (or hand over) the results file of one scenario."""
        # The identity is validated as a relative agent/tenant/name path when datasets load.
        path = f"{self._base}/{result.scenario.identity}.json"
        record = scenario_record(result, execution=self.execution, mode=self.mode)
        data = (_compact(record) + "\n").encode("utf-8")
        self.records[result.scenario.identity] = self._kept(record, data)
        if self._failure is not None:
            return
        if self._sink is not None and not self._sink_broken:
            try:
                assert self._sink.stdin is not None
                self._sink.stdin.write(resultsink.frame(path, data))  # one call: one whole frame
                return
            except OSError:
                self._sink_broken = True  # written here at close, with the rest
        if self._sink is None:
            self._write_here(path, data)

    def _kept(self, record: dict[str, Any], data: bytes) -> ScenarioReport:
        source = self._sources.of(record, data) if self._sources is not None else None
        return self._report(record, *self._priced, source=source)

    def close(self) -> None:
        if self._sink is not None:
            sink, self._sink = self._sink, None
            written = self._finish_sink(sink)
            if not written and self._sources is not None:
                # A large suite's documents are not held: they cannot be written here instead.
                self._failure = (self._base, "the process writing the results files failed")
            elif not written:
                for identity, kept in self.records.items():  # the child failed: do it here
                    if self._failure is None:
                        data = (_compact(kept.record) + "\n").encode("utf-8")
                        self._write_here(f"{self._base}/{identity}.json", data)
        if self._failure is not None:
            path, reason = self._failure
            raise CachelintError(
                f"{path}: cannot write the results file ({reason}); check that the results "
                "directory is writable or set `results` in [tool.cachelint]"
            )

    def _write_here(self, path: str, data: bytes) -> None:
        try:
            resultsink.write_file(path, data, self._made)
        except OSError as exc:
            self._failure = (path, exc.strerror or str(exc))

    def _finish_sink(self, sink: subprocess.Popen[bytes]) -> bool:
        """End the child's input and wait for it; False when it did not write everything."""
        answer, _ = sink.communicate()  # a child already gone is no error here: its code says
        if sink.returncode != 0 or self._sink_broken:
            return False
        try:
            failure = json.loads(answer)
        except ValueError:
            return False
        if isinstance(failure, dict):
            self._failure = (str(failure.get("path")), str(failure.get("reason")))
            return True
        return failure is None


def _compact(record: Mapping[str, Any]) -> str:
    # Bidi and C1 controls from file names and answers as \u escapes: the decoded values stay
    # exact, the file's bytes reorder nothing for a person who opens it.
    return dumps_compact(record)  # json_dumps(record, compact=True)'s text, by orjson


def _start_sink() -> subprocess.Popen[bytes] | None:
    try:
        return subprocess.Popen(
            module_command("cachelint.resultsink"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            bufsize=1 << 16,
        )
    except OSError:
        return None  # no interpreter to start: written here
