"""The trend lines of report.html read each earlier execution's small trend.json (run.json when an
execution has none, e.g. merged shards) and draw the same page either way."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from cachelint.commands.run import run
from cachelint.runner.publishing import TREND_FILE, trend_point, trend_runs
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
        assert run(repo, out=io.StringIO(), err=io.StringIO(), execution=name) == 0
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
    assert [r["execution"] for r in runs] == ["run1", "run2", "run3"]
    assert runs[0] == summary
    # A damaged earlier execution drops out; `count` keeps the newest.
    (results / "run2" / TREND_FILE).write_text("{", encoding="utf-8")
    (results / "run2/run.json").write_text("{", encoding="utf-8")
    assert [r["execution"] for r in trend_runs(results, current, 10)] == ["run1", "run3"]
    assert [r["execution"] for r in trend_runs(results, current, 2)] == ["run1", "run3"]
    assert trend_runs(results, current, 1) == [current]


def test_trend_orders_by_recorded_start_and_parses_only_what_it_shows(tmp_path: Path) -> None:
    results = tmp_path / "eval-results"
    starts: dict[str, str | None] = {"b-newest": "2026-03-01T00:00:00Z"}
    starts |= {"a-middle": "2026-02-01T00:00:00Z", "z-oldest": "2026-01-01T00:00:00Z"}
    starts["c-none"] = None
    for name, started in starts.items():
        summary: dict[str, Any] = {"execution": name, "scenarios": [], "started": started}
        (results / name).mkdir(parents=True)
        (results / name / "run.json").write_text(json.dumps(summary), encoding="utf-8")
        point = json.dumps(trend_point(summary), sort_keys=True, separators=(",", ":"))
        (results / name / TREND_FILE).write_text(point + "\n", encoding="utf-8")
    # The order comes from the start time at each trend.json's end, even where the rest is damaged.
    oldest = results / "z-oldest" / TREND_FILE
    oldest.write_text("{damaged" + oldest.read_text(encoding="utf-8"), encoding="utf-8")
    current = {"execution": "now", "scenarios": [], "started": "2026-04-01T00:00:00Z"}
    shown = [r["execution"] for r in trend_runs(results, current, 3)]
    assert shown == ["a-middle", "b-newest", "now"]
    # A damaged trend.json that the trend shows is read from run.json instead.
    shown = [r["execution"] for r in trend_runs(results, current, 10)]
    assert shown == ["c-none", "z-oldest", "a-middle", "b-newest", "now"]
