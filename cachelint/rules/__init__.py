"""The rule registry: one module per rule, each exposing `RULE`. A new rule is one new module
plus one line in `_MODULES`."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from cachelint.facts import TreeFacts
from cachelint.findings import Finding


@dataclass(frozen=True)
class Rule:
    code: str
    summary: str  # one line, used by --help-style listings, SARIF rule metadata and the README
    check: Callable[[TreeFacts], Iterable[Finding]]
    group: str = "tree"  # "tree" (issue: the linter) or "stamp" (`cachelint stamp --check`)


_MODULES: tuple[str, ...] = (
    # tree integrity
    "untracked",
    "ignored",
    "invisible",
    "missing",
    "dirty",
    "symlink",
    "path_too_long",
    "long_key",
    "windows_name",
    "case_collision",
    "text_attr",
    "empty",
    "corrupt",
    "special_file",
    "secret",
    "env_file",
    "unused",
    "results_in_root",
    "meai_shape",
    "sqlite_cassette",
    "unredacted",
    # stamp and TTL
    "no_stamp",
    "stamp_invalid",
    "unstamped",
    "normalisers",
    "stale_pin",
    "unpinned",
    "short_ttl",
    "expiring",
)


def all_rules() -> list[Rule]:
    return [importlib.import_module(f"cachelint.rules.{m}").RULE for m in _MODULES]
