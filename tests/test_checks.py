"""The assertion types beyond the first eleven: numeric json-path comparisons, length, the not-
forms, regex over tool arguments, and the validation of latency-ms, cost and python specs."""

from __future__ import annotations

from typing import Any

import pytest

from cachelint.errors import CachelintError
from cachelint.runner.assertions import AssertionResult, has_deterministic
from cachelint.runner.assertions import validate_assertion as validate
from cachelint.runner.assertions.evaluators import EvalContext, evaluate_all
from cachelint.runner.output import Output, ToolCall
from tests.helpers import scenario_with

SCORE = Output('{"score": 0.93, "label": "ok", "flag": true, "items": [1, 2, 3]}')
TEXT = Output("Refunds take five business days.")
TOOLS = Output("", (ToolCall("lookup_order", {"order_id": "A-1042", "n": 7}),))


def check(spec: dict[str, Any], output: Output) -> AssertionResult:
    checked = validate(spec, "d.json: assert[0]")
    (result,), _ = evaluate_all(scenario_with([checked]), output, (), EvalContext())
    assert result.type == spec["type"] and result.reason
    return result


@pytest.mark.parametrize(
    ("spec", "passed", "reason"),
    [
        ({"gt": 0.9}, True, "json-path '$.score' > 0.9: value is 0.93"),
        ({"gte": 0.93, "lt": 1}, True, "json-path '$.score' >= 0.93 and < 1: value is 0.93"),
        ({"gt": 0.95}, False, "json-path '$.score' > 0.95: value is 0.93, not > 0.95"),
        ({"lte": 0.5}, False, "value is 0.93, not <= 0.5"),
        ({"gte": 0, "lt": 0.9}, False, "value is 0.93, not < 0.9"),
    ],
)
def test_json_path_numeric_comparisons(spec: dict[str, Any], passed: bool, reason: str) -> None:
    result = check({"type": "json-path", "path": "$.score", **spec}, SCORE)
    assert result.passed is passed
    assert reason in result.reason


def test_json_path_comparison_on_a_missing_or_non_numeric_value_fails_saying_why() -> None:
    missing = check({"type": "json-path", "path": "$.nope", "gt": 1}, SCORE)
    assert not missing.passed and "$.nope missing" in missing.reason
    boolean = check({"type": "json-path", "path": "$.flag", "gt": 0}, SCORE)
    assert not boolean.passed and "the boolean true, not a number" in boolean.reason
    not_json = check({"type": "json-path", "path": "$.a", "lt": 1}, TEXT)
    assert not not_json.passed and "response is not valid JSON" in not_json.reason


@pytest.mark.parametrize(
    ("spec", "passed", "reason"),
    [
        ({"max": 40}, True, "length (max 40 chars): 32 chars"),
        ({"max": 10}, False, "length (max 10 chars): 32 chars, over the maximum"),
        ({"min": 3, "max": 5, "unit": "words"}, True, "length (min 3, max 5 words): 5 words"),
        ({"min": 6, "unit": "words"}, False, "5 words, under the minimum"),
    ],
)
def test_length_in_chars_and_words(spec: dict[str, Any], passed: bool, reason: str) -> None:
    result = check({"type": "length", **spec}, TEXT)
    assert result.passed is passed
    assert reason in result.reason


@pytest.mark.parametrize(
    ("spec", "passed"),
    [
        ({"type": "not-icontains", "value": "REFUNDS"}, False),
        ({"type": "not-icontains", "value": "store credit"}, True),
        ({"type": "not-regex", "pattern": r"\bfive\b"}, False),
        ({"type": "not-regex", "pattern": r"\d+ days"}, True),
        ({"type": "not-equals", "value": "Refunds take five business days."}, False),
        ({"type": "not-equals", "value": "no"}, True),
    ],
)
def test_not_forms_invert_the_text_checks(spec: dict[str, Any], passed: bool) -> None:
    result = check(spec, TEXT)
    assert result.passed is passed
    assert result.reason.startswith(spec["type"])


def test_regex_over_tool_arguments() -> None:
    spec = {"type": "tool-arg", "tool": "lookup_order", "arg": "order_id", "regex": r"^A-\d{4}$"}
    ok = check(spec, TOOLS)
    assert ok.passed and ok.reason.endswith('matched "A-1042"')
    bad = check({**spec, "regex": "^B-"}, TOOLS)
    assert not bad.passed and 'value "A-1042" does not match' in bad.reason
    number = check({**spec, "arg": "n", "regex": "^7$"}, TOOLS)
    assert number.passed  # a non-string argument is matched as its JSON text
    absent = check({**spec, "tool": "refund"}, TOOLS)
    assert not absent.passed and "'refund' not called (called: 'lookup_order')" in absent.reason


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"type": "json-path", "path": "$.a", "gt": "1"}, "field 'gt': expected a number"),
        ({"type": "json-path", "path": "$.a", "gt": 1, "equals": 2}, "field 'equals': give either"),
        ({"type": "json-path", "path": "a", "gt": 1}, "field 'path'"),
        ({"type": "length"}, "field 'max': give 'min', 'max' or both"),
        ({"type": "length", "max": -1}, "field 'max': expected a whole number >= 0"),
        ({"type": "length", "min": 5, "max": 2}, "field 'min': 5 is above max 2"),
        ({"type": "length", "max": 5, "unit": "lines"}, "field 'unit': expected one of chars"),
        ({"type": "length", "max": 5, "size": 1}, "field 'size': unknown field for 'length'"),
        ({"type": "latency-ms"}, "field 'max': missing"),
        ({"type": "cost", "max": "cheap"}, "field 'max': expected a number"),
        ({"type": "python", "function": "evals.word_count"}, 'expected "module:function"'),
        ({"type": "not-regex", "pattern": "("}, "invalid regular expression"),
        ({"type": "tool-arg", "tool": "t", "arg": "a", "regex": ""}, "field 'regex'"),
        ({"type": "not-thing"}, 'unknown assertion type "not-thing"'),
    ],
)
def test_bad_specs_are_one_line_errors_naming_the_field(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(CachelintError) as info:
        validate(spec, "eval-datasets/a/b/c.json: assert[0]")
    text = str(info.value)
    assert text.startswith("eval-datasets/a/b/c.json: assert[0]: ")
    assert message in text and "\n" not in text


def test_latency_alone_checks_nothing_but_cost_and_python_do() -> None:
    assert not has_deterministic([{"type": "latency-ms", "max": 10}])
    assert has_deterministic([{"type": "cost", "max": 0.1}])
    assert has_deterministic([{"type": "python", "function": "m:f"}])
    assert has_deterministic([{"type": "length", "max": 1}])
