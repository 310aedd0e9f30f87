"""The top of the HTML report: summary cards, the search and status filter, the regressions table.

Pure functions of a `RunReport` and the run's notes; `e` escapes (`htmlreport._e`).
Regressions against a baseline reach the page as the notes `publishing.judge` writes
("REGRESSED  <scenario>: <what>"), the lines every other format shows; against a compared
execution, as the verdicts of both.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from cachelint.runner.cost import Spend, money
from cachelint.runner.reports.model import RunReport, ScenarioReport

Escape = Callable[[object], str]
REGRESSED = "REGRESSED  "
_JUDGE = re.compile(r"judge (?P<metric>.+) (?P<was>\S+) -> (?P<now>.+)")
_COST = re.compile(r"cost (?P<was>\S+) -> (?P<now>\S+)")
STATUSES = (("all", "all"), ("failed", "failed"), ("regressed", "regressed"), ("missed", "missed"))


class Regression(NamedTuple):
    scenario: str
    baseline: str
    now: str
    what: str


def regression(line: str) -> Regression:
    """A baseline regression line ('s: passed in the baseline, fails now', 's: judge m 4.00 ->
    2.00', 's: cost $a -> $b') as the table's row."""
    scenario, _, what = line.partition(": ")
    if what == "passed in the baseline, fails now":
        return Regression(scenario, "PASS", "FAIL", "verdict")
    judged = _JUDGE.fullmatch(what)
    if judged:
        return Regression(scenario, judged["was"], judged["now"], f"judge {judged['metric']}")
    cost = _COST.fullmatch(what)
    if cost:
        return Regression(scenario, cost["was"], cost["now"], "cost")
    return Regression(scenario, "", "", what)


def regressions(
    view: RunReport, notes: Sequence[str], compare: RunReport | None
) -> list[Regression]:
    """Against the baseline (the notes), then against a compared execution (pass -> fail)."""
    found = [regression(n[len(REGRESSED) :]) for n in notes if n.startswith(REGRESSED)]
    if compare is not None:
        before = {s.identity: s.passed for s in compare.scenarios}
        for s in view.scenarios:
            if before.get(s.identity) and not s.passed:
                found.append(Regression(s.identity, "PASS", "FAIL", f"verdict vs {compare.name}"))
    return found


def missed(s: ScenarioReport) -> bool:
    """A trial that stopped on a replay cache miss."""
    return any(str(t.get("error") or "").startswith("cache miss") for t in s.trials)


def errored(s: ScenarioReport) -> bool:
    return any(t.get("error") for t in s.trials)


def marks(view: RunReport, found: Sequence[Regression]) -> dict[str, str]:
    """Scenario identity -> the extra classes the status filter reads."""
    regressed = {r.scenario for r in found}
    out: dict[str, str] = {}
    for s in view.scenarios:
        extra = (" regressed" if s.identity in regressed else "") + (" missed" if missed(s) else "")
        if extra:
            out[s.identity] = extra
    return out


def _card(testid: str, value: str, label: str, e: Escape, tone: str = "", title: str = "") -> str:
    hover = f' title="{e(title)}"' if title else ""
    return (
        f'<div class="card {tone}" data-testid="card-{testid}"{hover}><div class="value">'
        f'{e(value)}</div><div class="label">{e(label)}</div></div>'
    )


def short_cost(spend: Spend) -> str:
    """`$0.0030`, or `≥ $0.0030` when some calls are unpriced (`Spend.text` says which)."""
    return money(spend.dollars) if spend.complete else f"≥ {money(spend.dollars)}"


def _cost_card(spend: Spend, e: Escape) -> str:
    """The cost, short: the priced dollars, marked as a lower bound when calls are unpriced
    (the whole sentence is the card's tooltip and the summary line's)."""
    if spend.complete:
        return _card("cost", money(spend.dollars), "cost", e)
    n = spend.unpriced_calls
    label = f"cost ({n} call{'s' if n != 1 else ''} unpriced)"
    return _card("cost", f"≥ {money(spend.dollars)}", label, e, title=spend.text())


def cards(view: RunReport, e: Escape) -> str:
    """Scenarios, pass rate, passed, failed, errors/misses, cost, cache hits."""
    total = len(view.scenarios)
    # One pass, holding no scenario: a large run's are read back from its spool file.
    passed = errors = misses = calls = hits = 0
    for s in view.scenarios:
        passed += s.passed
        if errored(s):  # a miss is an error: only those are looked at again
            errors += 1
            misses += missed(s)
        for t in s.trials:
            for call in t.get("calls") or ():
                calls += 1
                hits += bool(call.get("cache_hit"))
    rate = f"{passed / total:.0%}" if total else "-"
    return (
        '<div class="cards" data-testid="cards">'
        + _card("scenarios", f"{total}", "scenarios", e)
        + _card("pass-rate", rate, "pass rate", e, "ok" if passed == total else "bad")
        + _card("passed", f"{passed}", "passed", e, "ok")
        + _card("failed", f"{total - passed}", "failed", e, "bad" if passed < total else "")
        + _card("errors", f"{errors} / {misses}", "errors / misses", e, "bad" if errors else "")
        + _cost_card(view.spend, e)
        + _card("cache-hits", f"{hits}/{calls}", "cache hits", e)
        + "</div>"
    )


def toolbar(total: int) -> str:
    """The search box and status filter: hidden until the script shows them (JavaScript off:
    every scenario is shown and the <noscript> line says why there is no filter)."""
    choices = "".join(
        f'<label class="status"><input type="radio" name="status" id="status-{value}" '
        f'value="{value}"{" checked" if value == "all" else ""}>{label}</label>'
        for value, label in STATUSES
    )
    return (
        '<div class="tools" id="tools" data-testid="tools" hidden>'
        '<input type="search" id="search" data-testid="search" placeholder="search ids, inputs, '
        'answers" aria-label="search scenarios">'
        f'<fieldset data-testid="status-filter"><legend hidden>status</legend>{choices}</fieldset>'
        f'<span id="shown-count" data-testid="shown-count">{total} scenarios</span></div>'
        '<noscript><p class="meta">Search and the status filter need JavaScript; every '
        "scenario is shown below.</p></noscript>"
    )


def regressions_table(found: Sequence[Regression], e: Escape) -> str:
    if not found:
        return ""
    rows = "".join(
        f'<tr data-testid="regression"><td><a href="#s-{e(r.scenario)}">{e(r.scenario)}</a></td>'
        f'<td>{e(r.baseline)}</td><td class="now">{e(r.now)}</td><td>{e(r.what)}</td></tr>'
        for r in found
    )
    return (
        f'<h2>regressions <span class="meta">{len(found)}</span></h2>'
        '<table class="regressions" data-testid="regressions"><tr><th>scenario</th>'
        f"<th>baseline</th><th>now</th><th>what changed</th></tr>{rows}</table>"
    )


def shown_notes(notes: Sequence[str]) -> list[str]:
    """The notes the page lists as lines: the regressions have their table."""
    return [n for n in notes if not n.startswith(REGRESSED)]


def tags(extra: Mapping[str, str], identity: str) -> str:
    """Visible labels for a scenario's marks (the filter reads the classes)."""
    return "".join(f'<span class="tag">{m}</span>' for m in extra.get(identity, "").split())
