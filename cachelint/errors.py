"""The one user-facing exception and the exit codes.

Every error a person can cause (bad config, bad input, no git repository) is a `CachelintError`
whose message is one line: what is wrong, where, and the command or edit that fixes it. `main`
catches it once and prints it; nothing below `main` calls `sys.exit`.
"""

from __future__ import annotations

from enum import IntEnum


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
