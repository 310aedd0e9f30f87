"""A target matrix: each selected scenario against several targets in one run.

The targets come from `cachelint run --target NAME` (repeated), else the scenario's dataset field
`"targets": [...]`, else `[tool.cachelint] compare = [...]`. The first one listed is the matrix's
*primary* target: its pair keeps the scenario's own identity (`agent/tenant/name`), so results,
baselines, the green record and the commit-time gate see it as they see a plain run. Every other
pair is `agent/tenant/name@TARGET`. Each pair calls through the cache under the dataset identity
(`Scenario.cache_identity`): its entries sit in the scenario's cache directory, keyed by the
target's provider, model and params like any other entry, recorded and replayed the same way.

`matrix_of(report)` is the matrix part of the run's report (`reports.model.RunReport.matrix`):
one row per scenario, one column per target (pass, cost, latency, tokens, judge scores), a pass
rate and a total cost per column.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from cachelint.config import Config
from cachelint.errors import CachelintError
from cachelint.runner.cost import Spend
from cachelint.runner.dataset import Scenario
from cachelint.targets import target_name

if TYPE_CHECKING:
    from cachelint.runner.reports.model import RunReport

SEPARATOR = "@"


def columns_for(config: Config, scenario: Scenario, chosen: Sequence[str]) -> tuple[str, ...]:
    """The targets `scenario` runs against (empty: no matrix, its own target)."""
    names = tuple(chosen) or scenario.targets or config.compare
    if len(set(names)) != len(names):
        raise CachelintError(f"{scenario.path}: a target is listed twice in the matrix {names}")
    for name in names:
        target_name(config, agent=scenario.agent, chosen=name, where=scenario.path)
    return names


def _same_key(config: Config, names: Sequence[str], where: str) -> None:
    """Two plain chat targets with one provider, model and params would send identical requests:
    their pairs would share every cache entry, so the comparison would compare nothing."""
    seen: dict[tuple[str, str, str], str] = {}
    for name in names:
        t = config.named_target(name)
        if t.type != "openai-compatible":
            continue
        key = (t.provider, t.model, repr(sorted(t.params.items())))
        if key in seen:
            raise CachelintError(
                f"{where}: targets {seen[key]!r} and {name!r} have the same provider, model and "
                "params, so their answers would be one cache entry; change one's model or params"
            )
        seen[key] = name


def expand(config: Config, selected: Sequence[Scenario], chosen: Sequence[str]) -> list[Scenario]:
    """`selected` with each matrix scenario replaced by one scenario per (scenario, target)."""
    out: list[Scenario] = []
    checked: set[tuple[str, ...]] = set()
    for s in selected:
        names = columns_for(config, s, chosen)
        if not names:
            out.append(s)
            continue
        if names not in checked:
            _same_key(config, names, s.path if not chosen else "--target")
            checked.add(names)
        for i, name in enumerate(names):
            identity = s.identity if i == 0 else f"{s.identity}{SEPARATOR}{name}"
            out.append(replace(s, identity=identity, target=name, column=name, origin=s.identity))
    return out


def split_identity(identity: str) -> tuple[str, str | None]:
    """`("agent/tenant/name", "TARGET")` for a pair's identity, `(identity, None)` otherwise."""
    base, sep, column = identity.rpartition(SEPARATOR)
    return (base, column) if sep and "/" not in column else (identity, None)


# ---- the report model ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    passed: bool
    spend: Spend
    latency_s: float
    tokens: tuple[int, int]
    judges: Mapping[str, float | None]
    identity: str  # the pair's identity in the run (its results file)


@dataclass(frozen=True)
class Column:
    target: str
    model: str
    passed: int
    total: int
    spend: Spend

    @property
    def pass_rate(self) -> float:
        return self.passed / self.total if self.total else 0.0


@dataclass(frozen=True)
class Matrix:
    columns: tuple[Column, ...]  # the primary target first
    rows: tuple[tuple[str, Mapping[str, Cell]], ...]  # dataset identity -> target -> cell

    @property
    def priced(self) -> bool:
        """Whether any call was priced: with no `prices` at all every cost is unknown, and the
        reports leave cost out rather than print `at least $0.0000` for each pair."""
        return any(c.spend.dollars > 0 or c.spend.complete for c in self.columns)

    def as_dict(self) -> dict[str, Any]:
        return {
            "primary": self.columns[0].target,
            "targets": [
                {
                    "target": c.target,
                    "model": c.model,
                    "passed": c.passed,
                    "total": c.total,
                    "pass_rate": c.pass_rate,
                    "cost_usd": c.spend.dollars,
                    "cost_complete": c.spend.complete,
                }
                for c in self.columns
            ],
            "scenarios": [
                {"scenario": identity, "targets": {t: _cell_dict(c) for t, c in cells.items()}}
                for identity, cells in self.rows
            ],
        }


def _cell_dict(c: Cell) -> dict[str, Any]:
    return {
        "result": c.identity,
        "passed": c.passed,
        "cost_usd": c.spend.dollars,
        "cost_complete": c.spend.complete,
        "latency_s": round(c.latency_s, 6),
        "tokens": {"input": c.tokens[0], "output": c.tokens[1]},
        "judges": dict(c.judges),
    }


def matrix_of(report: RunReport) -> Matrix | None:
    """The matrix of a run's report, or None when it ran none. A pair's record names its target
    (`"target"`) and its dataset identity (`"origin"`)."""
    rows: dict[str, dict[str, Cell]] = {}
    models: dict[str, str] = {}
    for s in report.scenarios:
        column, origin = s.record.get("target"), s.record.get("origin")
        if not isinstance(column, str) or not isinstance(origin, str):
            continue
        models.setdefault(column, "")
        models[column] = models[column] or _model(s.trials)
        rows.setdefault(origin, {})[column] = Cell(
            passed=s.passed,
            spend=s.spend,
            latency_s=s.latency_s,
            tokens=s.tokens,
            judges=s.judge_scores(),
            identity=s.identity,
        )
    if not rows:
        return None
    columns = []
    for name, model in models.items():  # first seen first: a scenario's primary pair leads
        cells = [r[name] for r in rows.values() if name in r]
        passed = sum(1 for c in cells if c.passed)
        spend = sum((c.spend for c in cells), Spend())
        columns.append(Column(name, model, passed, len(cells), spend))
    return Matrix(tuple(columns), tuple(sorted(rows.items())))


def _model(trials: Sequence[Mapping[str, Any]]) -> str:
    for t in trials:
        for call in t.get("calls") or ():
            if isinstance(call.get("model"), str):
                return str(call["model"])
    return ""


# ---- text ---------------------------------------------------------------------------------------


def cell_text(c: Cell, priced: bool = True) -> str:
    """`PASS  $0.0012  0.41s  120+45 tokens  faithfulness 4.0`: one pair, in one line (no cost
    when nothing in the run was priced)."""
    judges = "".join(
        f"  {m} {score:.1f}" if score is not None else f"  {m} no score"
        for m, score in sorted(c.judges.items())
    )
    cost = f"  {c.spend.text()}" if priced else ""
    return (
        f"{'PASS' if c.passed else 'FAIL'}{cost}  {c.latency_s:.2f}s  "
        f"{c.tokens[0]}+{c.tokens[1]} tokens{judges}"
    )


def column_text(c: Column, priced: bool = True) -> str:
    model = f" ({c.model})" if c.model else ""
    cost = f", cost {c.spend.text()}" if priced else ""
    return f"{c.target}{model}: {c.passed}/{c.total} passed ({c.pass_rate:.0%}){cost}"


def matrix_lines(m: Matrix, clean: Callable[[str], str]) -> list[str]:
    """The text report's matrix: each target's pass rate and cost, then each scenario's pairs.
    `clean` makes repository text safe to print (`display.sanitize`)."""
    width = max(len(c.target) for c in m.columns)
    out = [f"target matrix ({len(m.columns)} targets, primary {clean(m.columns[0].target)}):"]
    out += [f"  {clean(column_text(c, m.priced))}" for c in m.columns]
    for identity, cells in m.rows:
        out.append(f"  {clean(identity)}")
        out += [
            f"    {clean(c.target).ljust(width)}  {clean(cell_text(cells[c.target], m.priced))}"
            for c in m.columns
            if c.target in cells
        ]
    return out
