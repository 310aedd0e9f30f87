"""The APIs the cache endpoint serves besides chat completions, one module each.

Each module says what the rest of cachelint needs of its API: `ROUTE` (its name, and its route
under a base URL; Gemini's path also names the model), `CONVERSATION` (the body field keyed as
the conversation), `ANSWER_FIELD`/`ANSWER_TYPE`/`ANSWER_NAME` (what a successful answer holds),
`KEY_HEADER` and `UPSTREAM_HEADERS` (how a recording sends the key), `conversation_problem`,
`as_messages`, `upstream`, and `event_stream` with its `STREAM_TYPE` (None: the API does not
stream). The endpoint, the client, the canonical request, the transport and
the fake provider read them from here, not from tables of their own.
"""

from __future__ import annotations

from typing import Any

from cachelint.runner import embeddings_api, gemini_api, messages_api, responses_api

SDK_APIS: tuple[Any, ...] = (responses_api, embeddings_api, messages_api, gemini_api)
BY_NAME: dict[str, Any] = {api.ROUTE: api for api in SDK_APIS}
