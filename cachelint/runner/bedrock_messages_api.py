"""Anthropic's Messages API on Amazon Bedrock (`InvokeModel`), as the cache endpoint serves it.

The anthropic SDK's `AnthropicBedrock` client POSTs a Messages API body, less its model and with
`anthropic_version` added (and its betas as `anthropic_beta`), to `<base_url>/model/<model id>/
invoke` (`/invoke-with-response-stream` to stream), signed with SigV4 or carrying a Bedrock API
key as a bearer token. The endpoint answers such a call from the cache like a Messages API call:
the key is the body with the path's model, marked `"api": "invoke"`; a streamed request gets the
message back as the Messages API's events, each carried base64-encoded in a `chunk` event of
AWS's event-stream framing, as Bedrock sends them. A recording calls `<url>/model/<model id>/
invoke` with the target's key (a Bedrock API key) as a bearer token.

Only Claude's bodies are served: InvokeModel takes each model family's own format, and the
others' are not the Messages API's. The shapes are the Messages API's
(`cachelint.runner.messages_api`).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, unquote

from cachelint.runner import messages_api
from cachelint.runner.awsevents import aws_event
from cachelint.runner.messages_api import (
    ANSWER_FIELD,
    ANSWER_NAME,
    ANSWER_TYPE,
    CONVERSATION,
    as_messages,
    conversation_problem,
    is_answer,
    output_of,
)

# The API's facts: the Messages API's shapes, and this platform's route.
__all__ = [
    "ANSWER_FIELD",
    "ANSWER_NAME",
    "ANSWER_TYPE",
    "CONVERSATION",
    "ERROR_SHAPE",
    "KEYED_HEADERS",
    "KEY_HEADER",
    "ROUTE",
    "STREAM_TYPE",
    "UPSTREAM_HEADERS",
    "as_messages",
    "conversation_problem",
    "event_stream",
    "is_answer",
    "output_of",
    "route_model",
    "upstream",
]

ROUTE = "invoke"
# A Bedrock API key is a bearer token.
KEY_HEADER: str | None = None
UPSTREAM_HEADERS: dict[str, str] = {}
STREAM_TYPE = "application/vnd.amazon.eventstream"
ERROR_SHAPE = "aws"
# The anthropic SDK sends the betas asked for on Bedrock in the body (`anthropic_beta`).
KEYED_HEADERS: tuple[str, ...] = ()
_PATH = re.compile(r".*/model/(?P<model>[^/]+)/(?P<method>invoke|invoke-with-response-stream)")


def route_model(route: str) -> tuple[str, bool] | None:
    """The model id a path (`.../model/<model id>/invoke`) asks for, and whether it asks for a
    stream; None for another path."""
    match = _PATH.fullmatch(route)
    if match is None:
        return None
    return unquote(match["model"]), match["method"] == "invoke-with-response-stream"


def upstream(body: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The route under the target's url and the body a recording sends for a keyed call (whose
    `model` came from the path)."""
    sent = {k: v for k, v in body.items() if k != "model"}
    return f"model/{quote(str(body['model']), safe='')}/{ROUTE}", sent


def event_stream(message: Mapping[str, Any]) -> bytes:
    """The message as InvokeModelWithResponseStream sends it: each of the Messages API's events
    (`messages_api.events`) as the base64 JSON `bytes` of a `chunk` event."""
    chunks = []
    for event in messages_api.events(message):
        data = json.dumps(event, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        raw = base64.b64encode(data.encode("utf-8")).decode("ascii")
        chunks.append(aws_event("chunk", {"bytes": raw}))
    return b"".join(chunks)
