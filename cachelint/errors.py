"""The one user-facing exception and the exit codes.

Every error a person can cause (bad config, bad input, no git repository) is a `CachelintError`
whose message is one line: what is wrong, where, and the command or edit that fixes it. `main`
catches it once and prints it; nothing below `main` calls `sys.exit`.
"""

from __future__ import annotations

from enum import Enum, IntEnum
from typing import TypeVar

E = TypeVar("E", bound=Enum)


class ExitCode(IntEnum):
    OK = 0
    FINDINGS = 1
    USAGE = 2
    INTERNAL = 3
    INTERRUPTED = 130


class CachelintError(Exception):
    """An error a person can fix; `str(error)` is the single line shown to them."""

    exit_code: ExitCode = ExitCode.USAGE


class ConfigError(CachelintError):
    """The configuration (pyproject.toml, cachelint.toml, --config) is invalid."""


class GitError(CachelintError):
    """A git command failed; the message carries the command, its return code and stderr."""


class CorruptEntry(CachelintError):
    """A cache entry on disk does not match its layout."""


def parse_choice(kind: type[E], value: object, *, option: str, what: str) -> E:
    """`value` as a member of the str Enum `kind`; a typo is a usage error naming the choices,
    never a silent fallback to another member (vcrpy once let a misspelled mode act as another)."""
    try:
        return kind(value)
    except ValueError:
        allowed = ", ".join(str(m.value) for m in kind)
        raise CachelintError(f"{option} {value!r} is not {what}; use one of {allowed}") from None
