"""What a run holds of its scenarios once they ran (issue #44): a 100,000-scenario suite's decoded
inputs are most of its plan, and nothing after a scenario's results file is written reads them."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

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
    from cachelint.runner.reports.model import slim_record

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
