"""eval-cache-special-file: a FIFO, socket or device file under a cache root.

Git cannot commit one, and reading one blocks forever (a FIFO with no writer) or never ends (a
device such as /dev/zero). Nothing ever opens it: the walk notes its lstat mode, and this rule
works from that.

`special_findings(items)` takes (repo-relative path, st_mode) pairs; the rule gets the paths from
the walk (`facts.special`) and their modes from lstat, which never opens a file.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator

from cachelint.facts import TreeFacts
from cachelint.findings import Finding
from cachelint.fsutil import special_kind
from cachelint.rules import Rule

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
    """Works from the walk's `facts.special` (paths it never opened); an lstat names the kind."""
    modes: list[tuple[str, int]] = []
    for path in facts.special:
        try:
            modes.append((path, os.lstat(os.path.join(facts.repo, path)).st_mode))
        except OSError:
            continue  # gone since the walk
    yield from special_findings(modes)


RULE = Rule(CODE, "a FIFO, socket or device file under a cache root", check)
