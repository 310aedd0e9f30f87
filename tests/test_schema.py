"""The dataset JSON Schema: shipped, printed by `cachelint schema`, in step with the loader."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from cachelint.commands.schema import schema_text
from cachelint.runner.dataset import FIELDS
from tests.conftest import PROJECT, run_cachelint

SCHEMA: dict[str, Any] = json.loads(schema_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
DATASETS = sorted((PROJECT / "eval-datasets").rglob("*.json"))


def test_the_schema_is_a_valid_draft_2020_12_schema() -> None:
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_cachelint_schema_prints_the_shipped_schema(tmp_path: Path) -> None:
    done = run_cachelint(tmp_path, "schema")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == SCHEMA


@pytest.mark.parametrize("path", DATASETS, ids=lambda p: p.relative_to(PROJECT).as_posix())
def test_every_bundled_dataset_validates(path: Path) -> None:
    VALIDATOR.validate(json.loads(path.read_text(encoding="utf-8")))


def test_every_dataset_field_is_in_the_schema() -> None:
    assert set(SCHEMA["properties"]) == set(FIELDS)


# One valid spec per assertion type, with every option it takes.
EXAMPLES: list[dict[str, Any]] = [
    {"type": "contains", "value": "30 days"},
    {"type": "icontains", "value": "refund"},
    {"type": "not-contains", "value": "Globex"},
    {"type": "not-icontains", "value": "as an ai"},
    {"type": "regex", "pattern": "A-\\d+", "flags": "i"},
    {"type": "not-regex", "pattern": "guarantee", "flags": "i"},
    {"type": "equals", "value": "billing"},
    {"type": "equals", "value": {"queue": "billing"}},
    {"type": "not-equals", "value": "I don't know."},
    {"type": "length", "min": 1, "max": 50, "unit": "words"},
    {"type": "json-valid"},
    {"type": "json-path", "path": "$.queue", "equals": "billing"},
    {"type": "json-path", "path": "$.queue", "exists": False},
    {"type": "json-path", "path": "$.score", "gte": 1, "lt": 5},
    {"type": "tool-called", "name": "lookup_order"},
    {"type": "tool-not-called", "name": "refund_order"},
    {"type": "tool-arg", "tool": "lookup_order", "arg": "order_id", "equals": "A-1"},
    {"type": "tool-arg", "tool": "lookup_order", "arg": "order_id", "regex": "^A-", "flags": "i"},
    {"type": "no-pii", "kinds": ["email", "card"]},
    {"type": "latency-ms", "max": 2000},
    {"type": "cost", "max": 0.01},
    {"type": "python", "function": "evals:word_count", "max": 100},
    {"type": "trajectory:tool-called", "name": "lookup_order", "args": {"order_id": "A-1"}},
    {"type": "trajectory:tool-not-called", "name": "refund_order", "args": {"amount": 5}},
    {"type": "trajectory:tool-sequence", "tools": ["a", {"name": "b", "args": {"x": 1}}]},
    {"type": "trajectory:step-count", "min": 1, "max": 3, "of": "tool-calls"},
    {"type": "trajectory:answer", "call": -1, "assert": {"type": "contains", "value": "x"}},
    {"type": "json-schema", "schema": {"type": "object"}, "path": "$.a"},
    {"type": "tool-call-schema", "tool": "lookup_order"},
]
# ... and specs the loader refuses, which the schema refuses too.
BAD: list[dict[str, Any]] = [
    {"type": "contains"},
    {"type": "regex", "value": "x"},
    {"type": "json-path", "path": "$.a", "equals": 1, "exists": True},
    {"type": "json-path", "path": "$.a", "equals": 1, "gt": 0},
    {"type": "tool-arg", "tool": "t", "arg": "a", "equals": 1, "regex": "x"},
    {"type": "tool-arg", "tool": "t", "arg": "a"},
    {"type": "no-pii", "kinds": ["ssn"]},
    {"type": "length"},
    {"type": "length", "max": 3, "colour": "red"},
    {"type": "cost"},
    {"type": "python", "function": "no-colon"},
    {"type": "contians", "value": "x"},
    {"type": "trajectory:tool-called"},
    {"type": "trajectory:tool-sequence", "tools": []},
    {"type": "trajectory:tool-sequence", "tools": ["a"], "mode": "any"},
    {"type": "trajectory:step-count"},
    {"type": "trajectory:answer", "assert": {"type": "python", "function": "m:f"}},
    {"type": "trajectory:answer", "assert": {"type": "contains"}},
    {"type": "json-schema"},
    {"type": "tool-call-schema", "schema": {}},
]


def _loader_accepts(spec: dict[str, Any]) -> bool:
    from cachelint.errors import CachelintError
    from cachelint.runner.dataset import parse_scenario

    try:
        parse_scenario(PROJECT, "a/b/c", "a/b/c.json", {"input": "q", "assert": [spec]})
    except CachelintError:
        return False
    return True


def test_every_assertion_type_has_an_example_here_and_in_the_schema() -> None:
    from cachelint.runner.assertions import REGISTRY

    assert {e["type"] for e in EXAMPLES} == set(REGISTRY)
    listed = {ref["$ref"].rsplit("/", 1)[1] for ref in SCHEMA["$defs"]["assertion"]["oneOf"]}
    assert listed == {f"assert-{kind}" for kind in REGISTRY}


@pytest.mark.parametrize("spec", EXAMPLES, ids=lambda s: s["type"])
def test_the_schema_and_the_loader_accept_each_example(spec: dict[str, Any]) -> None:
    assert _loader_accepts(spec)
    VALIDATOR.validate({"input": "q", "assert": [spec]})


@pytest.mark.parametrize("spec", BAD, ids=lambda s: json.dumps(s))
def test_the_schema_and_the_loader_refuse_each_bad_spec(spec: dict[str, Any]) -> None:
    assert not _loader_accepts(spec)
    assert not VALIDATOR.is_valid({"input": "q", "assert": [spec]})


@pytest.mark.parametrize(
    "scenario",
    [
        {"input": "hi", "asert": []},
        {"input": "hi", "messages": [{"role": "user", "content": "hi"}]},
        {"assert": [{"type": "contains", "value": "x"}]},
        {"input": "hi", "system": "a", "system-file": "p.md"},
        {"input": "hi", "options": {"model": "gpt-4o"}},
        {"input": "hi", "assert": [{"type": "contains"}]},
        {"input": "hi", "assert": [{"type": "regex", "value": "x"}]},
        {
            "input": "hi",
            "assert": [{"type": "json-path", "path": "$.a", "equals": 1, "exists": True}],
        },
        {"input": "hi", "assert": [{"type": "no-pii", "kinds": ["ssn"]}]},
        {"input": "hi", "trials": 0},
        {"input": "hi", "system-file": "../outside.md"},
    ],
)
def test_what_the_loader_rejects_the_schema_rejects(scenario: dict[str, Any]) -> None:
    assert not VALIDATOR.is_valid(scenario)
