"""Google's Gemini token counting (`countTokens`), as the cache endpoint serves it.

The `google-genai` SDK's `models.count_tokens` POSTs the contents a request would send to
`<base_url>/<version>/models/<model>:countTokens`, the key as `x-goog-api-key`, and gets
`{"totalTokens": N}` back. The endpoint answers it from the cache like a `generateContent` call
(`gemini_api`, whose request shapes it shares), marked `"api": "countTokens"`;
a recording calls `<url>/models/<model>:countTokens`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cachelint.runner.providers import gemini_api

# The API's facts: the generateContent request's shapes, and this route's answer.
CONVERSATION, ERROR_SHAPE, KEY_HEADER = (
    gemini_api.CONVERSATION,
    gemini_api.ERROR_SHAPE,
    gemini_api.KEY_HEADER,
)
as_messages, conversation_problem = gemini_api.as_messages, gemini_api.conversation_problem

ROUTE = "countTokens"
ANSWER_FIELD, ANSWER_TYPE, ANSWER_NAME = "totalTokens", int, "a countTokens response"
UPSTREAM_HEADERS: dict[str, str] = {}
KEYED_HEADERS: tuple[str, ...] = ()


def route_model(route: str) -> tuple[str, bool] | None:
    """The model a path (`.../models/<model>:countTokens`) asks for (never streamed); None for
    another path."""
    found = gemini_api.path_method(route)
    return (found[0], False) if found is not None and found[1] == ROUTE else None


def upstream(body: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The route under the target's url and the body a recording sends for a keyed call."""
    return gemini_api.method_upstream(body, ROUTE)


# A count does not stream.
event_stream = None
STREAM_TYPE = None
