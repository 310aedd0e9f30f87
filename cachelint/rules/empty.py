"""eval-cache-empty: a configured cache root that is missing or holds no entry.

The offline canary must never pass on an empty set: a root that was renamed, never committed or
emptied by an expiring provider would otherwise look perfectly clean.
"""

from __future__ import annotations

from collections.abc import Iterator

from cachelint.facts import TreeFacts
from cachelint.findings import Finding
from cachelint.meai import EMPTY_ADVICE
from cachelint.paths import is_inside
from cachelint.rules import Rule
from cachelint.sqlite_cache import under
from cachelint.store import CACHE_DIR

CODE = "eval-cache-empty"


def check(facts: TreeFacts) -> Iterator[Finding]:
    for root in facts.config.cache:
        if root in facts.missing_roots:
            yield Finding(
                root,
                CODE,
                f"configured cache root does not exist (config: {facts.config.source}); record "
                "entries into it and commit them, or fix `cache` in the config",
            )
        elif not any(is_inside(d, root) for d in facts.entry_dirs) and not under(facts, root):
            how = "so record and commit entries"
            if root in facts.meai_roots:
                how = "so " + EMPTY_ADVICE.format(root=root)
            yield Finding(
                root,
                CODE,
                f"cache root holds no entries (no {root}/{CACHE_DIR}/.../entry.json); an empty "
                f"cache passes every check while replaying nothing, {how}",
            )


RULE = Rule(CODE, "a configured cache root that is missing or holds no entries", check)
