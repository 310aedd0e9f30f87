"""eval-cache-expiring: entries past their expiry (error) or within `expiry-warning-days` of it
(warning). MEAI deletes an expired entry on read and calls the model, so an offline CI run turns
into a live one, or into a failure without credentials."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from operator import attrgetter

from cachelint.config import DEFAULT_TTL_DAYS, Config, Layout
from cachelint.facts import TreeFacts
from cachelint.findings import Finding, Severity
from cachelint.meai import RERECORD_ROOT
from cachelint.rules import Rule
from cachelint.rules.unused import unused_dirs
from cachelint.stamp import entry_count, facts_stamps
from cachelint.store import ENTRY_FILE, Entry, format_time

CODE = "eval-cache-expiring"


def _earliest(entries: list[Entry]) -> tuple[Entry, datetime]:
    first = min(entries, key=lambda e: (e.expires, e.directory))
    assert first.expires is not None
    return first, first.expires


def _which(count: int, root: str) -> str:
    return "this one" + (f" and {count - 1} more under {root}" if count > 1 else "")


def _fix(entries: list[Entry], config: Config, root: str) -> str:
    """The fix that works: re-recording under the same short TTL would only move the date."""
    if any(e.layout is Layout.MEAI for e in entries):
        return (
            "raise `timeToLiveForCacheEntries` (at least "
            f"{config.min_ttl_days} days; {DEFAULT_TTL_DAYS} outlives every branch), then "
            + RERECORD_ROOT.format(root=root)
        )
    longest = max((e.ttl for e in entries if e.ttl is not None), default=None)
    rerecord = "re-record them with `cachelint run --refresh-cache`, then `cachelint stamp`"
    if longest is not None and longest >= timedelta(days=config.ttl_days):
        return (
            f"raise ttl-days (now {config.ttl_days}; the default {DEFAULT_TTL_DAYS} outlives "
            f"every branch) and {rerecord}"
        )
    return f"{rerecord} (ttl-days is now {config.ttl_days})"


def _unused(
    entries: list[Entry], unused: frozenset[str], root: str, what: str, severity: Severity
) -> Iterator[Finding]:
    stale = [e for e in entries if e.directory in unused]
    if stale:
        first, when = _earliest(stale)
        yield Finding(
            f"{first.directory}/{ENTRY_FILE}",
            CODE,
            f"{entry_count(len(stale))} {what}, earliest {format_time(when)} "
            f"({_which(len(stale), root)}), unused: prune it, no scenario reached it in the "
            "last full run (`cachelint prune --yes`)",
            severity,
        )


def check(facts: TreeFacts) -> Iterator[Finding]:
    now = facts.now
    horizon = now + timedelta(days=facts.config.expiry_warning_days)
    for state in facts_stamps(facts):
        # The usual tree, every entry expiring beyond the horizon, is cleared at C speed.
        earliest = min(filter(None, map(attrgetter("expires"), state.entries)), default=None)
        if earliest is None or earliest > max(now, horizon):
            continue
        expired: list[Entry] = []
        soon: list[Entry] = []
        for entry in state.entries:
            if entry.expires is None:
                continue
            if entry.expires <= now:
                expired.append(entry)
            elif entry.expires <= horizon:
                soon.append(entry)
        unused = unused_dirs(facts)
        if unused:
            # Re-recording an entry no scenario reaches would only keep dead weight alive.
            yield from _unused(expired, unused, state.root, "expired", Severity.ERROR)
            yield from _unused(soon, unused, state.root, "expiring soon", Severity.WARNING)
            expired = [e for e in expired if e.directory not in unused]
            soon = [e for e in soon if e.directory not in unused]
        if expired:
            first, when = _earliest(expired)
            meai = any(e.layout is Layout.MEAI for e in expired)
            why = (
                "a MEAI run deletes an expired entry on read and calls the model"
                if meai
                else "a replay that honours expiry would call the model"
            )
            yield Finding(
                f"{first.directory}/{ENTRY_FILE}",
                CODE,
                f"{entry_count(len(expired))} expired, earliest {format_time(when)} "
                f"({_which(len(expired), state.root)}); {why}: "
                + _fix(expired, facts.config, state.root),
            )
        if soon:
            first, when = _earliest(soon)
            yield Finding(
                f"{first.directory}/{ENTRY_FILE}",
                CODE,
                f"{entry_count(len(soon))} expiring within {facts.config.expiry_warning_days} "
                f"days, earliest {format_time(when)} ({_which(len(soon), state.root)}); "
                f"before then, {_fix(soon, facts.config, state.root)}",
                Severity.WARNING,
            )


RULE = Rule(CODE, "cache entries expired or expiring soon", check, group="stamp")
