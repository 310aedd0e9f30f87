"""The Anthropic Messages API, as the cache endpoint serves it.

The `anthropic` SDK (and what is built on it) POSTs to `<base_url>/v1/messages` and sends its key
as `x-api-key`. The endpoint answers such a call from the cache like a chat completion: the key
is the body as the SDK sent it, less the transport fields, marked `"api": "messages"`, with the
`anthropic-beta` header the SDK sent (a beta changes what the model may answer); the cache holds
the whole `message`. A streamed request gets it back as the events the API streams, from
`message_start` to `message_stop`: the same bytes at record and replay.

This module knows the API's shapes: what a request must hold, the conversation it carries (for
the run's records and the fake provider), the text and tool calls of a message, and its event
stream.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

ROUTE = "messages"
CONVERSATION = "messages"
ANSWER_FIELD, ANSWER_TYPE, ANSWER_NAME = "content", list, "a message"
# The API version a recording asks for (the one version there is), with the key as x-api-key.
VERSION = "2023-06-01"
KEY_HEADER: str | None = "x-api-key"
UPSTREAM_HEADERS = {"anthropic-version": VERSION}
# The request header that turns on beta features: part of the key, and sent upstream.
BETA_HEADER = "anthropic-beta"
# Whose words an error is put in, and the request headers that are part of the key.
ERROR_SHAPE = "anthropic"
KEYED_HEADERS: tuple[str, ...] = (BETA_HEADER,)


def upstream(body: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The route under the target's url and the body a recording sends for a keyed call."""
    return ROUTE, dict(body)


def conversation_problem(body: Mapping[str, Any]) -> str | None:
    """Why the conversation of a request (a JSON object) is not one this API takes, or None."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        return "'messages' must be a list of message objects"
    system = body.get("system")
    if system is not None and not isinstance(system, (str, list)):
        return "'system' must be a string or a list of text blocks"
    return None


def is_answer(value: Any) -> bool:
    """Whether `value` is a Messages API `message` object (as JSON)."""
    return (
        isinstance(value, Mapping)
        and value.get("type") == "message"
        and isinstance(value.get("content"), list)
    )


def as_messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The request's conversation as chat messages: `system` as the system message, each
    message's text blocks as its content, `tool_use` blocks as an assistant's tool calls and
    `tool_result` blocks as tool messages. Other blocks (images, thinking) are left out."""
    chat: list[dict[str, Any]] = []
    if body.get("system"):
        chat.append({"role": "system", "content": _text(body["system"])})
    for message in body.get("messages") or []:
        if not isinstance(message, Mapping):
            continue
        role, content = message.get("role"), message.get("content")
        results = _blocks(content, "tool_result")
        for result in results:
            said = _text(result.get("content"))
            chat.append(
                {"role": "tool", "tool_call_id": result.get("tool_use_id"), "content": said}
            )
        calls = [_tool_call(block) for block in _blocks(content, "tool_use")]
        text = _text(content)
        if text or calls or not results:
            turn: dict[str, Any] = {"role": role, "content": text or None}
            if calls:
                turn["tool_calls"] = calls
            chat.append(turn)
    return chat


def _blocks(content: Any, kind: str) -> list[Mapping[str, Any]]:
    """The blocks of `kind` ("text", "tool_use", ...) in a content (none in a string)."""
    if not isinstance(content, list):
        return []
    return [block for block in content if isinstance(block, Mapping) and block.get("type") == kind]


def _tool_call(block: Mapping[str, Any]) -> dict[str, Any]:
    arguments = json.dumps(block.get("input"), ensure_ascii=False, sort_keys=True)
    call = {"name": block.get("name"), "arguments": arguments}
    return {"id": block.get("id"), "type": "function", "function": call}


def _text(content: Any) -> str:
    """The text of a content: a string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    texts = (block.get("text") for block in _blocks(content, "text"))
    return "".join(text for text in texts if isinstance(text, str))


def output_of(message: Mapping[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """The text of a message's text blocks (joined) and its tool calls, each as {"name",
    "arguments"}."""
    content = message.get("content")
    calls = [
        {"name": block.get("name"), "arguments": block.get("input")}
        for block in _blocks(content, "tool_use")
    ]
    return _text(content), calls


# ---- streaming ----------------------------------------------------------------------------------


STREAM_TYPE = "text/event-stream"


def event_stream(message: Mapping[str, Any]) -> bytes:
    """The message as the server-sent events the Messages API streams (`events`)."""
    chunks = []
    for event in events(message):
        data = json.dumps(event, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        chunks.append(f"event: {event['type']}\ndata: {data}\n\n")
    return "".join(chunks).encode("utf-8")


def events(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The events the Messages API streams a message as: `message_start` (the message with no
    content yet), then each content block started, its text, thinking or tool input as one
    delta, and stopped, then `message_delta` (the stop reason and usage) and `message_stop`.
    The SDK's accumulator rebuilds the recorded message from them."""
    content = message.get("content")
    blocks = [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []
    # The SDK's accumulator counts on a usage object; a server that sent none gets zeros.
    usage = message.get("usage")
    usage = usage if isinstance(usage, dict) else {"input_tokens": 0, "output_tokens": 0}
    started = {**message, "content": [], "stop_reason": None, "stop_sequence": None}
    started["usage"] = usage
    said: list[dict[str, Any]] = [{"type": "message_start", "message": started}]
    for index, block in enumerate(blocks):
        said.extend(_block_events(index, block))
    stop = {name: message.get(name) for name in ("stop_reason", "stop_sequence")}
    stop.update((name, message[name]) for name in _LATE_FIELDS if name in message)
    said.append({"type": "message_delta", "delta": stop, "usage": usage})
    said.append({"type": "message_stop"})
    return said


# Fields of a message the API sends in its `message_delta`, when the message has them.
_LATE_FIELDS = ("stop_details", "container")


def _block_events(index: int, block: Mapping[str, Any]) -> list[dict[str, Any]]:
    kind = block.get("type")
    deltas: list[dict[str, Any]]
    if kind == "text":
        start = {**block, "text": ""}
        deltas = [{"type": "text_delta", "text": block.get("text") or ""}]
    elif kind == "tool_use":
        start = {**block, "input": {}}
        partial = json.dumps(block.get("input"), ensure_ascii=False, separators=(",", ":"))
        deltas = [{"type": "input_json_delta", "partial_json": partial}]
    elif kind == "thinking":
        start = {**block, "thinking": "", "signature": ""}
        deltas = [
            {"type": "thinking_delta", "thinking": block.get("thinking") or ""},
            {"type": "signature_delta", "signature": block.get("signature") or ""},
        ]
    else:  # redacted thinking, a server tool's use or result: started whole
        start, deltas = dict(block), []
    return [
        {"type": "content_block_start", "index": index, "content_block": start},
        *({"type": "content_block_delta", "index": index, "delta": d} for d in deltas),
        {"type": "content_block_stop", "index": index},
    ]
