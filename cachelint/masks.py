"""How a secret is shown when a message must name it: masked to its first characters and its
length, or cut out of a URL.

Apart from the scanner (`secretscan`, whose patterns cost each process that imports it a few
milliseconds to compile) because every `cachelint run` shows its targets' URLs and masks the
configured keys, and almost never scans.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlsplit, urlunsplit

MIN_KEY_LENGTH = 8  # a configured key shorter than this would match ordinary words

_CREDENTIAL_PARAM = re.compile(
    r"key|token|secret|password|passwd|pwd|sig|signature|auth|credential|session", re.IGNORECASE
)


def mask(value: str) -> str:
    """The first 4 characters and the length: enough to recognise a key, never enough to use it."""
    return f"{value[:4]}... ({len(value)} characters)"


def redact_url(url: str) -> str:
    """`url` without userinfo and with credential-like query values masked, for every message
    and report (`https://user:pw@host/v1?key=abc` -> `https://host/v1?key=***`)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<an invalid url>"
    netloc = parts.netloc.rpartition("@")[2]
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = "&".join(
            f"{name}=***" if _CREDENTIAL_PARAM.search(name) else f"{name}={value}"
            for name, value in pairs
        )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
