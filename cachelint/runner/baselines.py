"""Baselines: a labelled snapshot of verdicts, judge scores, tokens and cost, to compare with.

`run --save-baseline LABEL` stores them in `eval-baselines.json` (committed, outside every cache
root, deterministic JSON: sorted keys, LF, trailing newline, written atomically, no timestamp so
saving the same results twice changes no byte); `run --baseline LABEL` lists the scenarios that
regressed against it: pass -> fail, a judge score down by more than `baseline-score-margin`, a
cost up by more than `baseline-cost-ratio`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from cachelint.display import json_dumps
from cachelint.errors import CachelintError
from cachelint.fsutil import atomic_write
from cachelint.runner.reports.model import RunReport, ScenarioReport
from cachelint.settings import ReportSettings

FILE = "eval-baselines.json"
FORMAT = 1
MAX_BYTES = 64 * 1024 * 1024  # a few hundred bytes per scenario and label
_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def check_label(label: str, option: str) -> str:
    if not _LABEL.fullmatch(label):
        raise CachelintError(
            f"{option} {label!r}: use letters, digits, '.', '_' and '-' (at most 100)"
        )
    return label


def _snapshot(s: ScenarioReport) -> dict[str, Any]:
    return {
        "passed": s.passed,
        "judges": {m: v for m, v in sorted(s.judge_scores().items())},
        "tokens": {"input": s.tokens[0], "output": s.tokens[1]},
        "cost": round(s.cost, 8) if s.cost is not None else None,
    }


def _read(path: Path) -> dict[str, Any]:
    """The committed baselines file, read as a regular file of the repository (never through a
    link, a FIFO or a device), bounded in size and depth; a missing file holds no baseline."""
    from cachelint.runner.evidence import read_json

    _, data = read_json(
        path.parent,
        path.name,
        MAX_BYTES,
        advice=f"; fix or remove {FILE}, then save the baseline again with --save-baseline",
        missing_ok=True,
    )
    if data is None:
        return {"format": FORMAT, "baselines": {}}
    if not isinstance(data, dict) or not isinstance(data.get("baselines"), dict):
        raise CachelintError(f"{path}: not a baselines file (no 'baselines' object)")
    if data.get("format") != FORMAT:
        raise CachelintError(f"{path}: 'format' is {data.get('format')!r}, expected {FORMAT}")
    return data


def save(repo: Path, label: str, report: RunReport) -> Path:
    path = repo / FILE
    data = _read(path)
    scenarios = {s.identity: _snapshot(s) for s in report.scenarios}
    data["baselines"][label] = {"mode": report.mode, "scenarios": scenarios}
    # Scenario names come from file names: bidi and controls are written as escapes.
    atomic_write(path, (json_dumps(data) + "\n").encode("utf-8"))
    return path


def load(repo: Path, label: str) -> Mapping[str, Any]:
    path = repo / FILE
    data = _read(path)
    if label not in data["baselines"]:
        known = ", ".join(sorted(data["baselines"])) or "none"
        raise CachelintError(
            f"--baseline {label}: no such baseline in {FILE} (saved: {known}); save one with "
            f"`cachelint run --save-baseline {label}`"
        )
    return _checked(path, label, data["baselines"][label])


def _checked(path: Path, label: str, baseline: object) -> Mapping[str, Any]:
    """`baseline` when it has the shape `save` writes; the file is committed and reviewed by
    hand, so anything else is a usage error naming what is wrong."""

    def bad(what: str) -> CachelintError:
        return CachelintError(
            f"{path}: baseline {label!r}: {what}; save it again with "
            f"`cachelint run --save-baseline {label}`"
        )

    scenarios = baseline.get("scenarios") if isinstance(baseline, dict) else None
    if not isinstance(scenarios, dict):
        raise bad("no 'scenarios' object")
    for identity, record in scenarios.items():
        if not isinstance(record, dict):
            raise bad(f"scenario {identity!r} is not an object")
        if not isinstance(record.get("passed"), bool):
            raise bad(f"scenario {identity!r}: 'passed' is not true or false")
        judges = record.get("judges", {})
        if not isinstance(judges, dict) or not all(map(_score, judges.values())):
            raise bad(f"scenario {identity!r}: 'judges' is not an object of scores")
        if not _score(record.get("cost")):
            raise bad(f"scenario {identity!r}: 'cost' is not a number")
    return cast(Mapping[str, Any], baseline)


def _score(value: object) -> bool:
    """A number or null, as `save` writes a judge score or a cost."""
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


def regressions(
    baseline: Mapping[str, Any], scenarios: Sequence[ScenarioReport], settings: ReportSettings
) -> list[str]:
    """One line per regression, in the run's scenario order."""
    old = baseline.get("scenarios") or {}
    out: list[str] = []
    for s in scenarios:
        before, after = old.get(s.identity), _snapshot(s)
        if not isinstance(before, dict):
            continue  # a new scenario cannot regress
        if before.get("passed") and not after["passed"]:
            out.append(f"{s.identity}: passed in the baseline, fails now")
        for metric, score in after["judges"].items():
            was = (before.get("judges") or {}).get(metric)
            if isinstance(was, (int, float)) and (
                score is None or was - score > settings.baseline_score_margin
            ):
                shown = f"{score:.2f}" if score is not None else "no score"
                out.append(f"{s.identity}: judge {metric} {was:.2f} -> {shown}")
        was_cost, cost = before.get("cost"), after["cost"]
        if (
            isinstance(was_cost, (int, float))
            and was_cost > 0
            and cost is not None
            and cost > was_cost * settings.baseline_cost_ratio
        ):
            out.append(f"{s.identity}: cost ${was_cost:.6f} -> ${cost:.6f}")
    return out
