"""Amazon Bedrock's `InvokeModel`, as the cache endpoint serves it.

boto3's `invoke_model` and the anthropic SDK's `AnthropicBedrock` client POST a model family's own
body to `<base_url>/model/<model id>/invoke` (`/invoke-with-response-stream` to stream), signed
with SigV4 or carrying a Bedrock API key as a bearer token. The endpoint answers such a call from
the cache: the key is the body with the path's model, marked `"api": "invoke"`, and the cache
holds the whole answer. A recording calls `<url>/model/<model id>/invoke` with the target's key (a
Bedrock API key) as a bearer token, or signed with the machine's AWS credentials.

Claude's body is the Messages API's, less its model and with `anthropic_version` added (and the
betas asked for as `anthropic_beta`): it is read as one (`messages_api`), and a
streamed request gets the message back as the Messages API's events, each carried base64-encoded
in a `chunk` event of AWS's event-stream framing, as Bedrock sends them. Another family's body
(Titan's or Cohere's embeddings, Llama's prompt) is keyed as it is, and a streamed one gets its
answer back whole in one `chunk`: the shape Llama's and Mistral's streams have, not Titan's.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, unquote

from cachelint.runner.providers import messages_api
from cachelint.runner.providers.awsevents import aws_event

# The API's facts: the Messages API's shapes for Claude's bodies, and this platform's route.
CONVERSATION = messages_api.CONVERSATION

ROUTE = "invoke"
# Each family answers in its own shape: any JSON object is an answer.
ANSWER_FIELD, ANSWER_TYPE, ANSWER_NAME = None, dict, "an InvokeModel answer"
# A Bedrock API key is a bearer token.
KEY_HEADER: str | None = None
UPSTREAM_HEADERS: dict[str, str] = {}
STREAM_TYPE = "application/vnd.amazon.eventstream"
ERROR_SHAPE = "aws"
# The anthropic SDK sends the betas asked for on Bedrock in the body (`anthropic_beta`).
KEYED_HEADERS: tuple[str, ...] = ()
_PATH = re.compile(r".*/model/(?P<model>[^/]+)/(?P<method>invoke|invoke-with-response-stream)")
# Where other families' bodies hold their text: Titan's, Cohere's embeddings, Llama's and
# Mistral's prompt.
_TEXT_FIELDS = ("inputText", "texts", "prompt")


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


def conversation_problem(body: Mapping[str, Any]) -> str | None:
    """Why a Claude body's conversation is not one the Messages API takes, or None (another
    family's body is taken as it is)."""
    return messages_api.conversation_problem(body) if CONVERSATION in body else None


def as_messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The request's conversation as chat messages: a Claude body's as the Messages API's, another
    family's texts as user messages."""
    if CONVERSATION in body:
        return messages_api.as_messages(body)
    chat = []
    for field in _TEXT_FIELDS:
        given = body.get(field)
        for text in [given] if isinstance(given, str) else given if isinstance(given, list) else []:
            if isinstance(text, str):
                chat.append({"role": "user", "content": text})
    return chat


def event_stream(answer: Mapping[str, Any]) -> bytes:
    """The answer as InvokeModelWithResponseStream sends it: a Claude message's events
    (`messages_api.events`), or another family's whole answer, each as the base64 JSON `bytes` of
    a `chunk` event."""
    events = messages_api.events(answer) if messages_api.is_answer(answer) else [answer]
    chunks = []
    for event in events:
        data = json.dumps(event, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        raw = base64.b64encode(data.encode("utf-8")).decode("ascii")
        chunks.append(aws_event("chunk", {"bytes": raw}))
    return b"".join(chunks)
