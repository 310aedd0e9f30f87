"""Anthropic's token counting (`/v1/messages/count_tokens`), as the cache endpoint serves it.

Code that keeps a conversation within the context window asks the API how many tokens a request
would take before sending it (the anthropic SDK's `messages.count_tokens`, and what is built on
it, such as LangChain's token counter for Claude). The body is a Messages API request without
`max_tokens`; the answer is `{"input_tokens": N}`. The endpoint answers it from the cache like a
Messages API call (`messages_api`, whose shapes it shares), marked
`"api": "count_tokens"`; a recording calls `<url>/messages/count_tokens`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cachelint.runner.providers import messages_api
from cachelint.runner.providers.messages_api import BETA_HEADER

# The API's facts: the Messages API's request shapes, and this route's answer.
CONVERSATION, KEY_HEADER = messages_api.CONVERSATION, messages_api.KEY_HEADER
UPSTREAM_HEADERS = messages_api.UPSTREAM_HEADERS
as_messages, conversation_problem = messages_api.as_messages, messages_api.conversation_problem

ROUTE = "count_tokens"
ANSWER_FIELD, ANSWER_TYPE, ANSWER_NAME = "input_tokens", int, "a token count"
ERROR_SHAPE = messages_api.ERROR_SHAPE
KEYED_HEADERS: tuple[str, ...] = (BETA_HEADER,)


def upstream(body: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The route under the target's url and the body a recording sends for a keyed call."""
    return f"{messages_api.ROUTE}/{ROUTE}", dict(body)


# A count does not stream.
event_stream = None
STREAM_TYPE = None
