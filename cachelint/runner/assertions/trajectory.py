"""Assertions over a scenario's whole trajectory: every model call its target made, in call order.

An agent's run is several calls (a small model picks a tool, a larger one writes the answer); the
output assertions see only what the target returned. These see each recorded call's answer:

- `trajectory:tool-called` / `trajectory:tool-not-called`: a tool called in any call, optionally
  with `args` (dotted paths that must equal the given values) and a `min`/`max` count;
- `trajectory:tool-sequence`: the tools called, in call order, are `tools` (`"mode": "exact"`)
  or hold them in that order with others between (`"in-order"`, the default); an item is a name
  or `{"name": ..., "args": {...}}`;
- `trajectory:step-count`: the number of model calls (`"of": "calls"`, default) or of tool calls
  (`"of": "tool-calls"`) is within `min`/`max`;
- `trajectory:answer`: an output assertion (`assert`) on one call's answer (`call`: an index, 0
  the first, -1 the last) or on any call's (`"any"`, the default).

Judge calls are not part of the trajectory. Reference with examples: docs/assertions.md.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cachelint.errors import CachelintError
from cachelint.runner.assertions.checks import Validate, bad, check_bounds, check_fields, show
from cachelint.runner.assertions.jsonpath import json_equal, resolve_dotted
from cachelint.runner.client import CallRecord
from cachelint.runner.output import Output, ToolCall, output_from_value

PREFIX = "trajectory:"
MODES = ("in-order", "exact")
UNITS = ("calls", "tool-calls")
# type -> (required fields, optional fields)
FIELDS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "trajectory:tool-called": (frozenset({"name"}), frozenset({"args", "min", "max"})),
    "trajectory:tool-not-called": (frozenset({"name"}), frozenset({"args"})),
    "trajectory:tool-sequence": (frozenset({"tools"}), frozenset({"mode"})),
    "trajectory:step-count": (frozenset(), frozenset({"min", "max", "of"})),
    "trajectory:answer": (frozenset({"assert"}), frozenset({"call"})),
}

# ---- validation ---------------------------------------------------------------------------------


def _args(value: Any, where: str, field: str) -> None:
    if not isinstance(value, Mapping) or not value:
        raise bad(where, field, f"expected an object of dotted path -> value, got {show(value)}")
    for path in value:
        if any(not part for part in str(path).split(".")):
            raise bad(where, field, f"dotted path {path!r} has an empty part")


def _name(value: Any, where: str, field: str) -> None:
    if not isinstance(value, str) or not value:
        raise bad(where, field, f"expected a non-empty tool name, got {show(value)}")


def _sequence(spec: Mapping[str, Any], where: str) -> None:
    tools = spec["tools"]
    if not isinstance(tools, list) or not tools:
        raise bad(where, "tools", f"expected a non-empty list of tool names, got {show(tools)}")
    for i, item in enumerate(tools):
        field = f"tools[{i}]"
        if isinstance(item, Mapping):
            if set(item) - {"name", "args"} or "name" not in item:
                raise bad(
                    where, field, f'expected {{"name": ..., "args": {{...}}}}, got {show(item)}'
                )
            _name(item["name"], where, f"{field}.name")
            if "args" in item:
                _args(item["args"], where, f"{field}.args")
        else:
            _name(item, where, field)
    if spec.get("mode", "in-order") not in MODES:
        raise bad(where, "mode", f"expected one of {', '.join(MODES)}, got {show(spec['mode'])}")


def validate(spec: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    """A validated copy of a trajectory spec other than `trajectory:answer`."""
    kind = spec["type"]
    check_fields(spec, *FIELDS[kind], where)
    if kind in ("trajectory:tool-called", "trajectory:tool-not-called"):
        _name(spec["name"], where, "name")
        if "args" in spec:
            _args(spec["args"], where, "args")
        check_bounds(spec, where, need=False)
    elif kind == "trajectory:tool-sequence":
        _sequence(spec, where)
    elif kind == "trajectory:step-count":
        check_bounds(spec, where, need=True)
        if spec.get("of", "calls") not in UNITS:
            raise bad(where, "of", f"expected one of {', '.join(UNITS)}, got {show(spec['of'])}")
    return dict(spec)


def validate_answer(
    spec: Mapping[str, Any], where: str, *, nested: Validate, not_nested: Collection[str]
) -> Mapping[str, Any]:
    """`trajectory:answer`, its `assert` validated by `nested` unless its type is one of
    `not_nested` (those that need more than one answer: the calls, a price, a run)."""
    check_fields(spec, *FIELDS["trajectory:answer"], where)
    call = spec.get("call", "any")
    if call != "any" and (isinstance(call, bool) or not isinstance(call, int)):
        raise bad(
            where, "call", f'expected a call index (0 first, -1 last) or "any", got {show(call)}'
        )
    inner = spec["assert"]
    kind = inner.get("type") if isinstance(inner, Mapping) else None
    if isinstance(kind, str) and (kind in not_nested or kind.startswith(PREFIX)):
        raise bad(where, "assert", f"{kind!r} checks more than one answer; nest an output check")
    return {**spec, "assert": nested(inner, f"{where}.assert")}


# ---- the trajectory -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    index: int  # 0-based position among the target's calls
    answer: Output | None  # None: the recorded response is not an answer cachelint reads
    why_not: str = ""


def steps(calls: Sequence[CallRecord]) -> list[Step]:
    """The target's calls as answers, in call order (judge calls are not the target's)."""
    out: list[Step] = []
    for call in (c for c in calls if c.purpose == "target"):
        try:
            out.append(Step(len(out), output_from_value(call.response)))
        except CachelintError as exc:
            out.append(Step(len(out), None, str(exc).splitlines()[0]))
    return out


def tool_calls(trajectory: Sequence[Step]) -> list[tuple[int, ToolCall]]:
    """(call index, tool call) for every tool call in the trajectory, in order."""
    return [(s.index, c) for s in trajectory if s.answer for c in s.answer.tool_calls]


def args_match(call: ToolCall, wanted: Mapping[str, Any] | None) -> tuple[bool, str]:
    """Whether every dotted path of `wanted` is in `call`'s arguments with that value."""
    if not wanted:
        return True, ""
    if isinstance(call.arguments, str):
        return False, f"arguments are not valid JSON: {show(call.arguments)}"
    for path, want in wanted.items():
        found, value, why = resolve_dotted(call.arguments, str(path))
        if not found:
            return False, why
        if not json_equal(value, want):
            return False, f"{path} is {show(value)}, not {show(want)}"
    return True, ""


def shown_calls(trajectory: Sequence[Step]) -> str:
    calls = tool_calls(trajectory)
    if not calls:
        return f"no tool call in {len(trajectory)} model call(s)"
    return ", ".join(f"{c.name}{show(c.arguments)} (call {i})" for i, c in calls)


# ---- evaluation ---------------------------------------------------------------------------------


def _label(spec: Mapping[str, Any]) -> str:
    args = f" with {show(spec['args'])}" if spec.get("args") else ""
    return f"{spec['type']} {spec['name']!r}{args}"


def tool_use(spec: Mapping[str, Any], trajectory: Sequence[Step]) -> tuple[bool, str]:
    wanted = spec["type"] == "trajectory:tool-called"
    label = _label(spec)
    named = [(i, c) for i, c in tool_calls(trajectory) if c.name == spec["name"]]
    misses = [why for _, c in named for ok, why in [args_match(c, spec.get("args"))] if not ok]
    hits = [i for i, c in named if args_match(c, spec.get("args"))[0]]
    if not wanted:
        if hits:
            return False, f"{label}: called in call(s) {', '.join(map(str, hits))}"
        return True, f"{label}: not called ({shown_calls(trajectory)})"
    low, high = spec.get("min", 1), spec.get("max")
    if low <= len(hits) and (high is None or len(hits) <= high):
        return True, f"{label}: called {len(hits)} time(s), in call(s) {', '.join(map(str, hits))}"
    bound = f"at least {low}" if len(hits) < low else f"at most {high}"
    detail = f"; other calls of it: {'; '.join(misses[:3])}" if misses else ""
    seen = shown_calls(trajectory)
    return False, f"{label}: called {len(hits)} time(s), expected {bound} ({seen}){detail}"


def _item_matches(item: Any, call: ToolCall) -> bool:
    if isinstance(item, str):
        return call.name == item
    return call.name == item["name"] and args_match(call, item.get("args"))[0]


def _item_text(item: Any) -> str:
    return item if isinstance(item, str) else f"{item['name']}{show(item.get('args', {}))}"


def tool_sequence(spec: Mapping[str, Any], trajectory: Sequence[Step]) -> tuple[bool, str]:
    wanted, mode = spec["tools"], spec.get("mode", "in-order")
    calls = [c for _, c in tool_calls(trajectory)]
    label = f"trajectory:tool-sequence ({mode}) [{', '.join(map(_item_text, wanted))}]"
    seen = f"called: {', '.join(c.name for c in calls) or 'no tools'}"
    if mode == "exact":
        ok = len(calls) == len(wanted) and all(map(_item_matches, wanted, calls))
        return ok, f"{label}: {seen}"
    position = 0
    for call in calls:
        if position < len(wanted) and _item_matches(wanted[position], call):
            position += 1
    if position == len(wanted):
        return True, f"{label}: {seen}"
    return False, f"{label}: {_item_text(wanted[position])} not found in order ({seen})"


def step_count(spec: Mapping[str, Any], trajectory: Sequence[Step]) -> tuple[bool, str]:
    unit = spec.get("of", "calls")
    count = len(trajectory) if unit == "calls" else len(tool_calls(trajectory))
    bounds = [f"{b} {spec[b]}" for b in ("min", "max") if b in spec]
    label = f"trajectory:step-count ({', '.join(bounds)} {unit})"
    if "min" in spec and count < spec["min"]:
        return False, f"{label}: {count} {unit}, under the minimum"
    if "max" in spec and count > spec["max"]:
        return False, f"{label}: {count} {unit}, over the maximum"
    return True, f"{label}: {count} {unit}"


def answer(
    spec: Mapping[str, Any],
    trajectory: Sequence[Step],
    *,
    nested: Callable[[Mapping[str, Any], Output], tuple[bool, str]],
) -> tuple[bool, str]:
    """`trajectory:answer`: the verdict of `nested` on its `assert` over the chosen answers."""
    call, inner = spec.get("call", "any"), spec["assert"]
    label = f"trajectory:answer (call {call})"
    if not trajectory:
        return False, f"{label}: no model call was made"
    if call == "any":
        chosen = list(trajectory)
    elif -len(trajectory) <= call < len(trajectory):
        chosen = [trajectory[call]]
    else:
        return False, f"{label}: the scenario made {len(trajectory)} model call(s)"
    reasons: list[str] = []
    for step in chosen:
        if step.answer is None:
            reasons.append(f"call {step.index}: {step.why_not}")
            continue
        passed, reason = nested(inner, step.answer)
        if passed:
            return True, f"{label}: call {step.index}: {reason}"
        reasons.append(f"call {step.index}: {reason}")
    return False, f"{label}: " + "; ".join(reasons)
