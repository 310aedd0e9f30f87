"""What a run holds of its scenarios once they ran (issue #44): a 100,000-scenario suite's decoded
inputs are most of its plan, and nothing after a scenario's results file is written reads them."""

from __future__ import annotations

import gc
import io
from pathlib import Path
from typing import Any

import pytest

from cachelint.green import parse_record, read_record_file
from cachelint.runner import pipeline
from cachelint.runner.options import RunOptions
from tests.conftest import commit_all
from tests.helpers import BASIC, DEAD, record, write_repo


def test_a_run_drops_each_scenarios_inputs_and_still_records_green(git_repo: Path) -> None:
    write_repo(git_repo, DEAD, BASIC)
    outcome, _ = record(git_repo)
    assert outcome.rc == 0, outcome.err
    commit_all(git_repo)
    out, err = io.StringIO(), io.StringIO()
    plan = pipeline.plan_run(git_repo, RunOptions(execution="replay"))
    assert all(s.messages and s.assertions for s in plan.selected)

    wired = pipeline.wire(plan)
    done = pipeline.execute(plan, wired, out=out, err=err)

    assert [s.identity for s in plan.selected] == sorted(BASIC)
    assert all(not s.messages and not s.assertions and not s.options for s in plan.every)
    assert pipeline.publish(plan, done, out=out, err=err) == 0, err.getvalue()
    green = parse_record(read_record_file(plan.config), "green record")
    assert sorted(green.datasets) == sorted(f"eval-datasets/{i}.json" for i in BASIC)


def test_a_large_runs_slim_documents_share_equal_usages() -> None:
    from cachelint.runner.reports.held import slim_record

    def document(n: int) -> dict[str, Any]:
        usage = {"prompt_tokens": 18, "completion_tokens": n, "total_tokens": 18 + n}
        call = {"key": f"k{n}", "usage": dict(usage), "messages": [], "response": {}}
        trial = {"trial": 0, "usage": dict(usage), "calls": [call], "judge_calls": []}
        return {"scenario": f"a/t/s{n}", "trials": [trial]}

    first, second, other = (slim_record(document(n)) for n in (8, 8, 9))
    call = first["trials"][0]["calls"][0]
    assert call["usage"] is second["trials"][0]["calls"][0]["usage"]
    assert first["trials"][0]["usage"] is call["usage"]
    assert other["trials"][0]["calls"][0]["usage"] == {
        "prompt_tokens": 18,
        "completion_tokens": 9,
        "total_tokens": 27,
    }
    assert "messages" not in call and "response" not in call


@pytest.mark.parametrize("jobs", [1, 2])  # 2: scenarios land, and are spooled, from two threads
def test_a_large_run_holds_each_scenarios_values_in_its_spool_not_in_memory(
    git_repo: Path, monkeypatch: Any, jobs: int
) -> None:
    from cachelint.runner import engine
    from cachelint.runner.evidence import written_digest
    from cachelint.runner.reports.held import SpooledRecord, slim_record
    from cachelint.runner.reports.model import ScenarioReport, read_document

    monkeypatch.setattr(engine, "HOLD_MAX_SCENARIOS", 0)
    write_repo(git_repo, DEAD, BASIC)
    assert record(git_repo)[0].rc == 0
    commit_all(git_repo)
    plan = pipeline.plan_run(git_repo, RunOptions(execution="replay", jobs=jobs))
    out, err = io.StringIO(), io.StringIO()
    done = pipeline.execute(plan, pipeline.wire(plan), out=out, err=err)

    assert sorted(done.records) == sorted(BASIC)
    directory = git_repo / "eval-results" / "replay"
    reports = list(done.records.values())
    for at, report in enumerate(reports):
        held = report.record
        assert isinstance(held, SpooledRecord) and report.source is held
        # What it holds that neither the plan nor another scenario holds: beside the report, its
        # tokens and its system texts' keys, only the `Source` and the document's place (an int).
        shared = _held_objects([plan, *reports[:at], *reports[at + 1 :]])
        known = [report, report.tokens, *report.tokens, held.systems, *held.systems]
        own = [
            o
            for o in _held_objects(report).values()
            if id(o) not in shared and not any(o is k for k in known)
        ]
        assert [o for o in own if type(o) is not int] == [held] and len(own) <= 2, own
        whole = read_document(directory, f"{report.identity}.json")
        assert sorted(held) == sorted(whole)
        assert held == slim_record(whole)  # its values read back from the spool
        assert held["trials"] == slim_record(whole)["trials"] and held["trials"]
        assert held.digest == written_digest((directory / f"{report.identity}.json").read_bytes())
        assert report.whole() == ScenarioReport(whole, report.spend, report.tokens)


def _held_objects(root: object) -> dict[int, object]:
    """What `root` holds in memory by id, itself included, the run's spool (a file), its results
    directory and the classes left out."""
    from cachelint.runner.reports.held import Sources
    from cachelint.spool import Spool

    seen, todo = {id(root): root}, [root]
    while todo:
        for ref in gc.get_referents(todo.pop()):
            if id(ref) not in seen and not isinstance(ref, (Spool, Sources, type)):
                seen[id(ref)] = ref
                todo.append(ref)
    return seen


def test_a_large_execution_read_back_is_held_as_a_large_run_holds_it(
    git_repo: Path, monkeypatch: Any
) -> None:
    # `cachelint report` on a large execution: its documents spooled, not held whole; the
    # reports read the same values.
    from cachelint.runner import engine
    from cachelint.runner.reports import held
    from cachelint.runner.reports.model import load_execution
    from cachelint.runner.reports.text import render_text, report_dict

    write_repo(git_repo, DEAD, BASIC)
    assert record(git_repo)[0].rc == 0
    commit_all(git_repo)
    out, err = io.StringIO(), io.StringIO()
    assert pipeline.run(git_repo, RunOptions(execution="replay"), out=out, err=err) == 0
    directory = git_repo / "eval-results" / "replay"
    whole = load_execution(directory, "scripted-v1", {})
    monkeypatch.setattr(engine, "HOLD_MAX_SCENARIOS", 0)
    kept = load_execution(directory, "scripted-v1", {})

    assert all(isinstance(s.record, held.SpooledRecord) for s in kept.scenarios)
    assert [s.whole().record for s in kept.scenarios] == [s.record for s in whole.scenarios]
    assert render_text(kept) == render_text(whole)
    assert json_text(report_dict(kept)) == json_text(report_dict(whole))


def json_text(document: dict[str, Any]) -> str:
    from cachelint.jsonstream import json_chunks

    return "".join(json_chunks(document))


def test_a_large_runs_source_holds_a_value_its_document_lacks_as_absent() -> None:
    from cachelint.runner.reports.held import Sources

    trials = [{"trial": 0, "passed": True, "calls": [], "judge_calls": []}]
    document = {"scenario": "a/t/s", "agent": "a", "tenant": "t", "path": "p", "passed": True}
    held = Sources(Path("unused")).of({**document, "trials": trials}, b"{}")
    assert "origin" not in held and held.get("origin", 1) == 1 and "path" in held
    with pytest.raises(KeyError):
        held["origin"]
    pair = Sources(Path("unused")).of({**document, "origin": "a/t/o", "trials": []}, b"{}")
    assert pair["origin"] == pair.get("origin") == "a/t/o" and "origin" in pair


def test_documents_a_spool_cannot_write_are_held_slim() -> None:
    from cachelint.runner.evidence import written_digest
    from cachelint.runner.reports.held import Slim, Sources, SpooledRecord

    trials = [{"trial": 0, "passed": True, "calls": [], "judge_calls": [], "note": "\ud800"}]
    document = {"scenario": "a/t/s", "agent": "a", "tenant": "t", "path": "p", "passed": True}
    held = Sources(Path("unused")).of({**document, "trials": trials}, b"{}")
    assert not isinstance(held, SpooledRecord) and isinstance(held.document(), Slim)
    assert held["trials"][0]["note"] == "\ud800" and held.digest == written_digest(b"{}")


def test_a_reports_counts_read_its_scenarios_once_for_every_format() -> None:
    # run.json and the text's tail both show the counts: a large run's trials are read back from
    # its spool to count them, so they are counted once.
    from cachelint.runner.cost import Spend
    from cachelint.runner.reports.model import RunReport, ScenarioReport

    class Passes(list[ScenarioReport]):
        passes = 0

        def __iter__(self) -> Any:
            Passes.passes += 1
            return super().__iter__()

    trial = {"trial": 0, "passed": True, "calls": [{"cache_hit": True}], "judge_calls": []}
    record = {"scenario": "a/t/s", "passed": True, "trials": [trial]}
    report = RunReport("x", "replay", None, Passes([ScenarioReport(record, Spend(), (0, 0))]))
    first = report.counts()
    first["passed"] = 99  # a caller's copy
    assert report.counts() == {
        "scenarios": 1,
        "passed": 1,
        "failed": 0,
        "trials": 1,
        "calls": 1,
        "cache_hits": 1,
    }
    assert Passes.passes == 1
    # run.json, the page and the text's tail each show the matrix: looked for once.
    assert report.matrix() is None and report.matrix() is None
    assert Passes.passes == 2
