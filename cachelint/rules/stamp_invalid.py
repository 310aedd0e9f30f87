"""eval-cache-stamp-invalid: the stamp exists but is not valid JSON of the stamp format."""

from __future__ import annotations

from collections.abc import Iterator

from cachelint.facts import TreeFacts
from cachelint.findings import Finding
from cachelint.rules import Rule
from cachelint.stamp import facts_stamps

CODE = "eval-cache-stamp-invalid"


def check(facts: TreeFacts) -> Iterator[Finding]:
    for state in facts_stamps(facts):
        if state.error is not None:
            yield Finding(
                state.path,
                CODE,
                f"invalid stamp: {state.error}; run `cachelint stamp` to rewrite it from the pins "
                "(only if the tree was recorded under the current pins; otherwise re-record first)",
            )


RULE = Rule(CODE, "the version stamp is not valid stamp JSON", check, group="stamp")
