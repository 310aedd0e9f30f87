"""Google's Gemini token counting (`countTokens`), as the cache endpoint serves it.

The `google-genai` SDK's `models.count_tokens` POSTs the contents a request would send to
`<base_url>/<version>/models/<model>:countTokens`, the key as `x-goog-api-key`, and gets
`{"totalTokens": N}` back. The endpoint answers it from the cache like a `generateContent` call
(`cachelint.runner.gemini_api`, whose request shapes it shares), marked `"api": "countTokens"`;
a recording calls `<url>/models/<model>:countTokens`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from cachelint.runner.gemini_api import (
    CONVERSATION,
    ERROR_SHAPE,
    KEY_HEADER,
    as_messages,
    conversation_problem,
)

# The API's facts: the generateContent request's shapes, and this route's answer.
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
    "route_model",
    "upstream",
]

ROUTE = "countTokens"
ANSWER_FIELD, ANSWER_TYPE, ANSWER_NAME = "totalTokens", int, "a countTokens response"
UPSTREAM_HEADERS: dict[str, str] = {}
KEYED_HEADERS: tuple[str, ...] = ()
_PATH = re.compile(r".*/models/(?P<model>[^/:]+):countTokens")


def route_model(route: str) -> tuple[str, bool] | None:
    """The model a path (`.../models/<model>:countTokens`) asks for (never streamed); None for
    another path."""
    match = _PATH.fullmatch(route)
    return None if match is None else (match["model"], False)


def upstream(body: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The route under the target's url and the body a recording sends for a keyed call (whose
    `model` came from the path)."""
    sent = {k: v for k, v in body.items() if k != "model"}
    return f"models/{body['model']}:{ROUTE}", sent


# A count does not stream.
event_stream = None
STREAM_TYPE = None
