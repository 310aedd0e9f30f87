"""What a run holds of its scenarios once they ran (issue #44): a 100,000-scenario suite's decoded
inputs are most of its plan, and nothing after a scenario's results file is written reads them."""

from __future__ import annotations

import io
from pathlib import Path

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
