"""Metrics: what a custom evaluator returns, and how a number becomes a rating.

The shape follows Microsoft.Extensions.AI.Evaluation's tutorial evaluator: a metric has a name, a
value, a reason and an interpretation (an `EvaluationRating` from unknown to exceptional, and
whether it failed). A failed metric gates the scenario unless it declares `gating=False`.

An evaluator that leaves the rating "unknown" can be rated by the config instead, the way MEAI
attaches a default interpretation: `[tool.cachelint.interpretations.<metric name>]` maps ratings
to inclusive `[min, max]` ranges, tried from the best rating down; a value in no range is
"unacceptable", and ratings at or below `fail-at` (default "unacceptable") fail.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cachelint.settings import RATINGS, Interpretation, Rating

MetricValue = int | float | bool | str | None


@dataclass(frozen=True)
class Metric:
    """One evaluator's verdict on one output. Import it as `from cachelint import Metric`."""

    name: str
    value: MetricValue
    reason: str = ""
    rating: Rating | str = Rating.UNKNOWN
    failed: bool = False
    gating: bool = True  # False: reported only, never fails the scenario

    def __post_init__(self) -> None:
        problem = _problem(self)
        if problem is not None:
            raise ValueError(problem)
        # Accept "good" as well as Rating.GOOD; store the enum either way.
        object.__setattr__(self, "rating", Rating(self.rating))

    @property
    def gates(self) -> bool:
        """Whether this metric fails its scenario."""
        return self.failed and self.gating

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": self.value,
            "reason": self.reason,
            "rating": Rating(self.rating).value,
            "failed": self.failed,
            "gating": self.gating,
        }

    def shown_value(self) -> str:
        value = self.value
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, float):
            return f"{value:g}"
        return "none" if value is None else str(value)


def _problem(metric: Metric) -> str | None:
    if not isinstance(metric.name, str) or not metric.name:
        return f"'name' must be a non-empty string, got {metric.name!r}"
    value = metric.value
    if value is not None and not isinstance(value, (int, float, str)):
        return f"'value' must be a number, a boolean or a string, got {type(value).__name__}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"'value' must be a finite number, got {value!r}"
    if not isinstance(metric.reason, str):
        return f"'reason' must be a string, got {type(metric.reason).__name__}"
    if metric.rating not in RATINGS:
        return f"'rating' must be one of {', '.join(RATINGS)}, got {metric.rating!r}"
    for flag in ("failed", "gating"):
        if not isinstance(getattr(metric, flag), bool):
            return f"{flag!r} must be true or false, got {getattr(metric, flag)!r}"
    return None


_KEYS = frozenset({"name", "value", "reason", "rating", "failed", "gating"})


def metric_from(value: Any) -> Metric:
    """A `Metric` from what an evaluator returned; ValueError says what is malformed."""
    if isinstance(value, Metric):
        return value
    if not isinstance(value, Mapping):
        raise ValueError(
            f"returned {type(value).__name__}; return a cachelint.Metric or a dict with "
            "name, value, reason, rating and failed"
        )
    unknown = sorted(set(map(str, value)) - _KEYS)
    if unknown:
        raise ValueError(
            f"returned unknown key(s) {', '.join(map(repr, unknown))}; allowed: "
            + ", ".join(sorted(_KEYS))
        )
    missing = [k for k in ("name", "value") if k not in value]
    if missing:
        raise ValueError(f"returned a dict without {' and '.join(map(repr, missing))}")
    return Metric(**{str(k): v for k, v in value.items()})


def interpret(metric: Metric, interpretations: Mapping[str, Interpretation]) -> Metric:
    """Apply the config's interpretation to a metric its evaluator left unrated."""
    rule = interpretations.get(metric.name)
    value = metric.value
    if (
        rule is None
        or metric.rating != Rating.UNKNOWN
        or isinstance(value, bool)
        or not isinstance(value, (int, float))
    ):
        return metric
    rating, failed = rule.rate(float(value))
    note = f"rated {rating.value} by interpretations.{metric.name} in the config"
    reason = f"{metric.reason}; {note}" if metric.reason else note
    return Metric(metric.name, value, reason, rating, metric.failed or failed, metric.gating)
