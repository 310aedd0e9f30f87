"""The text and JSON reports of a run, pure functions of its `RunReport` (JUnit:
reports/junit.py; Markdown and GitHub annotations: reports/prformats.py; HTML:
reports/htmlreport.py).

No I/O, no clock, no environment: identical runs render byte-identical reports. Timings of cache
hits (lookup times) are left out for that reason; live latency and tokens live in the per-scenario
results files. Model output and dataset text are untrusted: every format passes them through
`cachelint.display` (visible `\\x..` escapes in text, `\\u` escapes in JSON).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cachelint.display import sanitize
from cachelint.jsonstream import Streamed
from cachelint.reporters import finding_lines
from cachelint.runner.matrix import matrix_lines
from cachelint.runner.reports.model import RunReport, ScenarioReport

REPORT_FORMAT = 1

Record = Mapping[str, Any]  # a part of a results document: a trial, an assertion, a judge

# ---- text ---------------------------------------------------------------------------------------


def _count(count: int, word: str) -> str:
    """ "1 scenario", "2 scenarios": a count and its noun, agreeing."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _trial_label(s: ScenarioReport) -> str:
    total = len(s.trials)
    if total == 1:
        return ""
    verdicts = " ".join("pass" if t["passed"] else "FAIL" for t in s.trials)
    return (
        f"  {s.passed_trials}/{total} trials ({s.pass_rate:.0%}; pass {s.pass_policy}: {verdicts})"
    )


def _cache_label(s: ScenarioReport) -> str:
    calls = [c for t in s.trials for c in t.get("calls") or ()]  # s.calls(), the target's
    if not calls:
        return ""
    hits = sum(1 for c in calls if c.get("cache_hit"))
    if hits == len(calls):
        return "  [cache hit]" if len(calls) == 1 else f"  [{hits} cache hits]"
    return f"  [{len(calls) - hits} live, {hits} cache hits]"


def _indent(text: str, prefix: str) -> list[str]:
    # Split on LF only: CR, U+2028 and the rest are shown as escapes, never taken as a break.
    return [prefix + sanitize(line) for line in text.rstrip("\n").split("\n")]


def _trial_lines(t: Record, multi: bool) -> list[str]:
    lines: list[str] = []
    head = f"    trial {t['trial']}: " if multi else "    "
    if t.get("error") is not None:
        first, *rest = str(t["error"]).rstrip("\n").split("\n")
        lines.append(head + sanitize(first))
        lines.extend(_indent("\n".join(rest), "    ") if rest else [])
    for a in t.get("assertions") or ():
        if not a["passed"]:
            lines.append(f"{head}{sanitize(a['type'])}: {sanitize(a['reason'])}")
    return lines


def _judge_lines(s: ScenarioReport) -> list[str]:
    lines: list[str] = []
    for t in s.trials:
        for j in t.get("judges") or ():
            score = f"{j['score']}/5" if j.get("score") is not None else "no score"
            trial = f" (trial {t['trial']})" if len(s.trials) > 1 else ""
            reason = sanitize(_one_line(j["reason"]))
            lines.append(f"    judge {sanitize(j['metric'])}{trial}: {score}  {reason}")
    return lines


def metric_text(m: Record) -> str:
    """`words = 42 (good)`, then flags: the same words in every report format (`m` as a results
    document holds a metric, `Metric.as_dict`)."""
    from cachelint.runner.metrics import Metric, Rating  # a run with python assertions only

    metric = Metric(**m)
    flags = [Rating(metric.rating).value] + (["failed"] if metric.failed else [])
    flags += [] if metric.gating else ["reported only"]
    return f"{metric.name} = {metric.shown_value()} ({', '.join(flags)})"


def _metric_lines(s: ScenarioReport) -> list[str]:
    return [
        f"    metric {sanitize(metric_text(m))}"
        + (f" (trial {t['trial']})" if len(s.trials) > 1 else "")
        + (f"  {sanitize(_one_line(m['reason']))}" if m.get("reason") else "")
        for t in s.trials
        for m in t.get("metrics") or ()
    ]


def _one_line(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def text_head(execution: str, mode: str, n: int) -> str:
    return (
        f"cachelint run: execution {sanitize(execution)}, mode {mode}, "
        f"{n} scenario{'s' if n != 1 else ''}\n"
    )


def text_scenario(s: ScenarioReport) -> str:
    """One scenario's block of the text report (also printed live, see runner/progress.py)."""
    trials, passed = s.trials, s.passed
    verdict = "PASS" if passed else "FAIL"
    line = f"{verdict}  {sanitize(s.identity)}{_trial_label(s)}{_cache_label(s)}"
    if passed and all(t["passed"] and not t.get("judges") and not t.get("metrics") for t in trials):
        return line + "\n"  # most scenarios: their line only
    out = [line]
    if not passed or s.passed_trials < len(trials):  # a policy may pass failed trials
        multi = len(trials) > 1
        for t in trials:
            if not t["passed"]:
                out.extend(_trial_lines(t, multi))
    out.extend(_judge_lines(s))
    out.extend(_metric_lines(s))
    return "\n".join(out) + "\n"


def text_tail(report: RunReport) -> str:
    out: list[str] = []
    out.extend(finding_lines(list(report.mutations), prefix="FAIL  "))
    matrix = report.matrix()
    out.extend(matrix_lines(matrix, sanitize) if matrix is not None else ())
    for by_tenant in (False, True):
        out.append(f"summary by {'tenant' if by_tenant else 'agent'}:")
        out.extend(
            f"  {sanitize(n)}: {sum(1 for s in m if s.passed)}/{len(m)} passed"
            for n, m in report.groups(by_tenant)
        )
    c = report.counts()
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
    head = text_head(report.name, report.mode, len(report.scenarios))
    return head + "".join(map(text_scenario, report.scenarios)) + text_tail(report)


# ---- json ---------------------------------------------------------------------------------------

# What the JSON report gives of each trial of a results document (judges without their keys).
_TRIAL = ("trial", "passed", "error", "assertions", "metrics", "cache_hit", "keys", "usage")


def _scenario_dict(s: ScenarioReport) -> dict[str, Any]:
    record = s.record  # read once: run.json, trend.json and the trend line each list them all
    trials = []
    for t in record["trials"]:
        trial = {key: t.get(key) for key in _TRIAL}
        trial["judges"] = [
            {"metric": j["metric"], "score": j.get("score"), "reason": j["reason"]}
            for j in t.get("judges") or ()
        ]
        trials.append(trial)
    return {
        "scenario": s.identity,
        "agent": s.agent,
        "tenant": s.tenant,
        "path": s.path,
        "passed": s.passed,
        "pass_rate": s.pass_rate,
        "pass_policy": s.pass_policy,
        "trials": trials,
    }


def report_dict(report: RunReport, *, streamed: bool = False) -> dict[str, Any]:
    """The JSON report; with `streamed`, its scenarios a `jsonstream.Streamed` list, made again
    as each writer reads them (a large run's would be held whole otherwise)."""
    scenarios: Any
    if streamed:
        listed = report.scenarios
        scenarios = Streamed(len(listed), lambda: map(_scenario_dict, listed))
    else:
        scenarios = [_scenario_dict(s) for s in report.scenarios]
    matrix = report.matrix()
    return {
        "format": REPORT_FORMAT,
        "execution": report.name,
        "mode": report.mode,
        "passed": report.passed,
        "summary": report.counts(),
        "by_agent": report.group_counts(by_tenant=False),
        "by_tenant": report.group_counts(by_tenant=True),
        "scenarios": scenarios,
        "mutations": [
            {"code": f.code, "path": f.path, "message": f.message} for f in report.mutations
        ],
        "failures": list(report.failures),
        "results_dir": report.results_dir,
        **({"matrix": matrix.as_dict()} if matrix is not None else {}),
    }
