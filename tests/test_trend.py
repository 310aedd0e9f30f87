"""The trend lines of report.html read each earlier execution's small trend.json (run.json when an
execution has none, e.g. merged shards) and draw the same page either way."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from cachelint.runner.options import RunOptions
from cachelint.runner.pipeline import run
from cachelint.runner.reports.htmlreport import Trend, TrendRun
from cachelint.runner.reports.publishing import TREND_FILE, trend_point, trend_runs
from tests.example import EXAMPLE_SCENARIOS, make_example_repo


def _points(page: str) -> list[str]:
    return re.findall(r'class="trend" data-points="(\d+)"', page)


def test_trend_reads_trend_json_or_run_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CACHELINT_EXECUTION", raising=False)
    repo = make_example_repo(tmp_path / "example")
    results = repo / "eval-results"
    # Names in start order: runs started within one second are ordered by name.
    for name in ("run1", "run2", "run3"):
        assert run(repo, RunOptions(execution=name), out=io.StringIO(), err=io.StringIO()) == 0
    summary = json.loads((results / "run1/run.json").read_text(encoding="utf-8"))
    point = json.loads((results / "run1" / TREND_FILE).read_text(encoding="utf-8"))
    assert point == trend_point(summary)
    assert [s["scenario"] for s in point["scenarios"]] == EXAMPLE_SCENARIOS
    page = (results / "run3/report.html").read_text(encoding="utf-8")
    assert _points(page) and set(_points(page)) == {"3"}

    # Without trend.json (an execution merged from shards has none) run.json stands in.
    (results / "run1" / TREND_FILE).unlink()
    current = json.loads((results / "run3/run.json").read_text(encoding="utf-8"))
    runs = trend_runs(results, current, 10)
    assert [r.execution for r in runs] == ["run1", "run2", "run3"]
    assert runs[0] == TrendRun.of(summary) == TrendRun.of(point)
    # A damaged earlier execution drops out; `count` keeps the newest.
    (results / "run2" / TREND_FILE).write_text("{", encoding="utf-8")
    (results / "run2/run.json").write_text("{", encoding="utf-8")
    assert [r.execution for r in trend_runs(results, current, 10)] == ["run1", "run3"]
    assert [r.execution for r in trend_runs(results, current, 2)] == ["run1", "run3"]
    assert trend_runs(results, current, 1) == [TrendRun.of(current)]


def test_trend_orders_by_recorded_start_and_parses_only_what_it_shows(tmp_path: Path) -> None:
    results = tmp_path / "eval-results"
    starts: dict[str, str | None] = {"b-newest": "2026-03-01T00:00:00Z"}
    starts |= {"a-middle": "2026-02-01T00:00:00Z", "z-oldest": "2026-01-01T00:00:00Z"}
    starts["c-none"] = None
    for name, started in starts.items():
        summary: dict[str, Any] = {"execution": name, "scenarios": [], "started": started}
        summary["mode"] = "replay"
        (results / name).mkdir(parents=True)
        (results / name / "run.json").write_text(json.dumps(summary), encoding="utf-8")
        point = json.dumps(trend_point(summary), sort_keys=True, separators=(",", ":"))
        (results / name / TREND_FILE).write_text(point + "\n", encoding="utf-8")
    # The order comes from the start time at each trend.json's end, even where the rest is damaged.
    oldest = results / "z-oldest" / TREND_FILE
    oldest.write_text("{damaged" + oldest.read_text(encoding="utf-8"), encoding="utf-8")
    current = {"execution": "now", "mode": "replay", "scenarios": [], "started": "2026-04-01"}
    shown = [r.execution for r in trend_runs(results, current, 3)]
    assert shown == ["a-middle", "b-newest", "now"]
    # A damaged trend.json that the trend shows is read from run.json instead.
    shown = [r.execution for r in trend_runs(results, current, 10)]
    assert shown == ["c-none", "z-oldest", "a-middle", "b-newest", "now"]


def _summary(execution: str, *scenarios: dict[str, Any]) -> dict[str, Any]:
    return {"execution": execution, "mode": "replay", "scenarios": list(scenarios)}


def _judged(identity: str, rate: float, *scores: tuple[str, Any]) -> dict[str, Any]:
    judges = [{"metric": metric, "score": score} for metric, score in scores]
    return {
        "scenario": identity,
        "passed": rate == 1.0,
        "pass_rate": rate,
        "trials": [{"judges": judges}],
    }


def test_a_scenarios_line_is_its_pass_rate_and_judge_means_in_each_execution() -> None:
    runs = [
        _summary("one", _judged("a", 1.0, ("tone", 4), ("tone", 5), ("facts", "n/a"))),
        _summary("two", _judged("b", 0.0)),
        _summary("three", _judged("a", 0.5, ("facts", 3)), _judged("a", 0.0, ("facts", 1))),
    ]
    trend = Trend([run for run in map(TrendRun.of, runs) if run is not None])
    assert trend.names() == ["one", "two", "three"]
    assert [run.pass_rate for run in trend.runs] == [1.0, 0.0, 0.0]
    # A scenario missing from an execution leaves a gap; the first of a repeated identity counts.
    assert trend.scenario("a") == (
        [1.0, None, 0.5],
        {"tone": [4.5, None, None], "facts": [None, None, 3.0]},
    )
    assert trend.scenario("b") == ([None, 0.0, None], {})


@pytest.mark.parametrize(
    "damaged",
    [
        {"execution": "x", "mode": "replay", "scenarios": ["not an object"]},
        {"execution": "x", "mode": "replay", "scenarios": [{"scenario": "a", "pass_rate": None}]},
        {
            "execution": "x",
            "mode": "replay",
            "scenarios": [{"scenario": "a", "trials": [{"judges": [{"score": 3}]}]}],
        },
    ],
)
def test_a_damaged_summary_drops_out_of_the_trend(tmp_path: Path, damaged: dict[str, Any]) -> None:
    assert TrendRun.of(damaged) is None
    results = tmp_path / "eval-results"
    (results / "x").mkdir(parents=True)
    (results / "x/run.json").write_text(json.dumps(damaged), encoding="utf-8")
    current = _summary("now", _judged("a", 1.0))
    assert [r.execution for r in trend_runs(results, current, 10)] == ["now"]


def test_an_earlier_execution_holds_one_point_per_rate_for_scenarios_without_judges() -> None:
    # Issue 44: a page draws nine earlier executions of up to 100,000 scenarios.
    listed = [(f"a/t/s{n}", rate) for n, rate in enumerate([1.0, 1.0, 0.5, 0.5, 0.0, -0.0])]
    summary = {"mode": "replay", "scenarios": [{"scenario": s, "pass_rate": r} for s, r in listed]}
    judged = {"scenario": "a/t/j", "pass_rate": 1.0, "trials": [{"judges": [{"metric": "m"}]}]}
    judged["trials"][0]["judges"][0]["score"] = 4
    drawn = TrendRun.of({**summary, "scenarios": [*summary["scenarios"], judged]})
    assert drawn is not None
    points = [drawn.scenarios[s] for s, _ in listed]
    assert points[0] is points[1] and points[2] is points[3]
    assert [str(p[0]) for p in points] == ["1.0", "1.0", "0.5", "0.5", "0.0", "-0.0"]
    assert drawn.scenarios["a/t/j"] == (1.0, {"m": 4.0})


def test_a_pass_rate_line_drawn_once_is_the_same_svg_for_each_scenario() -> None:
    """The page draws each distinct pass-rate line once: every scenario's is what `sparkline`
    draws for it, its own label included, where the series differ only by 0.0 and -0.0 (written
    apart) or by 1 and 1.0."""
    from cachelint.runner.reports.htmlreport import sparkline

    trend = Trend([])
    series: list[list[float | None]] = [
        [1.0, None, 0.5],
        [1.0, None, 0.5],
        [0.0, -0.0],
        [-0.0, 0.0],
        [1, 1.0],
        [1.0, 1.0],
    ]
    for n, rates in enumerate(series):
        label = f"pass rate of agent/t/<case {n}>"
        drawn = trend.pass_rate_line(rates, f"agent/t/<case {n}>")
        assert drawn == sparkline(rates, top=1.0, label=label)
    assert len(trend._lines) == 4  # the float series, one of them twice
