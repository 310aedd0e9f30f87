"""eval-cache-path-too-long: a repo-relative path over the `max-path` budget.

Windows allows 259 characters in a full path (MAX_PATH 260 with the terminating NUL) and git for
Windows fails with "Filename too long" unless core.longpaths is set; one team's commit then kept 1
of 9 files and exited 0. The budget reserves the rest for the clone's own location, counted in
UTF-16 code units as Windows counts them.
"""

from __future__ import annotations

from collections.abc import Iterator

from cachelint.facts import TreeFacts, utf16_len
from cachelint.findings import Finding
from cachelint.meai import PATH_ADVICE
from cachelint.rules import Rule

CODE = "eval-cache-path-too-long"
WINDOWS_MAX = 259


def budget_note(max_path: int) -> str:
    return (
        f"Windows allows {WINDOWS_MAX} characters; a budget of {max_path} leaves "
        f"{WINDOWS_MAX - max_path} for the clone's own root (C:\\...\\)"
    )


def check(facts: TreeFacts) -> Iterator[Finding]:
    limit = facts.config.max_path
    if facts.worst_path[1] <= limit:
        return
    too_long = {path: n for path in facts.files if (n := utf16_len(path)) > limit}
    meai = tuple(f"{root}/" for root in facts.meai_roots)
    for path, length in sorted(too_long.items()):
        advice = (
            PATH_ADVICE
            if meai and path.startswith(meai)
            else "shorten the scenario or iteration names, or lower key-prefix"
        )
        yield Finding(
            path,
            CODE,
            f"path is {length} characters (UTF-16), {length - limit} over max-path {limit}: "
            f"{budget_note(limit)}; {advice}",
        )


RULE = Rule(CODE, "a repo-relative path longer than max-path (UTF-16 code units)", check)
