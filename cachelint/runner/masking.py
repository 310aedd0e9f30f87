"""The configured API keys' values masked in a run's results, before any report is made of them.

Every output of `cachelint run` (the text and JSON on stdout, run.json, the results files, the
HTML page, JUnit, the step summary) renders the `ScenarioResult`s the engine returns, so masking
them once, as each lands, covers every format: none of them can print a key a dataset's input, a
miss explanation or an answer carries, whatever its shape (`credentials.configured_keys`: a
company's `mycorp-...` key matches no provider pattern). A key cut short where a message
shortens a value (`'... token mycorp-3f9a0c...'`) is masked too: the part shown is most of it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from cachelint.masks import MIN_KEY_LENGTH, mask

T = TypeVar("T")
# A key's first characters that count as the key cut short: more than a provider's prefix
# (`sk-proj-`), so its name in an answer is not masked, and most of a random key.
_PARTIAL = 12

# A scenario's names stay as they are: the results file's path and every report's identity are
# built from them (`cachelint check`'s secret rule reports a key in a file name).
_NAMES = frozenset({"identity", "path", "agent", "tenant", "name", "origin", "column"})


class Masker:
    """Masks the configured `keys` in strings, JSON-like values and frozen dataclasses, leaving
    every object without a key as the same object (a result without one costs a walk, no copy)."""

    def __init__(self, keys: Sequence[str]) -> None:
        # Longest first, so a key that begins with a shorter one is masked whole.
        self._keys = sorted({k for k in keys if len(k) >= MIN_KEY_LENGTH}, key=len, reverse=True)

    def __bool__(self) -> bool:
        return bool(self._keys)

    def text(self, value: str) -> str:
        """`value` with each key masked, and each run of at least `_PARTIAL` of a key's first
        characters (a key cut short), whatever follows it."""
        for key in self._keys:
            start = key[:_PARTIAL]
            at = value.find(start)
            while at != -1:
                end = at + len(start)
                while end - at < len(key) and end < len(value) and value[end] == key[end - at]:
                    end += 1
                shown = mask(key)
                value = value[:at] + shown + value[end:]
                at = value.find(start, at + len(shown))
        return value

    def value(self, value: T, depth: int = 0) -> T:
        """`value` with every key masked in its strings (mapping keys too), to any depth JSON
        reaches (deeper than 200 levels is left alone, as the secret scan leaves it)."""
        out: Any = value
        if isinstance(value, str):
            out = self.text(value)
        elif depth > 200 or value is None or isinstance(value, (bool, int, float)):
            return value
        elif isinstance(value, Mapping):
            items = [(self.value(k, depth + 1), self.value(v, depth + 1)) for k, v in value.items()]
            if any(
                a is not k or b is not v
                for (a, b), (k, v) in zip(items, value.items(), strict=True)
            ):
                out = dict(items)
        elif isinstance(value, (list, tuple)):
            masked = [self.value(v, depth + 1) for v in value]
            if any(a is not b for a, b in zip(masked, value, strict=True)):
                out = type(value)(masked) if type(value) in (list, tuple) else masked
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            out = self._dataclass(value, depth)
        return out

    def _dataclass(self, value: Any, depth: int) -> Any:
        changed = {}
        for f in dataclasses.fields(value):
            if not f.init or f.name in _NAMES:
                continue
            old = getattr(value, f.name)
            new = self.value(old, depth + 1)
            if new is not old:
                changed[f.name] = new
        return dataclasses.replace(value, **changed) if changed else value
