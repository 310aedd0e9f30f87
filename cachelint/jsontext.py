"""Text that JSON allows and UTF-8 does not: lone surrogates.

`"\\ud83d"` is valid JSON and decodes to a Python str holding half a surrogate pair, which no
UTF-8 file, terminal or report can hold: writing it raises UnicodeEncodeError deep inside a
reporter. Such a value is bad data, found where it enters (a cached answer, a live response, a
dataset) and reported there.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

# A lone surrogate can only enter decoded JSON through a `\uD800`-`\uDFFF` escape: UTF-8 text
# cannot hold one raw. A text without such an escape needs no walk over its decoded value.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")


def may_hold_surrogate(text: str | bytes) -> bool:
    """False when the JSON `text` (decoded from UTF-8, or its UTF-8 bytes) cannot decode to a lone
    surrogate; True when `lone_surrogate` must look (an escaped backslash before `ud8..` also
    says True)."""
    if isinstance(text, bytes):
        return _SURROGATE_ESCAPE_BYTES.search(text) is not None
    return _SURROGATE_ESCAPE.search(text) is not None


def lone_surrogate(value: Any) -> str | None:
    """A description of the first lone surrogate in a decoded JSON value (`'\\ud83d' in
    messages[0].content`), or None. Iterative, so deep nesting is no RecursionError."""
    try:
        # The C encoder leaves a lone surrogate raw, and UTF-8 refuses it: a value that encodes
        # holds none, found without walking it in Python (a cached answer is checked per call).
        json.dumps(value, ensure_ascii=False).encode("utf-8")
        return None
    except (UnicodeEncodeError, TypeError, ValueError, RecursionError):
        return _walk(value)


def _walk(value: Any) -> str | None:
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            bad = _first_bad(item)
            if bad is not None:
                return f"{bad!r} in {where or 'the value'}"
        elif isinstance(item, Mapping):
            for key, child in item.items():
                if isinstance(key, str) and _first_bad(key) is not None:
                    return f"{_first_bad(key)!r} in a key of {where or 'the value'}"
                stack.append((child, f"{where}.{key}" if where else str(key)))
        elif isinstance(item, (list, tuple)):
            stack.extend((child, f"{where}[{i}]") for i, child in enumerate(item))
    return None


def _first_bad(text: str) -> str | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return text[exc.start]
    return None
