"""Reporters: exact output per format, byte-identical reruns, terminal safety, SARIF schema."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import jsonschema
import pytest

from cachelint import __version__
from cachelint.display import sanitize
from cachelint.findings import CheckSummary, Finding, Severity
from cachelint.formats import FindingsFormat as Format
from cachelint.reporters import SARIF_SCHEMA_URI, render
from cachelint.rules import Rule

SCHEMA_PATH = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"

ENTRY = "eval-cache/cache/support/acme/refund/0123456789abcdef/entry.json"
STAMP = "eval-cache/.eval-cache-stamp.json"
ODD = "eval-cache/cache/a b/x%y,z:w#1.json"

# Deliberately out of order: every reporter must sort.
FINDINGS = [
    Finding(STAMP, "eval-cache-expiring", "3 entries expire within 30 days", Severity.WARNING, 4),
    Finding(ODD, "eval-cache-untracked", "not tracked by git; run: git add -- 'a b'"),
    Finding(ENTRY, "eval-cache-corrupt-entry", "entry.json: key mismatch; re-record it"),
]
SUMMARY = CheckSummary(
    roots=("eval-cache",),
    files=1204,
    entries=602,
    worst_path=ENTRY,
    worst_length=len(ENTRY),
)


def _no_facts(facts: object) -> list[Finding]:
    return []


RULES = [
    Rule("eval-cache-untracked", "Every file under the cache root is tracked by git.", _no_facts),
    Rule("eval-cache-corrupt-entry", "Every entry reads back and matches its key.", _no_facts),
    Rule("eval-cache-case-collision", "No two paths differ only in case.", _no_facts),
]


def _render(fmt: Format, findings: list[Finding] | None = None, **summary: Any) -> str:
    chosen = list(FINDINGS if findings is None else findings)
    return render(fmt, chosen, dataclasses.replace(SUMMARY, **summary), RULES)


# ---- text ---------------------------------------------------------------------------------------


def test_text_is_gcc_style_sorted_with_a_summary_of_what_was_looked_at() -> None:
    assert _render(Format.TEXT) == (
        f"{STAMP}:4: eval-cache-expiring: warning: 3 entries expire within 30 days\n"
        f"{ODD}: eval-cache-untracked: not tracked by git; run: git add -- 'a b'\n"
        f"{ENTRY}: eval-cache-corrupt-entry: entry.json: key mismatch; re-record it\n"
        "cachelint: 3 findings (2 errors, 1 warning) in 1,204 files, 602 entries under "
        f"eval-cache; worst path 64/160: {ENTRY}\n"
    )


def test_text_summary_without_findings_still_says_what_was_looked_at() -> None:
    out = _render(
        Format.TEXT,
        [],
        roots=("eval-cache", "other-cache"),
        files=1,
        entries=1,
        worst_path=None,
        worst_length=0,
        notes=("layout meai detected",),
    )
    assert out == (
        "cachelint: note: layout meai detected\n"
        "cachelint: 0 findings (0 errors, 0 warnings) in 1 file, 1 entry under "
        "eval-cache, other-cache\n"
    )


def test_text_summary_names_an_empty_root_set() -> None:
    out = _render(Format.TEXT, [], roots=(), files=0, entries=0, worst_path=None)
    assert out == (
        "cachelint: 0 findings (0 errors, 0 warnings) in 0 files, 0 entries under no cache root\n"
    )


# ---- json ---------------------------------------------------------------------------------------


def test_json_document() -> None:
    out = _render(Format.JSON)
    assert json.loads(out) == {
        "version": 1,
        "summary": {
            "roots": ["eval-cache"],
            "files": 1204,
            "entries": 602,
            "worst_path": ENTRY,
            "worst_length": 64,
            "max_path": 160,
            "notes": [],
            "findings": 3,
            "errors": 2,
            "warnings": 1,
        },
        "findings": [
            {
                "path": STAMP,
                "code": "eval-cache-expiring",
                "message": "3 entries expire within 30 days",
                "severity": "warning",
                "line": 4,
            },
            {
                "path": ODD,
                "code": "eval-cache-untracked",
                "message": "not tracked by git; run: git add -- 'a b'",
                "severity": "error",
                "line": None,
            },
            {
                "path": ENTRY,
                "code": "eval-cache-corrupt-entry",
                "message": "entry.json: key mismatch; re-record it",
                "severity": "error",
                "line": None,
            },
        ],
    }
    # Sorted keys, indent 2, trailing newline: the layout is part of the contract.
    assert out == json.dumps(json.loads(out), sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    assert out.startswith('{\n  "findings": [\n    {\n      "code": "eval-cache-expiring",')


# ---- github -------------------------------------------------------------------------------------


def test_github_workflow_commands_with_escaping() -> None:
    assert _render(Format.GITHUB) == (
        f"::warning file={STAMP},line=4,title=eval-cache-expiring::"
        "3 entries expire within 30 days\n"
        "::error file=eval-cache/cache/a b/x%25y%2Cz%3Aw#1.json,title=eval-cache-untracked::"
        "not tracked by git; run: git add -- 'a b'\n"
        f"::error file={ENTRY},title=eval-cache-corrupt-entry::"
        "entry.json: key mismatch; re-record it\n"
        "cachelint: 3 findings (2 errors, 1 warning) in 1,204 files, 602 entries under "
        f"eval-cache; worst path 64/160: {ENTRY}\n"
    )


def test_github_escapes_newlines_and_percent_in_messages() -> None:
    finding = Finding("eval-cache/x\ny", "eval-cache-bad", "100% broken\r\n::error::forged")
    first = _render(Format.GITHUB, [finding]).splitlines()[0]
    # A message can never start a second workflow command on its own line.
    assert first == (
        "::error file=eval-cache/x%0Ay,title=eval-cache-bad::100%25 broken%0D%0A::error::forged"
    )


# ---- terminal safety ----------------------------------------------------------------------------

UNSAFE = [
    ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),  # ANSI colour
    ("\x1b]8;;http://x\x07link", "\\x1b]8;;http://x\\x07link"),  # OSC hyperlink
    ("a\x9bb", "a\\x9bb"),  # C1 CSI
    ("a\x85b", "a\\x85b"),  # C1 NEL
    ("a\x00b\x7f", "a\\x00b\\x7f"),  # NUL, DEL
    ("tab\there", "tab\\x09here"),
    ("cr\rlf\n", "cr\\x0dlf\\x0a"),
    ("abc\u202edcba", "abc\\u202edcba"),  # right-to-left override (Trojan Source)
    ("x\u2066y\u2069", "x\\u2066y\\u2069"),  # isolates
    ("x\u200fy\u061c", "x\\u200fy\\u061c"),  # RLM, Arabic letter mark
    ("line\u2028sep", "line\\u2028sep"),
    (b"caf\xe9".decode("utf-8", "surrogateescape"), "caf\\xe9"),  # a Latin-1 file name from git
    ("lone\ud800", "lone\\ud800"),
]
_RAW_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


@pytest.mark.parametrize(("raw", "shown"), UNSAFE)
def test_sanitize_makes_controls_visible(raw: str, shown: str) -> None:
    assert sanitize(raw) == shown


def test_sanitize_keeps_ordinary_unicode() -> None:
    assert sanitize("eval-cache/café/日本/ß") == "eval-cache/café/日本/ß"


@pytest.mark.parametrize("fmt", list(Format))
@pytest.mark.parametrize(("raw", "shown"), UNSAFE)
def test_no_format_emits_a_raw_control_character(fmt: Format, raw: str, shown: str) -> None:
    finding = Finding(f"eval-cache/{raw}.json", f"code-{raw}", f"message {raw}", line=2)
    out = _render(fmt, [finding], notes=(raw,), roots=(f"eval-cache{raw}",), worst_path=raw)
    lines = out.split("\n")
    if fmt in (Format.TEXT, Format.GITHUB):
        # finding, note, summary: a raw newline would have split one of them
        assert len(lines) == 4 and lines[3] == "", repr(out)
    assert not any(_RAW_UNSAFE.search(line) for line in lines), repr(out)
    out.encode("utf-8")  # printable: no lone surrogate reaches stdout


@pytest.mark.parametrize(("raw", "shown"), UNSAFE)
def test_text_shows_the_escape_where_the_character_was(raw: str, shown: str) -> None:
    finding = Finding(f"eval-cache/{raw}", "eval-cache-bad", f"says {raw}")
    first = _render(Format.TEXT, [finding]).splitlines()[0]
    assert first == f"eval-cache/{shown}: eval-cache-bad: says {shown}"


@pytest.mark.parametrize(("raw", "shown"), UNSAFE)
def test_json_escapes_controls_but_keeps_the_true_path(raw: str, shown: str) -> None:
    path = f"eval-cache/{raw}"
    out = _render(Format.JSON, [Finding(path, "eval-cache-bad", raw)])
    document = json.loads(out)
    assert document["findings"][0]["path"] == path
    assert document["findings"][0]["message"] == raw


# ---- SARIF --------------------------------------------------------------------------------------

# RFC 3986 characters; anything else in a URI must be percent-encoded.
_URI_CHARS = re.compile(r"^(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*$")
FORMATS = jsonschema.FormatChecker()


@FORMATS.checks("uri-reference")
def _is_uri_reference(value: object) -> bool:
    return isinstance(value, str) and bool(_URI_CHARS.match(value))


@FORMATS.checks("uri")
def _is_uri(value: object) -> bool:
    return _is_uri_reference(value) and bool(urlsplit(str(value)).scheme)


@pytest.fixture(scope="module")
def sarif_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    # Guard against a truncated or substituted vendored copy.
    assert schema["id"] == SARIF_SCHEMA_URI
    assert schema["title"] == "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    return schema


def _validate(document: dict[str, Any], schema: dict[str, Any]) -> None:
    # The official schema declares draft-04; it is also checked with Draft 7 because GitHub's
    # and most tools' validators use it. Both must accept.
    for validator in (jsonschema.Draft4Validator, jsonschema.Draft7Validator):
        validator.check_schema(schema)
        errors = sorted(validator(schema, format_checker=FORMATS).iter_errors(document), key=str)
        assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)


def test_sarif_validates_against_the_official_schema(sarif_schema: dict[str, Any]) -> None:
    _validate(json.loads(_render(Format.SARIF)), sarif_schema)


def test_sarif_without_findings_validates(sarif_schema: dict[str, Any]) -> None:
    document = json.loads(_render(Format.SARIF, []))
    _validate(document, sarif_schema)
    assert document["runs"][0]["results"] == []


def test_schema_validation_catches_a_broken_document(sarif_schema: dict[str, Any]) -> None:
    document = json.loads(_render(Format.SARIF))
    document["runs"][0]["results"][0]["level"] = "fatal"
    with pytest.raises(AssertionError):
        _validate(document, sarif_schema)
    document = json.loads(_render(Format.SARIF))
    document["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"][
        "uri"
    ] = "eval-cache/a b"
    with pytest.raises(AssertionError, match="uri-reference"):
        _validate(document, sarif_schema)


def test_sarif_content() -> None:
    out = _render(Format.SARIF)
    document = json.loads(out)
    assert document["$schema"] == SARIF_SCHEMA_URI
    assert document["version"] == "2.1.0"
    (run,) = document["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "cachelint"
    assert driver["version"] == __version__
    assert "informationUri" not in driver  # optional, and no guessed address
    assert [r["id"] for r in driver["rules"]] == [
        "eval-cache-case-collision",
        "eval-cache-corrupt-entry",
        "eval-cache-expiring",  # not registered: described by its code so ruleIndex resolves
        "eval-cache-untracked",
    ]
    assert driver["rules"][3] == {
        "id": "eval-cache-untracked",
        "name": "EvalCacheUntracked",
        "shortDescription": {"text": "Every file under the cache root is tracked by git."},
        "defaultConfiguration": {"level": "error"},
    }
    assert run["originalUriBaseIds"]["SRCROOT"]["description"]["text"]
    results = run["results"]
    assert [(r["ruleId"], r["ruleIndex"], r["level"]) for r in results] == [
        ("eval-cache-expiring", 2, "warning"),
        ("eval-cache-untracked", 3, "error"),
        ("eval-cache-corrupt-entry", 1, "error"),
    ]
    for result in results:
        assert driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
    locations = [r["locations"][0]["physicalLocation"] for r in results]
    assert [loc["artifactLocation"] for loc in locations] == [
        {"uri": STAMP, "uriBaseId": "SRCROOT"},
        {"uri": "eval-cache/cache/a%20b/x%25y%2Cz%3Aw%231.json", "uriBaseId": "SRCROOT"},
        {"uri": ENTRY, "uriBaseId": "SRCROOT"},
    ]
    # GitHub needs a region; a finding without a line points at line 1.
    assert [loc["region"] for loc in locations] == [
        {"startLine": 4},
        {"startLine": 1},
        {"startLine": 1},
    ]
    assert results[1]["message"] == {"text": "not tracked by git; run: git add -- 'a b'"}
    assert out == json.dumps(document, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def test_sarif_uri_round_trips_unusual_paths(sarif_schema: dict[str, Any]) -> None:
    path = "eval-cache/café/日本/q?x/100%/\x1b[0m/\u202e.json"
    document = json.loads(_render(Format.SARIF, [Finding(path, "eval-cache-bad", "m")]))
    _validate(document, sarif_schema)
    uri = document["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"][
        "uri"
    ]
    assert unquote(uri) == path
    assert "/" in uri and "%2F" not in uri  # directory separators stay separators


def test_sarif_uri_keeps_the_raw_byte_of_a_non_utf8_name(sarif_schema: dict[str, Any]) -> None:
    path = b"eval-cache/caf\xe9.json".decode("utf-8", "surrogateescape")
    document = json.loads(_render(Format.SARIF, [Finding(path, "eval-cache-bad", "m")]))
    _validate(document, sarif_schema)
    location = document["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "eval-cache/caf%E9.json"


def _fingerprint(finding: Finding) -> str:
    document = json.loads(_render(Format.SARIF, [finding]))
    fingerprints: dict[str, str] = document["runs"][0]["results"][0]["partialFingerprints"]
    return fingerprints["cachelint/v1"]


def test_sarif_fingerprint_is_stable_per_code_and_path() -> None:
    base = _fingerprint(Finding(ENTRY, "eval-cache-corrupt-entry", "one wording"))
    assert re.fullmatch("[0-9a-f]{64}", base)
    # Rewording a message or a moved line is the same alert; another path or rule is not.
    assert _fingerprint(Finding(ENTRY, "eval-cache-corrupt-entry", "new wording", line=9)) == base
    assert _fingerprint(Finding(STAMP, "eval-cache-corrupt-entry", "one wording")) != base
    assert _fingerprint(Finding(ENTRY, "eval-cache-untracked", "one wording")) != base


# ---- determinism --------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", list(Format))
def test_identical_input_gives_identical_bytes(fmt: Format) -> None:
    first = _render(fmt).encode()
    assert _render(fmt).encode() == first
    assert _render(fmt, list(reversed(FINDINGS))).encode() == first
    assert render(fmt, list(FINDINGS), SUMMARY, list(reversed(RULES))).encode() == first
    assert first.endswith(b"\n") and not first.endswith(b"\n\n")


def test_format_is_validated_at_the_boundary() -> None:
    assert [f.value for f in Format] == ["text", "json", "github", "sarif"]
    assert Format("sarif") is Format.SARIF
    with pytest.raises(ValueError):
        Format("Sarif")
