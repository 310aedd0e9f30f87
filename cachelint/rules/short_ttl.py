"""eval-cache-short-ttl: entries (or the stamp) with a time to live under `min-ttl-days`.

A committed cache must outlive the release cycle. MEAI's DiskBasedResponseCacheProvider deletes an
entry on the first read after its expiration and calls the model instead, and its default TTL is
14 days, so a committed MEAI tree erases itself two weeks after recording.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from itertools import repeat
from operator import attrgetter, is_, sub

from cachelint.config import Layout
from cachelint.facts import TreeFacts
from cachelint.findings import Finding
from cachelint.meai import RERECORD_ROOT
from cachelint.rules import Rule
from cachelint.stamp import facts_stamps
from cachelint.store import ENTRY_FILE, Entry

CODE = "eval-cache-short-ttl"
_HOUR = timedelta(hours=1)


def days(ttl: timedelta) -> str:
    value = ttl / timedelta(days=1)
    return (
        f"{value:g} day" + ("" if value == 1 else "s")
        if value == int(value)
        else f"{value:.2f} days"
    )


def _all_long(entries: list[Entry], floor: timedelta) -> bool:
    """Whether every entry has both times and a TTL of at least `floor`: the usual tree, cleared
    at C speed (map and attrgetter) instead of a Python loop per entry."""
    created = list(map(attrgetter("created"), entries))
    expires = list(map(attrgetter("expires"), entries))
    if None in created or None in expires:
        return False  # the loop decides entry by entry
    return min(map(sub, expires, created), default=floor) >= floor


def check(facts: TreeFacts) -> Iterator[Finding]:
    minimum = facts.config.min_ttl_days
    floor = timedelta(days=minimum)
    for state in facts_stamps(facts):
        layouts = map(attrgetter("layout"), state.entries)
        has_native = any(map(is_, layouts, repeat(Layout.CACHELINT)))
        # (layout, ttl) -> (count, first entry): one finding per distinct TTL, not per entry.
        short: dict[tuple[Layout, timedelta], tuple[int, Entry]] = {}
        for entry in () if _all_long(state.entries, floor) else state.entries:
            ttl = entry.ttl
            if ttl is None or ttl >= floor:
                continue
            # Whole hours: if a writer stamps creation and expiration with separate clock reads,
            # sub-second differences must not split one TTL into 100k groups.
            group = (entry.layout, timedelta(hours=round(ttl / _HOUR)))
            seen = short.get(group)
            if seen is None:
                short[group] = (1, entry)
            else:
                count, sample = seen
                short[group] = (count + 1, entry if entry.directory < sample.directory else sample)
        stamp = state.stamp
        if stamp is not None and stamp.ttl_days < minimum and (has_native or not state.entries):
            yield Finding(
                state.path,
                CODE,
                f"ttlDays {stamp.ttl_days} is under min-ttl-days {minimum}: entries recorded "
                f"with it expire in CI; set ttl-days to at least {minimum}, re-record, then run "
                "`cachelint stamp`",
            )
        for (layout, ttl), (count, sample) in sorted(short.items(), key=lambda kv: kv[0][1]):
            others = f" (and {count - 1} more under {state.root})" if count > 1 else ""
            if layout is Layout.MEAI:
                text = (
                    f"TTL (expiration - creation) is {days(ttl)} on this entry{others}, under "
                    f"min-ttl-days {minimum}: DiskBasedResponseCacheProvider deletes an entry on "
                    "the first read after its expiration and calls the model; set "
                    f"`timeToLiveForCacheEntries` to at least {minimum} days, then "
                    + RERECORD_ROOT.format(root=state.root)
                )
            else:
                text = (
                    f"TTL (expires - created) is {days(ttl)} on this entry{others}, under "
                    f"min-ttl-days {minimum}; set ttl-days to at least {minimum} and re-record"
                )
            yield Finding(f"{sample.directory}/{ENTRY_FILE}", CODE, text)


RULE = Rule(CODE, "cache entries live shorter than min-ttl-days", check, group="stamp")
