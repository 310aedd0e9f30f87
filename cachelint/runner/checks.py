"""The assertion types beyond `assertions.py`'s eleven: numeric `json-path` comparisons, `length`,
`latency-ms`, `cost`, the `not-` forms of the text checks, `regex` over tool arguments, and the
`python` custom evaluator's spec. Validation extends `validate_assertion`; evaluation of the types
that need more than the output (recorded calls, prices) lives in `evaluators.py`.

The dataset reference with an example of each is docs/assertions.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from cachelint.errors import CachelintError
from cachelint.runner import assertions as base
from cachelint.runner import schemas, trajectory
from cachelint.runner.assertions import AssertionResult, _regex_flags, _show, validate_assertion
from cachelint.runner.output import Output

COMPARISONS = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
UNITS = ("chars", "words")
# not-<type> for each text check: the same fields, the opposite verdict.
NEGATED = {"not-icontains": "icontains", "not-regex": "regex", "not-equals": "equals"}

# type -> (required fields, optional fields); `python` takes any other field as an option.
_FIELDS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "length": (frozenset(), frozenset({"min", "max", "unit"})),
    "latency-ms": (frozenset({"max"}), frozenset()),
    "cost": (frozenset({"max"}), frozenset()),
    "python": (frozenset({"function"}), frozenset()),
}
# Types whose own module validates and evaluates them (`validate(spec, where)` and
# `evaluate(spec, output, calls, tools)`): the one place a new family of types is registered.
EXTENSIONS: dict[str, Any] = {
    kind: module for module in (trajectory, schemas) for kind in sorted(module.TYPES)
}
TYPES = frozenset(_FIELDS) | frozenset(NEGATED) | frozenset(EXTENSIONS)
# A latency limit is only measured on live calls; alone it would let a replayed scenario check
# nothing, so it does not count as the deterministic assertion every scenario needs.
DETERMINISTIC = (base.DETERMINISTIC | TYPES) - {"latency-ms"}


def _bad(where: str, field: str, message: str) -> CachelintError:
    return CachelintError(f"{where}: field {field!r}: {message}")


def _number(spec: Mapping[str, Any], field: str, where: str, *, minimum: float = 0) -> float:
    value = spec[field]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < minimum:
        raise _bad(where, field, f"expected a number of at least {minimum:g}, got {_show(value)}")
    return float(value)


def _json_path_compare(spec: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    compares = sorted(set(spec) & set(COMPARISONS))
    for other in ("equals", "exists"):
        if other in spec:
            raise _bad(where, other, f"give either {other!r} or {', '.join(compares)}, not both")
    for field in compares:
        value = spec[field]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _bad(where, field, f"expected a number, got {_show(value)}")
    rest = {k: v for k, v in spec.items() if k not in COMPARISONS}
    validate_assertion(rest, where)  # the path and any unknown field, worded as for json-path
    return dict(spec)


def _tool_arg_regex(spec: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    if "equals" in spec:
        raise _bad(where, "regex", "give either 'equals' or 'regex', not both")
    pattern = spec["regex"]
    if not isinstance(pattern, str) or not pattern:
        raise _bad(where, "regex", f"expected a non-empty string, got {_show(pattern)}")
    flags = spec.get("flags", "")
    regex_spec = {"type": "regex", "pattern": pattern, **({"flags": flags} if flags else {})}
    validate_assertion(regex_spec, where)
    rest = {k: v for k, v in spec.items() if k not in ("regex", "flags")}
    validate_assertion({**rest, "equals": None}, where)  # tool and arg, worded as for tool-arg
    return dict(spec)


def validate(spec: Any, where: str) -> Mapping[str, Any]:
    """`validate_assertion`, knowing the types and fields of this module too."""
    if not isinstance(spec, Mapping):
        return validate_assertion(spec, where)  # words the error
    kind = spec.get("type")
    if kind == "json-path" and set(spec) & set(COMPARISONS):
        return _json_path_compare(spec, where)
    if kind == "tool-arg" and "regex" in spec:
        return _tool_arg_regex(spec, where)
    if isinstance(kind, str) and kind in EXTENSIONS:
        return EXTENSIONS[kind].validate(spec, where)
    if kind in NEGATED:
        validate_assertion({**spec, "type": NEGATED[kind]}, where)
        return dict(spec)
    if not isinstance(kind, str) or kind not in _FIELDS:
        if isinstance(kind, str) and kind in base.DETERMINISTIC:
            return validate_assertion(spec, where)
        allowed = ", ".join(sorted(base.DETERMINISTIC | TYPES))
        raise _bad(where, "type", f"unknown assertion type {_show(kind)}; allowed: {allowed}")
    required, optional = _FIELDS[kind]
    if kind != "python":
        for field in sorted(set(spec) - required - optional - {"type"}):
            allowed = ", ".join(sorted(required | optional))
            raise _bad(where, field, f"unknown field for {kind!r} (allowed: {allowed})")
    for field in sorted(required - set(spec)):
        raise _bad(where, field, f"missing, {kind!r} needs: {', '.join(sorted(required))}")
    if kind == "length":
        if "min" not in spec and "max" not in spec:
            raise _bad(where, "max", "give 'min', 'max' or both")
        for field in ("min", "max"):
            if field in spec and (
                isinstance(spec[field], bool) or not isinstance(spec[field], int) or spec[field] < 0
            ):
                raise _bad(where, field, f"expected a whole number >= 0, got {_show(spec[field])}")
        if spec.get("min", 0) > spec.get("max", spec.get("min", 0)):
            raise _bad(where, "min", f"{spec['min']} is above max {spec['max']}")
        if spec.get("unit", "chars") not in UNITS:
            raise _bad(
                where, "unit", f"expected one of {', '.join(UNITS)}, got {_show(spec['unit'])}"
            )
    elif kind in ("latency-ms", "cost"):
        _number(spec, "max", where)
    elif kind == "python":
        function = spec["function"]
        module, sep, attr = function.partition(":") if isinstance(function, str) else ("", "", "")
        if not sep or not module or not attr:
            raise _bad(
                where,
                "function",
                f'expected "module:function" (imported from the repository root), got '
                f"{_show(function)}",
            )
    return dict(spec)


def has_deterministic(assertions: Iterable[Mapping[str, Any]]) -> bool:
    return any(spec.get("type") in DETERMINISTIC for spec in assertions)


# ---- evaluation of the output-only checks -------------------------------------------------------


def _compare(value: float, op: str, limit: float) -> bool:
    return {
        "gt": value > limit,
        "gte": value >= limit,
        "lt": value < limit,
        "lte": value <= limit,
    }[op]


def json_path_compare(spec: Mapping[str, Any], out: Output) -> tuple[bool, str]:
    path = spec["path"]
    wanted = " and ".join(f"{COMPARISONS[op]} {spec[op]}" for op in COMPARISONS if op in spec)
    label = f"json-path {path!r} {wanted}"
    try:
        parsed = json.loads(out.text)
    except (ValueError, RecursionError) as exc:
        return False, f"{label}: response is not valid JSON ({exc}) {base._snippet(out.text)}"
    found, value, why = base.resolve(parsed, base.parse_json_path(path))
    if not found:
        return False, f"{label}: {why}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False, f"{label}: value is {base.json_kind(value, exact=True)}, not a number"
    failed = [op for op in COMPARISONS if op in spec and not _compare(value, op, spec[op])]
    if failed:
        return False, f"{label}: value is {value:g}, not {COMPARISONS[failed[0]]} {spec[failed[0]]}"
    return True, f"{label}: value is {value:g}"


def length(spec: Mapping[str, Any], out: Output) -> tuple[bool, str]:
    unit = spec.get("unit", "chars")
    size = len(out.text.split()) if unit == "words" else len(out.text)
    bounds = [
        f"min {spec['min']}" if "min" in spec else "",
        f"max {spec['max']}" if "max" in spec else "",
    ]
    label = f"length ({', '.join(b for b in bounds if b)} {unit})"
    if "min" in spec and size < spec["min"]:
        return False, f"{label}: {size} {unit}, under the minimum {base._snippet(out.text)}"
    if "max" in spec and size > spec["max"]:
        return False, f"{label}: {size} {unit}, over the maximum {base._snippet(out.text)}"
    return True, f"{label}: {size} {unit}"


def negated(spec: Mapping[str, Any], out: Output) -> tuple[bool, str]:
    kind = spec["type"]
    passed, reason = base.decide({**spec, "type": NEGATED[kind]}, out)  # Undecided: fails
    return not passed, f"not-{reason}"


def tool_arg_regex(spec: Mapping[str, Any], out: Output) -> tuple[bool, str]:
    tool, arg, pattern = spec["tool"], spec["arg"], spec["regex"]
    label = f"tool-arg {tool}.{arg} regex {pattern!r}"
    calls = [c for c in out.tool_calls if c.name == tool]
    if not calls:
        return False, f"{label}: {tool!r} not called (called: {base._names(out.tool_calls)})"
    flags = _regex_flags(spec.get("flags", ""))
    seen: list[str] = []
    for call in calls:
        if isinstance(call.arguments, str):
            seen.append(f"arguments are not valid JSON: {_show(call.arguments)}")
            continue
        found, value, why = base._resolve_dotted(call.arguments, base._dotted(arg))
        if not found:
            seen.append(why)
            continue
        # A string is matched as it is; any other JSON value as its compact JSON text.
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        match = base.search_bounded(pattern, text, flags, label)
        if match:
            return True, f"{label}: matched {json.dumps(match.group()[:80], ensure_ascii=False)}"
        seen.append(f"value {_show(value)} does not match")
    return False, f"{label}: " + "; ".join(seen)


def evaluate_output(spec: Mapping[str, Any], out: Output) -> AssertionResult | None:
    """The checks of this module that need only the output; None for the others."""
    kind = spec["type"]
    check = _OWN.get(kind)
    if kind == "json-path" and set(spec) & set(COMPARISONS):
        check = json_path_compare
    elif kind == "tool-arg" and "regex" in spec:
        check = tool_arg_regex
    if check is None:
        return None
    try:
        passed, reason = check(spec, out)
    except base.Undecided as exc:  # a timed-out pattern fails every kind, negated ones too
        passed, reason = False, exc.reason
    return AssertionResult(kind, passed, reason)


_OWN: dict[str, Callable[[Mapping[str, Any], Output], tuple[bool, str]]] = {
    **dict.fromkeys(NEGATED, negated),
    "length": length,
}
