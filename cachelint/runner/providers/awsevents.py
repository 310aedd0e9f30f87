"""AWS's binary event-stream framing, in which Bedrock streams (`ConverseStream`, and
`InvokeModelWithResponseStream` for Claude): each event is a message of its own, which the AWS
SDKs (botocore's `EventStreamBuffer`, and the anthropic SDK's Bedrock client through it) read and
check."""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Mapping
from typing import Any


def aws_event(kind: str, payload: Mapping[str, Any]) -> bytes:
    """One event-stream message: the prelude (total and headers length, their CRC32), the
    headers naming the event, its JSON payload, and the CRC32 of all of it."""
    headers = b"".join(
        _header(name, value)
        for name, value in (
            (":event-type", kind),
            (":content-type", "application/json"),
            (":message-type", "event"),
        )
    )
    data = json.dumps(payload, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    body = data.encode("utf-8")
    prelude = struct.pack(">II", 12 + len(headers) + len(body) + 4, len(headers))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + headers + body
    return message + struct.pack(">I", zlib.crc32(message))


def _header(name: str, value: str) -> bytes:
    """A string header (value type 7): name length, name, type, value length, value."""
    raw_name, raw_value = name.encode("utf-8"), value.encode("utf-8")
    return (
        struct.pack(">B", len(raw_name))
        + raw_name
        + struct.pack(">BH", 7, len(raw_value))
        + raw_value
    )
