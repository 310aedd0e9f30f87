"""The assertions over one answer (its text and tool calls), and the words every assertion type
shares: one-line spec errors, field checks, shown values, the time-bounded regex search.

Each type here has a validator, `(spec, where) -> spec` (validated, not copied: a suite of many
thousand scenarios holds each spec once), raising one line that names the field, and a check,
`(spec, output) -> (passed, reason)`, whose reason says what was checked and what was seen,
passing or failing. `assertions.REGISTRY` names them; the dataset reference with an
example of each is docs/assertions.md.
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from cachelint.errors import CachelintError
from cachelint.runner.assertions.jsonpath import (
    json_equal,
    json_kind,
    parse_json_path,
    resolve,
    resolve_dotted,
)
from cachelint.runner.output import Output, ToolCall

Check = Callable[[Mapping[str, Any], Output], tuple[bool, str]]
Validate = Callable[[Mapping[str, Any], str], Mapping[str, Any]]

# ---- messages and spec fields -------------------------------------------------------------------

SNIPPET = 80


def snippet(text: str) -> str:
    """The first chars of a response, quoted and escaped so newlines stay on one line."""
    head = text[:SNIPPET]
    more = "..." if len(text) > SNIPPET else ""
    return f"(first {SNIPPET} chars: {json.dumps(head, ensure_ascii=False)}{more})"


def show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= SNIPPET else text[: SNIPPET - 3] + "..."


def bad(where: str, field: str, message: str) -> CachelintError:
    return CachelintError(f"{where}: field {field!r}: {message}")


def check_fields(
    spec: Mapping[str, Any],
    required: Collection[str],
    optional: Collection[str],
    where: str,
    *,
    closed: bool = True,
) -> None:
    """An unknown (when `closed`) or missing field of a spec is one error naming it and the rest."""
    kind, known = spec["type"], {*required, *optional}
    for field in sorted(set(spec) - known - {"type"}) if closed else ():
        raise bad(
            where,
            field,
            f"unknown field for {kind!r} (allowed: {', '.join(sorted(known)) or 'none'})",
        )
    for field in sorted(set(required) - set(spec)):
        raise bad(where, field, f"missing, {kind!r} needs: {', '.join(sorted(required))}")


def check_bounds(spec: Mapping[str, Any], where: str, *, need: bool) -> None:
    """`min` and `max` counts (whole numbers >= 0, min not above max); with `need`, one of them."""
    for field in ("min", "max"):
        value = spec.get(field, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise bad(where, field, f"expected a whole number >= 0, got {show(value)}")
    if need and "min" not in spec and "max" not in spec:
        raise bad(where, "max", "give 'min', 'max' or both")
    if "min" in spec and "max" in spec and spec["min"] > spec["max"]:
        raise bad(where, "min", f"{spec['min']} is above max {spec['max']}")


def need_str(spec: Mapping[str, Any], field: str, where: str) -> str:
    value = spec[field]
    if not isinstance(value, str) or not value:
        raise bad(where, field, f"expected a non-empty string, got {show(value)}")
    return value


def parse_json(text: str) -> tuple[Any, str | None]:
    """The JSON value of an answer, or None and why not."""
    try:
        return json.loads(text), None
    except (ValueError, RecursionError) as exc:  # a model can emit "[[[[..." too
        return None, f"response is not valid JSON ({exc}) {snippet(text)}"


# ---- bounded regular expressions ----------------------------------------------------------------

_REGEX_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}
# A pattern such as `(\w+\s?)+$` backtracks for minutes on a 185-character answer, in C code
# that ignores Ctrl-C; the `regex` package (same syntax as `re` in its V0 mode) can stop it.
REGEX_TIMEOUT_S = 1.0


class Undecided(Exception):
    """An assertion that could not be decided (its pattern timed out). It fails whatever its
    kind: a `not-regex` whose search gave up has not shown the text is absent."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def search_bounded(pattern: str, text: str, flags: int, label: str) -> Any:
    """`re.search` semantics with a time bound; `Undecided` (naming `label`) when it runs out."""
    import regex

    try:
        return regex.search(pattern, text, flags | regex.V0, timeout=REGEX_TIMEOUT_S)
    except TimeoutError:
        raise Undecided(
            f"{label}: gave up after {REGEX_TIMEOUT_S:g} s (catastrophic backtracking), so it "
            "fails whatever its type; simplify the pattern, e.g. avoid nested quantifiers such "
            "as (\\w+\\s?)+"
        ) from None


def _regex_flags(letters: str) -> int:
    flags = 0
    for letter in letters:
        flags |= _REGEX_FLAGS[letter]
    return flags


def _matched(match: Any) -> str:
    return json.dumps(match.group()[:SNIPPET], ensure_ascii=False)


# ---- validation ---------------------------------------------------------------------------------

COMPARISONS = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
_OPERATORS = {"gt": operator.gt, "gte": operator.ge, "lt": operator.lt, "lte": operator.le}
UNITS = ("chars", "words")


def fields(required: Collection[str], *, strings: Collection[str] = ()) -> Validate:
    """The validator of a type with these fields and no optional one; `strings` non-empty."""
    exact = frozenset({"type", *required})

    def validate(spec: Mapping[str, Any], where: str) -> Mapping[str, Any]:
        if spec.keys() != exact:  # exactly its fields, the usual spec: none unknown or missing
            check_fields(spec, required, (), where)
        for field in strings:
            need_str(spec, field, where)
        return spec

    return validate


validate_text = fields({"value"}, strings=["value"])  # contains, icontains, not-contains
validate_equals = fields({"value"})
validate_json_valid = fields(())
validate_tool_name = fields({"name"}, strings=["name"])  # tool-called, tool-not-called


def validate_regex(spec: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    check_fields(spec, {"pattern"}, {"flags"}, where)
    pattern = need_str(spec, "pattern", where)
    flags = spec.get("flags", "")
    if not isinstance(flags, str) or set(flags) - set(_REGEX_FLAGS):
        raise bad(where, "flags", f"expected letters from 'imsx', got {show(flags)}")
    try:
        re.compile(pattern, _regex_flags(flags))
    except re.error as exc:
        raise bad(where, "pattern", f"invalid regular expression: {exc}") from None
    return spec


def validate_json_path(spec: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    """json-path with `equals`, `exists` or number comparisons (`gt`, `gte`, `lt`, `lte`)."""
    if compares := sorted(set(spec) & set(COMPARISONS)):
        for other in ("equals", "exists"):
            if other in spec:
                raise bad(where, other, f"give either {other!r} or {', '.join(compares)}, not both")
        for field in compares:
            if isinstance(spec[field], bool) or not isinstance(spec[field], (int, float)):
                raise bad(where, field, f"expected a number, got {show(spec[field])}")
        validate_json_path({k: v for k, v in spec.items() if k not in COMPARISONS}, where)
        return spec
    check_fields(spec, {"path"}, {"equals", "exists"}, where)
    path = need_str(spec, "path", where)
    try:
        parse_json_path(path)
    except ValueError as exc:
        raise bad(where, "path", f"JSONPath {path!r}: {exc}") from None
    if "equals" in spec and "exists" in spec:
        raise bad(where, "exists", "give either 'equals' or 'exists', not both")
    if "exists" in spec and not isinstance(spec["exists"], bool):
        raise bad(where, "exists", f"expected true or false, got {show(spec['exists'])}")
    return spec


def validate_tool_arg(spec: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    """tool-arg with `equals`, or with `regex` (and its `flags`)."""
    if "regex" in spec:
        if "equals" in spec:
            raise bad(where, "regex", "give either 'equals' or 'regex', not both")
        pattern = spec["regex"]
        if not isinstance(pattern, str) or not pattern:
            raise bad(where, "regex", f"expected a non-empty string, got {show(pattern)}")
        flags = spec.get("flags", "")
        validate_regex(
            {"type": "regex", "pattern": pattern, **({"flags": flags} if flags else {})}, where
        )
        rest = {k: v for k, v in spec.items() if k not in ("regex", "flags")}
        validate_tool_arg({**rest, "equals": None}, where)  # tool and arg, worded as for equals
        return spec
    check_fields(spec, {"tool", "arg", "equals"}, (), where)
    need_str(spec, "tool", where)
    arg = need_str(spec, "arg", where)
    if any(not part for part in arg.split(".")):
        raise bad(where, "arg", f"dotted path {arg!r} has an empty part")
    return spec


# The PII patterns load with the first no-pii assertion: most datasets have none.


def validate_no_pii(spec: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    from cachelint.runner.assertions.pii import PII_KINDS

    check_fields(spec, (), {"kinds"}, where)
    kinds = spec.get("kinds", [*PII_KINDS])
    if (
        not isinstance(kinds, list)
        or not kinds
        or any(not isinstance(k, str) or k not in PII_KINDS for k in kinds)
    ):
        raise bad(
            where,
            "kinds",
            f"expected a non-empty list from {', '.join(PII_KINDS)}, got {show(kinds)}",
        )
    return spec


def validate_length(spec: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    check_fields(spec, (), {"min", "max", "unit"}, where)
    check_bounds(spec, where, need=True)
    if spec.get("unit", "chars") not in UNITS:
        raise bad(where, "unit", f"expected one of {', '.join(UNITS)}, got {show(spec['unit'])}")
    return spec


def validate_limit(spec: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    """latency-ms, cost: a `max` of at least 0."""
    check_fields(spec, {"max"}, (), where)
    value = spec["max"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise bad(where, "max", f"expected a number of at least 0, got {show(value)}")
    return spec


def validate_python(spec: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    """A custom evaluator: `function` names it; any other field is an option passed to it."""
    check_fields(spec, {"function"}, (), where, closed=False)
    function = spec["function"]
    module, sep, attr = function.partition(":") if isinstance(function, str) else ("", "", "")
    if not sep or not module or not attr:
        raise bad(
            where,
            "function",
            f'expected "module:function" (imported from the repository root), got {show(function)}',
        )
    return spec


# ---- checks of the text -------------------------------------------------------------------------


def contains(spec: Mapping[str, Any], out: Output) -> tuple[bool, str]:
    value = spec["value"]
    at = out.text.find(value)
    label = f"contains {value!r}"
    if at >= 0:
        return True, f"{label}: found at character {at + 1}"
    return False, f"{label}: not found in response {snippet(out.text)}"


def icontains(spec: Mapping[str, Any], out: Output) -> tuple[bool, str]:
    value = spec["value"]
    at = out.text.casefold().find(value.casefold())
    label = f"icontains {value!r}"
    if at >= 0:
        return True, f"{label}: found (ignoring case)"
    return False, f"{label}: not found in response, ignoring case {snippet(out.text)}"


def not_contains(spec: Mapping[str, Any], out: Output) -> tuple[bool, str]:
    value = spec["value"]
    at = out.text.find(value)
    label = f"not-contains {value!r}"
    if at < 0:
        return True, f"{label}: absent from response"
    context = out.text[max(0, at - 30) : at + len(value) + 30]
    return False, f"{label}: found at character {at + 1}: {json.dumps(context, ensure_ascii=False)}"


def regex(spec: Mapping[str, Any], out: Output) -> tuple[bool, str]:
    pattern = spec["pattern"]
    label = f"regex {pattern!r}"
    match = search_bounded(pattern, out.text, _regex_flags(spec.get("flags", "")), label)
    if match:
        return True, f"{label}: matched {_matched(match)}"
    return False, f"{label}: no match in response {snippet(out.text)}"


def equals(spec: Mapping[str, Any], out: Output) -> tuple[bool, str]:
    value = spec["value"]
    label = f"equals {show(value)}"
    if isinstance(value, str):
        if out.text == value:
            return True, f"{label}: response is exactly that text"
        pos = next(
            (i for i, (a, b) in enumerate(zip(out.text, value, strict=False)) if a != b),
            min(len(out.text), len(value)),
        )
        return False, f"{label}: response differs at character {pos + 1} {snippet(out.text)}"
    parsed, error = parse_json(out.text)
    if error:
        return False, f"{label}: {error}"
    if json_equal(parsed, value):
        return True, f"{label}: response JSON is equal"
    return False, f"{label}: response JSON is {show(parsed)}"


# not-<type> for each text check: the same fields, the opposite verdict.
NEGATED: dict[str, tuple[Validate, Check]] = {
    "not-icontains": (validate_text, icontains),
    "not-regex": (validate_regex, regex),
    "not-equals": (validate_equals, equals),
}


def validate_negated(spec: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    """The fields of the check it negates, worded as for that check."""
    NEGATED[spec["type"]][0]({**spec, "type": spec["type"].removeprefix("not-")}, where)
    return spec


def negated(spec: Mapping[str, Any], out: Output) -> tuple[bool, str]:
    passed, reason = NEGATED[spec["type"]][1](spec, out)  # Undecided: fails
    return not passed, f"not-{reason}"


def length(spec: Mapping[str, Any], out: Output) -> tuple[bool, str]:
    unit = spec.get("unit", "chars")
    size = len(out.text.split()) if unit == "words" else len(out.text)
    bounds = [f"{b} {spec[b]}" for b in ("min", "max") if b in spec]
    label = f"length ({', '.join(bounds)} {unit})"
    if "min" in spec and size < spec["min"]:
        return False, f"{label}: {size} {unit}, under the minimum {snippet(out.text)}"
    if "max" in spec and size > spec["max"]:
        return False, f"{label}: {size} {unit}, over the maximum {snippet(out.text)}"
    return True, f"{label}: {size} {unit}"


def no_pii(spec: Mapping[str, Any], out: Output) -> tuple[bool, str]:
    from cachelint.runner.assertions.pii import PII_KINDS, find_pii, mask

    kinds = tuple(spec.get("kinds") or PII_KINDS)
    label = f"no-pii ({', '.join(kinds)})"
    # Tool-call arguments leave the system too; a leak there is as real as one in the text.
    texts = [out.text] + [
        c.arguments if isinstance(c.arguments, str) else json.dumps(c.arguments, ensure_ascii=False)
        for c in out.tool_calls
    ]
    hits = [hit for text in texts for hit in find_pii(text, kinds)]
    if not hits:
        return True, f"{label}: none found"
    shown = ", ".join(f"{kind} {mask(sample)!r}" for kind, sample in hits[:3])
    more = f" and {len(hits) - 3} more" if len(hits) > 3 else ""
    return False, f"{label}: found {shown}{more}"


# ---- checks of JSON -----------------------------------------------------------------------------


def json_valid(spec: Mapping[str, Any], out: Output) -> tuple[bool, str]:
    parsed, error = parse_json(out.text)
    if error:
        return False, f"json-valid: {error}"
    return True, f"json-valid: response is JSON ({json_kind(parsed)})"


def json_path(spec: Mapping[str, Any], out: Output) -> tuple[bool, str]:
    path = spec["path"]
    label = f"json-path {path!r}"
    if compares := [op for op in COMPARISONS if op in spec]:
        label += " " + " and ".join(f"{COMPARISONS[op]} {spec[op]}" for op in compares)
    parsed, error = parse_json(out.text)
    if error:
        return False, f"{label}: {error}"
    found, value, why = resolve(parsed, parse_json_path(path))
    if compares:
        return _compared(label, found, value, why, [(op, spec[op]) for op in compares])
    if "equals" in spec:
        label += f" equals {show(spec['equals'])}"
        if not found:
            return False, f"{label}: {why}"
        if json_equal(value, spec["equals"]):
            return True, f"{label}: it does"
        return False, f"{label}: value is {show(value)}"
    if spec.get("exists", True):
        if found:
            return True, f"{label} exists: value is {show(value)}"
        return False, f"{label} exists: {why}"
    if found:
        return False, f"{label} must not exist: value is {show(value)}"
    return True, f"{label} must not exist: {why}"


def _compared(
    label: str, found: bool, value: Any, why: str, limits: list[tuple[str, float]]
) -> tuple[bool, str]:
    if not found:
        return False, f"{label}: {why}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False, f"{label}: value is {json_kind(value, exact=True)}, not a number"
    for op, limit in limits:
        if not _OPERATORS[op](value, limit):
            return False, f"{label}: value is {value:g}, not {COMPARISONS[op]} {limit}"
    return True, f"{label}: value is {value:g}"


# ---- checks of the tool calls -------------------------------------------------------------------


def _names(calls: Iterable[ToolCall]) -> str:
    names = [c.name for c in calls]
    return ", ".join(repr(n) for n in names) if names else "no tools"


def tool_use(spec: Mapping[str, Any], out: Output, *, wanted: bool) -> tuple[bool, str]:
    """tool-called (`wanted`) and tool-not-called: one count, opposite verdicts."""
    kind = "tool-called" if wanted else "tool-not-called"
    name = spec["name"]
    count = sum(1 for c in out.tool_calls if c.name == name)
    if count:
        return wanted, f"{kind} {name!r}: called {count} time(s)"
    return not wanted, f"{kind} {name!r}: not called (called: {_names(out.tool_calls)})"


def tool_arg(spec: Mapping[str, Any], out: Output) -> tuple[bool, str]:
    """Some call of `tool` has `arg` equal to `equals`, or matching `regex`."""
    tool, arg = spec["tool"], spec["arg"]
    if "regex" in spec:
        label = f"tool-arg {tool}.{arg} regex {spec['regex']!r}"
        test = _argument_matches(spec["regex"], _regex_flags(spec.get("flags", "")), label)
    else:
        label = f"tool-arg {tool}.{arg} equals {show(spec['equals'])}"
        test = _argument_equals(spec["equals"])
    calls = [c for c in out.tool_calls if c.name == tool]
    if not calls:
        return False, f"{label}: {tool!r} not called (called: {_names(out.tool_calls)})"
    seen: list[str] = []
    for call in calls:
        if isinstance(call.arguments, str):
            seen.append(f"arguments are not valid JSON: {show(call.arguments)}")
            continue
        found, value, why = resolve_dotted(call.arguments, arg)
        passed, said = test(value) if found else (False, why)
        if passed:
            return True, f"{label}: {said}"
        seen.append(said)
    return False, f"{label}: " + "; ".join(seen)


def _argument_equals(want: Any) -> Callable[[Any], tuple[bool, str]]:
    def test(value: Any) -> tuple[bool, str]:
        return (True, "it does") if json_equal(value, want) else (False, f"value is {show(value)}")

    return test


def _argument_matches(pattern: str, flags: int, label: str) -> Callable[[Any], tuple[bool, str]]:
    def test(value: Any) -> tuple[bool, str]:
        # A string is matched as it is; any other JSON value as its compact JSON text.
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        match = search_bounded(pattern, text, flags, label)
        if match:
            return True, f"matched {_matched(match)}"
        return False, f"value {show(value)} does not match"

    return test
