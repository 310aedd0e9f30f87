"""Deterministic assertions: the only checks that gate a run.

Each spec is validated when the dataset loads (a typo must be an error, never a silently disabled
check) and evaluated against an `Output`. Every result carries a reason, passing or failing, so a
report can say what was checked and what was seen.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import partial
from typing import Any

from cachelint.errors import CachelintError
from cachelint.runner.output import Output, ToolCall


@dataclass(frozen=True)
class AssertionResult:
    type: str
    passed: bool
    reason: str  # always says why, pass or fail


# ---- helpers ------------------------------------------------------------------------------------

_SNIPPET = 80


def _snippet(text: str) -> str:
    """The first chars of a response, quoted and escaped so newlines stay on one line."""
    head = text[:_SNIPPET]
    more = "..." if len(text) > _SNIPPET else ""
    return f"(first {_SNIPPET} chars: {json.dumps(head, ensure_ascii=False)}{more})"


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= _SNIPPET else text[: _SNIPPET - 3] + "..."


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values: True is not 1, but 1 equals 1.0 (JSON has one number type)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return set(a) == set(b) and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def _parse_json(text: str) -> tuple[Any, str | None]:
    try:
        return json.loads(text), None
    except (ValueError, RecursionError) as exc:  # a model can emit "[[[[..." too
        return None, f"response is not valid JSON ({exc}) {_snippet(text)}"


# ---- JSONPath subset: $.a.b[0].c, $['key'], $["key"], [-1] ---------------------------------------

Segment = str | int
_PATH_TOKEN = re.compile(
    r"""\.(?P<name>[A-Za-z_][A-Za-z0-9_-]*)
      | \[\s*(?P<index>-?\d+)\s*\]
      | \[\s*'(?P<sq>(?:[^'\\]|\\.)*)'\s*\]
      | \[\s*"(?P<dq>(?:[^"\\]|\\.)*)"\s*\]""",
    re.VERBOSE,
)


def parse_json_path(path: str) -> tuple[Segment, ...]:
    """Segments of a JSONPath in the supported subset; ValueError says what is unsupported."""
    if not path.startswith("$"):
        raise ValueError("must start with '$'")
    segments: list[Segment] = []
    pos = 1
    while pos < len(path):
        match = _PATH_TOKEN.match(path, pos)
        if not match:
            raise ValueError(
                f"unsupported syntax at {path[pos:]!r}; supported: $.name, $['key'], $[0]"
            )
        if match.group("name") is not None:
            segments.append(match.group("name"))
        elif match.group("index") is not None:
            segments.append(int(match.group("index")))
        else:
            quoted = match.group("sq") if match.group("sq") is not None else match.group("dq")
            segments.append(re.sub(r"\\(.)", r"\1", quoted))
        pos = match.end()
    return tuple(segments)


def _segment_text(segment: Segment) -> str:
    if isinstance(segment, int):
        return f"[{segment}]"
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", segment):
        return f".{segment}"
    return f"[{segment!r}]"


def resolve(value: Any, segments: Iterable[Segment]) -> tuple[bool, Any, str]:
    """Walk `segments` into `value`: (found, value, why-not). why-not names the missing segment."""
    walked = "$"
    for segment in segments:
        step = _segment_text(segment)
        if isinstance(segment, int):
            if not isinstance(value, list):
                return False, None, f"{walked} is {json_kind(value)}, not an array, at {step}"
            if not -len(value) <= segment < len(value):
                return False, None, f"{walked}{step} out of range ({walked} has {len(value)} items)"
            value = value[segment]
        else:
            if not isinstance(value, Mapping):
                return False, None, f"{walked} is {json_kind(value)}, not an object, at {step}"
            if segment not in value:
                keys = ", ".join(sorted(map(str, value))[:10]) or "none"
                return False, None, f"{walked}{step} missing ({walked} has keys: {keys})"
            value = value[segment]
        walked += step
    return True, value, ""


def json_kind(value: Any, *, exact: bool = False) -> str:
    """What JSON type `value` is, for messages ("a string", "an array"); with `exact`, numbers
    and booleans are shown ("the number 0"), which is what a range error needs."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}" if exact else "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value}" if exact else "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _dotted(path: str) -> tuple[Segment, ...]:
    """`a.b.0.c` for tool-arg: numeric parts index arrays."""
    return tuple(int(p) if re.fullmatch(r"-?\d+", p) else p for p in path.split("."))


def _resolve_dotted(value: Any, segments: tuple[Segment, ...]) -> tuple[bool, Any, str]:
    for i, segment in enumerate(segments):
        if isinstance(segment, int) and isinstance(value, list):
            if not -len(value) <= segment < len(value):
                return False, None, f"index {segment} out of range at {_join(segments[: i + 1])}"
            value = value[segment]
        elif isinstance(value, Mapping) and str(segment) in value:
            value = value[str(segment)]
        else:
            return False, None, f"{_join(segments[: i + 1])!r} missing"
    return True, value, ""


def _join(segments: Iterable[Segment]) -> str:
    return ".".join(map(str, segments))


# ---- PII ----------------------------------------------------------------------------------------

PII_KINDS = ("email", "phone", "card", "cpf", "cnpj")

_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
# Phones need a "+", parentheses or separators: a bare digit run is ambiguous with CPF/card numbers.
_PHONES = (
    re.compile(r"(?<![\w+])\+\d[\d\s().-]{6,20}\d(?!\d)"),  # international / E.164
    re.compile(
        r"(?<![\w(])\(\d{2,3}\)\s?\d{3,5}[\s.-]?\d{4}(?!\d)"
    ),  # (11) 91234-5678, (555) 123-4567
    re.compile(
        r"(?<![\w.-])\d{2,3}[\s.-]\d{3,5}[\s.-]\d{4}(?![\w-])"
    ),  # 11 91234-5678, 555-123-4567
    # A Brazilian mobile without area code; "2019-2020" (4-4) must stay a year range.
    re.compile(r"(?<![\w.-])9\d{4}-\d{4}(?![\w-])"),  # 91234-5678
)
_CARD = re.compile(r"(?<![\d.-])\d(?:[ -]?\d){12,18}(?![\d-])")
_CPF = re.compile(r"(?<![\d./-])(?:\d{3}\.\d{3}\.\d{3}-\d{2}|\d{11})(?![\d./-])")
_CNPJ = re.compile(r"(?<![\d./-])(?:\d{2}\.\d{3}\.\d{3}/\d{4}-\d{2}|\d{14})(?![\d./-])")


def _digits(text: str) -> str:
    return "".join(c for c in text if c.isdigit())


def luhn_valid(number: str) -> bool:
    total = 0
    for i, char in enumerate(reversed(number)):
        d = int(char)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def cpf_valid(number: str) -> bool:
    if len(number) != 11 or len(set(number)) == 1:
        return False
    nums = [int(c) for c in number]
    for n in (9, 10):
        check = sum(nums[i] * (n + 1 - i) for i in range(n)) * 10 % 11 % 10
        if check != nums[n]:
            return False
    return True


def cnpj_valid(number: str) -> bool:
    if len(number) != 14 or len(set(number)) == 1:
        return False
    nums = [int(c) for c in number]
    for n, weights in (
        (12, (5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2)),
        (13, (6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2)),
    ):
        rest = sum(w * d for w, d in zip(weights, nums[:n], strict=True)) % 11
        if nums[n] != (0 if rest < 2 else 11 - rest):
            return False
    return True


def mask(sample: str) -> str:
    """Enough of a match to find it, not enough to leak it."""
    if len(sample) <= 4:
        return "*" * len(sample)
    keep = 2 if len(sample) < 12 else 3
    return sample[:keep] + "*" * (len(sample) - 2 * keep) + sample[-keep:]


def find_pii(text: str, kinds: Iterable[str] = PII_KINDS) -> list[tuple[str, str]]:
    """(kind, matched text) for every PII match of the wanted kinds, in text order per kind."""
    wanted = set(kinds)
    found: list[tuple[int, str, str]] = []
    if "email" in wanted:
        found += [(m.start(), "email", m.group()) for m in _EMAIL.finditer(text)]
    if "phone" in wanted:
        spans: list[tuple[int, int]] = []
        for pattern in _PHONES:
            for m in pattern.finditer(text):
                if any(s <= m.start() < e or m.start() <= s < m.end() for s, e in spans):
                    continue  # one number matched by two patterns is one finding
                if 8 <= len(_digits(m.group())) <= 15:
                    spans.append((m.start(), m.end()))
                    found.append((m.start(), "phone", m.group()))
    if "card" in wanted:
        for m in _CARD.finditer(text):
            digits = _digits(m.group())
            if 13 <= len(digits) <= 19 and luhn_valid(digits):
                found.append((m.start(), "card", m.group()))
    if "cpf" in wanted:
        found += [
            (m.start(), "cpf", m.group())
            for m in _CPF.finditer(text)
            if cpf_valid(_digits(m.group()))
        ]
    if "cnpj" in wanted:
        found += [
            (m.start(), "cnpj", m.group())
            for m in _CNPJ.finditer(text)
            if cnpj_valid(_digits(m.group()))
        ]
    found.sort()
    return [(kind, sample) for _, kind, sample in found]


# ---- validation ---------------------------------------------------------------------------------

_REGEX_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}

# type -> (required fields, optional fields)
_FIELDS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "contains": (frozenset({"value"}), frozenset()),
    "icontains": (frozenset({"value"}), frozenset()),
    "not-contains": (frozenset({"value"}), frozenset()),
    "regex": (frozenset({"pattern"}), frozenset({"flags"})),
    "equals": (frozenset({"value"}), frozenset()),
    "json-valid": (frozenset(), frozenset()),
    "json-path": (frozenset({"path"}), frozenset({"equals", "exists"})),
    "tool-called": (frozenset({"name"}), frozenset()),
    "tool-not-called": (frozenset({"name"}), frozenset()),
    "tool-arg": (frozenset({"tool", "arg", "equals"}), frozenset()),
    "no-pii": (frozenset(), frozenset({"kinds"})),
}

DETERMINISTIC: frozenset[str] = frozenset(_FIELDS)


def check_fields(
    spec: Mapping[str, Any], required: AbstractSet[str], optional: AbstractSet[str], where: str
) -> None:
    """An unknown or missing field of an assertion spec is one error naming it and the rest."""
    kind = spec["type"]
    for field in sorted(set(spec) - required - optional - {"type"}):
        allowed = ", ".join(sorted(required | optional))
        raise _bad(where, field, f"unknown field for {kind!r} (allowed: {allowed})")
    for field in sorted(required - set(spec)):
        raise _bad(where, field, f"missing, {kind!r} needs: {', '.join(sorted(required))}")


def _bad(where: str, field: str, message: str) -> CachelintError:
    return CachelintError(f"{where}: field {field!r}: {message}")


def _need_str(spec: Mapping[str, Any], field: str, where: str) -> str:
    value = spec[field]
    if not isinstance(value, str) or not value:
        raise _bad(where, field, f"expected a non-empty string, got {_show(value)}")
    return value


def validate_assertion(spec: Any, where: str) -> Mapping[str, Any]:
    """A validated copy of one assertion spec; `where` names the file and list position, e.g.
    "eval-datasets/a/b/c.json: assert[2]"."""
    if not isinstance(spec, Mapping):
        raise CachelintError(
            f'{where}: an assertion must be an object like {{"type": "contains", '
            f'"value": "..."}}, got {_show(spec)}'
        )
    kind = spec.get("type")
    if not isinstance(kind, str) or kind not in _FIELDS:
        allowed = ", ".join(sorted(_FIELDS))
        raise _bad(where, "type", f"unknown assertion type {_show(kind)}; allowed: {allowed}")
    required, optional = _FIELDS[kind]
    for field in sorted(set(spec) - required - optional - {"type"}):
        allowed = ", ".join(sorted(required | optional)) or "none"
        raise _bad(where, field, f"unknown field for {kind!r} (allowed: {allowed})")
    for field in sorted(required - set(spec)):
        raise _bad(where, field, f"missing, {kind!r} needs: {', '.join(sorted(required))}")
    out = dict(spec)
    if kind in ("contains", "icontains", "not-contains"):
        _need_str(spec, "value", where)
    elif kind == "regex":
        pattern = _need_str(spec, "pattern", where)
        flags = spec.get("flags", "")
        if not isinstance(flags, str) or set(flags) - set(_REGEX_FLAGS):
            raise _bad(where, "flags", f"expected letters from 'imsx', got {_show(flags)}")
        try:
            re.compile(pattern, _regex_flags(flags))
        except re.error as exc:
            raise _bad(where, "pattern", f"invalid regular expression: {exc}") from None
    elif kind == "json-path":
        path = _need_str(spec, "path", where)
        try:
            parse_json_path(path)
        except ValueError as exc:
            raise _bad(where, "path", f"JSONPath {path!r}: {exc}") from None
        if "equals" in spec and "exists" in spec:
            raise _bad(where, "exists", "give either 'equals' or 'exists', not both")
        if "exists" in spec and not isinstance(spec["exists"], bool):
            raise _bad(where, "exists", f"expected true or false, got {_show(spec['exists'])}")
    elif kind in ("tool-called", "tool-not-called"):
        _need_str(spec, "name", where)
    elif kind == "tool-arg":
        _need_str(spec, "tool", where)
        arg = _need_str(spec, "arg", where)
        if any(not part for part in arg.split(".")):
            raise _bad(where, "arg", f"dotted path {arg!r} has an empty part")
    elif kind == "no-pii" and "kinds" in spec:
        kinds = spec["kinds"]
        if (
            not isinstance(kinds, list)
            or not kinds
            or any(not isinstance(k, str) or k not in PII_KINDS for k in kinds)
        ):
            raise _bad(
                where,
                "kinds",
                f"expected a non-empty list from {', '.join(PII_KINDS)}, got {_show(kinds)}",
            )
    return out


def _regex_flags(letters: str) -> int:
    flags = 0
    for letter in letters:
        flags |= _REGEX_FLAGS[letter]
    return flags


def has_deterministic(assertions: Iterable[Mapping[str, Any]]) -> bool:
    """Whether a scenario checks anything; one without a deterministic assertion fails the run
    ("checks nothing") instead of passing vacuously."""
    return any(spec.get("type") in DETERMINISTIC for spec in assertions)


# ---- evaluation ---------------------------------------------------------------------------------


def _contains(spec: Mapping[str, Any], out: Output) -> tuple[bool, str]:
    value = spec["value"]
    at = out.text.find(value)
    label = f"contains {value!r}"
    if at >= 0:
        return True, f"{label}: found at character {at + 1}"
    return False, f"{label}: not found in response {_snippet(out.text)}"


def _icontains(spec: Mapping[str, Any], out: Output) -> tuple[bool, str]:
    value = spec["value"]
    at = out.text.casefold().find(value.casefold())
    label = f"icontains {value!r}"
    if at >= 0:
        return True, f"{label}: found (ignoring case)"
    return False, f"{label}: not found in response, ignoring case {_snippet(out.text)}"


def _not_contains(spec: Mapping[str, Any], out: Output) -> tuple[bool, str]:
    value = spec["value"]
    at = out.text.find(value)
    label = f"not-contains {value!r}"
    if at < 0:
        return True, f"{label}: absent from response"
    context = out.text[max(0, at - 30) : at + len(value) + 30]
    return False, f"{label}: found at character {at + 1}: {json.dumps(context, ensure_ascii=False)}"


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


def _regex(spec: Mapping[str, Any], out: Output) -> tuple[bool, str]:
    pattern = spec["pattern"]
    label = f"regex {pattern!r}"
    match = search_bounded(pattern, out.text, _regex_flags(spec.get("flags", "")), label)
    if match:
        return True, f"{label}: matched {json.dumps(match.group()[:_SNIPPET], ensure_ascii=False)}"
    return False, f"{label}: no match in response {_snippet(out.text)}"


def _equals(spec: Mapping[str, Any], out: Output) -> tuple[bool, str]:
    value = spec["value"]
    if isinstance(value, str):
        label = f"equals {_show(value)}"
        if out.text == value:
            return True, f"{label}: response is exactly that text"
        pos = next(
            (i for i, (a, b) in enumerate(zip(out.text, value, strict=False)) if a != b),
            min(len(out.text), len(value)),
        )
        return False, f"{label}: response differs at character {pos + 1} {_snippet(out.text)}"
    label = f"equals {_show(value)}"
    parsed, error = _parse_json(out.text)
    if error:
        return False, f"{label}: {error}"
    if json_equal(parsed, value):
        return True, f"{label}: response JSON is equal"
    return False, f"{label}: response JSON is {_show(parsed)}"


def _json_valid(spec: Mapping[str, Any], out: Output) -> tuple[bool, str]:
    parsed, error = _parse_json(out.text)
    if error:
        return False, f"json-valid: {error}"
    return True, f"json-valid: response is JSON ({json_kind(parsed)})"


def _json_path(spec: Mapping[str, Any], out: Output) -> tuple[bool, str]:
    path = spec["path"]
    label = f"json-path {path!r}"
    parsed, error = _parse_json(out.text)
    if error:
        return False, f"{label}: {error}"
    found, value, why = resolve(parsed, parse_json_path(path))
    if "equals" in spec:
        want = spec["equals"]
        if not found:
            return False, f"{label} equals {_show(want)}: {why}"
        if json_equal(value, want):
            return True, f"{label} equals {_show(want)}: it does"
        return False, f"{label} equals {_show(want)}: value is {_show(value)}"
    if spec.get("exists", True):
        if found:
            return True, f"{label} exists: value is {_show(value)}"
        return False, f"{label} exists: {why}"
    if found:
        return False, f"{label} must not exist: value is {_show(value)}"
    return True, f"{label} must not exist: {why}"


def _names(calls: Iterable[ToolCall]) -> str:
    names = [c.name for c in calls]
    return ", ".join(repr(n) for n in names) if names else "no tools"


def _tool_use(spec: Mapping[str, Any], out: Output, *, wanted: bool) -> tuple[bool, str]:
    """tool-called (`wanted`) and tool-not-called: one count, opposite verdicts."""
    kind = "tool-called" if wanted else "tool-not-called"
    name = spec["name"]
    count = sum(1 for c in out.tool_calls if c.name == name)
    if count:
        return wanted, f"{kind} {name!r}: called {count} time(s)"
    return not wanted, f"{kind} {name!r}: not called (called: {_names(out.tool_calls)})"


def _tool_arg(spec: Mapping[str, Any], out: Output) -> tuple[bool, str]:
    tool, arg, want = spec["tool"], spec["arg"], spec["equals"]
    label = f"tool-arg {tool}.{arg} equals {_show(want)}"
    calls = [c for c in out.tool_calls if c.name == tool]
    if not calls:
        return False, f"{label}: {tool!r} not called (called: {_names(out.tool_calls)})"
    seen: list[str] = []
    for call in calls:
        if isinstance(call.arguments, str):
            seen.append(f"arguments are not valid JSON: {_show(call.arguments)}")
            continue
        found, value, why = _resolve_dotted(call.arguments, _dotted(arg))
        if found and json_equal(value, want):
            return True, f"{label}: it does"
        seen.append(f"value is {_show(value)}" if found else why)
    return False, f"{label}: " + "; ".join(seen)


def _no_pii(spec: Mapping[str, Any], out: Output) -> tuple[bool, str]:
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


_EVALUATORS: dict[str, Callable[[Mapping[str, Any], Output], tuple[bool, str]]] = {
    "contains": _contains,
    "icontains": _icontains,
    "not-contains": _not_contains,
    "regex": _regex,
    "equals": _equals,
    "json-valid": _json_valid,
    "json-path": _json_path,
    "tool-called": partial(_tool_use, wanted=True),
    "tool-not-called": partial(_tool_use, wanted=False),
    "tool-arg": _tool_arg,
    "no-pii": _no_pii,
}


def decide(spec: Mapping[str, Any], output: Output) -> tuple[bool, str]:
    """The verdict and reason of one validated spec; `Undecided` when it cannot be told."""
    kind = spec.get("type")
    evaluator = _EVALUATORS.get(kind) if isinstance(kind, str) else None
    if evaluator is None or not isinstance(kind, str):
        raise CachelintError(
            f"unknown assertion type {kind!r}; validate specs with validate_assertion first"
        )
    return evaluator(spec, output)


def evaluate(spec: Mapping[str, Any], output: Output) -> AssertionResult:
    """Evaluate one validated spec against `output`; one that cannot be decided fails."""
    try:
        passed, reason = decide(spec, output)
    except Undecided as exc:
        passed, reason = False, exc.reason
    return AssertionResult(str(spec.get("type")), passed, reason)
