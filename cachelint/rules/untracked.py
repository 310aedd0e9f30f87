"""eval-cache-untracked: a file under a cache root that git sees but nobody added.

A re-record that is not `git add`ed passes locally and misses in CI.
"""

from __future__ import annotations

from collections.abc import Iterator

from cachelint.display import shell_command
from cachelint.facts import TreeFacts
from cachelint.findings import Finding
from cachelint.rules import Rule
from cachelint.rules.invisible import dotgit_variant

CODE = "eval-cache-untracked"


def check(facts: TreeFacts) -> Iterator[Finding]:
    for path in sorted(facts.untracked):
        if dotgit_variant(path) is not None:
            continue  # git refuses to add it: eval-cache-invisible says how to rename it
        add = shell_command("git", "add", "--", path)
        yield Finding(path, CODE, f"on disk but not committed; run `{add}` (or delete it)")


RULE = Rule(CODE, "a cache file on disk that is not in the index (not ignored either)", check)
