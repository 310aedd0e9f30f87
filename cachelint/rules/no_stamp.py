"""eval-cache-no-stamp: a cache root with entries but no stamp of the versions it was recorded
under, so nobody can tell when a package upgrade silently changed the cache keys."""

from __future__ import annotations

from collections.abc import Iterator

from cachelint.facts import TreeFacts
from cachelint.findings import Finding
from cachelint.rules import Rule
from cachelint.sqlite_cache import under
from cachelint.stamp import facts_stamps

CODE = "eval-cache-no-stamp"


def check(facts: TreeFacts) -> Iterator[Finding]:
    for state in facts_stamps(facts):
        if (state.entries or under(facts, state.root)) and not state.present:
            yield Finding(
                state.path,
                CODE,
                f"missing: {_what(facts, state.root, len(state.entries))} under {state.root} but "
                "no record of the "
                "package versions they were recorded under; re-record the tree, then run "
                "`cachelint stamp`",
            )


def _what(facts: TreeFacts, root: str, entries: int) -> str:
    databases = [c.path for c in under(facts, root)]
    return " and ".join([f"{entries} entries"] * bool(entries or not databases) + databases)


RULE = Rule(CODE, "a cache root with entries has no version stamp", check, group="stamp")
