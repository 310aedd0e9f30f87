"""The HTML report: one self-contained page (inline CSS, JS and SVG; no network; works from file://).

Rendered from a `RunReport` (the per-scenario results documents) plus the run summaries of
earlier executions for the trends, so `cachelint report` and `run --html` draw the same page. Every
user-derived string (dataset text, model output, tool arguments, reasons, names) goes through
`_e`; the page's Content-Security-Policy forbids any fetch, so a string that slipped through could
still not load anything.
"""

from __future__ import annotations

import itertools
import math
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from cachelint.runner.cost import Spend
from cachelint.runner.reports import htmlsummary
from cachelint.runner.reports.htmlassets import CSS, JS, REVIEW_CSS
from cachelint.runner.reports.htmlscenario import (
    FRAMES,
    VERDICT_B,
    Shared,
    shared_block,
    shared_texts,
    trial_body,
)
from cachelint.runner.reports.htmlscenario import escape as _e
from cachelint.runner.reports.htmlscenario import text as _t
from cachelint.runner.reports.htmlscenario import verdict as _verdict
from cachelint.runner.reports.model import RunReport, ScenarioReport, group_spend
from cachelint.settings import ReportSettings

_CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"

_CSS = CSS + REVIEW_CSS


class TrendRun(NamedTuple):
    """One execution as the trend lines draw it, kept instead of its summary: the page of a large
    suite holds several earlier executions at once, and a parsed summary is many times larger."""

    execution: str
    pass_rate: float | None  # the share of its scenarios that passed
    # By scenario identity (the first one wins): its pass rate, and its mean judge score by metric
    # (None without judge scores).
    scenarios: dict[Any, tuple[float, dict[str, float] | None]]
    passed: int = 0
    total: int = 0
    # A replay of the whole suite: only these make the trend (a re-record of one agent, a shard
    # or a filtered run is no point of the suite's line).
    whole_suite: bool = False

    @classmethod
    def of(cls, summary: Mapping[str, Any]) -> TrendRun | None:
        """`summary` (a run.json or trend.json document) drawn down; None when it is damaged."""
        try:
            scenarios = summary.get("scenarios") or []
            drawn: dict[Any, tuple[float, dict[str, float] | None]] = {}
            # One (rate, None) for the scenarios of each rate without judges: a page holds nine
            # earlier executions of up to 100,000 scenarios.
            plain: dict[tuple[float, float], tuple[float, None]] = {}
            passed = 0
            for s in scenarios:  # once: the current run's scenarios are made as they are listed
                identity = s.get("scenario")
                if isinstance(identity, str):
                    identity = sys.intern(identity)  # one string for every execution's line
                if identity not in drawn:
                    own, means = float(s.get("pass_rate", 0.0)), _judge_means(s)
                    if means is None:
                        signed = (own, math.copysign(1.0, own))  # 0.0 and -0.0 apart
                        drawn[identity] = plain.get(signed) or plain.setdefault(signed, (own, None))
                    else:
                        drawn[identity] = (own, means)
                if s.get("passed"):
                    passed += 1
        except (AttributeError, KeyError, TypeError, ValueError):
            return None
        rate = passed / len(scenarios) if scenarios else None
        whole = (
            summary.get("mode") == "replay"
            and not summary.get("filtered")
            and not summary.get("shard")
        )
        return cls(str(summary.get("execution", "?")), rate, drawn, passed, len(scenarios), whole)


# A trend.json scenario of one trial and no judge, the most common: compared in C.
_UNJUDGED: list[dict[str, list[Any]]] = [{"judges": []}]


def _judge_means(scenario: Mapping[str, Any]) -> dict[str, float] | None:
    trials = scenario.get("trials") or []
    if trials == _UNJUDGED or not any(t.get("judges") for t in trials):
        return None  # most scenarios: no judge
    scores: dict[str, list[int]] = {}
    for t in trials:
        for j in t.get("judges") or []:
            if isinstance(j.get("score"), int):
                scores.setdefault(str(j["metric"]), []).append(j["score"])
    return {metric: sum(v) / len(v) for metric, v in scores.items()} or None


@dataclass(frozen=True)
class Trend:
    """Earlier executions, oldest first, the current one last."""

    runs: Sequence[TrendRun]
    # Each distinct pass-rate line drawn once (`pass_rate_line`): most scenarios of a large
    # suite draw the same one.
    _lines: dict[tuple[Any, ...], tuple[int, str]] = field(
        default_factory=dict, compare=False, repr=False
    )

    def names(self) -> list[str]:
        return [r.execution for r in self.runs]

    def scenario(self, identity: str) -> tuple[list[float | None], dict[str, list[float | None]]]:
        """Pass rate per execution and mean judge score per metric per execution."""
        rates: list[float | None] = []
        judges: dict[str, list[float | None]] = {}
        for i, run in enumerate(self.runs):
            found = run.scenarios.get(identity)
            rates.append(found[0] if found else None)
            for metric, mean in (found[1] or {}).items() if found else ():
                judges.setdefault(metric, [None] * i).append(mean)
            for series in judges.values():
                series.extend([None] * (i + 1 - len(series)))
        return rates, judges

    def pass_rate_line(self, rates: Sequence[float | None], identity: str) -> str:
        """`sparkline(rates, top=1.0, label=f"pass rate of {identity}")`."""
        key = _series_key(rates)
        drawn = None if key is None else self._lines.get(key)
        if drawn is None:
            drawn = _line(rates, 1.0)
            if key is not None:
                self._lines[key] = drawn
        return _svg(drawn, f"pass rate of {identity}")


_FLOAT_OR_NONE = frozenset({float, type(None)})


def _series_key(values: Sequence[float | None]) -> tuple[Any, ...] | None:
    """What makes two series of floats (or None) draw the same line; None for other values
    (1 and 1.0 are equal keys but not the same text)."""
    key = tuple(values)
    if not _FLOAT_OR_NONE.issuperset(map(type, key)):
        return None
    if 0.0 in key:  # -0.0 is written as such: apart from 0.0
        key += tuple(math.copysign(1.0, v) for v in key if v == 0.0)
    return key


_HEIGHT, _WIDE = 36, 160


def _line(values: Sequence[float | None], top: float, wide: int = _WIDE) -> tuple[int, str]:
    """A sparkline's points count and what follows its label."""
    height, pad = _HEIGHT, 3
    n = len(values)
    step = (wide - 2 * pad) / max(n - 1, 1)
    points = []
    dots = []
    for i, v in enumerate(values):
        if v is None:
            continue
        x = pad + i * step
        y = height - pad - (v / top) * (height - 2 * pad)
        points.append(f"{x:.1f},{y:.1f}")
        dots.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5"><title>{v}</title></circle>')
    line = f'<polyline fill="none" stroke="#2a6fdb" stroke-width="2" points="{" ".join(points)}"/>'
    return len(points), (
        f'width="{wide}" height="{height}" viewBox="0 0 {wide} {height}">'
        f'<rect width="{wide}" height="{height}" fill="#f6f8fa"/>{line}{"".join(dots)}</svg>'
    )


def _svg(drawn: tuple[int, str], label: str) -> str:
    points, rest = drawn
    return f'<svg class="trend" data-points="{points}" role="img" aria-label="{_e(label)}" {rest}'


def sparkline(values: Sequence[float | None], *, top: float, label: str, wide: int = _WIDE) -> str:
    """An inline SVG line over `values` (None leaves a gap), scaled 0..top."""
    return _svg(_line(values, top, wide), label)


def trend_chart(trend: Trend) -> str:
    """The suite's pass rate per execution: an SVG with a labelled pass-rate axis (0-100%), an
    execution axis (numbered oldest to newest) and each point's value, then the same values as
    a table (execution, passed/total, pass rate) that can be read and copied."""
    wide, high, left, right, top, bottom = 640, 230, 56, 16, 24, 52
    plot_w, plot_h = wide - left - right, high - top - bottom
    n = len(trend.runs)
    step = plot_w / max(n - 1, 1)
    out = [
        f'<svg class="trend" data-testid="trend-chart" data-points="'
        f'{sum(1 for r in trend.runs if r.pass_rate is not None)}" role="img" '
        f'aria-label="pass rate of the whole suite per execution" width="{wide}" '
        f'height="{high}" viewBox="0 0 {wide} {high}" font-size="11">'
        f'<rect width="{wide}" height="{high}" fill="#f6f8fa"/>'
    ]
    for share in (0.0, 0.5, 1.0):
        y = top + plot_h * (1 - share)
        out.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{wide - right}" y2="{y:.1f}" stroke="#ddd"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{share:.0%}</text>'
        )
    out.append(
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="#555"/>'
        f'<line x1="{left}" y1="{top + plot_h}" x2="{wide - right}" y2="{top + plot_h}" '
        'stroke="#555"/>'
        f'<text data-testid="y-axis" transform="translate(14 {top + plot_h / 2:.0f}) '
        'rotate(-90)" text-anchor="middle">pass rate</text>'
        f'<text data-testid="x-axis" x="{left + plot_w / 2:.0f}" y="{high - 8}" '
        'text-anchor="middle">execution (1 = oldest shown)</text>'
    )
    points = []
    for i, run in enumerate(trend.runs):
        x = left + i * step if n > 1 else left + plot_w / 2
        out.append(f'<text x="{x:.1f}" y="{top + plot_h + 16}" text-anchor="middle">{i + 1}</text>')
        if run.pass_rate is None:
            continue
        y = top + plot_h * (1 - run.pass_rate)
        points.append(f"{x:.1f},{y:.1f}")
        value = f"{run.passed}/{run.total}"
        out.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3"><title>{_e(run.execution)}: {value} '
            f"({run.pass_rate:.0%})</title></circle>"
            f'<text class="value" x="{x:.1f}" y="{y - 7:.1f}" text-anchor="middle">{value}</text>'
        )
    out.append(
        f'<polyline fill="none" stroke="#2a6fdb" stroke-width="2" points="{" ".join(points)}"/>'
        "</svg>"
    )
    rows = "".join(
        f"<tr><td>{i + 1}</td><td>{_e(r.execution)}</td><td>{r.passed}/{r.total}</td>"
        f"<td>{'-' if r.pass_rate is None else f'{r.pass_rate:.0%}'}</td></tr>"
        for i, r in enumerate(trend.runs)
    )
    return (
        "".join(out) + '<table data-testid="trend-values"><tr><th>#</th><th>execution</th>'
        f"<th>passed</th><th>pass rate</th></tr>{rows}</table>"
    )


def _scenario(
    s: ScenarioReport,
    settings: ReportSettings,
    trend: Trend | None,
    marks: Mapping[str, str],
    datasets: str | None,
    shared: Shared,
    spent: dict[Any, str],
) -> str:
    """One scenario: a failed one as an open <details>, a passed one as a <div> the script opens
    (htmlscenario.FRAMES). Each fact is written once (the page of
    a large suite holds tens of thousands of scenarios): the cost and whether the cache answered
    in the summary line, the dataset only where it is not `<datasets>/<scenario>.json`.
    `spent`: each cost's text as drawn so far (a large suite's scenarios share a few)."""
    identity, passed, trials = s.identity, s.passed, s.trials
    mark = marks.get(identity)
    hit = s.cache_hit
    n_in, n_out = s.tokens
    count = (
        f"{sum(1 for t in trials if t.get('passed'))}/{len(trials)} trials, "
        if len(trials) != 1
        else ""
    )
    frame = FRAMES[passed]
    parts = [
        f'<{frame.tag} class="scenario {"passed" if passed else "failed"}{mark or ""}" '
        f'id="s-{_e(identity)}"{frame.opened}><{frame.line}{frame.line_attributes}>'
        f"{VERDICT_B[passed]} {_t(identity)}"
        f"{htmlsummary.tags(marks, identity) if mark else ''} "
        f'<small>{count}<span data-testid="cost">{_spend_text(s.spend, spent)}</span>, '
        f"{'cache hit' if hit else 'live'}</small></{frame.line}>"
        # </p> is implied by the block after it
        "<p>"
        + ("" if _dataset_root(s) == datasets else f"dataset {_t(s.path)}; ")
        + ("" if hit else f"live latency {s.latency_s:.3f} s; ")
        + f"tokens {n_in} in / {n_out} out",
    ]
    if trend is not None and len(trend.runs) > 1:
        rates, judges = trend.scenario(identity)
        parts.append('<p class="meta">pass rate over executions ')
        parts.append(trend.pass_rate_line(rates, identity))
        for metric, series in sorted(judges.items()):
            parts.append(f" judge {_e(metric)} ")
            parts.append(sparkline(series, top=5.0, label=f"judge {metric} of {identity}"))
        parts.append("</p>")
    for t in trials:
        if len(trials) > 1:
            parts.append(f"<h4>trial {_e(t.get('trial'))}: {_verdict(bool(t.get('passed')))}</h4>")
        parts.append(trial_body(t, shared, settings))
    parts.append(f"</{frame.tag}>")
    return "".join(parts)


def _spend_text(spend: Spend, spent: dict[Any, str]) -> str:
    """`_t(spend.text())`, each distinct cost drawn once."""
    # Equal costs are written alike but for 0.0 and -0.0 (money writes the sign).
    key = spend if spend.dollars else (spend, math.copysign(1.0, spend.dollars))
    shown = spent.get(key)
    if shown is None:
        shown = spent[key] = _t(spend.text())
    return shown


def _hierarchy(
    report: RunReport,
    settings: ReportSettings,
    trend: Trend | None,
    marks: Mapping[str, str],
) -> Iterator[str]:
    yield '<div id="hierarchy" data-testid="hierarchy">'
    roots = {_dataset_root(s) for s in report.scenarios}
    datasets = roots.pop() if len(roots) == 1 else None
    if datasets is not None:  # said once here, not under each scenario
        yield f'<p class="meta">each scenario\'s dataset: {_t(datasets)}/&lt;scenario&gt;.json</p>'
    numbers = itertools.count()
    spent: dict[Any, str] = {}
    for agent, members in report.groups(by_tenant=False):
        ok = sum(1 for s in members if s.passed)
        cls = "group all-passed" if ok == len(members) else "group"
        yield (
            f'<section class="{cls} agent" data-testid="agent" data-agent="{_e(agent)}">'
            f'<h2>{_e(agent)} <span class="meta">{ok}/{len(members)} passed, '
            f"{_group_cost(members)}</span></h2>"
        )
        tenants: dict[str, list[ScenarioReport]] = {}
        for s in members:
            tenants.setdefault(s.tenant, []).append(s)
        for tenant, scenarios in sorted(tenants.items()):
            # From what the views hold: a large run reads each document back once, to draw it.
            shared = shared_texts((s.system_texts() for s in scenarios), f"p{next(numbers)}-")
            ok_t = sum(1 for s in scenarios if s.passed)
            cls_t = "group all-passed" if ok_t == len(scenarios) else "group"
            # Laid out only when on screen; until then as tall as its closed scenarios and the
            # open (failed) ones roughly are, so the scroll bar is about right.
            high = 3 + 2.6 * ok_t + 16 * (len(scenarios) - ok_t)
            yield (
                f'<section class="{cls_t} tenant" data-testid="tenant" data-tenant="{_e(tenant)}" '
                f'style="contain-intrinsic-size:auto {high:.0f}rem">'
                f'<h3>{_e(tenant)} <span class="meta">{ok_t}/{len(scenarios)} passed, '
                f"{_group_cost(scenarios)}</span></h3>{shared_block(shared)}"
            )
            for s in scenarios:
                yield _scenario(s.whole(), settings, trend, marks, datasets, shared, spent)
            yield "</section>"
        yield "</section>"
    yield "</div>"


def _dataset_root(s: ScenarioReport) -> str | None:
    """The dataset directory `s.path` is under when it is `<root>/<identity>.json`."""
    tail = f"/{s.identity}.json"
    return s.path[: -len(tail)] if s.path.endswith(tail) else None


def _group_cost(members: Sequence[ScenarioReport]) -> str:
    spend = group_spend(members)
    return f'<span title="{_e(spend.text())}">{_e(htmlsummary.short_cost(spend))}</span>'


def _cost(s: ScenarioReport | None) -> str:
    if s is None:
        return "-"
    return f'<span title="{_e(s.spend.text())}">{_e(htmlsummary.short_cost(s.spend))}</span>'


def _compare(a: RunReport, b: RunReport) -> str:
    before = {s.identity: s for s in a.scenarios}
    after = {s.identity: s for s in b.scenarios}
    rows = [
        f'<h2>compare {_e(a.name)} → {_e(b.name)}</h2><table data-testid="compare"><tr>'
        f"<th>scenario</th><th>{_e(a.name)}</th><th>{_e(b.name)}</th><th>change</th>"
        "<th>cost</th></tr>"
    ]
    for identity in sorted(set(before) | set(after)):
        x, y = before.get(identity), after.get(identity)
        change = (
            "added"
            if x is None
            else "removed"
            if y is None
            else "regressed"
            if x.passed and not y.passed
            else "fixed"
            if y.passed and not x.passed
            else ""
        )
        rows.append(
            f"<tr><td>{_e(identity)}</td><td>{_verdict(x.passed) if x else '-'}</td>"
            f"<td>{_verdict(y.passed) if y else '-'}</td><td>{_e(change)}</td>"
            f"<td>{_cost(x)} → {_cost(y)}</td></tr>"
        )
    rows.append("</table>")
    return "".join(rows)


def _top(report: RunReport, found: Sequence[htmlsummary.Regression]) -> list[str]:
    """The verdict, what fails the run, the summary cards and line, the regressions table."""
    passed = sum(1 for s in report.scenarios if s.passed)
    title = f"cachelint run {report.name}"
    return [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body><main>",
        f'<h1 data-testid="verdict">{_e(title)} ({_e(report.mode)}): '
        f"{_verdict(report.passed)}</h1>",
        *(
            f'<p class="fail" data-testid="run-failure">FAIL {_e(failure)}</p>'
            for failure in report.failures
        ),
        htmlsummary.cards(report, _e),
        f'<p class="meta" data-testid="summary">{passed}/{len(report.scenarios)} scenarios '
        f'passed; cost <span data-testid="run-cost">{_e(report.spend.text())}</span>'
        + (f" ({_e(report.started)})" if report.started else "")
        + "</p>",
        htmlsummary.regressions_table(found, _e),
    ]


def _middle(report: RunReport, trend: Trend | None, compare: RunReport | None) -> list[str]:
    """The notes, mutations, trend, comparison and re-record review, target matrix."""
    parts = [f'<p class="note">{_e(n)}</p>' for n in htmlsummary.shown_notes(report.notes)]
    if report.mutations:
        parts.append("<h2>eval-cache-mutated</h2><table>")
        for m in report.mutations:
            parts.append(f"<tr><td>{_e(m.path)}</td><td>{_e(m.message)}</td></tr>")
        parts.append("</table>")
    if trend is not None and len(trend.runs) > 1:
        parts.append(
            f'<div data-testid="trend"><h2>pass rate over the last {len(trend.runs)} replays of '
            "the whole suite</h2>"
            '<p class="meta">recordings and filtered runs (--agent, --tenant, --scenario, '
            "--shard) are left out"
            + ("" if trend.runs[-1].execution == report.name else "; this execution is one of them")
            + f"</p>{trend_chart(trend)}</div>"
        )
    # The review and the matrix views load here: most pages have neither.
    if compare is not None:
        from cachelint.runner.reports.reviewviews import review_html
        from cachelint.runner.review import compare_executions

        parts.append(_compare(compare, report))
        parts.extend(review_html(compare_executions(compare, report)))
    matrix = report.matrix()
    if matrix is not None:
        from cachelint.runner.reports.matrixviews import matrix_html

        parts.append(matrix_html(matrix, _e))
    return parts


def render_html(
    report: RunReport,
    settings: ReportSettings,
    *,
    trend: Trend | None = None,
    compare: RunReport | None = None,
) -> Iterator[str]:
    """The page in pieces, to be written as they come: a large suite's page is tens of MB, and
    joined it would be held two or three times over (its parts, the text, the bytes)."""
    found = htmlsummary.regressions(report, report.notes, compare)
    parts = [*_top(report, found), *_middle(report, trend, compare)]
    parts.append("<h2>scenarios</h2>" + htmlsummary.toolbar(len(report.scenarios)))
    for part in parts:
        yield part + "\n"
    yield from _hierarchy(report, settings, trend, htmlsummary.marks(report, found))
    yield f"\n</main><script>{JS}</script></body></html>\n"
