"""Secrets in a committed cache: found, masked, and refused when recording (failing closed).

A provider can echo the API key back in a 200 response, a dataset can hold a pasted token, and a
target url can carry `user:password@` or `?key=...`. Once committed, a secret stays in history.
`scan` finds the well-known key formats (and the configured key's own value) in any text; what it
reports is masked (the first 4 characters and the length), never the secret itself. An allowlist
in the config (`secret-allow`: gitignore-style path globs, or `blake3:<16 hex>` fingerprints
printed by the finding) keeps test fixtures quiet.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, AnyStr

import blake3

from cachelint.errors import CachelintError
from cachelint.masks import MIN_KEY_LENGTH, mask

# Each pattern is linear (no nested quantifiers): a 64 MB payload scans in one pass. Each is the
# provider's real shape: its prefix at a word boundary (so `risk-management-...`, `task-force-...`
# never start a key), its charset, its length. A bare `sk-` (OpenAI's legacy keys: 48 letters and
# digits) must be one run of letters and digits; a hyphenated slug after `sk-` is a word, not a key.
_START = r"(?<![A-Za-z0-9])"  # the prefix begins a word
_END = r"(?![A-Za-z0-9])"  # a fixed-length body ends one
_PATTERNS: tuple[tuple[str, str], ...] = (
    ("Anthropic API key", _START + r"sk-ant-[a-z]{3,8}[0-9]{0,2}-[A-Za-z0-9_-]{20,}"),
    ("OpenAI API key", _START + r"sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,}"),
    ("OpenAI API key", _START + r"sk-[A-Za-z0-9]{32,}(?![A-Za-z0-9_-])"),
    ("AWS access key id", r"(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])"),
    ("GitHub token", _START + r"gh[pousr]_[A-Za-z0-9]{36,251}" + _END),
    ("GitHub token", _START + r"github_pat_[A-Za-z0-9_]{22,}"),
    ("GitLab token", _START + r"glpat-[A-Za-z0-9_-]{20,}"),
    ("Slack token", _START + r"xox[abprs]-[A-Za-z0-9-]{10,}"),
    ("Google API key", _START + r"AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"),
    ("private key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"),
    ("JWT", _START + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    (
        "Authorization bearer token",
        r"(?i:authorization)[\"']?\s*[:=]\s*[\"']?(?i:bearer)\s+[A-Za-z0-9._~+/=-]{8,}",
    ),
)
_COMBINED = re.compile("|".join(f"(?P<p{i}>{p})" for i, (_, p) in enumerate(_PATTERNS)))
# A JSON (or YAML) escape of a character an anchor is made of (`\\u0073k-`, `sk\\u002d`, an
# escaped `i` of `authorization`) hides the anchor from the raw bytes: such text is scanned
# decoded (`secrets_in`). Escapes of other characters (System.Text.Json writes `+`, `'`, `<`, `>`,
# `&` and all non-ASCII as `\\uXXXX`) leave every anchor visible and do not count.
_HIDING_ESCAPE = r"\\u0(?:0(?:2[0dD]|3[0-9]|4[1-9a-fA-F]|5[0-9aAfF]|6[1-9a-fA-F]|7[0-9aA])|13[01])"
# What every match of a pattern above contains, looked for first: the combined expression tries
# every alternative at every position, which made scanning most of a large check's time, while
# nearly every file holds none of these. Each is an expression with a literal first character,
# which the engine skips to at memory speed: faster than `in` for a needle this short, and a
# family sharing that character costs one pass over the text, not one per member. The escape
# is one too: a file holding one may decode to a key.
_ANCHORS = (
    r"sk-",
    r"A(?:KIA|SIA|Iza)",
    r"glpat-",
    r"PRIVATE KEY-----",
    r"eyJ",
    r"gh[pousr]_|github_pat_",
    r"xox[abprs]-",
    _HIDING_ESCAPE,
)
_ANCHOR_TEXT = tuple(re.compile(a).search for a in _ANCHORS)
_ANCHOR_BYTES = tuple(re.compile(a.encode()).search for a in _ANCHORS)
# `authorization` is matched case-insensitively, where re also takes the Turkish dotted and
# dotless I (U+0130, U+0131) for `i`. Text is searched as the pattern does; raw bytes are lowered
# first (a copy, but cheaper than a case-insensitive search), which folds ASCII only, so the two
# I's are spelled out, encoded as UTF-8 like the bytes searched.
_FOLDED_TEXT = re.compile(r"(?i:authorization)").search
_I = "(?:i|\u0130|\u0131)"
_FOLDED_BYTES = re.compile(f"author{_I}zat{_I}on".encode()).search
_GROUP_OF = {f"p{i}": i for i in range(len(_PATTERNS))}
# Changes whenever a pattern or the prefilter does, so verdicts cached under older ones are not
# reused.
PATTERNS_VERSION = blake3.blake3(repr((_PATTERNS, _ANCHORS, _I, 2)).encode()).hexdigest()[:16]
_JSON_ESCAPE = re.compile(r'\\(?:u([0-9a-fA-F]{4})|(["\\/bfnrt]))')
_SIMPLE_ESCAPES = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
}


@dataclass(frozen=True)
class Secret:
    kind: str
    value: str
    offset: int

    @property
    def masked(self) -> str:
        return mask(self.value)

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.value)


def fingerprint(value: str) -> str:
    return "blake3:" + blake3.blake3(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def may_hold_secret(data: bytes | str) -> bool:
    """False only when no well-known key format can match anywhere in `data` (an anchor of
    every pattern is absent); True means "scan it". The configured key is not covered."""
    if isinstance(data, bytes):
        return _anchored(data, _ANCHOR_BYTES) or _FOLDED_BYTES(data.lower()) is not None
    return _anchored(data, _ANCHOR_TEXT) or _FOLDED_TEXT(data) is not None


def _anchored(data: AnyStr, anchors: tuple[Callable[[AnyStr], object], ...]) -> bool:
    for search in anchors:
        if search(data) is not None:
            return True
    return False


def _unescaped(match: re.Match[str]) -> str:
    code = match.group(1)
    return chr(int(code, 16)) if code else _SIMPLE_ESCAPES[match.group(2)]


def decode_escapes(text: str) -> str:
    """`text` with JSON's string escapes decoded wherever they stand (`\\u0073k-` is `sk-`,
    `\\/` is `/`); an escaped backslash stays one backslash, so nothing is decoded twice."""
    return _JSON_ESCAPE.sub(_unescaped, text)


def scan(text: str, extra: Sequence[str] = ()) -> list[Secret]:
    """Every secret in `text`: the well-known formats, and each value in `extra` (the configured
    API key) wherever it appears. A position is reported once."""
    found: list[Secret] = []
    matches = _COMBINED.finditer(text) if may_hold_secret(text) else ()
    for match in matches:
        group = match.lastgroup or ""
        index = _GROUP_OF.get(group)
        if index is None:
            continue
        kind = _PATTERNS[index][0]
        value = match.group(group)
        if kind == "Authorization bearer token":
            inner = re.search(r"(?i:bearer)\s+(\S+)", value)
            value = inner.group(1).strip("\"'") if inner else value
        found.append(Secret(kind, value, match.start()))
    for value in extra:
        if len(value) < MIN_KEY_LENGTH:
            continue
        start = text.find(value)
        while start != -1:
            if not any(s.offset <= start < s.offset + len(s.value) + 64 for s in found):
                found.append(Secret("the configured API key", value, start))
            start = text.find(value, start + len(value))
    found.sort(key=lambda s: s.offset)
    return found


class Allowlist:
    """`secret-allow`: path globs (gitignore style) and `blake3:` fingerprints."""

    def __init__(self, items: Iterable[str]) -> None:
        items = list(items)
        self.fingerprints = frozenset(i for i in items if i.startswith("blake3:"))
        globs = [i for i in items if not i.startswith("blake3:")]
        self.globs = tuple(globs)
        self._spec: Any = None
        if globs:
            from cachelint.globs import compile_globs

            self._spec = compile_globs(globs)

    def allows(self, path: str, secret: Secret) -> bool:
        if secret.fingerprint in self.fingerprints:
            return True
        return self._spec is not None and bool(self._spec.match_file(path))


_ANCHOR_FIND = tuple(re.compile(a).finditer for a in _ANCHORS)
# A character every match of each anchor holds: where it is absent (one memchr pass, ~1/20 of a
# search), the anchor cannot match and a tree's names are not searched for it.
_ANCHOR_NEEDS = ("k", "I", "p", "Y", "J", "_", "x", "\\")


def secret_names(joined: str, extra: Sequence[str] = ()) -> dict[str, list[Secret]]:
    """The names in `joined` ("/"-separated, as `TreeFacts.names_text`) that hold a secret, with
    their secrets. Only the names around an anchor (or the configured key) are scanned, so a
    large tree's names cost a few searches at C speed (about 6 ms for 100,000 names). An
    `Authorization: Bearer` header is not looked for in a name (its case-folded search alone
    would cost more than all the anchors); a key of a known format is."""
    starts: set[int] = set()
    for need, finditer in zip(_ANCHOR_NEEDS, _ANCHOR_FIND, strict=True):
        if need in joined:
            starts.update(joined.rfind("/", 0, m.start()) + 1 for m in finditer(joined))
    for value in extra:
        at = joined.find(value) if len(value) >= MIN_KEY_LENGTH else -1
        while at != -1:
            starts.add(joined.rfind("/", 0, at) + 1)
            at = joined.find(value, at + 1)
    out: dict[str, list[Secret]] = {}
    for start in starts:
        end = joined.find("/", start)
        name = joined[start : None if end == -1 else end]
        if found := secrets_in("", name, extra=extra):
            out[name] = found
    return out


def mask_secrets(text: str, extra: Sequence[str] = ()) -> str:
    """`text` (a path, a line) with every secret in it masked, for output that must show it."""
    for secret in secrets_in("", text, extra=extra):
        text = text.replace(secret.value, secret.masked)
    return text


def describe(secret: Secret) -> str:
    return f"{secret.kind} {secret.masked}, fingerprint {secret.fingerprint}"


def secrets_in(
    path: str, text: str, *, allow: Allowlist | None = None, extra: Sequence[str] = ()
) -> list[Secret]:
    """The secrets in one file's text that the allowlist does not allow, one per distinct value.
    Text holding a backslash is scanned with its JSON string escapes decoded: a key written
    `\\u0073k-...` is a key, and one after an escaped newline (`:\\nsk-...`) begins a word."""
    seen: set[str] = set()
    out: list[Secret] = []
    found = scan(decode_escapes(text) if "\\" in text else text, extra)
    for secret in found:
        if secret.value in seen or (allow is not None and allow.allows(path, secret)):
            continue
        seen.add(secret.value)
        out.append(secret)
    return out


def _walk_strings(value: Any, depth: int = 0) -> Iterator[str]:
    if depth > 200:
        return
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield str(k)
            yield from _walk_strings(v, depth + 1)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _walk_strings(v, depth + 1)


def refuse_key_in_recording(
    key: str | None, where: str, request: Any, response: Any, *, source: str
) -> None:
    """Recording fails closed: an entry whose request or response holds the configured API key
    (a provider echoing it back, a prompt that embeds it) is never written."""
    if not key or len(key) < MIN_KEY_LENGTH:
        return
    for part, value in (("request", request), ("response", response)):
        if any(key in text for text in _walk_strings(value)):
            raise CachelintError(
                f"{where}: the {part} holds the API key from {source} ({mask(key)}); refusing "
                "to record it into the committed cache. Remove the key from the prompt or "
                "dataset, or use a provider that does not echo it back, and rotate the key"
            )
