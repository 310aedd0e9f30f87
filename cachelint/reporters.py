"""Reporters: findings and a summary in, text out.

Every reporter is a pure function of its arguments (no I/O, no clock, no environment), so the same
check prints byte-identical output and the formats can be snapshot-tested. Paths come from the
user's tree and may carry escape sequences or bidi controls; every format passes them through
`cachelint.display` so a crafted file name cannot rewrite the terminal or a CI log.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from cachelint import __version__
from cachelint.display import json_dumps, sanitize
from cachelint.findings import CheckSummary, Finding, Severity, sort_findings
from cachelint.formats import FindingsFormat

if TYPE_CHECKING:
    from cachelint.rules import Rule


JSON_FORMAT_VERSION = 1
# The OASIS URL is the schema's own `$id`; GitHub code scanning accepts it.
SARIF_SCHEMA_URI = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
SARIF_SRCROOT = "SRCROOT"


def _json(document: Any) -> str:
    # DEL, C1 and bidi marks become JSON \u escapes, which decode to the exact same string: the
    # output stays readable UTF-8, consumers still get the true path, and a terminal is safe.
    return json_dumps(document) + "\n"


def _plural(count: int, word: str, plural: str = "") -> str:
    return f"{count:,} {word}" if count == 1 else f"{count:,} {plural or word + 's'}"


def summary_line(findings: Sequence[Finding], summary: CheckSummary) -> str:
    """One line saying what was found and what was looked at, so an empty tree never looks green."""
    errors = sum(1 for f in findings if f.severity is Severity.ERROR)
    warnings = len(findings) - errors
    roots = ", ".join(sanitize(r) for r in summary.roots) if summary.roots else "no cache root"
    line = (
        f"cachelint: {_plural(len(findings), 'finding')} "
        f"({_plural(errors, 'error')}, {_plural(warnings, 'warning')}) "
        f"in {_plural(summary.files, 'file')}, {_plural(summary.entries, 'entry', 'entries')} "
        f"under {roots}"
    )
    if summary.worst_path is not None:
        line += (
            f"; worst path {summary.worst_length}/{summary.max_path}: "
            f"{sanitize(summary.worst_path)}"
        )
    return line


def _notes(summary: CheckSummary) -> list[str]:
    return [f"cachelint: note: {sanitize(note)}" for note in summary.notes]


# ---- text ---------------------------------------------------------------------------------------


# The secret scanner (its patterns compiled) and hashlib (OpenSSL) load where a finding is masked or
# fingerprinted: `cachelint run` imports this module for its canary's findings, which are rare.


def _may_hold(text: str, keys: Sequence[str]) -> bool:
    from cachelint.secretscan import may_hold_secret

    return may_hold_secret(text) or any(key in text for key in keys if key)


def mask_text(text: str, keys: Sequence[str] = ()) -> str:
    """`text` with every secret masked: a key of a well-known format, and each of `keys` (the
    configured API keys' values, `credentials.configured_keys`) whatever its shape."""
    from cachelint.secretscan import mask_secrets

    return mask_secrets(text, keys) if _may_hold(text, keys) else text


def masked(finding: Finding, keys: Sequence[str] = ()) -> Finding:
    """`finding` with any secret in its path or message masked (`mask_text`): a key pasted into
    a file name is reported by eval-cache-secret, and no other finding's line may print it."""
    if not (_may_hold(finding.path, keys) or _may_hold(finding.message, keys)):
        return finding
    return replace(
        finding, path=mask_text(finding.path, keys), message=mask_text(finding.message, keys)
    )


def finding_line(finding: Finding, keys: Sequence[str] = ()) -> str:
    """The one text form of a finding, `path[:line]: code: [warning: ]message`, shared by check,
    watch, guard and run's canary so every command prints a finding the same way; secrets and
    the configured `keys` masked."""
    finding = masked(finding, keys)
    where = sanitize(finding.path)
    if finding.line is not None:
        where += f":{finding.line}"
    kind = "warning: " if finding.severity is Severity.WARNING else ""
    return f"{where}: {sanitize(finding.code)}: {kind}{sanitize(finding.message)}"


def finding_lines(
    findings: list[Finding], *, prefix: str = "", keys: Sequence[str] = ()
) -> list[str]:
    """One safe line per finding, in the deterministic order every reporter uses."""
    return [prefix + finding_line(f, keys) for f in sort_findings(findings)]


def render_text(findings: list[Finding], summary: CheckSummary) -> str:
    ordered = sort_findings(findings)
    lines = finding_lines(ordered)
    lines += _notes(summary)
    lines.append(summary_line(ordered, summary))
    return "\n".join(lines) + "\n"


# ---- json ---------------------------------------------------------------------------------------


def render_json(findings: list[Finding], summary: CheckSummary) -> str:
    ordered = sort_findings(findings)
    errors = sum(1 for f in ordered if f.severity is Severity.ERROR)
    document = {
        "version": JSON_FORMAT_VERSION,
        "summary": {
            "roots": list(summary.roots),
            "files": summary.files,
            "entries": summary.entries,
            "worst_path": summary.worst_path,
            "worst_length": summary.worst_length,
            "max_path": summary.max_path,
            "notes": list(summary.notes),
            "findings": len(ordered),
            "errors": errors,
            "warnings": len(ordered) - errors,
        },
        "findings": [
            {
                "path": f.path,
                "code": f.code,
                "message": f.message,
                "severity": f.severity.value,
                "line": f.line,
            }
            for f in ordered
        ],
    }
    return _json(document)


# ---- GitHub workflow commands -------------------------------------------------------------------


def _gh_data(text: str) -> str:
    # The runner's own escaping (actions/toolkit command.ts escapeData); the remaining controls are
    # made visible so an ESC in a file name cannot colour or hide log lines.
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return sanitize(text)


def _gh_property(text: str) -> str:
    # command.ts escapeProperty: ':' and ',' separate properties, so they are escaped too.
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(findings: list[Finding], summary: CheckSummary) -> str:
    ordered = sort_findings(findings)
    lines = []
    for f in ordered:
        props = f"file={_gh_property(f.path)}"
        if f.line is not None:
            props += f",line={f.line}"
        props += f",title={_gh_property(f.code)}"
        lines.append(f"::{f.severity.value} {props}::{_gh_data(f.message)}")
    lines += _notes(summary)
    lines.append(summary_line(ordered, summary))
    return "\n".join(lines) + "\n"


# ---- SARIF 2.1.0 --------------------------------------------------------------------------------


def _sarif_name(code: str) -> str:
    # reportingDescriptor.name is meant to be an identifier-like word ("EvalCacheUntracked").
    return "".join(part.capitalize() for part in re.split(r"[^0-9A-Za-z]+", code) if part)


def _raw_bytes(text: str) -> bytes:
    """The bytes a path stands for: surrogate-escaped bytes of a non-UTF-8 name come back as the
    original byte; any other lone surrogate is kept as its (invalid) UTF-8 form."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def _fingerprint(finding: Finding) -> str:
    # Stable across runs and line shifts: the same problem at the same path is the same alert.
    import hashlib

    return hashlib.sha256(_raw_bytes(f"{finding.code}\0{finding.path}")).hexdigest()


def _sarif_rule(code: str, summary: str) -> dict[str, Any]:
    return {
        "id": code,
        "name": _sarif_name(code),
        "shortDescription": {"text": summary},
        # Rule carries no severity; each result states its own level, which wins over this.
        "defaultConfiguration": {"level": "error"},
    }


def render_sarif(findings: list[Finding], summary: CheckSummary, rules: Sequence[Rule]) -> str:
    ordered = sort_findings(findings)
    described = {rule.code: rule.summary for rule in rules}
    # A finding whose code has no registered rule (e.g. eval-cache-mutated from the hash guard)
    # still needs a descriptor: ruleIndex must point into driver.rules.
    for f in ordered:
        described.setdefault(f.code, f.code)
    codes = sorted(described)
    index = {code: i for i, code in enumerate(codes)}
    results = []
    for f in ordered:
        results.append(
            {
                "ruleId": f.code,
                "ruleIndex": index[f.code],
                "level": "warning" if f.severity is Severity.WARNING else "error",
                # Shown as prose in code-scanning pages: escapes there, not reordering bidi marks.
                "message": {"text": sanitize(f.message)},
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": {
                                # a non-UTF-8 name keeps its raw byte as %XX
                                "uri": quote(_raw_bytes(f.path.replace("\\", "/")), safe="/"),
                                "uriBaseId": SARIF_SRCROOT,
                            },
                            # GitHub code scanning rejects a result without a region.
                            "region": {"startLine": f.line if f.line is not None else 1},
                        }
                    }
                ],
                "partialFingerprints": {"cachelint/v1": _fingerprint(f)},
            }
        )
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "cachelint",
                "version": __version__,
                "semanticVersion": __version__,
                # No informationUri (optional): cachelint has no published home page to name.
                "rules": [_sarif_rule(code, described[code]) for code in codes],
            }
        },
        # The reporter does no I/O, so it cannot know the checkout's absolute path; SARIF allows
        # a base id described but left without a uri (SARIF 2.1.0 section 3.14.14).
        "originalUriBaseIds": {
            SARIF_SRCROOT: {"description": {"text": "The root of the checked git repository."}}
        },
        "results": results,
        "properties": {
            "roots": list(summary.roots),
            "files": summary.files,
            "entries": summary.entries,
        },
    }
    document = {"$schema": SARIF_SCHEMA_URI, "version": "2.1.0", "runs": [run]}
    return _json(document)


def render(
    fmt: FindingsFormat,
    findings: list[Finding],
    summary: CheckSummary,
    rules: Sequence[Rule],
    *,
    keys: Sequence[str] = (),
) -> str:
    """Render `findings` in `fmt`; identical input gives byte-identical output. No format prints
    a secret found in a path or message (`masked`), the worst path's included: neither a key of
    a well-known format nor one of `keys`, the configured API keys' values, whatever their shape
    (the caller reads them: a reporter reads no environment)."""
    findings = [masked(f, keys) for f in findings]
    worst = None if summary.worst_path is None else mask_text(summary.worst_path, keys)
    notes = tuple(mask_text(note, keys) for note in summary.notes)
    summary = replace(summary, worst_path=worst, notes=notes)
    if fmt is FindingsFormat.TEXT:
        return render_text(findings, summary)
    if fmt is FindingsFormat.JSON:
        return render_json(findings, summary)
    if fmt is FindingsFormat.GITHUB:
        return render_github(findings, summary)
    if fmt is FindingsFormat.SARIF:
        return render_sarif(findings, summary, rules)
    raise ValueError(f"unknown format {fmt!r}")  # unreachable: validated at the boundary
