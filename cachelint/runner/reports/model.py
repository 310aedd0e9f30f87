"""The one report model of a run, from which every format renders: text, JSON and JUnit
(reports/text.py, reports/junit.py), Markdown and GitHub annotations (reports/prformats.py) and
the HTML page (reports/htmlreport.py), for a run as it ends and for `cachelint report` reading a
saved execution. Built once (`RunReport`), never patched: the budget and baseline verdict and the
cost lines are in it from the start (reports/publishing.py `judge`).

A scenario's report is its results document, the file `engine.ResultWriter` writes to
`<results>/<execution>/<agent>/<tenant>/<scenario>.json`, with its cost and tokens, made as the
file is written or read. A large run (`engine.HOLD_MAX_SCENARIOS`) holds of each document the
values its reports group and count by, the rest spooled to a temp file (`held.Source`), and the
page reads the whole one back from its file (`ScenarioReport.whole`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from cachelint.errors import CachelintError
from cachelint.findings import Finding
from cachelint.runner.cost import Price, Spend, call_spend, tokens

if TYPE_CHECKING:
    from cachelint.runner.matrix import Matrix
    from cachelint.runner.reports.held import Source

RUN_FILE = "run.json"


@dataclass(frozen=True, slots=True)  # a large run holds one for each scenario
class ScenarioReport:
    record: Mapping[str, Any]  # the per-scenario results document (engine.scenario_record)
    spend: Spend  # USD of the priced calls, and the calls no price covers
    tokens: tuple[int, int]  # input, output (target and judge calls)
    # What a large run holds of the document (`held.Source`, `record` too): the page reads the
    # whole one back from its file.
    source: Source | None = None

    def whole(self) -> ScenarioReport:
        """This scenario with its whole results document (read back from its file when only
        a large run's is held): what the page draws the conversation from."""
        if self.source is None:
            return self
        directory, rel = self.source.run.directory, f"{self.identity}.json"
        return ScenarioReport(
            read_document(directory, rel, self.source.digest), self.spend, self.tokens
        )

    def system_texts(self) -> list[tuple[bytes, str | None]]:
        """Its system texts the page may share (`htmlscenario.system_texts`) by `text_key`, each
        with its text, or None where a large run did not hold it (only one scenario sent it)."""
        from cachelint.runner.reports.htmlscenario import system_texts, text_key

        if self.source is None:
            return [(text_key(body), body) for body in system_texts(self.trials)]
        held = self.source.run.texts
        return [(key, held.get(key)) for key in self.source.systems]

    @property
    def cost(self) -> float | None:
        """USD when every call was priced, else None (never an undercount)."""
        return self.spend.dollars if self.spend.complete else None

    @property
    def identity(self) -> str:
        return str(self.record["scenario"])

    @property
    def name(self) -> str:
        """The dataset's scenario name (a matrix pair's too: `origin` is its dataset identity)."""
        return str(self.record.get("origin") or self.identity).split("/")[2]

    @property
    def agent(self) -> str:
        return str(self.record["agent"])

    @property
    def tenant(self) -> str:
        return str(self.record["tenant"])

    @property
    def path(self) -> str:
        return str(self.record["path"])

    @property
    def passed(self) -> bool:
        return bool(self.record["passed"])

    @property
    def trials(self) -> list[Mapping[str, Any]]:
        return cast("list[Mapping[str, Any]]", self.record["trials"])  # a string: no generic made

    @property
    def pass_rate(self) -> float:
        return float(self.record.get("pass_rate", 1.0 if self.passed else 0.0))

    @property
    def pass_policy(self) -> str:
        """The `pass` policy the verdict followed, as every report names it."""
        return str(self.record.get("pass_policy"))

    @property
    def passed_trials(self) -> int:
        return sum(1 for t in self.trials if t.get("passed"))

    def calls(self, *, judges: bool = False) -> Iterator[Mapping[str, Any]]:
        """The target calls of every trial (with `judges`, the judges' calls too)."""
        for t in self.trials:
            yield from t.get("calls") or ()
            yield from (t.get("judge_calls") or ()) if judges else ()

    @property
    def latency_s(self) -> float:
        """Provider latency of the live calls (a cache entry records none; a hit is a lookup)."""
        return sum(float(c.get("latency_s") or 0.0) for c in self.calls() if not c.get("cache_hit"))

    @property
    def cache_hit(self) -> bool:
        return all(t.get("cache_hit") for t in self.trials)

    def judge_scores(self) -> dict[str, float | None]:
        """Mean score per metric over the trials that were scored."""
        scores: dict[str, list[int]] = {}
        for t in self.trials:
            for j in t.get("judges") or ():
                bucket = scores.setdefault(str(j["metric"]), [])
                if isinstance(j.get("score"), int):
                    bucket.append(j["score"])
        return {m: (sum(v) / len(v) if v else None) for m, v in scores.items()}

    def failure_reasons(self) -> list[str]:
        reasons: list[str] = []
        multi = len(self.trials) > 1
        for t in self.trials:
            if t.get("passed"):
                continue
            prefix = f"trial {t['trial']}: " if multi else ""
            if t.get("error"):
                reasons.append(prefix + str(t["error"]).splitlines()[0])
            for a in t.get("assertions") or ():
                if not a.get("passed"):
                    reasons.append(f"{prefix}{a['type']}: {a['reason']}")
        return reasons or ["failed"]


class Verdict(NamedTuple):
    """A run judged on its budget and baseline (`publishing.judge`)."""

    # What fails the run beyond its scenarios and the canary (over budget, a budget that cannot
    # be checked, baseline regressions): each format shows them and the run as failed.
    failures: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # the cost and baseline lines each format shows


NOT_JUDGED = Verdict()


@dataclass(frozen=True)
class RunReport:
    """A run (an execution) as every format renders it."""

    name: str  # the execution
    mode: str
    started: str | None
    scenarios: Sequence[ScenarioReport]
    mutations: Sequence[Finding] = ()  # what the offline canary saw the run change
    # What fails the run beyond its scenarios and the canary (over budget, a budget that cannot
    # be checked, baseline regressions): each format shows them and the run as failed.
    failures: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # the cost and baseline lines each format shows
    results_dir: str | None = None  # repo-relative, where a run wrote its results files

    @classmethod
    def saved(
        cls,
        summary: Mapping[str, Any],
        directory: Path,
        scenarios: Sequence[ScenarioReport],
        verdict: Verdict = NOT_JUDGED,
    ) -> RunReport:
        """The execution in `directory` from its run summary and its scenarios (`read_scenarios`),
        with its `failures` and `notes` when judged."""
        mutations = tuple(
            Finding(
                path=str(m.get("path", "")),
                code=str(m.get("code", "")),
                message=str(m.get("message", "")),
            )
            for m in summary.get("mutations") or ()
        )
        name, mode = str(summary.get("execution", directory.name)), str(summary.get("mode", ""))
        return cls(name, mode, summary.get("started"), scenarios, mutations, *verdict)

    @property
    def passed(self) -> bool:
        return not self.mutations and not self.failures and all(s.passed for s in self.scenarios)

    @property
    def spend(self) -> Spend:
        return group_spend(self.scenarios)

    def matrix(self) -> Matrix | None:
        """The target matrix this execution ran, else None."""
        return self._matrix

    @cached_property
    def _matrix(self) -> Matrix | None:
        # Made once for run.json, the page and the text's tail: each reads every scenario's
        # record (a large run's from its spool) to find the pairs.
        from cachelint.runner.matrix import matrix_of

        return matrix_of(self)

    def groups(self, by_tenant: bool) -> list[tuple[str, list[ScenarioReport]]]:
        return groups(self.scenarios, by_tenant)

    def counts(self) -> dict[str, int]:
        """Scenarios, passed and failed, trials, target calls and their cache hits."""
        return dict(self._counts)

    @cached_property
    def _counts(self) -> dict[str, int]:
        # Counted once for run.json and the text's tail: a large run reads every scenario's
        # trials back from its spool to count them.
        passed = trials = calls = hits = 0
        for s in self.scenarios:  # one pass, holding nothing (a large run's trials are spooled)
            passed += s.passed
            trials += len(s.trials)
            for call in s.calls():
                calls += 1
                hits += bool(call.get("cache_hit"))
        return {
            "scenarios": len(self.scenarios),
            "passed": passed,
            "failed": len(self.scenarios) - passed,
            "trials": trials,
            "calls": calls,
            "cache_hits": hits,
        }

    def group_counts(self, by_tenant: bool) -> dict[str, dict[str, int]]:
        """Passed and total scenarios by agent (or agent/tenant)."""
        return {
            n: {"passed": sum(1 for s in m if s.passed), "total": len(m)}
            for n, m in self.groups(by_tenant)
        }

    def entries(self) -> Iterator[str]:
        """The cache entries the run's calls reached, the judges' included."""
        return (str(c.get("entry")) for s in self.scenarios for c in s.calls(judges=True))


def groups(
    scenarios: Sequence[ScenarioReport], by_tenant: bool
) -> list[tuple[str, list[ScenarioReport]]]:
    """The scenarios by agent (or agent/tenant), sorted by that name."""
    out: dict[str, list[ScenarioReport]] = {}
    for s in scenarios:
        out.setdefault(f"{s.agent}/{s.tenant}" if by_tenant else s.agent, []).append(s)
    return sorted(out.items())


def group_spend(members: Sequence[ScenarioReport]) -> Spend:
    """`sum((s.spend for s in members), Spend())` (the same dollars, added in the same order)
    without a Spend made per scenario: a run's reports add up every scenario several times."""
    dollars = Spend().dollars
    counts: dict[str, int] = {}
    for s in members:
        spend = s.spend
        dollars += spend.dollars
        for why, n in spend.unpriced:
            counts[why] = counts.get(why, 0) + n
    return Spend(dollars, tuple(sorted(counts.items())))


_UNPRICED: dict[Spend, Spend] = {}


def scenario_report(
    record: Mapping[str, Any],
    model: str,
    prices: Mapping[str, Price],
    source: Source | None = None,
) -> ScenarioReport:
    """The scenario's tokens and cost: each call priced as the `cost` assertion prices it
    (`cost.pricing_model`: a scenario may call several models, and judges their own), `model`
    for records that do not say. A call no price covers is counted as unpriced, never as free.
    With a `source` (what a large run holds of `record`), it keeps that instead."""
    usages: list[Any] = []
    spend = Spend()
    for t in record.get("trials") or ():
        target = list(t.get("calls") or ())
        calls = target + list(t.get("judge_calls") or ())
        if not calls:  # a record from before calls were listed: the trial's own usage
            calls = [{"usage": t.get("usage"), "model": model}] if t.get("usage") else []
        for call in calls:
            usages.append(call.get("usage"))
            # A trial's one target call keeps its response on the trial (not written twice).
            response = call.get("response", t.get("response") if len(target) == 1 else None)
            spend += call_spend(call.get("usage"), call.get("model"), response, model, prices)
    n_in = sum(tokens(u)[0] for u in usages)
    n_out = sum(tokens(u)[1] for u in usages)
    if source is not None:
        # A large run's scenarios mostly share a few unpriced tallies (no dollars): one each.
        spend = _UNPRICED.setdefault(spend, spend) if not spend.dollars else spend
        counted = _TOKENS.get((n_in, n_out)) or (n_in, n_out)  # mostly a few counts repeated
        if len(_TOKENS) < _TOKENS_MAX:
            _TOKENS.setdefault(counted, counted)
        return ScenarioReport(source, spend, counted, source)
    return ScenarioReport(record, spend, (n_in, n_out))


# A large run's counts of tokens, one tuple each; bounded, for suites whose counts do not repeat.
_TOKENS: dict[tuple[int, int], tuple[int, int]] = {}
_TOKENS_MAX = 4_096


def _read_json(directory: Path, rel: str) -> Any:
    """`directory/rel` read as evidence (`evidence.read_json`): a regular file below the
    execution through no link, bounded in size and nesting, whatever read it before (a file
    swapped since is refused, never followed); anything else one error line."""
    from cachelint.runner.evidence import RECORD_MAX_BYTES, SUMMARY_MAX_BYTES, read_json

    bound = SUMMARY_MAX_BYTES if rel == RUN_FILE else RECORD_MAX_BYTES
    return read_json(directory, rel, bound)[1]


# What a report reads of a scenario's results document, as `engine` writes it, by shape: a dict
# maps keys to the shapes of their values, a one-item list is a list of that shape, `float` is a
# number; below the top, a key may be absent or null. The renderers read the document without
# looking again, and it may come from another machine (a shard's CI artifact), so it is checked
# once, where it is loaded.
_MESSAGES: Any = [{"tool_calls": [{"function": {}}]}]
_CALLS: Any = [{"messages": _MESSAGES, "usage": {}, "latency_s": float}]
_RECORD: Any = {
    "pass_rate": float,
    "trials": [
        {
            "calls": _CALLS,
            "judge_calls": _CALLS,
            "messages": _MESSAGES,
            "output": {"tool_calls": [{}]},
            "assertions": [{}],
            "judges": [{}],
            "metrics": [{}],
            "usage": {},
        }
    ],
}
_REQUIRED = ("scenario", "agent", "tenant", "path", "passed", "trials")
_MUTATIONS: Any = [{}]


def _misshapen(value: Any, shape: Any, where: str) -> str | None:
    """Where `value` departs from `shape` (see `_RECORD`), as "'trials[0].calls' is not a list",
    or None."""
    if value is None:
        return None
    if shape is float:
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        return None if number else f"{where!r} is not a number"
    if isinstance(shape, list):
        if not isinstance(value, list):
            return f"{where!r} is not a list"
        found = (_misshapen(item, shape[0], f"{where}[{i}]") for i, item in enumerate(value))
    elif not isinstance(value, dict):
        return f"{where!r} is not an object"
    else:
        found = (
            _misshapen(value.get(key), part, f"{where}.{key}" if where else key)
            for key, part in shape.items()
        )
    return next((problem for problem in found if problem is not None), None)


def _not_written_here(path: Path, problem: str) -> CachelintError:
    return CachelintError(
        f"{path}: {problem}: not a results file this cachelint writes; run `cachelint run` "
        "again, or pass the execution it wrote"
    )


def read_document(directory: Path, rel: str, digest: bytes | None = None) -> Mapping[str, Any]:
    """A scenario's results document `directory/rel`, when a report can read it; with `digest`,
    the bytes this process wrote there are its own document (`evidence.read_own`)."""
    if digest is not None:
        from cachelint.runner.evidence import read_own

        own = read_own(directory, rel, digest)
        if own is not None:
            return cast(Mapping[str, Any], own)
    return checked(_read_json(directory, rel), directory / rel)


def checked(record: Any, path: Path) -> Mapping[str, Any]:
    """`record`, read from `path`, when a report can read it as a scenario's results document."""
    if not isinstance(record, dict):
        raise _not_written_here(path, "not an object")
    missing = [key for key in _REQUIRED if record.get(key) is None]
    problem = f"no {missing[0]!r}" if missing else _misshapen(record, _RECORD, "")
    if problem is not None:
        raise _not_written_here(path, problem)
    return record


def read_run(directory: Path) -> dict[str, Any]:
    """An execution's run summary (`run.json`), when a report or a merge can read it."""
    path = directory / RUN_FILE
    run = _read_json(directory, RUN_FILE)
    if not isinstance(run, dict) or not isinstance(run.get("scenarios"), list):
        raise _not_written_here(path, "no list of 'scenarios'")
    problem = _misshapen(run.get("mutations"), _MUTATIONS, "mutations")
    if problem is not None:
        raise _not_written_here(path, problem)
    return run


def listed_scenario(entry: object, run_file: Path) -> str:
    """The identity of a scenario `run_file` lists. It names the scenario's results file beside
    it, so it must be an identity (`agent/tenant/scenario`), never a path out of the execution:
    results may come from another machine (a shard's CI artifact)."""
    from cachelint.runner.identities import validate_identity

    identity = entry.get("scenario") if isinstance(entry, dict) else None
    try:
        validate_identity(cast(str, identity), str(run_file))
    except CachelintError:
        raise CachelintError(
            f"{run_file}: lists {identity!r}, not a scenario identity (agent/tenant/scenario); "
            "pass an execution written by `cachelint run`"
        ) from None
    return cast(str, identity)


def read_scenarios(
    directory: Path, model: str, prices: Mapping[str, Price], run: Mapping[str, Any]
) -> list[ScenarioReport]:
    """The scenarios of the execution in `directory`, in the order its run summary `run` lists
    them (dataset order). Those of a large execution (`engine.HOLD_MAX_SCENARIOS`) are held as a
    large run holds them (`held.Source`), each file read back whole where the page draws it."""
    from cachelint.runner.engine import HOLD_MAX_SCENARIOS
    from cachelint.runner.evidence import RECORD_MAX_BYTES, read_json
    from cachelint.runner.reports.held import Sources

    listed = run["scenarios"]
    sources = Sources(directory) if len(listed) > HOLD_MAX_SCENARIOS else None
    reports = []
    for entry in listed:
        rel = f"{listed_scenario(entry, directory / RUN_FILE)}.json"
        if sources is None:
            reports.append(scenario_report(read_document(directory, rel), model, prices))
            continue
        # The bytes checked here are the ones `whole` reads back by their digest.
        data, document = read_json(directory, rel, RECORD_MAX_BYTES)
        record = checked(document, directory / rel)
        reports.append(scenario_report(record, model, prices, sources.of(record, data)))
    return reports


def load_execution(
    directory: Path,
    model: str,
    prices: Mapping[str, Price],
    run: Mapping[str, Any] | None = None,
) -> RunReport:
    """The execution in `directory`, unjudged: its run summary (`run`, else its run.json, read
    with `read_run`) and its scenarios."""
    if run is None:
        run = read_run(directory)
    return RunReport.saved(run, directory, read_scenarios(directory, model, prices, run))


def execution_directory(repo: Path, results: str, name: str) -> Path:
    """`<results>/<name>/` of `repo`, refused (one error line) when it, or a directory on the
    way, is a symbolic link: its results would be read from, and its pages written to, wherever
    the link points."""
    from cachelint.confine import OutsideRepository, require_no_link

    require_no_link(repo, f"{results}/{name}", "execution", OutsideRepository)
    return repo / results / name


def list_executions(root: Path) -> list[str]:
    """Execution directories under the results root, oldest first (by recorded start, name)."""
    found: list[tuple[str, str]] = []
    if not root.is_dir():
        return []
    from cachelint.runner.evidence import SUMMARY_MAX_BYTES, BadEvidence, read_json

    for child in root.iterdir():
        # A directory linked elsewhere is no execution of this repository: never read or listed.
        if child.is_symlink():
            continue
        # Bounded, through no link, depth-checked: a FIFO, a huge or a deeply nested run.json is
        # no execution to list, never a hang or a crash.
        try:
            _, document = read_json(child, RUN_FILE, SUMMARY_MAX_BYTES, missing_ok=True)
        except BadEvidence:
            continue
        if isinstance(document, dict):
            found.append((str(document.get("started") or ""), child.name))
    return [name for _, name in sorted(found)]
