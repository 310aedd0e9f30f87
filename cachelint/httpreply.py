"""One HTTP answer from a `http.server` handler: shared by the cache endpoint and the fake
provider, which both answer JSON or an event stream whose bytes are already made."""

from __future__ import annotations

from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler


def reply(
    handler: BaseHTTPRequestHandler, status: int, headers: Mapping[str, str], data: bytes
) -> None:
    """Send status, headers, a Content-Length and the body; a client that has gone (its own
    timeout fired) is not an error, only the end of that connection."""
    try:
        handler.send_response(status)
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
    except (BrokenPipeError, ConnectionResetError):
        handler.close_connection = True
