"""The body of a request to the cache endpoint, read only as far as its Content-Length says and
never beyond `MAX_BODY_BYTES`: a claimed length is never allocated up front, and a length that is
not one plain decimal number is refused, not parsed leniently."""

from __future__ import annotations

import re
from email.message import Message
from io import BufferedIOBase

# The largest request body the endpoint reads: room for a request carrying images (OpenAI takes
# up to 50 MB of them), and a bound on what one request can make the run hold.
MAX_BODY_BYTES = 64 * 1024 * 1024
_PIECE = 1024 * 1024  # read in pieces: a body that never arrives is never allocated
_DIGITS = re.compile(r"[0-9]{1,20}", re.ASCII)


def read(headers: Message, rfile: BufferedIOBase) -> bytes | tuple[int, str]:
    """The body the request's headers announce, read from `rfile`; else the HTTP status and the
    problem refusing it: a malformed length (400), a length above `MAX_BODY_BYTES` (413), a
    chunked body (400; every SDK sends a length) or a body that ends early (400)."""
    lengths = headers.get_all("Content-Length") or []
    if "chunked" in (headers.get("Transfer-Encoding") or "").lower():
        return 400, "a chunked body (send it with a Content-Length)"
    length = _length(lengths)
    if length is None:
        return 400, f"Content-Length {', '.join(map(repr, lengths))} is not one decimal number"
    if length > MAX_BODY_BYTES:
        return 413, f"Content-Length {length} is above the limit of {MAX_BODY_BYTES} bytes"
    pieces, left = [], length
    while left > 0:
        piece = rfile.read(min(left, _PIECE))
        if not piece:
            return 400, f"a body that ended {left} bytes before its Content-Length"
        pieces.append(piece)
        left -= len(piece)
    return b"".join(pieces)


def _length(values: list[str]) -> int | None:
    """The body length the Content-Length headers agree on (0 for none), or None when they are
    not one plain decimal number (`abc`, `10^15`, `-5`, `1_000`, two that differ)."""
    if not values:
        return 0
    if len(set(values)) != 1 or not _DIGITS.fullmatch(values[0].strip()):
        return None
    return int(values[0])
