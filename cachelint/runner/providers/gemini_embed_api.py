"""Google's Gemini embeddings (`batchEmbedContents`), as the cache endpoint serves them.

The `google-genai` SDK's `models.embed_content` POSTs to
`<base_url>/<version>/models/<model>:batchEmbedContents` with one request per text, the key as
`x-goog-api-key`; the model is in the path. The endpoint answers such a call from the cache like
a `generateContent` call (`gemini_api`): the key is the body with the path's
model, marked `"api": "batchEmbedContents"`; the cache holds the whole response. Embeddings do not
stream. A recording calls `<url>/models/<model>:batchEmbedContents`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cachelint.runner.providers import gemini_api

ROUTE = "batchEmbedContents"
CONVERSATION = "requests"
ANSWER_FIELD, ANSWER_TYPE, ANSWER_NAME = "embeddings", list, "a batchEmbedContents response"
KEY_HEADER: str | None = gemini_api.KEY_HEADER
UPSTREAM_HEADERS: dict[str, str] = {}
ERROR_SHAPE = "google"
KEYED_HEADERS: tuple[str, ...] = ()


def route_model(route: str) -> tuple[str, bool] | None:
    """The model a path (`.../models/<model>:batchEmbedContents`) asks for (never streamed);
    None for another path."""
    found = gemini_api.path_method(route)
    return (found[0], False) if found is not None and found[1] == ROUTE else None


def upstream(body: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The route under the target's url and the body a recording sends for a keyed call."""
    return gemini_api.method_upstream(body, ROUTE)


def conversation_problem(body: Mapping[str, Any]) -> str | None:
    """Why the requests of a body (a JSON object) are not ones this API takes, or None."""
    requests = body.get("requests")
    if not isinstance(requests, list) or not all(isinstance(r, dict) for r in requests):
        return "'requests' must be a list of embed content requests"
    return None


def as_messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each request's text as a user message: what was embedded."""
    chat = []
    for request in body.get("requests") or []:
        content = request.get("content") if isinstance(request, Mapping) else None
        parts = content.get("parts") if isinstance(content, Mapping) else None
        for part in parts if isinstance(parts, list) else []:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                chat.append({"role": "user", "content": part["text"]})
    return chat


# Embeddings do not stream.
event_stream = None
STREAM_TYPE = None
