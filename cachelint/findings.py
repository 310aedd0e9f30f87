"""Findings are data: what rule, which path, what to do. Reporters turn them into text."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, order=True)
class Finding:
    path: str  # repo-relative, forward slashes
    code: str  # stable rule code, e.g. "eval-cache-untracked"
    message: str  # what is wrong and how to fix it, one line
    severity: Severity = Severity.ERROR
    line: int | None = None


@dataclass(frozen=True)
class CheckSummary:
    """What a check looked at, so an empty or unlooked-at tree is never reported as green."""

    roots: tuple[str, ...]
    files: int
    entries: int
    worst_path: str | None = None
    worst_length: int = 0
    max_path: int = 160
    notes: tuple[str, ...] = field(default_factory=tuple)


def sort_findings(findings: list[Finding]) -> list[Finding]:
    """Deterministic order: by path, then code, then message."""
    return sorted(findings, key=lambda f: (f.path, f.code, f.line or 0, f.message))


def fails(findings: list[Finding], *, strict: bool = False) -> bool:
    return any(f.severity is Severity.ERROR or strict for f in findings)
