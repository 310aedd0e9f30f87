"""eval-cache-special-file: a FIFO, socket or device file under a cache root.

Git cannot commit one, and reading one blocks forever (a FIFO with no writer) or never ends (a
device such as /dev/zero). Nothing ever opens it: the walk notes its lstat mode, and this rule
works from that.

`special_findings(items)` takes (repo-relative path, st_mode) pairs, for any walk that has them;
the rule reads `facts.special_files` (path -> st_mode) when the tree walk fills it.
"""

from __future__ import annotations

import stat
from collections.abc import Iterable, Iterator

from cachelint.findings import Finding
from cachelint.fsutil import special_kind
from cachelint.rules import Rule
from cachelint.tree import TreeFacts

CODE = "eval-cache-special-file"


def special_findings(items: Iterable[tuple[str, int]]) -> Iterator[Finding]:
    for path, mode in sorted(items):
        if stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode):
            continue  # regular files, directories and links have rules of their own
        kind = special_kind(mode)
        yield Finding(
            path,
            CODE,
            f"is a {kind}, not a regular file: git cannot commit it and reading it could block "
            "or never end (cachelint never opens it); delete it and re-record the entry",
        )


def check(facts: TreeFacts) -> Iterator[Finding]:
    found: dict[str, int] | None = getattr(facts, "special_files", None)
    if found is None:
        found = _lstat_unknown(facts)
    yield from special_findings(found.items())


def _lstat_unknown(facts: TreeFacts) -> dict[str, int]:
    """Until the walk records modes: the walk lists specials among files but never as entry
    files or links, so only names that are neither a link nor in an entry directory's regular
    names need an lstat (usually none)."""
    import os

    regular = {f"{d}/{n}" for d, names in facts.entry_dirs.items() for n in names}
    out: dict[str, int] = {}
    for path in facts.disk_files:
        if path in regular or path in facts.symlinks:
            continue
        try:
            mode = os.lstat(os.path.join(facts.repo, path)).st_mode
        except OSError:
            continue
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
            out[path] = mode
    return out


RULE = Rule(CODE, "a FIFO, socket or device file under a cache root", check)
