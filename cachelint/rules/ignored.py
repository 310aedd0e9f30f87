"""eval-cache-ignored: a file under a cache root that an ignore rule hides from `git add -A`.

The message names the ignore file and line, from one `git check-ignore -v` over all ignored files:
git, not pathspec, is the truth here (pathspec disagrees on `dir/` + `!dir/keep.json`, where git
cannot re-include a file whose parent directory is excluded).
"""

from __future__ import annotations

from collections.abc import Iterator

from cachelint.facts import TreeFacts
from cachelint.findings import Finding
from cachelint.rules import Rule

CODE = "eval-cache-ignored"


def check(facts: TreeFacts) -> Iterator[Finding]:
    for path in sorted(facts.ignored):
        source = facts.ignore_sources.get(path)
        if source is None:
            where = "an ignore rule (see `git check-ignore -v --no-index -- <path>`)"
        else:
            where = f"{source.source} line {source.line} (`{source.pattern}`)"
        yield Finding(
            path,
            CODE,
            f"ignored by {where}, so it is never committed; remove or narrow that rule (a file "
            "cannot be re-included with `!` when its parent directory is ignored), then `git add`",
        )


RULE = Rule(CODE, "a cache file that an ignore rule keeps out of the commit", check)
