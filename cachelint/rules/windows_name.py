"""eval-cache-windows-name: a path part Windows (or macOS) cannot check out.

What Windows rejects is in cachelint.winpath. A name that is not valid UTF-8 (Latin-1 bytes
written on Linux, reaching cachelint as surrogate escapes) is refused by both: Windows and APFS
store names as Unicode, and git for Windows and macOS cannot create it. Every part of every path
is checked, directories too; a bad directory is reported once, not once per file below it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from cachelint.facts import TreeFacts
from cachelint.findings import Finding
from cachelint.rules import Rule
from cachelint.winpath import DEVICES, problem

CODE = "eval-cache-windows-name"

# Filters over "/"-delimited text (every part is followed by "/"): they may over-match but never
# miss, so text they do not hit is clean. Each starts with a literal "/" or is a character class,
# which re scans at C speed.
_CHARS = re.compile(r'[<>:"|?*\\\x00-\x1f]')
_UNDECODABLE = re.compile("[\udc80-\udcff]")
_DEVICE_PART = re.compile(rf"/(?:{DEVICES}) *[./]", re.IGNORECASE)


# The same filters for an ASCII text (the usual tree), at C speed without re's slow paths: the
# class search tried _CHARS at every character and the case-folded one _DEVICE_PART's alternatives
# after every "/" (~115 instructions a character together, 44 M of a warm check's 2 G at 20,000
# entries), where bytes.translate deletes the characters through a table and DEVICES, all lower
# case, is searched case-sensitively in the lowered text (ASCII folds as re.IGNORECASE does).
_CHARS_BYTES = ('<>:"|?*\\' + "".join(map(chr, range(32)))).encode("ascii")
_DEVICE_LOWER = re.compile(rf"/(?:{DEVICES}) *[./]")


def _suspect(text: str) -> bool:
    """`text` is "/"-joined paths; False means every part in it is a valid Windows name."""
    if "./" in text or (" " in text and " /" in text):
        return True
    if text.isascii():  # a surrogate escape (an undecodable byte) is no ASCII
        raw = text.encode("ascii")
        if len(raw.translate(None, _CHARS_BYTES)) != len(raw):
            return True
        return _DEVICE_LOWER.search(text.lower()) is not None
    return bool(_CHARS.search(text) or _UNDECODABLE.search(text) or _DEVICE_PART.search(text))


def _problem(part: str) -> str | None:
    if _UNDECODABLE.search(part):
        raw = part.encode("utf-8", "surrogateescape")
        return (
            f"{raw!r} is not valid UTF-8, which Windows and macOS need in file names; "
            "git there cannot check it out, rename it to a UTF-8 name"
        )
    why = problem(part)
    return (
        None if why is None else f"{part!r} {why}; git for Windows cannot check it out, rename it"
    )


def check(facts: TreeFacts) -> Iterator[Finding]:
    # Names repeat across the tree, so each distinct one is judged once; one regex scan of them
    # all joined by "/" clears a clean tree without a Python loop per name.
    if not _suspect(facts.names_text):
        return
    names = facts.names
    bad = {part: why for part in names if (why := _problem(part)) is not None}
    if not bad:
        return
    reported: dict[str, str] = {}
    for node in facts.nodes:
        part = node.rpartition("/")[2]
        if part in bad:
            reported[node] = bad[part]
    for node, message in sorted(reported.items()):
        yield Finding(node, CODE, message)


RULE = Rule(
    CODE,
    'a path part Windows or macOS cannot check out (device names, <>:"|?*\\, trailing . or '
    "space, a name that is not valid UTF-8)",
    check,
)
