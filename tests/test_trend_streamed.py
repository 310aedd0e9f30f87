"""Issue 44: an earlier execution's large trend.json is drawn with its scenarios decoded one at a
time, and draws the same trend as decoding it whole."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cachelint.runner.reports import publishing
from cachelint.runner.reports.htmlreport import TrendRun
from cachelint.runner.reports.publishing import TREND_FILE, trend_runs

NOW = {"execution": "now", "mode": "replay", "filtered": False, "scenarios": []}


def _scenario(n: int) -> dict[str, Any]:
    judges = [{"metric": "helpful", "score": n % 5}] if n % 3 == 0 else []
    return {
        "scenario": f"agent{n % 7}/tenant{n % 11}/case{n:05d}",
        "passed": n % 4 != 0,
        "pass_rate": (n % 4) / 3 if n % 4 else 0.0,
        "trials": [{"judges": judges}, {"judges": []}],
    }


def _execution(root: Path, name: str, started: str, text: str) -> None:
    """An earlier execution as `write_run_summary` leaves it: run.json and trend.json (sorted,
    compact), the trend point's scenarios `_scenario`'s."""
    directory = root / name
    directory.mkdir(parents=True)
    (directory / "run.json").write_text(json.dumps({"started": started, "scenarios": []}))
    (directory / TREND_FILE).write_text(text, encoding="utf-8")


def _trend_text(count: int, started: str, **extra: Any) -> str:
    doc = {
        "execution": f"run-{started}",
        "filtered": False,
        "mode": "replay",
        "scenarios": [_scenario(n) for n in range(count)],
        "shard": None,
        "started": started,
        **extra,
    }
    return json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n"


def test_a_large_trend_is_streamed_and_draws_what_decoding_it_whole_draws(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = _trend_text(12_000, "2026-01-02T00:00:00Z")
    assert len(text) > publishing.STREAM_TREND_BYTES
    _execution(tmp_path, "first", "2026-01-02T00:00:00Z", text)
    # Spaces JSON allows anywhere between its tokens are read as well.
    spaced = json.dumps(json.loads(_trend_text(12_000, "2026-01-03T00:00:00Z")), indent=1)
    _execution(tmp_path, "second", "2026-01-03T00:00:00Z", spaced)
    streamed = publishing._earlier_run(tmp_path / "first")
    assert streamed is not None and not isinstance(streamed["scenarios"], list)
    drawn = trend_runs(tmp_path, NOW, 10)
    monkeypatch.setattr(publishing, "STREAM_TREND_BYTES", 1 << 40)  # decoded whole
    whole = trend_runs(tmp_path, NOW, 10)
    names = ["run-2026-01-02T00:00:00Z", "run-2026-01-03T00:00:00Z", "now"]
    assert [r.execution for r in drawn] == names
    assert drawn == whole
    assert drawn[0].total == 12_000 and drawn[0].passed == 9_000


@pytest.mark.parametrize(
    "damage",
    [
        lambda t: t[: len(t) // 2],  # cut short
        lambda t: t.replace('"passed":true', '"passed":true,', 1),  # a stray comma
        lambda t: t.replace('"mode":"replay",', "", 1),  # no mode: run.json is read instead
        lambda t: t.replace('}]}],"shard"', '}]},7],"shard"', 1),  # a scenario that is no object
        lambda t: t.replace('[{"judges"', '[7,{"judges"', 1),  # a trial that is no object
    ],
)
def test_a_damaged_large_trend_is_read_as_decoding_it_whole_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: Any
) -> None:
    _execution(tmp_path, "first", "2026-01-02T00:00:00Z", damage(_trend_text(12_000, "x")))
    drawn = publishing._earlier_run(tmp_path / "first")
    monkeypatch.setattr(publishing, "STREAM_TREND_BYTES", 1 << 40)
    whole = publishing._earlier_run(tmp_path / "first")
    assert whole is not None and drawn is not None  # run.json's, where trend.json is unusable
    assert TrendRun.of(drawn) == TrendRun.of(whole)
