"""eval-cache-normalisers-changed: the key normalisers are not the ones the tree was stamped under.

A normaliser (`normalise` in [tool.cachelint], `cachelint.rewrites`) rewrites each request before
it is keyed, so adding, removing or changing one re-keys every request it touches: entries
recorded under the old rules miss in replay. `cachelint stamp` writes the rules' digest into the
stamp; a config whose rules differ makes the stamp stale until the tree is re-recorded and
re-stamped under them.
"""

from __future__ import annotations

from collections.abc import Iterator

from cachelint.findings import Finding
from cachelint.rewrites import digest
from cachelint.rules import Rule
from cachelint.stamp import facts_stamps
from cachelint.tree import TreeFacts

CODE = "eval-cache-normalisers-changed"


def _shown(value: str | None) -> str:
    return f"digest {value[:12]}" if value else "none"


def check(facts: TreeFacts) -> Iterator[Finding]:
    now = digest(facts.config.normalise)
    for state in facts_stamps(facts):
        stamp = state.stamp
        if stamp is None or stamp.normalisers == now:
            continue  # no stamp, or an invalid one: the other stamp rules say so
        yield Finding(
            state.path,
            CODE,
            f"the key normalisers changed since `cachelint stamp` (stamped: "
            f"{_shown(stamp.normalisers)}, {facts.config.source} `normalise`: {_shown(now)}): "
            "requests they touch are keyed differently, so entries recorded before miss in "
            "replay; re-record (`cachelint run --refresh-cache`), then run `cachelint stamp` and "
            "commit both, or restore the previous rules",
        )


RULE = Rule(
    CODE,
    "the key normalisers differ from the ones the tree was stamped under",
    check,
    group="stamp",
)
