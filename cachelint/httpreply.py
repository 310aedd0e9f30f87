"""HTTP answers from a `http.server` handler: shared by the cache endpoint, the fake provider and
the children's refusing proxy, which answer JSON or bytes already made (an event stream)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler
from typing import Any

# An answer: its status, its headers and its body, whose bytes are already made.
Response = tuple[int, dict[str, str], bytes]


def json_response(status: int, value: Any, headers: Mapping[str, str] | None = None) -> Response:
    """`value` as a JSON answer: UTF-8, keys sorted, so a value always makes the same bytes."""
    data = json.dumps(value, ensure_ascii=False, sort_keys=True).encode("utf-8")
    return status, {"Content-Type": "application/json", **(headers or {})}, data


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
