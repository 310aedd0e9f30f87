"""eval-cache-corrupt: an entry that cannot be replayed as recorded.

entry.json invalid for its layout, contents.data missing (or entry.json missing beside it), a full
key that does not start with its directory name, or a temp file left by an interrupted atomic
write. A corrupt entry is an error, never a silent live call.
"""

from __future__ import annotations

from collections.abc import Iterator

from cachelint.findings import Finding
from cachelint.rules import Rule
from cachelint.tree import TreeFacts

CODE = "eval-cache-corrupt"


def check(facts: TreeFacts) -> Iterator[Finding]:
    for path, reason in sorted(facts.corrupt):
        yield Finding(path, CODE, reason)


RULE = Rule(CODE, "an unreadable entry, a half-written pair or a leftover temp file", check)
