"""eval-cache-corrupt: an entry that cannot be replayed as recorded.

check verifies every entry's content on every run (`cachelint.entries`): a native entry whose
contents.data no longer hashes to the digest entry.json records, whose key is not the hash of its
stored request, whose scenario is not its directory or whose directory is not its key's prefix;
an MEAI entry whose contents.data is not a JSON object (or starts with a byte-order mark), that
sits anywhere but cache/<scenarioName>/<iterationName>/<key>, whose directory is not named as MEAI
names it, or whose short-path directory carries no full key; an unreadable or half-written pair;
a temp file left by an interrupted atomic write. A corrupt entry is an error, never a silent live
call.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from operator import attrgetter

from cachelint.config import Layout
from cachelint.facts import TreeFacts
from cachelint.findings import Finding
from cachelint.meai import MEAI_RERECORD
from cachelint.rules import Rule
from cachelint.store import CACHE_DIR, ENTRY_FILES

CODE = "eval-cache-corrupt"


def check(facts: TreeFacts) -> Iterator[Finding]:
    found = list(facts.corrupt)
    found += _unprefixed(facts)
    for path, reason in sorted(found):
        yield Finding(path, CODE, f"{reason}; {_fix(facts, path)}")


def _unprefixed(facts: TreeFacts) -> Iterator[tuple[str, str]]:
    """MEAI entries named neither by the whole key (96 characters) nor by `key-prefix`
    characters: a provider writing another length is not the one the config describes."""
    prefix = facts.config.key_prefix
    # Asked at C speed first: a tree of native entries has none to look at.
    if Layout.MEAI not in map(_LAYOUT, facts.entries):
        return
    for entry in facts.entries:
        if entry.layout is not Layout.MEAI:
            continue
        name = entry.directory.rpartition("/")[2]
        if len(name) in (96, prefix):
            continue
        yield (
            entry.directory,
            f"entry directory name has {len(name)} characters, but MEAI names an entry by its "
            f"96-character key and key-prefix is {prefix}: set key-prefix = {len(name)} in "
            f"{facts.config.source} if your provider names entries by {len(name)} characters",
        )


_LAYOUT = attrgetter("layout")


def _fix(facts: TreeFacts, path: str) -> str:
    """Restore what git has when only the working tree differs from the commit; else re-record."""
    name = path.rpartition("/")[2]
    if name.startswith(".cachelint-tmp-"):
        return f"delete it: `rm -- {shlex.quote(path)}`"
    files = [f"{path}/{n}" for n in ENTRY_FILES]
    if any(f in facts.modified for f in files):
        quoted = " ".join(shlex.quote(f) for f in files if f in facts.index)
        return (
            "only the working tree differs from the commit: restore it with "
            f"`git checkout -- {quoted}`"
        )
    if any(path.startswith(f"{r.rstrip('/')}/") for r in facts.meai_roots):
        return MEAI_RERECORD.format(path=shlex.quote(path))
    scenario = _scenario(facts, path)
    if scenario is None:
        return "delete the entry directory and re-record it"
    command = f"cachelint run --scenario {shlex.quote(scenario)} --refresh-cache"
    return f"delete the entry directory and re-record the scenario: `{command}`, then re-stamp"


def _scenario(facts: TreeFacts, directory: str) -> str | None:
    """The native scenario identity the entry directory belongs to (`<root>/cache/<scenario>/<key
    prefix>`), or None for an MEAI path (re-recorded by the .NET test run)."""
    for root in facts.roots:
        prefix = f"{root.rstrip('/')}/{CACHE_DIR}/"
        if directory.startswith(prefix):
            scenario = directory[len(prefix) :].rpartition("/")[0]
            parts = scenario.split("/")
            # A native scenario is <agent>/<tenant>/<name>; MEAI's <scenario>/<iteration>.
            return scenario if len(parts) == 3 else None
    return None


RULE = Rule(
    CODE,
    "an entry whose content no longer verifies, a half-written pair or a leftover temp file",
    check,
)
