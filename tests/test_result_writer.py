"""`ResultWriter`: every per-scenario results file is in place after close, and a failed write is
one line naming the file and leaves no temp file behind; the same whether the files are written
here or, for a large suite, by the child process (`cachelint.resultsink`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cachelint.errors import CachelintError
from cachelint.fsutil import TEMP_PREFIX
from cachelint.runner.dataset import parse_scenario
from cachelint.runner.engine import SINK_MIN_SCENARIOS, ResultWriter, ScenarioResult

# How many scenarios the writer is told to expect: few (written here) or many (by the child).
WHERE = pytest.mark.parametrize("expected", [1, SINK_MIN_SCENARIOS], ids=["here", "child"])


def _result(tmp_path: Path, identity: str) -> ScenarioResult:
    data = {"input": "hi", "assert": [{"type": "contains", "value": "hi"}]}
    scenario = parse_scenario(tmp_path, identity, f"eval-datasets/{identity}.json", data)
    return ScenarioResult(scenario, ())


@WHERE
def test_result_writer_files_exist_after_close(tmp_path: Path, expected: int) -> None:
    directory = tmp_path / "results" / "x"
    names = [f"a{i % 3}/t/s{i}" for i in range(50)]
    with ResultWriter(directory, execution="x", mode="replay", expected=expected) as writer:
        for name in names:
            writer.write(_result(tmp_path, name))
    for name in names:
        record = json.loads((directory / f"{name}.json").read_text(encoding="utf-8"))
        assert record["scenario"] == name
    leftovers = [p for p in directory.rglob("*") if TEMP_PREFIX in p.name]
    assert leftovers == []


@WHERE
def test_result_writer_failure_is_one_line_error(tmp_path: Path, expected: int) -> None:
    (tmp_path / "results").write_text("a file where the results directory should be\n")
    writer = ResultWriter(
        tmp_path / "results" / "x", execution="x", mode="replay", expected=expected
    )
    writer.write(_result(tmp_path, "a/t/s"))
    with pytest.raises(CachelintError, match=r"a/t/s\.json: cannot write the results file") as err:
        writer.close()
    assert "\n" not in str(err.value)


@WHERE
def test_result_writer_failure_leaves_no_temp_file(tmp_path: Path, expected: int) -> None:
    directory = tmp_path / "results" / "x"
    # a non-empty directory where the results file goes: the temp file is written, the rename
    # fails
    (directory / "a" / "t" / "s.json" / "keep").mkdir(parents=True)
    writer = ResultWriter(directory, execution="x", mode="replay", expected=expected)
    writer.write(_result(tmp_path, "a/t/s"))
    with pytest.raises(CachelintError, match=r"a/t/s\.json: cannot write the results file"):
        writer.close()
    assert [p.name for p in (directory / "a" / "t").iterdir()] == ["s.json"]
    assert not any(TEMP_PREFIX in p.name for p in tmp_path.rglob("*"))


def test_the_child_writes_the_bytes_this_process_would(tmp_path: Path) -> None:
    names = [f"a{i % 3}/t/s{i}" for i in range(20)]
    written = {}
    for expected in (1, SINK_MIN_SCENARIOS):
        directory = tmp_path / str(expected)
        with ResultWriter(directory, execution="x", mode="replay", expected=expected) as writer:
            if expected == SINK_MIN_SCENARIOS:
                assert writer._sink is not None  # the child path was taken
            for name in names:
                writer.write(_result(tmp_path, name))
        written[expected] = {
            p.relative_to(directory).as_posix(): p.read_bytes() for p in directory.rglob("*.json")
        }
    assert written[1] == written[SINK_MIN_SCENARIOS] and len(written[1]) == len(names)


def test_a_child_that_dies_leaves_the_files_to_this_process(tmp_path: Path) -> None:
    directory = tmp_path / "results" / "x"
    names = [f"a/t/s{i}" for i in range(30)]
    writer = ResultWriter(directory, execution="x", mode="replay", expected=SINK_MIN_SCENARIOS)
    assert writer._sink is not None
    writer._sink.kill()
    writer._sink.wait()
    for name in names:
        writer.write(_result(tmp_path, name))
    writer.close()
    assert sorted(p.stem for p in (directory / "a" / "t").iterdir()) == sorted(
        n.rsplit("/", 1)[1] for n in names
    )


def test_the_child_names_temp_files_as_every_other_writer() -> None:
    from cachelint import resultsink

    assert resultsink.TEMP_MARK == TEMP_PREFIX


def test_a_slim_document_holds_each_fact_once_and_reads_as_the_whole() -> None:
    # Issue 44: a large run holds one slim document per scenario; what it repeats is one object.
    from cachelint.runner.reports.held import slim_record

    usage = {"prompt_tokens": 3, "completion_tokens": 2}
    call = {"key": "k", "entry": "e", "cache_hit": True, "usage": dict(usage), "messages": []}
    trial = {"trial": 0, "judges": [], "usage": dict(usage), "calls": [call], "judge_calls": []}
    record = {"scenario": "a/t/s", "trials": [trial, {**trial, "trial": 1, "calls": []}]}
    slim = slim_record(json.loads(json.dumps(record)))
    one, two = slim["trials"]
    assert one["usage"] is one["calls"][0]["usage"]
    assert one["judges"] is one["judge_calls"] is two["judges"] is two["calls"]
    assert two["usage"] == usage and two["usage"] is not one["usage"]
    whole = {
        **record,
        "trials": [{**t, "calls": [{**c} for c in t["calls"]]} for t in record["trials"]],
    }
    for t in whole["trials"]:
        for c in t["calls"]:
            del c["messages"]
    assert json.dumps(slim, default=dict) == json.dumps(whole)
