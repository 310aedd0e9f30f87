"""eval-cache-case-collision: two paths that are one path on macOS and Windows.

Compared after NFC normalisation and str.casefold() (pre-commit-hooks' check-case-conflict uses
plain .lower(), which misses `ß`/`SS` and decomposed accents). Two colliding paths always first
differ in one part under the same exact parent, so comparing siblings finds every collision and
reports each at the level where it starts (a colliding directory once, not every file below it).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator

from cachelint.facts import TreeFacts
from cachelint.findings import Finding
from cachelint.rules import Rule

CODE = "eval-cache-case-collision"


def fold(text: str) -> str:
    if text.isascii():
        return text.lower()
    return unicodedata.normalize("NFC", text).casefold()


def check(facts: TreeFacts) -> Iterator[Finding]:
    # Fast path: two nodes collide only if their names fold alike, so if no two distinct names
    # anywhere in the tree do, nothing collides. Names repeat, so there are far fewer of them
    # than paths, and for ASCII one lower() over them all joined folds at C speed.
    names = facts.names
    text = facts.names_text
    if text.isascii():
        lowered = text.lower()
        # The split also yields the empty string before the first "/" (and after the last).
        if lowered == text or len(set(lowered.split("/"))) == len(names) + 1:
            return
    elif len({fold(n) for n in names}) == len(names):
        return
    nodes = facts.nodes
    joined = "\0".join(nodes)
    if joined.isascii():
        lowered = joined.lower()
        if lowered == joined:
            return  # no upper-case letter at all: distinct paths stay distinct
        folded = lowered.split("\0")
    else:
        folded = [fold(n) for n in nodes]
    del joined
    if len(set(folded)) == len(nodes):
        return
    first: dict[tuple[str, str], str] = {}
    for node in sorted(nodes):
        parent, _, name = node.rpartition("/")
        other = first.setdefault((parent, fold(name)), node)
        if other != node:
            yield Finding(
                node,
                CODE,
                f"collides with {other!r} on case-insensitive file systems (macOS, Windows), "
                "where one overwrites the other on checkout; rename one of them",
            )


RULE = Rule(CODE, "two paths equal after NFC normalisation and case folding", check)
