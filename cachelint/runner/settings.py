"""`[tool.cachelint.reports]`: budget, judge thresholds, baseline margins, trend length (prices
are the one table `[tool.cachelint.prices]`, shared with the `cost` assertion).

Kept out of config.py (which only declares the key) so the reports' settings live beside the code
that reads them. Every value is checked here and a bad one is a `ConfigError` naming the key.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


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
