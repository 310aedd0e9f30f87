"""OpenAI's embeddings API, as the cache endpoint serves it.

An agent that retrieves before it answers calls `client.embeddings.create(...)`, a POST to
`<base_url>/embeddings`; in replay that call must come from the cache like the model's answers,
or the agent cannot run offline. The key is the body as the SDK sent it (model, input,
dimensions, and `encoding_format`: the openai SDK asks for base64 and decodes it itself, so the
cached vectors are as compact as the API's), marked `"api": "embeddings"`; the cache holds the
whole response.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

ROUTE = "embeddings"
CONVERSATION = "input"
ANSWER_FIELD, ANSWER_TYPE, ANSWER_NAME = "data", list, "an embeddings list"
KEY_HEADER: str | None = None
UPSTREAM_HEADERS: dict[str, str] = {}
# Whose words an error is put in, and the request headers that are part of the key.
ERROR_SHAPE = "openai"
KEYED_HEADERS: tuple[str, ...] = ()


def upstream(body: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The route under the target's url and the body a recording sends for a keyed call."""
    return ROUTE, dict(body)


def conversation_problem(body: Mapping[str, Any]) -> str | None:
    """Why the input of a request (a JSON object) is not one this API takes, or None."""
    given = body.get("input")
    if isinstance(given, str):
        return None
    if isinstance(given, list) and given and all(_one_input(item) for item in given):
        return None
    return "'input' must be a string, or a non-empty list of strings or of token ids"


def _one_input(item: Any) -> bool:
    if isinstance(item, str) or (isinstance(item, int) and not isinstance(item, bool)):
        return True
    return isinstance(item, list) and all(
        isinstance(token, int) and not isinstance(token, bool) for token in item
    )


def as_messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The texts embedded, as one user message each, for the run's records."""
    given = body.get("input")
    texts = [given] if isinstance(given, str) else given if isinstance(given, list) else []
    return [{"role": "user", "content": text} for text in texts if isinstance(text, str)]


# Embeddings do not stream: a request that asks for a stream gets the whole response.
event_stream = None
STREAM_TYPE = None
