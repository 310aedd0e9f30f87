"""eval-cache-unpinned: a package of the configured family has no single exact pin, so nothing
says which version the cache was recorded under (a range, a missing pin, or two different pins)."""

from __future__ import annotations

from collections.abc import Iterator

from cachelint import pins
from cachelint.facts import TreeFacts
from cachelint.findings import Finding
from cachelint.rules import Rule
from cachelint.stamp import facts_pins, recorded

CODE = "eval-cache-unpinned"


def check(facts: TreeFacts) -> Iterator[Finding]:
    if not recorded(facts):
        return
    try:
        now = facts_pins(facts)
    except pins.PinFileError as exc:
        # An unreadable pin file is a finding, so other rules still run; a bad `pins` key is a
        # ConfigError and propagates (exit 2), like any other configuration mistake.
        path, _, reason = str(exc).partition(": ")
        yield Finding(path, CODE, reason)
        return
    fallback = now.files[0] if now.files else (facts.roots[0] if facts.roots else ".")
    for problem in now.problems:
        yield Finding(problem.source or fallback, CODE, problem.message)


RULE = Rule(CODE, "a family package is not pinned to one exact version", check, group="stamp")
