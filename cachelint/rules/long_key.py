"""eval-cache-long-key: an entry directory named by a full key instead of a key prefix, or a
native entry directory shorter than `key-prefix`.

MEAI names each entry directory by its 96-character SHA-384 key, which alone eats most of a
Windows path. A `key-prefix`-character directory with the full key checked inside entry.json is as
safe (a prefix collision is a miss, never a wrong answer) and far shorter. The other way round, a
`key-prefix` raised after recording makes replay look for longer directory names than the tree
has: every entry verifies, and every scenario misses.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import repeat
from operator import sub

from cachelint.config import Layout
from cachelint.facts import TreeFacts, utf16_len
from cachelint.findings import Finding
from cachelint.meai import LONG_KEY_ADVICE
from cachelint.rules import Rule

CODE = "eval-cache-long-key"


def _name_lengths(directories: Iterable[str]) -> tuple[int, int]:
    """The shortest and longest last part of `directories`, at C speed (len(d) - d.rfind("/")
    - 1 each); (0, 0) for none."""
    dirs = list(directories)
    ends = list(map(sub, map(len, dirs), map(str.rfind, dirs, repeat("/"))))
    return (min(ends) - 1, max(ends) - 1) if ends else (0, 0)


def check(facts: TreeFacts) -> Iterator[Finding]:
    prefix = facts.config.key_prefix
    shortest, longest = _name_lengths(facts.entry_dirs)
    if shortest < prefix:
        yield from _short(facts, prefix)
    if longest <= prefix:  # the usual tree: every name is short
        return
    meai = {e.directory for e in facts.entries if e.layout is Layout.MEAI}
    worst, budget = facts.worst_path[1], facts.config.max_path
    fits = (
        f"the worst path is {worst} characters, within max-path {budget}"
        if worst <= budget
        else f"the worst path is {worst} characters, over max-path {budget}, so shorten it first"
    )
    for directory, names in facts.entry_dirs.items():
        start = directory.rfind("/") + 1
        if len(directory) - start <= prefix:
            continue
        name = directory[start:]
        longest = max(utf16_len(f"{directory}/{n}") for n in names)
        shortened = longest - (utf16_len(name) - prefix)
        if directory in meai:
            yield Finding(
                directory,
                CODE,
                f"entry directory name is {len(name)} characters, longer than key-prefix "
                f"{prefix} (with a {prefix}-character prefix its longest file would be "
                f"{shortened} characters instead of {longest}): "
                + LONG_KEY_ADVICE.format(prefix=prefix)
                + f" ({fits})",
            )
            continue
        yield Finding(
            directory,
            CODE,
            f"entry directory name is {len(name)} characters, longer than key-prefix {prefix}; "
            f"with a {prefix}-character prefix its longest file would be {shortened} characters "
            f"instead of {longest} (max-path {facts.config.max_path}); re-record with a cache "
            f"that names entries by a {prefix}-character key prefix and checks the full key "
            "inside entry.json (cachelint's layout does)",
        )


def _short(facts: TreeFacts, prefix: int) -> Iterator[Finding]:
    """Native entries whose directory names are shorter than `key-prefix`: replay looks each
    request up under its key's first `key-prefix` characters and finds none of them."""
    short = sorted(
        e.directory
        for e in facts.entries
        if e.layout is Layout.CACHELINT and len(e.directory) - e.directory.rfind("/") - 1 < prefix
    )
    if not short:
        return
    length = len(short[0]) - short[0].rfind("/") - 1
    others = f" (and {len(short) - 1} more)" if len(short) > 1 else ""
    yield Finding(
        short[0],
        CODE,
        f"entry directory name is {length} characters, shorter than key-prefix {prefix}{others}: "
        f"replay looks for {prefix}-character names and misses every such entry; set key-prefix "
        f"= {length} (the length the tree was recorded with), or re-record under key-prefix "
        f"{prefix}",
    )


RULE = Rule(
    CODE,
    "an entry directory named by a full key instead of a key-prefix, or shorter than key-prefix",
    check,
)
