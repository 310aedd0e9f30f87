"""The APIs the cache endpoint serves besides chat completions, one module each.

Each module says what the rest of cachelint needs of its API: `ROUTE` (its name, and its route
under a base URL; on Gemini, Bedrock and Vertex AI the path also names the model, which
`route_model` reads), `CONVERSATION` (the body field keyed as the conversation), `ANSWER_FIELD`/
`ANSWER_TYPE`/`ANSWER_NAME` (what a successful answer holds), `KEY_HEADER` and
`UPSTREAM_HEADERS` (how a recording sends the key), `KEYED_HEADERS` (the request headers that
are part of the key), `ERROR_SHAPE` (whose words an error is put in), `conversation_problem`,
`as_messages`, `upstream`, and `event_stream` with its `STREAM_TYPE` (None: the API does not
stream). The endpoint, the client, the canonical request, the transport and the fake provider
read them from here, not from tables of their own.
"""

from __future__ import annotations

from typing import Any

from cachelint.runner.providers import (
    bedrock_invoke_api,
    converse_api,
    count_tokens_api,
    embeddings_api,
    gemini_api,
    gemini_count_api,
    gemini_embed_api,
    messages_api,
    responses_api,
    vertex_messages_api,
)

SDK_APIS: tuple[Any, ...] = (
    responses_api,
    embeddings_api,
    messages_api,
    count_tokens_api,
    gemini_api,
    gemini_embed_api,
    gemini_count_api,
    converse_api,
    vertex_messages_api,
    bedrock_invoke_api,
)
BY_NAME: dict[str, Any] = {api.ROUTE: api for api in SDK_APIS}
# The APIs whose path names the model (those with a `route_model(route)` to read it), and those
# whose route is the same for every call.
MODEL_IN_PATH: tuple[Any, ...] = tuple(api for api in SDK_APIS if hasattr(api, "route_model"))
FIXED_ROUTE: tuple[Any, ...] = tuple(api for api in SDK_APIS if api not in MODEL_IN_PATH)
# Amazon Bedrock's routes, which a recording signs with AWS credentials when it has no Bedrock
# API key (`awssign`).
SIGNED_BY_AWS: tuple[Any, ...] = (converse_api, bedrock_invoke_api)
