"""JSON values as assertions see them: equality where 1 equals 1.0 but not true, the kind of a
value for messages, and the two paths into a value: the JSONPath subset of `json-path`
(`$.a.b[0]`, `$['key']`, `[-1]`) and the dotted paths of tool arguments (`a.b.0`)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any


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


# JSONPath subset: $.a.b[0].c, $['key'], $["key"], [-1]
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


def resolve_dotted(value: Any, path: str) -> tuple[bool, Any, str]:
    """Walk a tool argument's dotted path (`a.b.0.c`: numeric parts index arrays) into `value`."""
    segments = [int(p) if re.fullmatch(r"-?\d+", p) else p for p in path.split(".")]
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
