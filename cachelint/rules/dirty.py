"""eval-cache-dirty: committed, but changed in the working tree.

An offline run must write no byte into the committed cache; a changed file means something
re-recorded or rewrote an entry. Compared by content (diff-files, then hash-object for the few
candidates), so a touched or identically rewritten file is not dirty.
"""

from __future__ import annotations

from collections.abc import Iterator

from cachelint.display import shell_command
from cachelint.facts import TreeFacts
from cachelint.findings import Finding
from cachelint.rules import Rule

CODE = "eval-cache-dirty"


def check(facts: TreeFacts) -> Iterator[Finding]:
    for path in sorted(facts.modified):
        yield Finding(
            path,
            CODE,
            f"changed in the working tree since it was staged; commit the re-record with "
            f"`{shell_command('git', 'add', '--', path)}`, or undo the write with "
            f"`{shell_command('git', 'checkout', '--', path)}` and find "
            "what wrote into the cache",
        )


RULE = Rule(CODE, "a committed cache file whose content changed in the working tree", check)
