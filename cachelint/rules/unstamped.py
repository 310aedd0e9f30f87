"""eval-cache-unstamped: the entries under a cache root are not the set its stamp sealed.

An entry deleted with `git rm -r` and committed leaves no trace in the tree for the other rules to
see: nothing is missing, dirty or corrupt. The stamp's seal (`cachelint.stamp.seal`) is the
record of what was there, so any entry added, removed or changed since `cachelint stamp` shows up
here. The entries are named from git history when it has them: what changed under the root since
the commit that last wrote the stamp (a shallow clone may not have it; then only the counts are
given). A stamp written before seals existed gives a warning to re-stamp, not an error.
"""

from __future__ import annotations

from collections.abc import Iterator

from cachelint.facts import TreeFacts
from cachelint.findings import Finding, Severity
from cachelint.rules import Rule
from cachelint.rules.sqlite_cassette import sealed_findings
from cachelint.stamp import RootStamp, facts_stamps, seal
from cachelint.store import CACHE_DIR, ENTRY_FILES

CODE = "eval-cache-unstamped"
NAMED = 10  # entry directories a finding names; the rest are counted


def check(facts: TreeFacts) -> Iterator[Finding]:
    broken = {state.path for state in unsealed(facts)}
    for state in facts_stamps(facts):
        stamp = state.stamp
        if stamp is None:
            continue  # no stamp, or an invalid one: the other stamp rules say so
        if stamp.seal is None:
            yield Finding(
                state.path,
                CODE,
                "this stamp has no seal of the entry set (written by an older cachelint), so a "
                "deleted or changed entry cannot be detected; run `cachelint stamp` and commit it",
                Severity.WARNING,
            )
            continue
        yield from sealed_findings(facts, state, CODE)  # the root's SQLite cassettes
        if state.path in broken:
            yield Finding(state.path, CODE, _message(facts, state, stamp.entries or 0))


def unsealed(facts: TreeFacts) -> list[RootStamp]:
    """The roots whose stamp has a seal that no longer seals their entries, computed once per
    check (collect asks git's history about them, this rule reports them)."""
    return facts.derived(_unsealed)


def _unsealed(facts: TreeFacts) -> list[RootStamp]:
    return [
        state
        for state in facts_stamps(facts)
        if state.stamp is not None
        and state.stamp.seal is not None
        and (
            state.stamp.entries != len(state.entries)
            or state.stamp.seal != seal(state.root, state.entries)
        )
    ]


def cache_dir(state: RootStamp) -> str:
    """The directory under which a root's entries lie."""
    return f"{state.root.rstrip('/')}/{CACHE_DIR}"


def _message(facts: TreeFacts, state: RootStamp, stamped: int) -> str:
    changed = _changed_since_stamp(facts, state)
    what = f"{len(state.entries)} entries now, {stamped} when stamped"
    if changed:
        named = ", ".join(changed[:NAMED])
        more = f" and {len(changed) - NAMED} more" if len(changed) > NAMED else ""
        what += f"; changed since the stamp was committed: {named}{more}"
    return (
        f"entries were added, removed or changed since `cachelint stamp` ({what}); if that was a "
        "deliberate re-record, run `cachelint stamp` and commit the stamp with it, else restore "
        "the entries (`git checkout` or `git revert`)"
    )


def _changed_since_stamp(facts: TreeFacts, state: RootStamp) -> list[str]:
    """Entry directories under the root that differ between the working tree and the commit that
    last wrote the stamp, by git (`TreeFacts.stamp_changes`); none when the stamp itself is
    uncommitted or changed (then it was written for the working tree) or the history is not
    there."""
    changed = facts.stamp_changes.get(state.path)
    if changed is None:
        return []
    cache = cache_dir(state)
    paths = changed | {p for p in facts.untracked if p.startswith(cache + "/")}
    return sorted({p.rpartition("/")[0] for p in paths if p.rpartition("/")[2] in ENTRY_FILES})


def asks_history(facts: TreeFacts, state: RootStamp) -> bool:
    """Whether git's history is asked about an unsealed root: only when its stamp is committed
    and unchanged (else it was written for the working tree, not a commit)."""
    return state.path not in facts.modified and state.path in facts.index


RULE = Rule(
    CODE,
    "entries added, removed or changed since the stamp sealed the entry set",
    check,
    group="stamp",
)
