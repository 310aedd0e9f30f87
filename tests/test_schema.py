"""The dataset JSON Schema: shipped, printed by `cachelint schema`, in step with the loader."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from cachelint.commands.schema import schema_text
from cachelint.runner.assertions import _FIELDS as ASSERTION_FIELDS
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


def test_every_assertion_type_and_option_is_in_the_schema() -> None:
    defs = SCHEMA["$defs"]
    listed = {ref["$ref"].rsplit("/", 1)[1] for ref in defs["assertion"]["oneOf"]}
    assert listed == {f"assert-{kind}" for kind in ASSERTION_FIELDS}
    for kind, (required, optional) in ASSERTION_FIELDS.items():
        spec = defs[f"assert-{kind}"]
        assert spec["properties"]["type"] == {"const": kind}
        assert set(spec["required"]) == {"type", *required}, kind
        assert set(spec["properties"]) == {"type", *required, *optional}, kind


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
