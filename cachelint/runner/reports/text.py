"""Run reports: text, JSON and JUnit XML, as pure functions of the results (HTML, Markdown and
GitHub annotations render the results documents: runner/htmlreport.py, runner/prformats.py).

No I/O, no clock, no environment: identical runs render byte-identical reports. Timings of cache
hits (lookup times) are left out for that reason; live latency and tokens live in the per-scenario
results files. Model output and dataset text are untrusted: every format passes them through
`cachelint.display` (visible `\\x..` escapes in text and XML, `\\u` escapes in JSON).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cachelint.display import json_dumps, sanitize, sanitize_block
from cachelint.findings import Finding
from cachelint.formats import ReportFormat
from cachelint.jsonstream import Streamed
from cachelint.reporters import finding_lines
from cachelint.runner.cost import Spend
from cachelint.runner.engine import ScenarioResult, TrialResult, summary_counts
from cachelint.runner.matrix import Matrix, matrix_lines
from cachelint.runner.metrics import Metric, Rating

REPORT_FORMAT = 1


@dataclass(frozen=True)
class RunReport:
    execution: str
    mode: str
    results: Sequence[ScenarioResult]
    mutations: Sequence[Finding] = ()
    results_dir: str | None = None  # repo-relative, where the per-scenario files went
    notes: Sequence[str] = field(default_factory=tuple)
    costs: Mapping[str, Spend] = field(default_factory=dict)  # identity -> what its calls cost
    # What fails the run beyond its scenarios (over budget, baseline regressions): the same
    # lines `ExecutionView.failures` holds for the other formats.
    failures: Sequence[str] = field(default_factory=tuple)
    matrix: Matrix | None = None  # a target matrix's columns (runner.matrix), when it ran one

    @property
    def passed(self) -> bool:
        return not self.mutations and not self.failures and all(r.passed for r in self.results)


# ---- text ---------------------------------------------------------------------------------------


def _count(count: int, word: str) -> str:
    """ "1 scenario", "2 scenarios": a count and its noun, agreeing."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _group_counts(results: Sequence[ScenarioResult], by_tenant: bool) -> list[tuple[str, int, int]]:
    groups: dict[str, list[int]] = {}
    for r in results:
        name = f"{r.scenario.agent}/{r.scenario.tenant}" if by_tenant else r.scenario.agent
        counts = groups.setdefault(name, [0, 0])
        counts[0] += 1 if r.passed else 0
        counts[1] += 1
    return [(name, p, t) for name, (p, t) in sorted(groups.items())]


def _trial_label(r: ScenarioResult) -> str:
    total = len(r.trials)
    if total == 1:
        return ""
    verdicts = " ".join("pass" if t.passed else "FAIL" for t in r.trials)
    policy = r.policy.describe()
    return f"  {r.passed_trials}/{total} trials ({r.pass_rate:.0%}; pass {policy}: {verdicts})"


def _cache_label(r: ScenarioResult) -> str:
    calls = [c for t in r.trials for c in t.calls]
    if not calls:
        return ""
    hits = sum(1 for c in calls if c.hit)
    if hits == len(calls):
        return "  [cache hit]" if len(calls) == 1 else f"  [{hits} cache hits]"
    return f"  [{len(calls) - hits} live, {hits} cache hits]"


def _indent(text: str, prefix: str) -> list[str]:
    # Split on LF only: CR, U+2028 and the rest are shown as escapes, never taken as a break.
    return [prefix + sanitize(line) for line in text.rstrip("\n").split("\n")]


def _trial_lines(t: TrialResult, multi: bool) -> list[str]:
    lines: list[str] = []
    head = f"    trial {t.trial}: " if multi else "    "
    if t.error is not None:
        first, *rest = t.error.rstrip("\n").split("\n")
        lines.append(head + sanitize(first))
        lines.extend(_indent("\n".join(rest), "    ") if rest else [])
    for a in t.assertions:
        if not a.passed:
            lines.append(f"{head}{sanitize(a.type)}: {sanitize(a.reason)}")
    return lines


def _judge_lines(r: ScenarioResult) -> list[str]:
    lines: list[str] = []
    for t in r.trials:
        for j in t.judges:
            score = f"{j.score}/5" if j.score is not None else "no score"
            trial = f" (trial {t.trial})" if len(r.trials) > 1 else ""
            lines.append(
                f"    judge {sanitize(j.metric)}{trial}: {score}  {sanitize(_one_line(j.reason))}"
            )
    return lines


def metric_text(m: Metric) -> str:
    """`words = 42 (good)`, then flags: the same words in every report format."""
    flags = [Rating(m.rating).value] + (["failed"] if m.failed else [])
    flags += [] if m.gating else ["reported only"]
    return f"{m.name} = {m.shown_value()} ({', '.join(flags)})"


def _metric_lines(r: ScenarioResult) -> list[str]:
    return [
        f"    metric {sanitize(metric_text(m))}"
        + (f" (trial {t.trial})" if len(r.trials) > 1 else "")
        + (f"  {sanitize(_one_line(m.reason))}" if m.reason else "")
        for t in r.trials
        for m in t.metrics
    ]


def _one_line(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def text_head(execution: str, mode: str, n: int) -> str:
    return (
        f"cachelint run: execution {sanitize(execution)}, mode {mode}, "
        f"{n} scenario{'s' if n != 1 else ''}\n"
    )


def text_scenario(r: ScenarioResult) -> str:
    """One scenario's block of the text report (also printed live, see runner/progress.py)."""
    verdict = "PASS" if r.passed else "FAIL"
    out = [f"{verdict}  {sanitize(r.scenario.identity)}{_trial_label(r)}{_cache_label(r)}"]
    if not r.passed or r.passed_trials < len(r.trials):  # a policy may pass failed trials
        multi = len(r.trials) > 1
        for t in r.trials:
            if not t.passed:
                out.extend(_trial_lines(t, multi))
    out.extend(_judge_lines(r))
    out.extend(_metric_lines(r))
    return "\n".join(out) + "\n"


def text_tail(report: RunReport) -> str:
    out: list[str] = []
    out.extend(finding_lines(list(report.mutations), prefix="FAIL  "))
    out.extend(matrix_lines(report.matrix, sanitize) if report.matrix is not None else ())
    out.append("summary by agent:")
    out.extend(
        f"  {sanitize(n)}: {p}/{t} passed" for n, p, t in _group_counts(report.results, False)
    )
    out.append("summary by tenant:")
    out.extend(
        f"  {sanitize(n)}: {p}/{t} passed" for n, p, t in _group_counts(report.results, True)
    )
    c = summary_counts(report.results)
    mutated = len(report.mutations)
    out.append(
        f"{_count(c['scenarios'], 'scenario')}: {c['passed']} passed, {c['failed']} failed; "
        f"{_count(c['calls'], 'model call')}, {_count(c['cache_hits'], 'cache hit')}"
        + (f"; cache tree mutated ({_count(mutated, 'file')})" if mutated else "")
    )
    if report.results_dir:
        out.append(f"results: {sanitize(report.results_dir)}/")
    out.extend(sanitize(n) for n in report.notes)
    out.extend(f"FAIL  {sanitize(f)}" for f in report.failures)
    return "\n".join(out) + "\n"


def render_text(report: RunReport) -> str:
    head = text_head(report.execution, report.mode, len(report.results))
    return head + "".join(map(text_scenario, report.results)) + text_tail(report)


# ---- json ---------------------------------------------------------------------------------------


def _trial_dict(t: TrialResult) -> dict[str, Any]:
    return {
        "trial": t.trial,
        "passed": t.passed,
        "error": t.error,
        "assertions": [
            {"type": a.type, "passed": a.passed, "reason": a.reason} for a in t.assertions
        ],
        "judges": [{"metric": j.metric, "score": j.score, "reason": j.reason} for j in t.judges],
        "metrics": [m.as_dict() for m in t.metrics],
        "cache_hit": t.cache_hit,
        "keys": [c.key for c in t.calls],
        "usage": t.usage,
    }


def _scenario_dict(r: ScenarioResult) -> dict[str, Any]:
    return {
        "scenario": r.scenario.identity,
        "agent": r.scenario.agent,
        "tenant": r.scenario.tenant,
        "path": r.scenario.path,
        "passed": r.passed,
        "pass_rate": r.pass_rate,
        "pass_policy": r.policy.describe(),
        "trials": [_trial_dict(t) for t in r.trials],
    }


def report_dict(report: RunReport, *, streamed: bool = False) -> dict[str, Any]:
    """The JSON report; with `streamed`, its scenarios a `jsonstream.Streamed` list, made again
    as each writer reads them (a large run's would be held whole otherwise)."""
    results = report.results
    scenarios: Any
    if streamed:
        scenarios = Streamed(len(results), lambda: map(_scenario_dict, results))
    else:
        scenarios = [_scenario_dict(r) for r in results]
    return {
        "format": REPORT_FORMAT,
        "execution": report.execution,
        "mode": report.mode,
        "passed": report.passed,
        "summary": dict(summary_counts(report.results)),
        "by_agent": {
            n: {"passed": p, "total": t} for n, p, t in _group_counts(report.results, False)
        },
        "by_tenant": {
            n: {"passed": p, "total": t} for n, p, t in _group_counts(report.results, True)
        },
        "scenarios": scenarios,
        "mutations": [
            {"code": f.code, "path": f.path, "message": f.message} for f in report.mutations
        ],
        "failures": list(report.failures),
        "results_dir": report.results_dir,
        **({"matrix": report.matrix.as_dict()} if report.matrix is not None else {}),
    }


def render_json(report: RunReport) -> str:
    return json_dumps(report_dict(report)) + "\n"


# ---- junit --------------------------------------------------------------------------------------

_XML_UNSAFE = re.compile("[\ufffe\uffff]")


def _xml_text(text: str) -> str:
    # CI pages show these attributes and bodies to people: controls, bidi marks and surrogates
    # become visible escapes (which also keeps out the C0 controls XML 1.0 cannot carry at all).
    return _XML_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", sanitize_block(text))


def _failure_text(r: ScenarioResult) -> tuple[str, str]:
    lines: list[str] = []
    for t in r.trials:
        if t.passed:
            continue
        prefix = f"trial {t.trial}: " if len(r.trials) > 1 else ""
        if t.error is not None:
            lines.append(prefix + t.error)
        lines.extend(f"{prefix}{a.type}: {a.reason}" for a in t.assertions if not a.passed)
    first = lines[0].splitlines()[0] if lines else "failed"
    return first, "\n".join(lines)


def _live_seconds(r: ScenarioResult) -> float:
    return sum(c.latency_s for t in r.trials for c in t.calls if not c.hit)


def render_junit(report: RunReport) -> str:
    # Imported here: ElementTree adds start-up time and only --junit/--format junit need it.
    import xml.etree.ElementTree as ET

    root = ET.Element("testsuites", name="cachelint")
    groups: dict[str, list[ScenarioResult]] = {}
    for r in report.results:
        groups.setdefault(f"{r.scenario.agent}/{r.scenario.tenant}", []).append(r)
    total = failures = 0
    for name, members in groups.items():
        failed = sum(1 for r in members if not r.passed)
        suite = ET.SubElement(
            root,
            "testsuite",
            name=_xml_text(name),
            tests=str(len(members)),
            failures=str(failed),
            errors="0",
            skipped="0",
        )
        total += len(members)
        failures += failed
        for r in members:
            _junit_case(ET, suite, r, report.costs.get(r.scenario.identity))
    extra = _run_suite(
        ET, root, "eval-cache-mutated", [(f.path, f.message, f.code) for f in report.mutations]
    )
    # What fails the run as a whole (budget, baseline) fails a test too, or CI shows green.
    extra += _run_suite(
        ET,
        root,
        "cachelint-run",
        [(line.split(":", 1)[0], line, "run") for line in report.failures],
    )
    total += extra
    failures += extra
    root.set("tests", str(total))
    root.set("failures", str(failures))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _junit_case(ET: Any, suite: Any, r: ScenarioResult, spend: Spend | None) -> None:
    """One scenario's testcase: its cost, its failure and what the judges and metrics said."""
    case = ET.SubElement(
        suite,
        "testcase",
        classname=_xml_text(f"{r.scenario.agent}.{r.scenario.tenant}"),
        name=_xml_text(r.scenario.name),
        file=_xml_text(r.scenario.path),
        time=f"{_live_seconds(r):.3f}",
    )
    if spend is not None:
        props = ET.SubElement(case, "properties")
        # A lower bound when calls went unpriced: named so, never a plain figure.
        prop = "cost_usd" if spend.complete else "cost_usd_at_least"
        ET.SubElement(props, "property", name=prop, value=f"{spend.dollars:.8f}")
        if not spend.complete:
            ET.SubElement(props, "property", name="cost_unpriced", value=_xml_text(spend.gap()))
    if not r.passed:
        message, body = _failure_text(r)
        failure = ET.SubElement(case, "failure", message=_xml_text(message), type="failed")
        failure.text = _xml_text(body)
    judges = [
        f"judge {j.metric}: {j.score if j.score is not None else 'no score'} - {j.reason}"
        for t in r.trials
        for j in t.judges
    ]
    metrics = [
        f"metric {metric_text(m)}" + (f" - {m.reason}" if m.reason else "")
        for t in r.trials
        for m in t.metrics
    ]
    rate = f"pass rate {r.passed_trials}/{len(r.trials)}"
    ET.SubElement(case, "system-out").text = _xml_text("\n".join([rate, *judges, *metrics]))


def _run_suite(ET: Any, root: Any, name: str, cases: Sequence[tuple[str, str, str]]) -> int:
    """A suite of failed cases (name, message, type) under `root`, when there are any."""
    if not cases:
        return 0
    n = str(len(cases))
    suite = ET.SubElement(
        root, "testsuite", name=name, tests=n, failures=n, errors="0", skipped="0"
    )
    for case_name, message, kind in cases:
        case = ET.SubElement(suite, "testcase", classname=name, name=_xml_text(case_name))
        ET.SubElement(case, "failure", message=_xml_text(message), type=kind)
    return len(cases)


# ---- html: see runner/htmlreport.py (one renderer for `run` and `cachelint report`) -----------


def render(report: RunReport, fmt: ReportFormat) -> str:
    if fmt is ReportFormat.JSON:
        return render_json(report)
    if fmt is ReportFormat.JUNIT:
        return render_junit(report)
    return render_text(report)
