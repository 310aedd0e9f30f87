"""What a large run's plan holds of its scenarios from load to run (issue #44): each scenario's
shell (identity, path, tags, digests), its inputs (messages, options, tools, assertions, judges)
spooled as its dataset file is parsed and read back just before it runs."""

from __future__ import annotations

import gc
import io
import json
import types
from pathlib import Path
from typing import Any

import pytest

from cachelint.runner import client, engine, pipeline
from cachelint.runner.dataset import parse_scenario
from cachelint.runner.options import RunOptions
from cachelint.runner.scenario import InputSpool
from cachelint.spool import Spool
from tests.conftest import commit_all
from tests.helpers import ACME_PROMPT, DEAD, GLOBEX_PROMPT, SCRIPT, record, refund, write_repo

EVALUATOR = """
from cachelint import Metric


def words(scenario, output, options):
    count = len(output.text.split())
    return Metric("words", count, f"{count} words", "good" if count <= 10 else "poor")
"""
INPUTS = ("messages", "options", "tools", "assertions", "judges")
WORDS = {"type": "python", "function": "myevals:words"}
EVALUATED = ({"type": "contains", "value": "refunds"}, WORDS)
TOOL = {"type": "function", "function": {"name": "lookup_order", "parameters": {}}}


def _suite() -> dict[str, dict[str, Any]]:
    """Inputs of every kind: options, tools, a judge, two trials, a python evaluator, a miss."""
    return {
        "support/acme/refund": refund({"options": {"temperature": 0}}, prompt="prompts/acme.md"),
        "support/acme/judged": refund({"judge": ["relevance"]}, prompt="prompts/acme.md"),
        "support/acme/evaluated": refund({"assert": list(EVALUATED)}, prompt="prompts/acme.md"),
        "support/globex/refund": refund({"trials": 2}, prompt="prompts/globex.md"),
        "support/globex/order": {
            "input": "Where is order A-1?",
            "tools": [TOOL],
            "assert": [{"type": "tool-called", "name": "lookup_order"}],
        },
        "support/globex/failing": refund(
            {"input": "A refund, please", "assert": [{"type": "contains", "value": "never"}]},
            prompt="prompts/globex.md",
        ),
    }


def _documents(repo: Path, execution: str) -> dict[str, Any]:
    directory = repo / "eval-results" / execution
    found = {}
    for path in sorted(directory.rglob("*.json")):
        document = json.loads(path.read_bytes())
        if isinstance(document, dict) and "scenario" in document:
            document.pop("execution")
            found[document["scenario"]] = document
    return found


def _held_objects(root: object) -> list[object]:
    """What `root` holds in memory, the plan's spool (a file, and the suite's system messages)
    left out."""
    seen, todo, found = {id(root)}, [root], []
    while todo:
        for ref in gc.get_referents(todo.pop()):
            if id(ref) not in seen and not isinstance(ref, (InputSpool, Spool, type)):
                seen.add(id(ref))
                todo.append(ref)
                found.append(ref)
    return found


@pytest.mark.parametrize("jobs", [1, 2])  # 2: inputs read back from two threads
def test_a_large_suites_plan_holds_no_inputs_and_runs_the_same(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    write_repo(git_repo, DEAD, _suite(), files={"myevals.py": EVALUATOR})
    assert record(git_repo, SCRIPT)[0].rc == 1  # one scenario fails its assertion
    commit_all(git_repo)
    monkeypatch.setenv("CACHELINT_NOW", "2026-01-31T12:00:00Z")
    # A hit's latency is its lookup time, written to the results files: a clock, pinned here.
    monkeypatch.setattr(client, "time", types.SimpleNamespace(perf_counter=lambda: 0.0))
    out, err = io.StringIO(), io.StringIO()
    assert pipeline.run(git_repo, RunOptions(execution="held", jobs=jobs), out=out, err=err) == 1

    monkeypatch.setattr(engine, "HOLD_MAX_SCENARIOS", 0)
    plan = pipeline.plan_run(git_repo, RunOptions(execution="spooled", jobs=jobs))
    assert sorted(s.identity for s in plan.selected) == sorted(_suite())
    for s in plan.every:
        assert s.spool is not None
        # Its python evaluator is imported from the plan before any scenario runs.
        kept = EVALUATED if s.identity == "support/acme/evaluated" else ()
        assert [getattr(s, name) for name in INPUTS] == [(), {}, (), kept, ()]
        texts = {o for o in _held_objects(s) if isinstance(o, str)}
        assert not texts & {"How do refunds work?", "Where is order A-1?", "lookup_order"}
    # Each system file's message is held once for the suite, not spooled with each scenario.
    assert [m["content"] for m in plan.every[0].spool.systems] == [ACME_PROMPT, GLOBEX_PROMPT]
    done = pipeline.execute(plan, pipeline.wire(plan), out=out, err=err)
    assert pipeline.publish(plan, done, out=out, err=err) == 1

    spooled = _documents(git_repo, "spooled")
    assert sorted(spooled) == sorted(_suite())
    assert spooled == _documents(git_repo, "held")
    assert spooled["support/acme/evaluated"]["trials"][0]["metrics"][0]["name"] == "words"
    assert not spooled["support/globex/failing"]["passed"]
    assert all(not s.messages and not s.assertions for s in plan.every)  # dropped once written


def test_inputs_the_spool_cannot_write_are_held() -> None:
    spool = InputSpool()
    where = ("a/t/s", "eval-datasets/a/t/s.json")
    surrogate = {"input": "hi", "assert": [{"type": "contains", "value": "\ud800"}]}
    held = parse_scenario(Path("unused"), *where, surrogate, spool=spool)
    assert held.spool is None
    assert held.messages[0]["content"] == "hi" and held.assertions[0]["value"] == "\ud800"
    held.recall_inputs()  # nothing to read back
    assert held.assertions[0]["value"] == "\ud800"

    plain = {
        "input": "hi",
        "options": {"temperature": 0.25, "seed": 7},
        "tools": [TOOL],
        "judge": ["relevance"],
    }
    spooled = parse_scenario(Path("unused"), *where, plain, spool=spool)
    assert spooled.spool is not None and not spooled.messages and not spooled.tools
    spooled.recall_inputs()
    assert spooled == parse_scenario(Path("unused"), *where, plain)
