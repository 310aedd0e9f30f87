"""Schema assertions, validated with the `jsonschema` library (JSON Schema draft 2020-12):

- `json-schema`: the answer parsed as JSON, or the value at `path` (a JSONPath as in `json-path`),
  is valid against `schema`;
- `tool-call-schema`: the arguments of every tool call of the trajectory (or of the calls of
  `tool`) are valid against the `parameters` the tool declared in the request that offered it
  (OpenAI chat or Responses shape, Anthropic's `input_schema`, Bedrock's `inputSchema.json`), or
  in the scenario's `tools` when the call was not recorded; a call of a tool no request declared
  fails.

A schema is checked when the dataset loads, so a typo in it is a dataset error, not a failed run.
`pattern` and `patternProperties` are matched with the time bound of the `regex` assertion; a
`$ref` to anything outside the schema is not fetched and fails the assertion.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from cachelint.runner.assertions.checks import (
    bad,
    check_fields,
    parse_json,
    search_bounded,
    show,
    validate_json_path,
)
from cachelint.runner.assertions.jsonpath import json_kind, parse_json_path, resolve
from cachelint.runner.assertions.trajectory import steps
from cachelint.runner.client import CallRecord
from cachelint.runner.output import Output, ToolCall

_SHOWN_ERRORS = 3


def _validator_class() -> Any:
    """Draft 2020-12 with `pattern` and `patternProperties` under the regex time bound."""
    import jsonschema  # lazy: only a dataset with a schema assertion pays for the import

    def pattern(validator: Any, patrn: str, instance: Any, schema: Any) -> Iterator[Any]:
        if validator.is_type(instance, "string"):
            if not search_bounded(patrn, instance, 0, f"schema pattern {patrn!r}"):
                yield jsonschema.ValidationError(f"{instance!r} does not match {patrn!r}")

    def pattern_properties(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if not validator.is_type(instance, "object"):
            return
        for patrn, subschema in value.items():
            for key, item in instance.items():
                if search_bounded(patrn, key, 0, f"schema patternProperties {patrn!r}"):
                    yield from validator.descend(item, subschema, path=key, schema_path=patrn)

    return jsonschema.validators.extend(
        jsonschema.Draft202012Validator,
        {"pattern": pattern, "patternProperties": pattern_properties},
    )


def check_schema(schema: Any, where: str, field: str) -> None:
    """A dataset error naming the first problem when `schema` is not a draft 2020-12 schema."""
    import jsonschema

    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        at = "/".join(map(str, exc.absolute_path)) or "(top)"
        raise bad(
            where, field, f"not a valid JSON Schema (draft 2020-12) at {at}: {exc.message}"
        ) from None


def validate_json_schema(spec: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    check_fields(spec, {"schema"}, {"path"}, where)
    if not isinstance(spec["schema"], (Mapping, bool)):
        raise bad(where, "schema", f"expected a JSON Schema object, got {show(spec['schema'])}")
    check_schema(spec["schema"], where, "schema")
    if "path" in spec:
        validate_json_path({"type": "json-path", "path": spec["path"]}, where)
    return dict(spec)


def validate_tool_call_schema(spec: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    check_fields(spec, (), {"tool"}, where)
    if "tool" in spec and (not isinstance(spec["tool"], str) or not spec["tool"]):
        raise bad(where, "tool", f"expected a non-empty tool name, got {show(spec['tool'])}")
    return dict(spec)


def schema_errors(schema: Any, instance: Any) -> list[str]:
    """Each way `instance` breaks `schema`, as `at <path>: <message>`; [] when it is valid."""
    import referencing.exceptions

    validator = _validator_class()(schema)
    try:
        errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))
    except referencing.exceptions.Unresolvable as exc:
        return [f"the schema's $ref {exc} is not resolved (only references inside it are)"]
    shown = []
    for error in errors:
        at = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        shown.append(f"at {at}: {error.message[:200]}")
    return shown


def _joined(errors: Sequence[str]) -> str:
    more = f" and {len(errors) - _SHOWN_ERRORS} more" if len(errors) > _SHOWN_ERRORS else ""
    return "; ".join(errors[:_SHOWN_ERRORS]) + more


def json_schema(spec: Mapping[str, Any], out: Output) -> tuple[bool, str]:
    path = spec.get("path")
    label = f"json-schema{f' at {path!r}' if path else ''}"
    value, error = parse_json(out.text)
    if error:
        return False, f"{label}: {error}"
    if path:
        found, value, why = resolve(value, parse_json_path(path))
        if not found:
            return False, f"{label}: {why}"
    errors = schema_errors(spec["schema"], value)
    if errors:
        return False, f"{label}: invalid: {_joined(errors)}"
    return True, f"{label}: valid ({json_kind(value)})"


def declared_parameters(tools: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Tool name -> its parameters schema, from tools in the OpenAI chat or Responses shape,
    Anthropic's (`input_schema`), Gemini's (`functionDeclarations`) or Bedrock's (`toolSpec`)."""
    declared: dict[str, Any] = {}
    for tool in tools:
        inner = tool.get("function") or tool.get("toolSpec") or tool
        items = tool.get("functionDeclarations")
        for item in items if isinstance(items, list) else [inner]:
            if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
                continue
            schema = item.get("parameters", item.get("input_schema", item.get("inputSchema")))
            if isinstance(schema, Mapping) and "json" in schema and "type" not in schema:
                schema = schema["json"]  # Bedrock's {"inputSchema": {"json": {...}}}
            declared[item["name"]] = schema if isinstance(schema, (Mapping, bool)) else {}
    return declared


def _calls_with_tools(
    output: Output, calls: Sequence[CallRecord], tools: Sequence[Mapping[str, Any]]
) -> list[tuple[str, ToolCall, dict[str, Any]]]:
    """(where, tool call, declared parameters by name) for each tool call of the trajectory; with
    no recorded call, those of the output against the scenario's tools."""
    trajectory = steps(calls)
    target = [c for c in calls if c.purpose == "target"]
    if not trajectory:
        return [("output", c, declared_parameters(tools)) for c in output.tool_calls]
    found = []
    for step in trajectory:
        declared = declared_parameters(target[step.index].tools or tools)
        for call in step.answer.tool_calls if step.answer else ():
            found.append((f"call {step.index}", call, declared))
    return found


def tool_call_schema(
    spec: Mapping[str, Any],
    output: Output,
    calls: Sequence[CallRecord],
    tools: Sequence[Mapping[str, Any]],
) -> tuple[bool, str]:
    name = spec.get("tool")
    label = f"tool-call-schema{f' {name!r}' if name else ''}"
    checked = [t for t in _calls_with_tools(output, calls, tools) if name in (None, t[1].name)]
    if not checked:
        return False, f"{label}: no tool call to check"
    problems: list[str] = []
    for where, call, declared in checked:
        if call.name not in declared:
            offered = ", ".join(sorted(declared)) or "none"
            problems.append(f"{where}: {call.name!r} is not a declared tool (declared: {offered})")
        elif isinstance(call.arguments, str):
            problems.append(f"{where}: {call.name} arguments are not JSON: {show(call.arguments)}")
        else:
            errors = schema_errors(declared[call.name], call.arguments)
            problems += [f"{where}: {call.name} {error}" for error in errors[:_SHOWN_ERRORS]]
    if problems:
        return False, f"{label}: {_joined(problems)}"
    return True, f"{label}: {len(checked)} tool call(s) valid against their declared parameters"
