"""Deterministic assertions (each passing and failing, with its reason), their validation, and
turning target answers into an Output."""

from __future__ import annotations

from typing import Any

import pytest

from cachelint.errors import CachelintError
from cachelint.runner.assertions import (
    DETERMINISTIC,
    AssertionResult,
    evaluate,
    has_deterministic,
    validate_assertion,
)
from cachelint.runner.assertions.pii import find_pii
from cachelint.runner.output import Output, ToolCall, output_from_completion, output_from_value

REFUND = Output("We have issued your Refund of $20.\nAnything else?")
JSON_OUT = Output('{"order": {"id": 42, "items": [{"sku": "A-1", "qty": 2}]}, "ok": true, "n": 1}')
TOOLS = Output(
    "",
    (
        ToolCall("lookup_order", {"order": {"id": 42}, "tags": ["vip"]}),
        ToolCall("lookup_order", {"order": {"id": 7}}),
        ToolCall("broken", '{"order": '),
    ),
)


def run(spec: dict[str, Any], output: Output) -> AssertionResult:
    checked = validate_assertion(spec, "d.json: assert[0]")
    result = evaluate(checked, output)
    assert result.type == spec["type"]
    assert result.reason  # a reason is always given, pass or fail
    return result


@pytest.mark.parametrize(
    ("spec", "output", "reason"),
    [
        (
            {"type": "contains", "value": "Refund"},
            REFUND,
            "contains 'Refund': found at character 21",
        ),
        (
            {"type": "icontains", "value": "REFUND"},
            REFUND,
            "icontains 'REFUND': found (ignoring case)",
        ),
        (
            {"type": "not-contains", "value": "sorry"},
            REFUND,
            "not-contains 'sorry': absent from response",
        ),
        ({"type": "regex", "pattern": r"\$\d+"}, REFUND, "regex '\\\\$\\\\d+': matched \"$20\""),
        ({"type": "regex", "pattern": "^anything", "flags": "im"}, REFUND, 'matched "Anything"'),
        ({"type": "equals", "value": "exact"}, Output("exact"), "response is exactly that text"),
        (
            {"type": "equals", "value": {"b": [1, 2], "a": None}},
            Output('{"a":null,"b":[1,2.0]}'),
            "equal",
        ),
        ({"type": "equals", "value": 3}, Output(" 3 "), "response JSON is equal"),
        ({"type": "json-valid"}, JSON_OUT, "json-valid: response is JSON (an object)"),
        (
            {"type": "json-path", "path": "$.order.items[0].sku", "equals": "A-1"},
            JSON_OUT,
            "it does",
        ),
        ({"type": "json-path", "path": "$['order']['id']", "equals": 42}, JSON_OUT, "it does"),
        ({"type": "json-path", "path": "$.order.items[-1].qty"}, JSON_OUT, "exists: value is 2"),
        ({"type": "json-path", "path": "$.error", "exists": False}, JSON_OUT, "must not exist"),
        ({"type": "tool-called", "name": "lookup_order"}, TOOLS, "called 2 time(s)"),
        (
            {"type": "tool-not-called", "name": "refund"},
            TOOLS,
            "not called (called: 'lookup_order'",
        ),
        (
            {"type": "tool-arg", "tool": "lookup_order", "arg": "order.id", "equals": 7},
            TOOLS,
            "it does",
        ),
        (
            {"type": "tool-arg", "tool": "lookup_order", "arg": "tags.0", "equals": "vip"},
            TOOLS,
            "it does",
        ),
        ({"type": "no-pii"}, REFUND, "no-pii (email, phone, card, cpf, cnpj): none found"),
    ],
)
def test_passing_assertions_say_why(spec: dict[str, Any], output: Output, reason: str) -> None:
    result = run(spec, output)
    assert result.passed, result.reason
    assert reason in result.reason


@pytest.mark.parametrize(
    ("spec", "output", "reason"),
    [
        (
            {"type": "contains", "value": "refund"},
            REFUND,
            "contains 'refund': not found in response (first 80 chars: "
            '"We have issued your Refund of $20.\\nAnything else?")',
        ),
        ({"type": "icontains", "value": "voucher"}, REFUND, "icontains 'voucher': not found"),
        (
            {"type": "not-contains", "value": "$20"},
            REFUND,
            "not-contains '$20': found at character 31: "
            '"We have issued your Refund of $20.\\nAnything',
        ),
        (
            {"type": "regex", "pattern": "^Anything"},
            REFUND,
            "regex '^Anything': no match in response",
        ),
        (
            {"type": "equals", "value": "exact"},
            Output("exactly"),
            "response differs at character 6",
        ),
        ({"type": "equals", "value": {"a": 1}}, Output("not json"), "response is not valid JSON"),
        ({"type": "equals", "value": 1}, Output("true"), "response JSON is true"),
        ({"type": "json-valid"}, Output("{'a': 1}"), "json-valid: response is not valid JSON"),
        (
            {"type": "json-path", "path": "$.order.customer.name"},
            JSON_OUT,
            "$.order.customer missing ($.order has keys: id, items)",
        ),
        (
            {"type": "json-path", "path": "$.order.items[3]", "equals": 1},
            JSON_OUT,
            "$.order.items[3] out of range ($.order.items has 1 items)",
        ),
        (
            {"type": "json-path", "path": "$.n.x"},
            JSON_OUT,
            "$.n is a number, not an object, at .x",
        ),
        (
            {"type": "json-path", "path": "$.ok", "equals": 1},
            JSON_OUT,
            "json-path '$.ok' equals 1: value is true",
        ),
        (
            {"type": "json-path", "path": "$.ok", "exists": False},
            JSON_OUT,
            "must not exist: value is true",
        ),
        ({"type": "json-path", "path": "$.a"}, Output("nope"), "response is not valid JSON"),
        (
            {"type": "tool-called", "name": "refund"},
            TOOLS,
            "tool-called 'refund': not called (called: 'lookup_order', 'lookup_order', 'broken')",
        ),
        ({"type": "tool-called", "name": "refund"}, REFUND, "not called (called: no tools)"),
        (
            {"type": "tool-not-called", "name": "broken"},
            TOOLS,
            "tool-not-called 'broken': called 1",
        ),
        (
            {"type": "tool-arg", "tool": "lookup_order", "arg": "order.id", "equals": 9},
            TOOLS,
            "tool-arg lookup_order.order.id equals 9: value is 42; value is 7",
        ),
        (
            {"type": "tool-arg", "tool": "lookup_order", "arg": "tags.3", "equals": 1},
            TOOLS,
            "index 3 out of range at tags.3; 'tags' missing",
        ),
        (
            {"type": "tool-arg", "tool": "broken", "arg": "order", "equals": 1},
            TOOLS,
            "arguments are not valid JSON",
        ),
        (
            {"type": "tool-arg", "tool": "refund", "arg": "x", "equals": 1},
            TOOLS,
            "'refund' not called",
        ),
    ],
)
def test_failing_assertions_say_why(spec: dict[str, Any], output: Output, reason: str) -> None:
    result = run(spec, output)
    assert not result.passed
    assert reason in result.reason, result.reason


# ---- no-pii -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind", "sample"),
    [
        (
            "write to maria.silva+eval@example.com.br today",
            "email",
            "maria.silva+eval@example.com.br",
        ),
        ("call +55 11 91234-5678", "phone", "+55 11 91234-5678"),
        ("call (11) 91234-5678", "phone", "(11) 91234-5678"),
        ("call 11 91234-5678", "phone", "11 91234-5678"),
        ("ou 91234-5678", "phone", "91234-5678"),
        ("call +14155552671 now", "phone", "+14155552671"),
        ("call (415) 555-2671", "phone", "(415) 555-2671"),
        ("call 415-555-2671", "phone", "415-555-2671"),
        ("call +44 20 7946 0958", "phone", "+44 20 7946 0958"),
        ("card 4111 1111 1111 1111 exp", "card", "4111 1111 1111 1111"),
        ("card 5500-0000-0000-0004", "card", "5500-0000-0000-0004"),
        ("amex 378282246310005.", "card", "378282246310005"),
        ("cpf 529.982.247-25", "cpf", "529.982.247-25"),
        ("cpf 52998224725", "cpf", "52998224725"),
        ("cnpj 11.222.333/0001-81", "cnpj", "11.222.333/0001-81"),
        ("cnpj 11222333000181", "cnpj", "11222333000181"),
    ],
)
def test_pii_is_found(text: str, kind: str, sample: str) -> None:
    assert (kind, sample) in find_pii(text)
    result = run({"type": "no-pii", "kinds": [kind]}, Output(text))
    assert not result.passed
    assert f"found {kind} '" in result.reason
    assert sample not in result.reason  # the sample is masked
    assert sample[:2] in result.reason


@pytest.mark.parametrize(
    "text",
    [
        "order 12345678 shipped on 2024-01-15 at 10:30",
        "version 1.2.3, total 1234.56, sku A-1234-5678",
        "card 4111 1111 1111 1112",  # fails Luhn
        "cpf 529.982.247-26",  # wrong check digit
        "cpf 111.111.111-11",  # all-equal digits pass the arithmetic but are invalid
        "cnpj 11.222.333/0001-80",
        "user at example dot com",
        "between 2019-2020, see RFC 8785 section 3.2.2",
    ],
)
def test_no_pii_false_positives(text: str) -> None:
    assert find_pii(text) == []
    assert run({"type": "no-pii"}, Output(text)).passed


def test_no_pii_kinds_filter_and_tool_arguments() -> None:
    text = "mail a@b.co"
    assert run({"type": "no-pii", "kinds": ["cpf", "phone"]}, Output(text)).passed
    leaky = Output("ok", (ToolCall("send", {"to": "ana@example.org"}),))
    result = run({"type": "no-pii"}, leaky)
    assert not result.passed and "email 'ana" in result.reason


def test_no_pii_reports_count_beyond_three() -> None:
    text = " ".join(f"u{i}@example.com" for i in range(5))
    result = run({"type": "no-pii", "kinds": ["email"]}, Output(text))
    assert result.reason.endswith("and 2 more")


# ---- validation ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("contains", "an assertion must be an object"),
        ({"value": "x"}, "field 'type': unknown assertion type null"),
        ({"type": "contain", "value": "x"}, "field 'type': unknown assertion type \"contain\""),
        ({"type": "contains"}, "field 'value': missing"),
        ({"type": "contains", "value": ""}, "field 'value': expected a non-empty string"),
        ({"type": "contains", "value": "x", "vaule": "y"}, "field 'vaule': unknown field"),
        ({"type": "regex", "pattern": "(unclosed"}, "field 'pattern': invalid regular expression"),
        ({"type": "regex", "pattern": "x", "flags": "g"}, "field 'flags': expected letters"),
        (
            {"type": "json-path", "path": "order.id"},
            "field 'path': JSONPath 'order.id': must start",
        ),
        ({"type": "json-path", "path": "$..id"}, "field 'path': JSONPath '$..id': unsupported"),
        ({"type": "json-path", "path": "$[*]"}, "unsupported syntax at '[*]'"),
        ({"type": "json-path", "path": "$.a", "equals": 1, "exists": True}, "not both"),
        ({"type": "json-path", "path": "$.a", "exists": "yes"}, "field 'exists': expected true"),
        ({"type": "tool-arg", "tool": "t", "arg": "a"}, "field 'equals': missing"),
        ({"type": "tool-arg", "tool": "t", "arg": "a..b", "equals": 1}, "empty part"),
        ({"type": "tool-called", "name": 3}, "field 'name': expected a non-empty string"),
        ({"type": "no-pii", "kinds": ["ssn"]}, "field 'kinds': expected a non-empty list from"),
        ({"type": "no-pii", "kinds": []}, "field 'kinds'"),
        ({"type": "json-valid", "strict": True}, "field 'strict': unknown field for 'json-valid'"),
        # As many fields as it takes, one of them not its own: the unknown one is named.
        ({"type": "tool-called", "tool": "t"}, "field 'tool': unknown field for 'tool-called'"),
    ],
)
def test_validation_errors_name_where_and_field(spec: Any, fragment: str) -> None:
    with pytest.raises(CachelintError) as err:
        validate_assertion(spec, "eval-datasets/a/b/c.json: assert[2]")
    message = str(err.value)
    assert message.startswith("eval-datasets/a/b/c.json: assert[2]: "), message
    assert fragment in message, message
    assert "\n" not in message


def test_validated_spec_is_the_spec_not_a_copy() -> None:
    # A suite of 100,000 scenarios holds each dataset's spec once (issue 44's memory goal).
    spec = {"type": "contains", "value": "x"}
    assert validate_assertion(spec, "w") is spec


def test_has_deterministic() -> None:
    assert DETERMINISTIC >= {"contains", "regex", "json-path", "tool-arg", "no-pii"}
    assert has_deterministic([{"type": "contains", "value": "x"}])
    assert not has_deterministic([])
    assert not has_deterministic([{"type": "llm-rubric", "value": "nice"}])


def test_evaluate_rejects_an_unknown_type() -> None:
    with pytest.raises(CachelintError, match="unknown assertion type 'similar'"):
        evaluate({"type": "similar"}, REFUND)


# ---- outputs ------------------------------------------------------------------------------------


def completion(message: dict[str, Any]) -> dict[str, Any]:
    return {"object": "chat.completion", "choices": [{"index": 0, "message": message}]}


def test_output_from_completion_text_and_tool_calls() -> None:
    out = output_from_completion(
        completion(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "1",
                        "type": "function",
                        "function": {"name": "f", "arguments": '{"a": 1}'},
                    },
                    {"id": "2", "type": "function", "function": {"name": "g", "arguments": "{bad"}},
                ],
            }
        )
    )
    assert out == Output("", (ToolCall("f", {"a": 1}), ToolCall("g", "{bad")))
    parts = completion(
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
        }
    )
    assert output_from_completion(parts).text == "ab"
    legacy = completion(
        {"role": "assistant", "content": "x", "function_call": {"name": "h", "arguments": "{}"}}
    )
    assert output_from_completion(legacy) == Output("x", (ToolCall("h", {}),))


@pytest.mark.parametrize("bad", [{}, {"choices": []}, {"choices": [{"text": "legacy"}]}])
def test_output_from_completion_rejects_other_shapes(bad: dict[str, Any]) -> None:
    with pytest.raises(CachelintError, match="choices"):
        output_from_completion(bad)


def test_output_from_value_shapes() -> None:
    assert output_from_value("hi") == Output("hi")
    same = Output("x")
    assert output_from_value(same) is same
    assert output_from_value(completion({"role": "assistant", "content": "c"})) == Output("c")
    assert output_from_value(
        {"text": "t", "tool_calls": [{"name": "f", "arguments": {"a": 1}}, ToolCall("g", "raw")]}
    ) == Output("t", (ToolCall("f", {"a": 1}), ToolCall("g", "raw")))
    assert output_from_value({"tool_calls": [{"function": {"name": "f", "arguments": "[1]"}}]}) == (
        Output("", (ToolCall("f", [1]),))
    )


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (42, "target returned a int"),
        ({"txt": "x"}, "target returned a dict"),
        ({"text": "x", "extra": 1}, "unknown key(s) 'extra'"),
        ({"text": 5}, "'text' as a int"),
        ({"tool_calls": [{"arguments": "{}"}]}, "needs a string 'name'"),
    ],
)
def test_output_from_value_rejects(value: Any, fragment: str) -> None:
    with pytest.raises(CachelintError) as err:
        output_from_value(value)
    assert fragment in str(err.value)
