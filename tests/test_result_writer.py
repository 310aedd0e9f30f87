"""`ResultWriter`: every per-scenario results file is in place after close, and a failed write is
one line naming the file and leaves no temp file behind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cachelint.errors import CachelintError
from cachelint.fsutil import TEMP_PREFIX
from cachelint.runner.dataset import parse_scenario
from cachelint.runner.engine import ResultWriter, ScenarioResult


def _result(tmp_path: Path, identity: str) -> ScenarioResult:
    data = {"input": "hi", "assert": [{"type": "contains", "value": "hi"}]}
    scenario = parse_scenario(tmp_path, identity, f"eval-datasets/{identity}.json", data)
    return ScenarioResult(scenario, ())


def test_result_writer_files_exist_after_close(tmp_path: Path) -> None:
    directory = tmp_path / "results" / "x"
    names = [f"a{i % 3}/t/s{i}" for i in range(50)]
    with ResultWriter(directory, execution="x", mode="replay") as writer:
        for name in names:
            writer.write(_result(tmp_path, name))
    for name in names:
        record = json.loads((directory / f"{name}.json").read_text(encoding="utf-8"))
        assert record["scenario"] == name
    leftovers = [p for p in directory.rglob("*") if TEMP_PREFIX in p.name]
    assert leftovers == []


def test_result_writer_failure_is_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "results").write_text("a file where the results directory should be\n")
    writer = ResultWriter(tmp_path / "results" / "x", execution="x", mode="replay")
    writer.write(_result(tmp_path, "a/t/s"))
    with pytest.raises(CachelintError, match=r"a/t/s\.json: cannot write the results file") as err:
        writer.close()
    assert "\n" not in str(err.value)


def test_result_writer_failure_leaves_no_temp_file(tmp_path: Path) -> None:
    directory = tmp_path / "results" / "x"
    # a non-empty directory where the results file goes: the temp file is written, the rename
    # fails
    (directory / "a" / "t" / "s.json" / "keep").mkdir(parents=True)
    writer = ResultWriter(directory, execution="x", mode="replay")
    writer.write(_result(tmp_path, "a/t/s"))
    with pytest.raises(CachelintError, match=r"a/t/s\.json: cannot write the results file"):
        writer.close()
    assert [p.name for p in (directory / "a" / "t").iterdir()] == ["s.json"]
    assert not any(TEMP_PREFIX in p.name for p in tmp_path.rglob("*"))
