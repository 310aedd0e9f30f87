"""Trajectory and schema assertions: every recorded call of a scenario, through `cachelint run`
and the pytest plugin, on entries recorded through the fake provider."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cachelint.errors import CachelintError
from cachelint.runner.assertions import validate_assertion as validate
from tests.conftest import run_cachelint
from tests.example import make_example_repo
from tests.fakes import fake_server
from tests.helpers import DEAD, do_run, python_target, write_datasets, write_targets_repo

LOOKUP = {
    "type": "function",
    "function": {
        "name": "lookup_order",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string", "pattern": "^A-\\d+$"}},
            "required": ["order_id"],
            "additionalProperties": False,
        },
    },
}
# Planner: two tool calls (one with an argument its schema refuses); writer: a JSON answer.
SCRIPT: dict[str, Any] = {
    "rules": [
        {
            "match": {"has_tools": True},
            "reply": {
                "tool_calls": [
                    {"name": "lookup_order", "arguments": {"order_id": "A-1"}, "id": "c1"},
                    {"name": "lookup_order", "arguments": {"order_id": 7}, "id": "c2"},
                ]
            },
        },
    ],
    "default": {"json": {"status": "shipped", "order": "A-1"}},
}
AGENT = """
import json

def answer(scenario, client):
    messages = [dict(m) for m in scenario.messages]
    first = client.chat(messages, tools=scenario.tools, model="planner-model")
    message = first["choices"][0]["message"]
    messages.append(message)
    for call in message["tool_calls"]:
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": "shipped"})
    return client.chat(messages, model="writer-model")
"""
GOOD = [
    {"type": "trajectory:tool-called", "name": "lookup_order", "args": {"order_id": "A-1"}},
    {"type": "trajectory:tool-called", "name": "lookup_order", "min": 2, "max": 2},
    {"type": "trajectory:tool-not-called", "name": "refund_order"},
    {"type": "trajectory:tool-sequence", "tools": ["lookup_order", "lookup_order"]},
    {
        "type": "trajectory:tool-sequence",
        "tools": [{"name": "lookup_order", "args": {"order_id": 7}}],
    },
    {"type": "trajectory:step-count", "min": 2, "max": 2},
    {"type": "trajectory:step-count", "max": 2, "of": "tool-calls"},
    {
        "type": "trajectory:answer",
        "call": 0,
        "assert": {"type": "tool-called", "name": "lookup_order"},
    },
    {
        "type": "trajectory:answer",
        "assert": {"type": "json-path", "path": "$.status", "equals": "shipped"},
    },
    {"type": "json-schema", "schema": {"type": "object", "required": ["status", "order"]}},
    {"type": "json-schema", "path": "$.order", "schema": {"type": "string", "pattern": "^A-"}},
]
BAD = {
    "trajectory:tool-called": (
        {"type": "trajectory:tool-called", "name": "lookup_order", "args": {"order_id": "B-2"}},
        "called 0 time(s), expected at least 1",
    ),
    "trajectory:tool-not-called": (
        {"type": "trajectory:tool-not-called", "name": "lookup_order"},
        "called in call(s) 0, 0",
    ),
    "trajectory:tool-sequence": (
        {"type": "trajectory:tool-sequence", "tools": ["lookup_order"], "mode": "exact"},
        "called: lookup_order, lookup_order",
    ),
    "trajectory:step-count": (
        {"type": "trajectory:step-count", "max": 1},
        "2 calls, over the maximum",
    ),
    "trajectory:answer": (
        {"type": "trajectory:answer", "call": -1, "assert": {"type": "tool-called", "name": "x"}},
        "call 1: tool-called 'x': not called",
    ),
    "json-schema": (
        {"type": "json-schema", "schema": {"properties": {"status": {"enum": ["lost"]}}}},
        "at $.status: 'shipped' is not one of ['lost']",
    ),
    "tool-call-schema": (
        {"type": "tool-call-schema"},
        "call 0: lookup_order at $.order_id: 7 is not of type 'string'",
    ),
}
SCENARIO = {"input": "Where is order A-1?", "tools": [LOOKUP]}


def _record(repo: Path, assertions: list[dict[str, Any]]) -> None:
    write_targets_repo(
        repo,
        targets=python_target("agent:answer"),
        scenarios={"orders/acme/track": {**SCENARIO, "assert": assertions}},
        files={"agent.py": AGENT},
    )
    pyproject = repo / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    with fake_server(SCRIPT) as fake:
        pyproject.write_text(text.replace(DEAD, fake.url), encoding="utf-8")
        try:
            recorded = do_run(repo, refresh=True, execution="recorded")
        finally:
            pyproject.write_text(text, encoding="utf-8")
    assert len(fake.bodies) == 2
    assert recorded.rc in (0, 1), recorded.out + recorded.err


def _reasons(repo: Path, execution: str) -> list[dict[str, Any]]:
    path = repo / f"eval-results/{execution}/orders/acme/track.json"
    return json.loads(path.read_text(encoding="utf-8"))["trials"][0]["assertions"]  # type: ignore[no-any-return]


def test_trajectory_and_schema_assertions_replay_through_cachelint_run(git_repo: Path) -> None:
    _record(git_repo, GOOD)
    replay = run_cachelint(git_repo, "run", "--execution", "good")
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert all(a["passed"] for a in _reasons(git_repo, "good"))

    # The plain output check sees only the last answer; the trajectory one sees the first call.
    plain = {"type": "tool-called", "name": "lookup_order"}
    write_datasets(git_repo, {"orders/acme/track": {**SCENARIO, "assert": [plain]}}, None)
    assert run_cachelint(git_repo, "run", "--execution", "plain").returncode == 1

    bad = [spec for spec, _ in BAD.values()]
    write_datasets(git_repo, {"orders/acme/track": {**SCENARIO, "assert": bad}}, None)
    failed = run_cachelint(git_repo, "run", "--execution", "bad")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    results = _reasons(git_repo, "bad")
    for result, (kind, (_, reason)) in zip(results, BAD.items(), strict=True):
        assert result["type"] == kind and not result["passed"], result
        assert reason in result["reason"], (reason, result["reason"])


def test_the_bundled_orders_agent_passes_a_trajectory_assertion(tmp_path: Path) -> None:
    pytest.importorskip("openai")
    repo = make_example_repo(tmp_path / "example")
    done = run_cachelint(repo, "run", "--agent", "orders", "--execution", "orders")
    assert done.returncode == 0, done.stdout + done.stderr
    assertions = json.loads(
        (repo / "eval-results/orders/orders/acme/track.json").read_text(encoding="utf-8")
    )["trials"][0]["assertions"]
    kinds = {a["type"]: a for a in assertions}
    assert "called 1 time(s), in call(s) 0" in kinds["trajectory:tool-called"]["reason"]
    assert kinds["tool-call-schema"]["passed"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"type": "trajectory:step-count"}, "give 'min', 'max' or both"),
        ({"type": "trajectory:tool-called", "name": "t", "min": -1}, "whole number >= 0"),
        ({"type": "trajectory:tool-sequence", "tools": ["a"], "mode": "any"}, "in-order, exact"),
        ({"type": "trajectory:answer", "call": "last", "assert": {}}, 'or "any"'),
        ({"type": "trajectory:answer", "assert": {"type": "cost", "max": 1}}, "nest an output"),
        ({"type": "json-schema", "schema": {"type": "objec"}}, "not a valid JSON Schema"),
        ({"type": "json-schema", "schema": {}, "path": "a"}, "must start with '$'"),
        ({"type": "tool-call-schema", "tool": ""}, "non-empty tool name"),
    ],
)
def test_a_bad_spec_is_one_dataset_error(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(CachelintError, match="d.json: assert"):
        validate(spec, "d.json: assert[0]")
    with pytest.raises(CachelintError) as caught:
        validate(spec, "d.json: assert[0]")
    assert message in str(caught.value)


EVAL_TEST = """
import pytest

TOOLS = [%s]


@pytest.mark.eval
def test_agent(cachelint):
    messages = [{"role": "user", "content": "Where is order A-1?"}]
    first = cachelint.chat(messages, tools=TOOLS, model="planner-model")
    messages.append(first["choices"][0]["message"])
    for call in first["choices"][0]["message"]["tool_calls"]:
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": "shipped"})
    cachelint.chat(messages, model="writer-model")
    cachelint.expect(*SPECS)
"""


def test_the_pytest_plugin_checks_the_same_specs_over_the_tests_calls(git_repo: Path) -> None:
    from tests.test_pytest_plugin import inner_pytest

    (git_repo / "pyproject.toml").write_text(
        f'[tool.cachelint]\n[tool.cachelint.target]\nurl = "{DEAD}"\nprovider = "cachelint-fake"'
        '\nmodel = "scripted-v1"\napi-key-env = "CACHELINT_TEST_KEY"\n',
        encoding="utf-8",
    )
    (git_repo / "tests").mkdir()
    source = git_repo / "tests/test_evals.py"
    body = EVAL_TEST % json.dumps(LOOKUP).replace("false", "False")
    source.write_text(body + f"SPECS = {GOOD!r}\n", encoding="utf-8")
    pyproject = git_repo / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    with fake_server(SCRIPT) as fake:
        pyproject.write_text(text.replace(DEAD, fake.url), encoding="utf-8")
        recorded = inner_pytest(git_repo, "-m", "eval", "--cachelint-cache", "auto")
        pyproject.write_text(text, encoding="utf-8")
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert len(fake.bodies) == 2
    replayed = inner_pytest(git_repo, "-m", "eval")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr

    bad = [spec for spec, _ in BAD.values()]
    source.write_text(body + f"SPECS = {bad!r}\n", encoding="utf-8")
    failed = inner_pytest(git_repo, "-m", "eval")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    for kind, (_, reason) in BAD.items():
        assert f"{kind}: " in failed.stdout and reason in failed.stdout, (kind, failed.stdout)
