"""The output formats, one str Enum per output family, validated at the command-line boundary.

Findings (check, stamp --check) and run reports are different documents, so each family has its
own choices; a misspelled format is a usage error naming them, never a fallback to text. This
module imports nothing heavy: the parsers list the choices without loading a reporter.
"""

from __future__ import annotations

from enum import Enum

from cachelint.errors import parse_choice


class FindingsFormat(str, Enum):
    """How `cachelint check` and `cachelint stamp --check` print findings."""

    TEXT = "text"
    JSON = "json"
    GITHUB = "github"
    SARIF = "sarif"


class ReportFormat(str, Enum):
    """How `cachelint run` prints its report on stdout."""

    TEXT = "text"
    JSON = "json"
    JUNIT = "junit"
    MARKDOWN = "markdown"  # rendered by runner/prformats.py from the results documents
    GITHUB = "github"


def parse_findings_format(value: object) -> FindingsFormat:
    return parse_choice(FindingsFormat, value, option="--format", what="a findings format")


def parse_report_format(value: object) -> ReportFormat:
    return parse_choice(ReportFormat, value, option="--format", what="a report format")


def choices(kind: type[Enum]) -> list[str]:
    return [str(member.value) for member in kind]
