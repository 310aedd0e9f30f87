"""eval-cache-missing: committed, but gone from the working tree.

MEAI's provider deletes an expired entry's directory on read, so a committed cache can erase
itself; a deleted entry is a miss (or a live call) on the next run. A file a sparse checkout left
out (skip-worktree) is gone too, and is named as such: nothing here can vouch for its bytes.
"""

from __future__ import annotations

from collections.abc import Iterator

from cachelint.display import shell_command
from cachelint.facts import GITLINK, TreeFacts
from cachelint.findings import Finding
from cachelint.rules import Rule

CODE = "eval-cache-missing"


def check(facts: TreeFacts) -> Iterator[Finding]:
    for path in sorted(facts.gone):
        if facts.index[path].mode == GITLINK:
            continue
        if path in facts.skip_worktree:
            yield Finding(
                path,
                CODE,
                "in the index but not checked out: marked skip-worktree, as a sparse checkout "
                "marks what it leaves out, so its bytes cannot be checked here; check the whole "
                "cache out (`git sparse-checkout disable`, or "
                f"`{shell_command('git', 'update-index', '--no-skip-worktree', '--', path)}` "
                f"then `{shell_command('git', 'checkout', '--', path)}`)",
            )
            continue
        yield Finding(
            path,
            CODE,
            f"in the index but deleted from the working tree (an expiring provider deletes "
            f"entries on read); restore it with `{shell_command('git', 'checkout', '--', path)}` "
            "or re-record and commit "
            "the deletion",
        )


RULE = Rule(CODE, "a committed cache file deleted from the working tree", check)
