"""eval-cache-unused: entries no scenario reached in the last full run.

A re-record after a prompt change writes a new entry and leaves the old one behind; nothing reads
it again, and years later it expires and fails the check of a tree whose every live scenario is
fine. `cachelint run` records which entries it reached (`cachelint/usage.py`); this rule lists the
others while that record can vouch for the whole suite (an unfiltered run that passed), and says
nothing otherwise. Warnings, so a hook does not block a commit on them; `cachelint check --unused`
fails on them and `cachelint prune` deletes them.
"""

from __future__ import annotations

from collections.abc import Iterator

from cachelint.errors import CachelintError
from cachelint.findings import Finding, Severity
from cachelint.rules import Rule
from cachelint.store import ENTRY_FILE
from cachelint.tree import TreeFacts
from cachelint.usage import FILE, Usage, read_usage, unused_entries

CODE = "eval-cache-unused"


def _usable(facts: TreeFacts) -> Usage | None:
    try:
        usage = read_usage(facts.config)
    except CachelintError:
        return None
    if usage is None or usage.refusal(facts.config.results) is not None:
        return None
    return usage


def usable_usage(facts: TreeFacts) -> Usage | None:
    """The last run's record when it can tell which entries are unused, read once per check."""
    return facts.derived(_usable)


def _unused_dirs(facts: TreeFacts) -> frozenset[str]:
    usage = usable_usage(facts)
    if usage is None:
        return frozenset()
    return frozenset(e.directory for e in unused_entries(facts.entries, usage))


def unused_dirs(facts: TreeFacts) -> frozenset[str]:
    """Directories of the entries the last full run did not reach (empty without a record)."""
    return facts.derived(_unused_dirs)


def check(facts: TreeFacts) -> Iterator[Finding]:
    try:
        read_usage(facts.config)
    except CachelintError as exc:
        yield Finding(f"{facts.config.results}/{FILE}", CODE, str(exc), Severity.WARNING)
        return
    usage = usable_usage(facts)
    if usage is None:
        return
    for entry in unused_entries(facts.entries, usage):
        yield Finding(
            f"{entry.directory}/{ENTRY_FILE}",
            CODE,
            f"unused: no scenario reached this entry in the last full run (execution "
            f"{usage.execution}); `cachelint prune --yes` deletes it",
            Severity.WARNING,
        )


RULE = Rule(CODE, "cache entries no scenario reached in the last full run", check)
