"""Which (scenario, target) pair a re-recorded cache entry belongs to, and that pair's verdicts.

In a target matrix (runner/matrix.py) every pair of a scenario keeps its entries in the
scenario's one cache directory, so `cachelint diff --base REF` finds a changed entry per
scenario. Its verdicts are the pair's whose target made the call: the execution that is 'now'
names, per call, the entry it used (`"entry"`) and per pair its target and dataset identity
(`"target"`, `"origin"`); failing that, the changed entry's model names the target whose column
calls that model. The 'before' verdict is the same target's at REF (the replay's `matrix`).
Outside a matrix both are the scenario's, as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from cachelint.runner.review import AnswerChange


@dataclass(frozen=True)
class Verdicts:
    """An execution's verdicts: per result identity and, in a matrix, per pair."""

    passed: Mapping[str, bool] = field(default_factory=dict)  # result identity -> passed
    pairs: Mapping[tuple[str, str], bool] = field(default_factory=dict)  # (scenario, target)
    entries: Mapping[str, str] = field(default_factory=dict)  # entry directory -> target
    models: Mapping[str, str | None] = field(default_factory=dict)  # model -> target (None: 2)
    primary: Mapping[str, str] = field(default_factory=dict)  # scenario -> its primary target

    def targets(self, scenario: str) -> set[str]:
        return {t for s, t in self.pairs if s == scenario}


def _model_map(columns: Sequence[tuple[str, str]]) -> dict[str, str | None]:
    """model -> the one target calling it (None when two targets call one model)."""
    out: dict[str, str | None] = {}
    for target, model in columns:
        if model:
            out[model] = target if out.get(model, target) == target else None
    return out


def from_records(records: Sequence[Mapping[str, Any]]) -> Verdicts:
    """The verdicts of an execution's per-scenario results documents (engine.scenario_record)."""
    passed, pairs, entries, primary, columns = {}, {}, {}, {}, []
    for record in records:
        identity, ok = str(record.get("scenario")), bool(record.get("passed"))
        passed[identity] = ok
        target, origin = record.get("target"), record.get("origin")
        if not isinstance(target, str) or not isinstance(origin, str):
            continue
        pairs[(origin, target)] = ok
        if identity == origin:
            primary[origin] = target
        for trial in record.get("trials") or ():
            for call in trial.get("calls") or ():
                if isinstance(call.get("entry"), str):
                    entries[call["entry"]] = target
                if isinstance(call.get("model"), str):
                    columns.append((target, call["model"]))
    return Verdicts(passed, pairs, entries, _model_map(columns), primary)


def from_document(document: Mapping[str, Any]) -> Verdicts:
    """The verdicts of a `cachelint run --format json` document (its `matrix` names the pairs)."""
    passed = {str(s["scenario"]): bool(s["passed"]) for s in document["scenarios"]}
    matrix = document.get("matrix") or {}
    pairs = {
        (str(row["scenario"]), str(target)): bool(cell["passed"])
        for row in matrix.get("scenarios") or ()
        for target, cell in row["targets"].items()
    }
    primary = {
        str(row["scenario"]): str(target)
        for row in matrix.get("scenarios") or ()
        for target, cell in row["targets"].items()
        if cell.get("result") == row["scenario"]
    }
    columns = [(str(c["target"]), str(c.get("model") or "")) for c in matrix.get("targets") or ()]
    return Verdicts(passed, pairs, {}, _model_map(columns), primary)


def _target(change: AnswerChange, then: Verdicts, now: Verdicts) -> str | None:
    known = now.targets(change.scenario) | then.targets(change.scenario)
    if not known:
        return None
    target = now.entries.get(change.where)
    if target is None and change.model:
        target = now.models.get(change.model) or then.models.get(change.model)
    return target if target in known else None


def _verdict(v: Verdicts, scenario: str, target: str, primary: str | None) -> bool | None:
    if v.targets(scenario):
        return v.pairs.get((scenario, target))
    # not a matrix there: its one verdict is this target's when the target is the primary one
    return v.passed.get(scenario) if target == primary else None


def paired(change: AnswerChange, then: Verdicts, now: Verdicts) -> AnswerChange:
    """`change` with the verdicts of the pair whose target made the changed call, and that
    target named when the scenario runs against more than one; else the scenario's verdicts."""
    target = _target(change, then, now)
    if target is None:
        return replace(
            change, before=then.passed.get(change.scenario), after=now.passed.get(change.scenario)
        )
    s = change.scenario
    many = len(now.targets(s) | then.targets(s)) > 1
    primary = now.primary.get(s) or then.primary.get(s)
    return replace(
        change,
        before=_verdict(then, s, target, primary),
        after=_verdict(now, s, target, primary),
        target=target if many else None,
    )
