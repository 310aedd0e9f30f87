"""Redaction: `redact` in [tool.cachelint], rules applied before an entry is written.

An email or a customer id in a prompt, or in the model's answer, should never reach the committed
cache. A redaction rule has the shape of a key normaliser (`cachelint.rewrites`: an RE2 `regex`
over the conversation's texts with a `replace`, or a JSON `path` replaced or dropped) and an
optional `in`: "request", "answer" or "both" (the default).

    [[tool.cachelint.redact]]
    name = "email"
    regex = '[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[A-Za-z]{2,}'
    replace = "[email]"

The client redacts each canonical request after the normalisers and before hashing it, at record
and at replay alike, so the key is the redacted request's: a replay of the same prompt (holding
the same value, or another one the rule removes) hits. A regex rule rewrites every string of the
answer (a path rule the values it names), and the redacted answer is the one stored and the one
the target gets, recording or replaying, so verdicts and reports are the same in both. The
conversation a report shows is redacted too.

A rule whose `replace` its own regex matches is refused at load: the stored text would always
look unredacted. The rules' digest goes into the stamp (`redactions`): a change re-keys requests.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import blake3

from cachelint import rewrites

WHERE = ("request", "answer", "both")


@dataclass(frozen=True)
class Redaction:
    rule: rewrites.Rewrite
    where: str = "both"

    @property
    def name(self) -> str:
        return self.rule.name

    def covers(self, part: str) -> bool:
        return self.where in (part, "both")


def parse(value: Any) -> tuple[Redaction, ...]:
    """The `redact` list; ValueError naming the item (config.py adds the key)."""
    if not isinstance(value, list):
        raise ValueError("a list of tables, each with a name and a regex or a path")
    wheres: list[str] = []
    plain: list[Any] = []
    for index, item in enumerate(value):
        if isinstance(item, dict) and "in" in item:
            where = item["in"]
            if where not in WHERE:
                raise ValueError(f"item {index + 1}: 'in' must be one of {', '.join(WHERE)}")
            item = {k: v for k, v in item.items() if k != "in"}
        else:
            where = "both"
        wheres.append(where)
        plain.append(item)
    rules = rewrites.parse_rules(plain)
    for rule in rules:
        if rule.regex is not None and rule.replace and _pattern(rule).search(rule.replace):
            raise ValueError(
                f"rule {rule.name!r}: its regex matches its own 'replace' {rule.replace!r}, so "
                "redacted text would look unredacted; choose a replacement the regex does not match"
            )
    return tuple(Redaction(r, w) for r, w in zip(rules, wheres, strict=True))


def _pattern(rule: rewrites.Rewrite) -> Any:
    assert rule.regex is not None
    return rewrites._compile(rule.regex)


def digest(rules: Sequence[Redaction]) -> str | None:
    """The blake3 of the rules as configured, in order; None when there are none."""
    if not rules:
        return None
    data = [{**r.rule.as_json(), "in": r.where} for r in rules]
    text = json.dumps(data, sort_keys=True, ensure_ascii=False)
    return blake3.blake3(text.encode("utf-8")).hexdigest()


def request(rules: Sequence[Redaction], value: Mapping[str, Any]) -> dict[str, Any]:
    """The canonical request with the request rules applied (a new object)."""
    return rewrites.apply([r.rule for r in rules if r.covers("request")], value)


def messages(rules: Sequence[Redaction], sent: Sequence[Mapping[str, Any]]) -> list[Any]:
    """A conversation as a report shows it, redacted as its request is."""
    out: list[Any] = request(rules, {"messages": list(sent)})["messages"]
    return out


def answer(rules: Sequence[Redaction], value: Any) -> Any:
    """The response with the answer rules applied: a regex to every string in it, a path to
    the values it names (a new object; `value` is left alone)."""
    out = json.loads(json.dumps(value))
    for redaction in rules:
        rule = redaction.rule
        if not redaction.covers("answer"):
            continue
        if rule.regex is not None:
            out = rewrites._sub_all(out, _pattern(rule), rule.replace or "")
        elif rule.path is not None:
            rewrites._at_path(out, rule.path, rule.replace)
    return out


def unredacted(
    rules: Sequence[Redaction], stored_request: Any, response: Any
) -> list[tuple[Redaction, str, str]]:
    """(rule, "request" or "answer", the value masked) for each rule that would still change
    a stored entry."""
    found: list[tuple[Redaction, str, str]] = []
    for rule in rules:
        for part, value in (("request", stored_request), ("answer", response)):
            if not rule.covers(part) or value is None:
                continue
            if part == "request" and isinstance(value, Mapping):
                changed = request([rule], value) != value
                texts = {k: value.get(k) for k in (*rewrites.TEXT_FIELDS, "options")}
            else:
                changed = answer([rule], value) != value
                texts = value
            if changed:
                found.append((rule, part, _masked(rule, texts)))
    return found


def _masked(redaction: Redaction, value: Any) -> str:
    """The first value the rule matches, masked: its first 2 characters and its length."""
    rule = redaction.rule
    if rule.regex is None:
        return f"the value at {rule.shown_path}"
    match = _pattern(rule).search(json.dumps(value, ensure_ascii=False))
    text = match.group(0) if match else ""
    return f"{text[:2]}… ({len(text)} characters)"
