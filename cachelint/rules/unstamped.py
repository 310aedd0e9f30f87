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
        if stamp.entries == len(state.entries) and stamp.seal == seal(state.root, state.entries):
            continue
        yield Finding(state.path, CODE, _message(facts, state, stamp.entries or 0))


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
    last wrote the stamp, by git; none when the stamp itself is uncommitted or changed (then it
    was written for the working tree) or the history is not there."""
    stamp_path = state.path
    if stamp_path in facts.modified or stamp_path not in facts.index or facts.history is None:
        return []
    cache = f"{state.root.rstrip('/')}/{CACHE_DIR}"
    paths = facts.history(stamp_path, cache)
    if paths is None:
        return []
    paths.update(p for p in facts.untracked if p.startswith(cache + "/"))
    return sorted({p.rpartition("/")[0] for p in paths if p.rpartition("/")[2] in ENTRY_FILES})


RULE = Rule(
    CODE,
    "entries added, removed or changed since the stamp sealed the entry set",
    check,
    group="stamp",
)
