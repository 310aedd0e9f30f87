"""Rules that rewrite a canonical request before it is keyed: `normalise` in [tool.cachelint].

A request holding today's date or a fresh id misses on every replay. A normaliser names what
varies and what to put in its place, and the client applies the rules to the canonical request
(`runner.request`) before hashing it, so `Today is 2026-12-02` and `Today is 2026-12-03` have one
key, and the entry stores the normalised request (what a miss message compares). Two kinds:

    normalise = [
      { name = "today", regex = 'Today is \\d{4}-\\d{2}-\\d{2}', replace = "Today is <DATE>" },
      { name = "request-id", path = "$.options.metadata.request_id", replace = "<ID>" },
      { name = "user", path = "$.options.user" },            # no replace: the field is dropped
    ]

- `regex`: an RE2 pattern (linear time, whatever the pattern: a config is read by every hook
  run) applied to every text of the conversation -- `messages`, `input` and `contents`, and the
  `system` and `instructions` options -- with `replace` (`\\1` names a group; default "").
- `path`: a JSON path into the canonical request (`$.a.b`, `$.messages[0].content`, `[*]` for
  every item): each value found is replaced by `replace`, or removed when there is none.

The rules' digest (`digest`) goes into the stamp: changing a normaliser re-keys entries, so a
stamp written under other rules is stale (`eval-cache-normalisers-changed`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import blake3

MAX_PATTERN = 1024
# The texts a regex rule rewrites: the conversation and the prompt options.
TEXT_FIELDS = ("messages", "input", "contents")
TEXT_OPTIONS = ("system", "instructions")
_STEP = re.compile(r"\.([A-Za-z0-9_-]+)|\[(\d+|\*)\]")
_GROUP_REF = re.compile(r"\\(\d+)")
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")


@dataclass(frozen=True)
class Rewrite:
    name: str
    regex: str | None = None
    path: tuple[str | int, ...] | None = None  # steps; "*" is every item of a list
    replace: str | None = None
    shown_path: str = ""

    def as_json(self) -> dict[str, Any]:
        kind = {"regex": self.regex} if self.regex is not None else {"path": self.shown_path}
        replace = {"replace": self.replace} if self.replace is not None else {}
        return {"name": self.name, **kind, **replace}


def parse_path(text: str) -> tuple[str | int, ...]:
    """`$.a.b[0][*]` as steps; ValueError saying what a path looks like."""
    if not text.startswith("$"):
        raise ValueError(f"path {text!r}: a JSON path starting with $ (e.g. $.options.user)")
    steps: list[str | int] = []
    at = 1
    while at < len(text):
        match = _STEP.match(text, at)
        if match is None:
            raise ValueError(
                f"path {text!r}: expected .field, [index] or [*] at character {at + 1}"
            )
        field, index = match.groups()
        steps.append(field if field is not None else ("*" if index == "*" else int(index)))
        at = match.end()
    if not steps:
        raise ValueError(f"path {text!r}: names the whole request; name a field in it")
    return tuple(steps)


def _compile(pattern: str) -> Any:
    import re2

    if len(pattern) > MAX_PATTERN:
        raise ValueError(f"a regex of at most {MAX_PATTERN} characters")
    options = re2.Options()
    options.log_errors = False  # RE2 would also print the error to stderr, through absl
    try:
        return re2.compile(pattern, options)
    except Exception as exc:  # re2 raises its own error type for a bad pattern
        why = exc.args[0] if exc.args else exc
        shown = why.decode("utf-8", "replace") if isinstance(why, bytes) else str(why)
        raise ValueError(f"regex {pattern!r} is not a valid RE2 pattern ({shown})") from None


def _rule(item: Any, index: int) -> Rewrite:
    if not isinstance(item, dict):
        raise ValueError(f"item {index + 1}: a table with name and regex or path")
    unknown = sorted(set(item) - {"name", "regex", "path", "replace"})
    if unknown:
        raise ValueError(f"item {index + 1}: unknown field {unknown[0]!r}")
    name = item.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"item {index + 1}: 'name' must be lowercase letters, digits, - or _")
    regex, path, replace = item.get("regex"), item.get("path"), item.get("replace")
    if (regex is None) == (path is None):
        raise ValueError(f"rule {name!r}: give exactly one of 'regex' and 'path'")
    if replace is not None and not isinstance(replace, str):
        raise ValueError(f"rule {name!r}: 'replace' must be a string")
    if regex is not None:
        if not isinstance(regex, str) or not regex:
            raise ValueError(f"rule {name!r}: 'regex' must be a non-empty string")
        try:
            groups = _compile(regex).groups
        except ValueError as exc:
            raise ValueError(f"rule {name!r}: {exc}") from None
        refs = [int(n) for n in _GROUP_REF.findall(replace or "")]
        if any(n > groups for n in refs):
            raise ValueError(
                f"rule {name!r}: 'replace' {replace!r} names group {max(refs)}, and the regex "
                f"has {groups}"
            )
        return Rewrite(name, regex=regex, replace=replace)
    if not isinstance(path, str):
        raise ValueError(f"rule {name!r}: 'path' must be a string")
    return Rewrite(name, path=parse_path(path), replace=replace, shown_path=path)


def parse_rules(value: Any) -> tuple[Rewrite, ...]:
    """A `normalise` (or `redact`) list; ValueError naming the item (config.py adds the key)."""
    if not isinstance(value, list):
        raise ValueError("a list of tables, each with a name and a regex or a path")
    rules = tuple(_rule(item, i) for i, item in enumerate(value))
    names = [r.name for r in rules]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise ValueError(f"two rules are named {dup!r}")
    return rules


def digest(rules: Sequence[Rewrite]) -> str | None:
    """The blake3 of the rules as configured, in order; None when there are none."""
    if not rules:
        return None
    text = json.dumps([r.as_json() for r in rules], sort_keys=True, ensure_ascii=False)
    return blake3.blake3(text.encode("utf-8")).hexdigest()


def apply(rules: Sequence[Rewrite], request: Mapping[str, Any]) -> dict[str, Any]:
    """`request` with every rule applied in order (a new object; `request` is left alone)."""
    out: dict[str, Any] = json.loads(json.dumps(request))
    for rule in rules:
        if rule.regex is not None:
            pattern = _compile(rule.regex)
            for field in TEXT_FIELDS:
                if field in out:
                    out[field] = _sub_all(out[field], pattern, rule.replace or "")
            options = out.get("options")
            for name in TEXT_OPTIONS:
                if isinstance(options, dict) and name in options:
                    options[name] = _sub_all(options[name], pattern, rule.replace or "")
        elif rule.path is not None:
            _at_path(out, rule.path, rule.replace)
    return out


def _sub_all(value: Any, pattern: Any, replace: str) -> Any:
    if isinstance(value, str):
        return pattern.sub(replace, value)
    if isinstance(value, list):
        return [_sub_all(v, pattern, replace) for v in value]
    if isinstance(value, dict):
        return {k: _sub_all(v, pattern, replace) for k, v in value.items()}
    return value


def _at_path(node: Any, steps: Sequence[str | int], replace: str | None) -> None:
    """Replace (or remove, when `replace` is None) the values at `steps` below `node`."""
    step, rest = steps[0], steps[1:]
    if step == "*":
        keys: list[Any] = list(range(len(node))) if isinstance(node, list) else []
    elif isinstance(step, int):
        keys = [step] if isinstance(node, list) and step < len(node) else []
    else:
        keys = [step] if isinstance(node, dict) and step in node else []
    for key in reversed(keys):  # removing from a list: from the end
        if rest:
            _at_path(node[key], rest, replace)
        elif replace is None:
            del node[key]
        else:
            node[key] = replace
