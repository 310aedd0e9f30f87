"""The run's tables of the configuration, parsed below config so the core never imports the
runner: `[tool.cachelint.reports]` (budget, judge thresholds, baseline margins, trend length),
`[tool.cachelint.prices]` (shared with the `cost` assertion), `[tool.cachelint.interpretations]`
(ratings of evaluator metrics, on MEAI's scale) and the judge metrics a target may name.

Every value is checked here; a bad one is a ValueError saying what is expected, which config.py
words around with the key and the file.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

# The LLM-as-judge metrics (`runner.judges`); a target's own metric may not take their names.
METRICS: frozenset[str] = frozenset({"relevance", "completeness", "coherence"})


@dataclass(frozen=True)
class ReportSettings:
    budget: float | None = None  # USD; a run whose recorded cost exceeds it fails
    judge_good: float = 4.0  # a judge score at or above this reads "good"
    judge_average: float = 3.0  # at or above this "average", below it "poor" (and a warning)
    baseline_score_margin: float = 0.5  # a judge score down by more than this regressed
    baseline_cost_ratio: float = 1.25  # a cost up by more than this factor regressed
    trend_executions: int = 10

    def interpret(self, score: float | None) -> str:
        if score is None:
            return "not scored"
        if score >= self.judge_good:
            return "good"
        return "average" if score >= self.judge_average else "poor"


def _positive(value: Any, what: str = "a positive number") -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError(what)
    return float(value)


def _trend(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 2 <= value <= 1000:
        raise ValueError("an integer from 2 to 1000")
    return value


_KEYS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "budget": ("budget", _positive),
    "judge-good": ("judge_good", _positive),
    "judge-average": ("judge_average", _positive),
    "baseline-score-margin": ("baseline_score_margin", _positive),
    "baseline-cost-ratio": ("baseline_cost_ratio", _positive),
    "trend-executions": ("trend_executions", _trend),
}


def parse_settings(value: Any) -> ReportSettings:
    """The `reports` table as settings; raises ValueError (config.py adds the key and file)."""
    if not isinstance(value, dict):
        raise ValueError("a table")
    values: dict[str, Any] = {}
    for key, raw in value.items():
        if key not in _KEYS:
            raise ValueError(f"a table with keys {', '.join(sorted(_KEYS))}; not {key!r}")
        attr, check = _KEYS[key]
        try:
            values[attr] = check(raw)
        except ValueError as exc:
            raise ValueError(f"{key} = {raw!r}: {exc}") from None
    settings = ReportSettings(**values)
    if settings.judge_average > settings.judge_good:
        raise ValueError("judge-average must not exceed judge-good")
    return settings


@dataclass(frozen=True)
class Price:
    input: float  # dollars per million input tokens
    output: float  # dollars per million output tokens


def parse_prices(table: Any) -> Mapping[str, Price]:
    """`[tool.cachelint.prices]`; ValueError says what is expected (config.py names the file)."""
    if not isinstance(table, dict):
        raise ValueError("a table of model -> {input = $/Mtok, output = $/Mtok}")
    out: dict[str, Price] = {}
    for model, spec in table.items():
        if not isinstance(spec, dict) or set(spec) != {"input", "output"}:
            raise ValueError(f"{model}: {{input = <$/Mtok>, output = <$/Mtok>}}, both keys")
        values = []
        for side in ("input", "output"):
            value = spec[side]
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or value < 0
            ):
                raise ValueError(f"{model}.{side}: a number of dollars per million tokens, >= 0")
            values.append(float(value))
        out[str(model)] = Price(*values)
    return out


class Rating(str, Enum):
    """MEAI's EvaluationRating scale, worst to best after `unknown`."""

    UNKNOWN = "unknown"
    UNACCEPTABLE = "unacceptable"
    POOR = "poor"
    AVERAGE = "average"
    GOOD = "good"
    EXCEPTIONAL = "exceptional"


RATINGS = tuple(r.value for r in Rating)
_RANK = {r: i for i, r in enumerate(Rating)}  # unknown 0 ... exceptional 5


@dataclass(frozen=True)
class Interpretation:
    """Ranges per rating for one metric name, and the rating at or below which it fails."""

    ranges: tuple[tuple[Rating, float, float], ...]  # best rating first
    fail_at: Rating = Rating.UNACCEPTABLE

    def rate(self, value: float) -> tuple[Rating, bool]:
        rating = next((r for r, lo, hi in self.ranges if lo <= value <= hi), Rating.UNACCEPTABLE)
        return rating, _RANK[rating] <= _RANK[self.fail_at]


def _bound(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ValueError("a number (inf and -inf are allowed)")
    return float(value)


def parse_interpretations(table: Any) -> Mapping[str, Interpretation]:
    """`[tool.cachelint.interpretations]`: ValueError says what is expected (config.py words the
    file and key around it)."""
    if not isinstance(table, dict):
        raise ValueError("a table of metric name -> {rating = [min, max], fail-at = rating}")
    out: dict[str, Interpretation] = {}
    for name, spec in table.items():
        if not isinstance(spec, dict):
            raise ValueError(f"a table for metric {name!r}, like {{good = [1, 100]}}")
        fail_at = spec.get("fail-at", Rating.UNACCEPTABLE.value)
        if fail_at not in RATINGS[1:]:
            raise ValueError(f"{name}.fail-at: one of {', '.join(RATINGS[1:])}")
        ranges: list[tuple[Rating, float, float]] = []
        for key, bounds in spec.items():
            if key == "fail-at":
                continue
            if key not in RATINGS[1:]:
                raise ValueError(
                    f"{name}: a rating ({', '.join(RATINGS[1:])}) or fail-at, not {key!r}"
                )
            if not isinstance(bounds, list) or len(bounds) != 2:
                raise ValueError(f"{name}.{key}: an inclusive range [min, max]")
            try:
                lo, hi = _bound(bounds[0]), _bound(bounds[1])
            except ValueError as exc:
                raise ValueError(f"{name}.{key}: bounds must be {exc}") from None
            if lo > hi:
                raise ValueError(f"{name}.{key}: min {bounds[0]} is above max {bounds[1]}")
            ranges.append((Rating(key), lo, hi))
        if not ranges:
            raise ValueError(f"{name}: at least one rating range, like good = [1, 100]")
        ranges.sort(key=lambda r: -_RANK[r[0]])
        out[str(name)] = Interpretation(tuple(ranges), Rating(fail_at))
    return out
