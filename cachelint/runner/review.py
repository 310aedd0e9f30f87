"""Re-record review: per scenario whose recorded answer changed, what in the request caused it,
the old and the new answer, and the verdict change.

Two sources build the same `Review`: two executions (`report --compare A B`, from the calls their
results documents keep) and the committed cache at a git ref against the working tree
(`cachelint diff --base REF`, runner/cachediff.py). The request change is told by the miss
explanation's differ (`request.request_diff`), and the old side of a new entry is the closest
request recorded before it (`request.closeness`), as a miss names its closest entry.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cachelint.runner.reports.model import RunReport, ScenarioReport
from cachelint.runner.request import closeness, request_diff

SAME_REQUEST = "(the same request, re-recorded: the model answered differently)"
NEW_SCENARIO = "(nothing was recorded for this scenario before)"


@dataclass(frozen=True)
class AnswerChange:
    """One recorded answer that differs: `old` is None for a scenario with nothing before."""

    scenario: str
    where: str  # the entry directory, or "trial 1, call 2"
    request_changes: tuple[str, ...]
    old: str | None
    new: str
    before: bool | None = None  # the verdict of the scenario (of the pair, in a matrix)
    after: bool | None = None
    target: str | None = None  # the target whose call changed, when the scenario has several
    model: str | None = None  # the model the changed entry was recorded from

    @property
    def label(self) -> str:
        """The scenario, and the target when it runs against several."""
        return self.scenario if self.target is None else f"{self.scenario} (target {self.target})"

    @property
    def verdict_change(self) -> str:
        """'regressed', 'fixed', 'still passing', 'still failing', or '' when unknown."""
        if self.before is None or self.after is None:
            return ""
        if self.before != self.after:
            return "regressed" if self.before else "fixed"
        return "still passing" if self.after else "still failing"


@dataclass(frozen=True)
class Review:
    base: str  # what the old answers are ("HEAD", an execution)
    head: str  # what the new ones are ("working tree", an execution)
    changes: Sequence[AnswerChange]
    notes: Sequence[str] = field(default_factory=tuple)

    def scenarios(self) -> list[tuple[str, list[AnswerChange]]]:
        """The changes grouped by scenario (by pair, in a matrix: `AnswerChange.label`), in
        scenario order."""
        grouped: dict[str, list[AnswerChange]] = {}
        for change in self.changes:
            grouped.setdefault(change.label, []).append(change)
        return sorted(grouped.items())


def answer_text(response: Any) -> str:
    """A recorded response as a person reads it: its tool calls, then its text, whatever the API."""
    from cachelint.errors import CachelintError
    from cachelint.runner.output import call_arguments, output_from_value

    if response is None:
        return ""
    try:
        output = output_from_value(response)
    except (CachelintError, TypeError, ValueError, AttributeError):
        return json.dumps(response, indent=2, ensure_ascii=False, sort_keys=True)
    lines = [f"tool call {c.name}({call_arguments(c.arguments)})" for c in output.tool_calls]
    if output.text:
        lines.append(str(output.text))
    return "\n".join(lines)


def explain(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> tuple[str, ...]:
    """What changed from the request recorded before to the one recorded now."""
    if old is None:
        return (NEW_SCENARIO,)
    return tuple(request_diff(old, new)) or (SAME_REQUEST,)


def closest(
    request: Mapping[str, Any], candidates: Sequence[Mapping[str, Any]]
) -> Mapping[str, Any] | None:
    """The candidate request most like `request` (the miss explanation's choice), or None."""
    if not candidates:
        return None
    return max(candidates, key=lambda c: closeness(c, request))


# ---- from two executions ------------------------------------------------------------------------


def _calls(s: ScenarioReport) -> Iterator[tuple[str, Mapping[str, Any], Any]]:
    """(where, request, response) of each target call the scenario made, trial by trial."""
    for trial in s.trials:
        calls = list(trial.get("calls") or ())
        for i, call in enumerate(calls, 1):
            # A trial's one target call keeps its response on the trial (not written twice).
            response = call.get("response", trial.get("response") if len(calls) == 1 else None)
            request = {"model": call.get("model"), "messages": call.get("messages") or []}
            yield f"trial {trial.get('trial')}, call {i}", request, response


def _scenario_changes(old: ScenarioReport | None, new: ScenarioReport) -> list[AnswerChange]:
    before = {where: (req, resp) for where, req, resp in _calls(old)} if old else {}
    changes = []
    for where, request, response in _calls(new):
        now = answer_text(response)
        old_request: Mapping[str, Any] | None
        if where in before:
            old_request, old_response = before[where]
            then: str | None = answer_text(old_response)
        else:
            old_request = closest(request, [req for req, _ in before.values()])
            then = None if old_request is None else answer_text(_response_of(before, old_request))
        if then == now:
            continue
        changes.append(
            AnswerChange(
                new.identity,
                where,
                explain(old_request, request),
                then,
                now,
                old.passed if old else None,
                new.passed,
            )
        )
    return changes


def _response_of(before: Mapping[str, tuple[Mapping[str, Any], Any]], request: Any) -> Any:
    return next(resp for req, resp in before.values() if req is request)


def compare_executions(a: RunReport, b: RunReport) -> Review:
    """What B's calls answered that A's did not, per scenario, with the verdict change."""
    earlier = {s.identity: s for s in a.scenarios}
    changes: list[AnswerChange] = []
    for s in b.scenarios:
        changes.extend(_scenario_changes(earlier.get(s.identity), s))
    return Review(a.name, b.name, changes)
