"""eval-cache-unused: entries their owner's last full pass did not reach.

A re-record after a prompt change writes a new entry and leaves the old one behind; nothing reads
it again, and years later it expires and fails the check of a tree whose every live scenario is
fine. Each front door records which entries its last full pass reached (`cachelint/usage.py`):
`cachelint run` for the datasets' entries, the pytest plugin for its eval tests'. This rule lists
an entry only when its owner's record can vouch for the whole of that front door (a full pass
that passed, borne out by its results) and no front door reached it; about an owner without such
a pass it says nothing. Warnings, so a hook does not block a commit on them; `cachelint check
--unused` fails on them and `cachelint prune` deletes them.
"""

from __future__ import annotations

from collections.abc import Iterator

from cachelint.facts import TreeFacts
from cachelint.findings import Finding, Severity
from cachelint.frontdoors import FrontDoor
from cachelint.rules import Rule
from cachelint.store import ENTRY_FILE
from cachelint.usage import Judgement, judge

CODE = "eval-cache-unused"


def _judgement(facts: TreeFacts) -> Judgement:
    return judge(facts.config, facts.entries, vouched_only=True)


def judgement(facts: TreeFacts) -> Judgement:
    """Which entries are unused, per owner, worked out once per check."""
    return facts.derived(_judgement)


def _unused_dirs(facts: TreeFacts) -> frozenset[str]:
    return frozenset(e.directory for e in judgement(facts).unused)


def unused_dirs(facts: TreeFacts) -> frozenset[str]:
    """Directories of the entries their owner's last full pass did not reach."""
    return facts.derived(_unused_dirs)


def check(facts: TreeFacts) -> Iterator[Finding]:
    found = judgement(facts)
    for where, error in found.errors:
        yield Finding(where, CODE, error, Severity.WARNING)
    for entry in found.unused:
        usage = found.passes[found.owners[entry.directory]]
        if usage.front_door is FrontDoor.RUN:
            last = (
                f"no scenario reached this entry in the last full run (execution {usage.execution})"
            )
        else:
            last = (
                "no eval test reached this entry in the last full `pytest -m eval` (session "
                f"{usage.execution})"
            )
        yield Finding(
            f"{entry.directory}/{ENTRY_FILE}",
            CODE,
            f"unused: {last}; `cachelint prune --yes` deletes it",
            Severity.WARNING,
        )


RULE = Rule(CODE, "cache entries their owner's last full pass did not reach", check)
