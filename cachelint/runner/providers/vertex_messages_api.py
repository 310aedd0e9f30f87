"""Anthropic's Messages API on Google's Vertex AI (`rawPredict`), as the cache endpoint serves it.

The anthropic SDK's `AnthropicVertex` client POSTs a Messages API body, less its model and with
`anthropic_version` added, to `<base_url>/projects/<project>/locations/<region>/publishers/
anthropic/models/<model>:rawPredict` (`:streamRawPredict` to stream), with a Google access token
as a bearer token. The endpoint answers such a call from the cache like a Messages API call: the
key is the body with the path's model, marked `"api": "rawPredict"` (the project and region are
where the model runs, not what it answers, and are not keyed); a streamed request gets the
message back as the Messages API's events. A recording calls `<url>/publishers/anthropic/models/
<model>:rawPredict`, the target's url naming the project and region, with the target's key (an
access token) as a bearer token.

The shapes are the Messages API's (`messages_api`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, unquote

from cachelint.runner.providers import messages_api
from cachelint.runner.providers.messages_api import BETA_HEADER

# The API's facts: the Messages API's shapes, and this platform's route.
ANSWER_FIELD, ANSWER_TYPE, ANSWER_NAME = (
    messages_api.ANSWER_FIELD,
    messages_api.ANSWER_TYPE,
    messages_api.ANSWER_NAME,
)
CONVERSATION, STREAM_TYPE, event_stream = (
    messages_api.CONVERSATION,
    messages_api.STREAM_TYPE,
    messages_api.event_stream,
)
as_messages, conversation_problem = messages_api.as_messages, messages_api.conversation_problem

ROUTE = "rawPredict"
# A Google access token is a bearer token.
KEY_HEADER: str | None = None
UPSTREAM_HEADERS: dict[str, str] = {}
ERROR_SHAPE = "anthropic"
# The anthropic SDK sends the betas asked for on Vertex AI as the Messages API's header.
KEYED_HEADERS: tuple[str, ...] = (BETA_HEADER,)
_PATH = re.compile(
    r".*/publishers/anthropic/models/(?P<model>[^/:]+):(?P<method>rawPredict|streamRawPredict)"
)


def route_model(route: str) -> tuple[str, bool] | None:
    """The model a path (`.../publishers/anthropic/models/<model>:rawPredict`) asks for, and
    whether it asks for a stream; None for another path."""
    match = _PATH.fullmatch(route)
    if match is None:
        return None
    return unquote(match["model"]), match["method"] == "streamRawPredict"


def upstream(body: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The route under the target's url and the body a recording sends for a keyed call (whose
    `model` came from the path)."""
    sent = {k: v for k, v in body.items() if k != "model"}
    return f"publishers/anthropic/models/{quote(str(body['model']), safe='@')}:{ROUTE}", sent
