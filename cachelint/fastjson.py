"""The standard `json` module's values and bytes, by orjson where orjson gives the very same.

A replay decodes two cache files and a dataset file per scenario and encodes a results document,
and orjson does each three to five times as fast. Where the two part, `json` decides, so every
value, every byte and every error stays `json`'s own.

Decoding (`loads`):

- an integer beyond 64 bits orjson reads as a float: text holding a run of 19 digits or more
  (wherever it stands, in a string too) goes to `json.loads`, found by a byte translation (a
  regular expression took longer than orjson's whole decoding);
- nesting: `json.loads` raises RecursionError some way below the interpreter's recursion limit
  (1,000 less the frames already on the stack), orjson reads up to 1,024 levels: text with 500
  or more `[` and `{` (wherever they stand) goes to `json.loads` unless orjson writes its value
  again (orjson writes at most 254 levels);
- NaN, Infinity, a number too large for a double, a lone surrogate's escape: orjson refuses them,
  and `json.loads` reads the text again (and accepts them, or raises its own error).
Floats read alike: both round correctly.

Encoding (`dumps_compact`, what `display.json_dumps(..., compact=True)` writes): orjson sorts
keys in code-point order and escapes strings as `json.dumps` does with `ensure_ascii=False`
(quote, backslash, the five short forms, other C0 controls as lowercase `\\u00xx`); it writes
floats its own way, so each float it spells otherwise goes in as the text `json.dumps` writes
for it (`_spelt`). Any value but str, int, float, bool, None and dicts with str keys, lists and
tuples of them, an integer beyond 64 bits, a lone surrogate or nesting orjson refuses:
`json.dumps` writes it (or raises).
`tests/test_fastjson.py` compares both ways on random documents.
"""

from __future__ import annotations

import codecs
import json
import math
from collections.abc import Callable
from typing import Any

import orjson

from cachelint.display import escape_json_unsafe, json_dumps  # its very escapes

# A digit maps to "0", any other byte to itself: a run of 19 digits is then 19 zeros.
_DIGITS = bytes.maketrans(b"0123456789", b"0" * 10)
_LONG_NUMBER = b"0" * 19
_NESTING_MAX = 500


def _orjson_reads_alike(data: bytes) -> bool:
    """Whether orjson reads JSON text `data` (UTF-8) as `json.loads` does, when it reads it and
    the value is not nested too deeply (`_shallow`): no run of 19 digits (scanned in C, not by a
    regex)."""
    return _LONG_NUMBER not in data.translate(_DIGITS)


def _shallow(data: bytes, value: Any) -> bool:
    """Whether `value`, read from `data`, nests well below where `json.loads` raises: fewer than
    `_NESTING_MAX` brackets in the text, or else (a run summary's thousands) orjson writes it
    again, which it refuses from 255 levels on (in C, where a walk of the value in Python took
    longer than `json.loads`)."""
    if data.count(b"[") + data.count(b"{") < _NESTING_MAX:
        return True
    try:
        orjson.dumps(value)
    except orjson.JSONEncodeError:
        return False
    return True


def loads(
    text: str, *, parse_constant: Callable[[str], Any] | None = None, raw: bytes | None = None
) -> Any:
    """`json.loads(text, parse_constant=...)`: the same value, or the same exception (orjson
    reads no constant: text holding one is read by `json.loads`). `raw`: the bytes `text` was
    decoded from, when at hand (looked at instead of encoding `text` again)."""
    data = raw if raw is not None else text.encode("utf-8", "surrogatepass")
    if _orjson_reads_alike(data):
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            pass  # json.loads reads it (NaN, a lone surrogate) or raises its own error
        else:
            if _shallow(data, value):
                return value
    return json.loads(text, parse_constant=parse_constant)


def utf8_sig_text(raw: bytes) -> str:
    """`raw.decode("utf-8-sig")`: the same text or the same error, without that codec's Python
    layer when there is no byte-order mark."""
    if not raw.startswith(codecs.BOM_UTF8):
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            pass  # raised again below, naming the codec asked for
    return raw.decode("utf-8-sig")


class _Other(Exception):
    """A value only `json.dumps` writes as it does."""


def _float_text(value: float) -> orjson.Fragment:
    """The float as `json.dumps` writes it (allow_nan: NaN and Infinity spelt so)."""
    if math.isfinite(value):
        return orjson.Fragment(float.__repr__(value))
    return orjson.Fragment("NaN" if value != value else "Infinity" if value > 0 else "-Infinity")


_SCALARS = frozenset({str, int, bool, type(None)})


def _spelt(container: Any) -> Any:
    """`container` (a dict, list or tuple) as orjson should be given it: itself when orjson
    writes every value in it as `json.dumps` does, else a copy with each float orjson spells
    otherwise (compared, not assumed: a latency below 1e-4 is `9e-05` to json, `0.00009` to
    orjson) as json's text, only the containers on the way to one copied; `_Other` for a type
    orjson does not write as `json.dumps` does. A key that is not exactly str orjson refuses.
    A results document is a few rates and latencies among strings: copying every node, as this
    once did, took 1.3 to 1.5 times the instructions of this walk."""
    is_dict = type(container) is dict
    out = container
    for place, item in container.items() if is_dict else enumerate(container):
        kind = type(item)
        if kind in _SCALARS:
            continue
        if kind is dict or kind is list or kind is tuple:
            new = _spelt(item)
        elif kind is float:
            new = item if orjson.dumps(item) == float.__repr__(item).encode() else _float_text(item)
        else:
            raise _Other
        if new is not item:
            if out is container:
                out = dict(container) if is_dict else list(container)
            out[place] = new
    return out


def dumps_compact(document: Any) -> str:
    """`display.json_dumps(document, compact=True)`, the same text."""
    try:
        text = orjson.dumps(_spelt([document])[0], option=orjson.OPT_SORT_KEYS).decode("utf-8")
    except (_Other, orjson.JSONEncodeError, RecursionError):
        return json_dumps(document, compact=True)
    return escape_json_unsafe(text)
