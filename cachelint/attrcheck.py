"""What git's attributes do to each cache file, from one `git check-attr --all` for them all.

`text` decides line-ending conversion (eval-cache-text-attr wants it unset); `eol`, `ident`,
`filter` and `working-tree-encoding` make git store or check out other bytes than the working
tree holds: `ident` writes `$Id: <blob> $` into every `$Id$` on checkout, a `filter` (git-lfs)
stores what the filter makes, `working-tree-encoding` re-encodes, `eol` converts line endings
whenever `text` is not unset.

`--all` names only the attributes a file has, so the usual answer (`eval-cache/** -text` and
nothing else) is one "<path>\\0text\\0unset\\0" per file, as large as asking for `text` alone;
asking for the five by name would repeat every path five times (91 MB instead of 16 MB at
100,000 entries). Counting that triple and the NULs (three a record) confirms the usual answer
at C speed without splitting the output (12 ms for 200,000 files); with more attributes set
(`binary`, `-diff`), finding none of the four names does. A path holds a "/" (it lies under a
cache root), so no path field can complete one of these patterns by accident.
"""

from __future__ import annotations

from typing import NamedTuple

from cachelint.gitutil import split_z

COMMAND = ["check-attr", "-z", "--stdin", "--all"]
REWRITING = ("eol", "ident", "filter", "working-tree-encoding")
_USUAL = b"\0text\0unset\0"
_REWRITING_FIELDS = tuple(b"\0%s\0" % name.encode() for name in REWRITING)
_HARMLESS = ("unset", "unspecified")


class Attributes(NamedTuple):
    text: dict[str, str]  # path -> "set", "unset", "unspecified", "auto" or another value
    rewrite: dict[str, tuple[str, ...]]  # path -> ("ident", "filter=lfs", "eol=crlf", ...)


def parse(out: bytes, paths: list[str]) -> Attributes:
    """`check-attr -z --all` output for `paths` (records "<path>\\0<attr>\\0<value>\\0")."""
    if not paths:
        return Attributes({}, {})
    if out.count(_USUAL) == len(paths) and (
        # One record a path, nothing else set: no byte more than the paths and their "text
        # unset" (a path's UTF-8 is no shorter than its len()); not counting its NULs, a byte
        # at a time.
        len(out) == sum(map(len, paths)) + len(_USUAL) * len(paths)
        or not any(f in out for f in _REWRITING_FIELDS)  # `binary`, `-diff`: slower searches
    ):
        return Attributes(dict.fromkeys(paths, "unset"), {})
    text = dict.fromkeys(paths, "unspecified")
    rewrite: dict[str, list[str]] = {}
    values: dict[str, str] = {}
    fields = split_z(out)
    for i in range(0, len(fields) - 2, 3):
        path, attr, value = fields[i : i + 3]
        if attr == "text":
            text[path] = values.setdefault(value, value)
        elif attr in REWRITING and value not in _HARMLESS:
            rewrite.setdefault(path, []).append(attr if value == "set" else f"{attr}={value}")
    return Attributes(text, {path: tuple(found) for path, found in rewrite.items()})
