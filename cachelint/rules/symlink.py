"""eval-cache-symlink: a symbolic link inside a cache tree.

Windows checks links out as small text files unless symlinks are enabled, and a link can point
outside the tree, so the cache would not be the same bytes everywhere.
"""

from __future__ import annotations

from collections.abc import Iterator

from cachelint.facts import SYMLINK, TreeFacts
from cachelint.findings import Finding
from cachelint.rules import Rule

CODE = "eval-cache-symlink"


def check(facts: TreeFacts) -> Iterator[Finding]:
    links = set(facts.symlinks)
    links.update(facts.index_paths(SYMLINK))
    for path in sorted(links):
        yield Finding(
            path,
            CODE,
            "is a symbolic link (Windows checks it out as a text file, and it may point outside "
            "the tree); replace it with the file it points to",
        )


RULE = Rule(CODE, "a symbolic link inside the cache tree", check)
