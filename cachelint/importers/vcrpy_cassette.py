"""vcrpy cassettes (also pytest-recording's): YAML by default, JSON with `serializer="json"`.

    {"version": 1, "interactions": [{"request": {"method", "uri", "body", "headers"},
                                     "response": {"status": {"code", "message"}, "headers",
                                                  "body": {"string"}}}]}

Bodies are text, or bytes (YAML `!!binary`) when they are not UTF-8, as a gzip-encoded answer is
unless the cassette was recorded with `decode_compressed_response=True`; headers map a name (in
the case the server sent) to a list of values. vcrpy records every request header, so a cassette
usually holds the API key in `authorization`, `x-api-key` or `x-goog-api-key` (its
`filter_headers` is opt-in): those values are read only to be refused wherever they would enter
the cache, and reported, masked.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from cachelint.errors import CachelintError
from cachelint.importers import Parsed, Recorded, Skipped
from cachelint.masks import mask, redact_url
from cachelint.secretscan import describe, scan

# Request headers that carry a credential whatever its format, and query parameters likewise
# (the Gemini API took `?key=` before its SDK moved to x-goog-api-key).
CREDENTIAL_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "x-goog-api-key", "api-key", "cookie"}
)
CREDENTIAL_PARAMS = frozenset({"key", "api_key", "api-key", "apikey", "access_token", "token"})
# Answers that are event streams: cachelint keeps one whole answer per request.
_STREAM_TYPES = ("text/event-stream", "application/vnd.amazon.eventstream")
_STREAM_ROUTES = ("streamGenerateContent", "converse-stream", "invoke-with-response-stream")
_WHOLE = (
    "a streamed answer (events, not one whole answer): cachelint keeps whole answers and streams "
    "them back to code that asks; re-record this call with `cachelint run --cache auto`"
)


def load_document(raw: bytes, shown: str) -> Any:
    """The cassette's document: JSON when it reads as JSON, else YAML (safe loading: vcrpy
    writes plain mappings, lists, strings and `!!binary` bytes only)."""
    text = raw.decode("utf-8", "strict") if raw else ""
    if text.lstrip().startswith("{"):
        try:
            return json.loads(text)
        except ValueError as exc:
            raise CachelintError(f"{shown}: not a JSON vcrpy cassette ({exc})") from None
    try:
        import yaml
    except ImportError:  # PyYAML comes with vcrpy; cachelint itself does not need it
        raise CachelintError(
            f"{shown}: reading a YAML cassette needs PyYAML: pip install pyyaml"
        ) from None
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}" if where is not None else ""
        raise CachelintError(f"{shown}: not a YAML vcrpy cassette (invalid YAML{at})") from None


def read_cassette(raw: bytes, shown: str, scenario: str, max_bytes: int) -> Parsed:
    """Every interaction of one cassette (`shown`: its path, for messages) as a call of
    `scenario`, or why it is not imported. A file that is no cassette raises one line."""
    try:
        document = load_document(raw, shown)
    except UnicodeDecodeError:
        raise CachelintError(f"{shown}: not a vcrpy cassette (not UTF-8 text)") from None
    interactions = document.get("interactions") if isinstance(document, dict) else None
    if not isinstance(interactions, list):
        raise CachelintError(
            f"{shown}: not a vcrpy cassette (no `interactions` list at the top level)"
        )
    if document.get("version", 1) != 1:
        raise CachelintError(
            f"{shown}: cassette format version {document.get('version')!r}; vcrpy writes "
            "version 1, re-record it with vcrpy 2 or later"
        )
    parsed = Parsed()
    seen: set[str] = set()
    for number, interaction in enumerate(interactions, start=1):
        source = f"{shown}#{number}"
        try:
            call = _interaction(interaction, source, scenario, max_bytes)
        except _Unusable as exc:
            parsed.skipped.append(Skipped(source, str(exc)))
            continue
        parsed.calls.append(call)
        for warning in _credential_warnings(shown, interaction):
            if warning not in seen:
                seen.add(warning)
                parsed.warnings.append(warning)
    return parsed


class _Unusable(Exception):
    """One interaction that is not imported; the message says why."""


def _interaction(value: Any, source: str, scenario: str, max_bytes: int) -> Recorded:
    request = value.get("request") if isinstance(value, dict) else None
    response = value.get("response") if isinstance(value, dict) else None
    if not isinstance(request, dict) or not isinstance(response, dict):
        raise _Unusable("not an interaction (no request and response mappings)")
    method, uri = request.get("method"), request.get("uri")
    if not isinstance(method, str) or not isinstance(uri, str):
        raise _Unusable("the request has no method and uri")
    headers = _headers(request.get("headers"))
    body = _decoded(_bytes(request.get("body")), headers, "request", max_bytes)
    status = response.get("status")
    code = status.get("code") if isinstance(status, dict) else status
    if not isinstance(code, int) or not 200 <= code < 300:
        raise _Unusable(
            f"{method} {redact_url(uri)} was answered HTTP {code}: an error is not an answer, "
            "cachelint records answers only"
        )
    answer_headers = _headers(response.get("headers"))
    if _is_stream(uri, body, answer_headers):
        raise _Unusable(_WHOLE)
    answer_body = response.get("body")
    text = answer_body.get("string") if isinstance(answer_body, dict) else answer_body
    answer = _decoded(_bytes(text), answer_headers, "answer", max_bytes)
    try:
        decoded = json.loads(answer)
    except (ValueError, RecursionError):
        raise _Unusable("the answer is not JSON") from None
    return Recorded(
        source=source,
        scenario=scenario,
        method=method,
        url=uri,
        headers=headers,
        body=body,
        answer=decoded,
        credentials=tuple(_credentials(headers, uri)),
    )


def _headers(value: Any) -> dict[str, str]:
    """Header names lowercased, several values of one name joined as HTTP joins them."""
    out: dict[str, str] = {}
    if not isinstance(value, Mapping):
        return out
    for name, values in value.items():
        items = values if isinstance(values, list) else [values]
        joined = ", ".join(str(v) for v in items if v is not None)
        key = str(name).lower()
        out[key] = f"{out[key]}, {joined}" if key in out else joined
    return out


def _bytes(value: Any) -> bytes:
    if value is None:
        return b""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape")
    raise _Unusable(f"a body of an unexpected kind ({type(value).__name__})")


def _decoded(data: bytes, headers: Mapping[str, str], what: str, max_bytes: int) -> bytes:
    """`data` with its `content-encoding` undone (gzip, deflate), bounded by `max_bytes`."""
    encodings = [e.strip().lower() for e in headers.get("content-encoding", "").split(",")]
    for encoding in reversed([e for e in encodings if e and e != "identity"]):
        if encoding not in ("gzip", "x-gzip", "deflate"):
            raise _Unusable(
                f"the {what} is {encoding}-encoded, which cachelint cannot decode; re-record "
                "the cassette with vcrpy's decode_compressed_response=True"
            )
        data = _inflate(data, what, max_bytes)
    if len(data) > max_bytes:
        raise _Unusable(f"the {what} is larger than max-entry-bytes ({max_bytes})")
    return data


def _inflate(data: bytes, what: str, max_bytes: int) -> bytes:
    # wbits 47 reads a gzip or a zlib stream; -15 a raw deflate stream (some servers send one).
    for wbits in (47, -15):
        inflater = zlib.decompressobj(wbits)
        try:
            out = inflater.decompress(data, max_bytes + 1)
        except zlib.error:
            continue
        if len(out) > max_bytes:
            raise _Unusable(f"the {what} inflates to more than max-entry-bytes ({max_bytes})")
        return out
    raise _Unusable(f"the {what} says it is compressed but does not inflate")


def _is_stream(uri: str, body: bytes, headers: Mapping[str, str]) -> bool:
    if headers.get("content-type", "").split(";")[0].strip().lower() in _STREAM_TYPES:
        return True
    path = urlsplit(uri).path
    if any(path.endswith(route) or f":{route}" in path for route in _STREAM_ROUTES):
        return True
    try:
        sent = json.loads(body) if body else None
    except (ValueError, RecursionError):
        return False
    return isinstance(sent, dict) and sent.get("stream") is True


def _credentials(headers: Mapping[str, str], uri: str) -> list[str]:
    """The secrets a request carried outside its body: credential headers' values (a bearer
    token without its scheme), credential query parameters, and any well-known key format in
    another header."""
    found: list[str] = []
    for name, value in headers.items():
        if name in CREDENTIAL_HEADERS:
            scheme, _, token = value.partition(" ")
            found.append(token if scheme.lower() in ("bearer", "basic") and token else value)
        found += [s.value for s in scan(value)]
    for name, value in parse_qsl(urlsplit(uri).query, keep_blank_values=True):
        if name.lower() in CREDENTIAL_PARAMS and value:
            found.append(value)
    return list(dict.fromkeys(v for v in found if v))


def _credential_warnings(shown: str, interaction: Any) -> list[str]:
    request = interaction.get("request") if isinstance(interaction, dict) else None
    if not isinstance(request, dict):
        return []
    headers = _headers(request.get("headers"))
    out = []
    for name, value in sorted(headers.items()):
        secrets = scan(value)
        if secrets:
            what = describe(secrets[0])
        elif name in CREDENTIAL_HEADERS and value:
            what = mask(value.partition(" ")[2] or value)
        else:
            continue
        out.append(
            f"{shown}: request header {name} holds a credential ({what}): never imported "
            "(headers are not part of an entry), but the cassette file holds it; rotate it, "
            "then filter it out of your cassettes (vcrpy's filter_headers) or delete them"
        )
    uri = request.get("uri")
    for name, value in parse_qsl(urlsplit(uri if isinstance(uri, str) else "").query):
        if name.lower() in CREDENTIAL_PARAMS and value:
            out.append(
                f"{shown}: query parameter {name} holds a credential ({mask(value)}): never "
                "imported, but the cassette file holds it; rotate it (vcrpy's "
                "filter_query_parameters)"
            )
    return out
