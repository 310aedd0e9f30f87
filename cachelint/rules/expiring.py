"""eval-cache-expiring: entries past their expiry (error) or within `expiry-warning-days` of it
(warning). MEAI deletes an expired entry on read and calls the model, so an offline CI run turns
into a live one, or into a failure without credentials."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta

from cachelint.config import Layout
from cachelint.findings import Finding, Severity
from cachelint.rules import Rule
from cachelint.stamp import entry_count, facts_stamps
from cachelint.store import ENTRY_FILE, Entry, format_time
from cachelint.tree import TreeFacts

CODE = "eval-cache-expiring"


def _earliest(entries: list[Entry]) -> tuple[Entry, datetime]:
    first = min(entries, key=lambda e: (e.expires, e.directory))
    assert first.expires is not None
    return first, first.expires


def _which(count: int, root: str) -> str:
    return "this one" + (f" and {count - 1} more under {root}" if count > 1 else "")


def check(facts: TreeFacts) -> Iterator[Finding]:
    now = facts.now
    horizon = now + timedelta(days=facts.config.expiry_warning_days)
    for state in facts_stamps(facts):
        expired: list[Entry] = []
        soon: list[Entry] = []
        for entry in state.entries:
            if entry.expires is None:
                continue
            if entry.expires <= now:
                expired.append(entry)
            elif entry.expires <= horizon:
                soon.append(entry)
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
                f"({_which(len(expired), state.root)}); {why}: re-record them "
                f"with a TTL of at least {facts.config.min_ttl_days} days",
            )
        if soon:
            first, when = _earliest(soon)
            yield Finding(
                f"{first.directory}/{ENTRY_FILE}",
                CODE,
                f"{entry_count(len(soon))} expiring within {facts.config.expiry_warning_days} "
                f"days, earliest {format_time(when)} ({_which(len(soon), state.root)}); "
                f"re-record them with a TTL of at least {facts.config.min_ttl_days} days "
                "before then",
                Severity.WARNING,
            )


RULE = Rule(CODE, "cache entries expired or expiring soon", check, group="stamp")
