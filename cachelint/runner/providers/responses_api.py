"""The OpenAI Responses API, as the cache endpoint serves it.

`client.responses.create(...)` in the openai SDK, and the OpenAI Agents SDK (whose default model
calls it), POST to `<base_url>/responses` rather than `/chat/completions`. The endpoint answers
such a call from the cache like a chat completion: the key is the body as the SDK sent it, less
the transport fields (`request.build_sdk_request`), and the cache holds the whole
`response` object. A streamed request gets that object back as the events the API streams, from
`response.created` to `response.completed`: the same bytes at record and replay.

This module knows the API's shapes: what a request must hold, the conversation a request
carries (for the run's records and the fake provider), the text and tool calls of a response,
and its event stream.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

ROUTE = "responses"
# The body field holding the conversation, and the list a successful answer holds.
CONVERSATION = "input"
ANSWER_FIELD, ANSWER_TYPE, ANSWER_NAME = "output", list, "a response"
# The header the API takes its key in besides a bearer token (None: the bearer token), and the
# headers a recording sends with it.
KEY_HEADER: str | None = None
UPSTREAM_HEADERS: dict[str, str] = {}
# Whose words an error is put in, and the request headers that are part of the key.
ERROR_SHAPE = "openai"
KEYED_HEADERS: tuple[str, ...] = ()


def upstream(body: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The route under the target's url and the body a recording sends for a keyed call."""
    return ROUTE, dict(body)


def conversation_problem(body: Mapping[str, Any]) -> str | None:
    """Why the conversation of a request (a JSON object) is not one this API takes, or None."""
    given = body.get("input")
    if not isinstance(given, str) and not (
        isinstance(given, list) and all(isinstance(item, dict) for item in given)
    ):
        return "'input' must be a string or a list of input items"
    if body.get("instructions") is not None and not isinstance(body["instructions"], str):
        return "'instructions' must be a string"
    return None


def is_answer(value: Any) -> bool:
    """Whether `value` is a Responses API `response` object (as JSON)."""
    return (
        isinstance(value, Mapping)
        and value.get("object") == "response"
        and isinstance(value.get("output"), list)
    )


def as_messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The request's conversation as chat messages: `instructions` as the system message, a
    string `input` as the user's, message items by role, function calls and their outputs as an
    assistant's tool calls and tool messages. Other items (reasoning, say) are left out."""
    messages: list[dict[str, Any]] = []
    if isinstance(body.get("instructions"), str):
        messages.append({"role": "system", "content": body["instructions"]})
    given = body.get("input")
    if isinstance(given, str):
        return [*messages, {"role": "user", "content": given}]
    for item in given if isinstance(given, list) else []:
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type")
        if isinstance(item.get("role"), str) and kind in (None, "message"):
            messages.append({"role": item["role"], "content": _text(item.get("content"))})
        elif kind == "function_call":
            call = {"name": item.get("name"), "arguments": item.get("arguments")}
            tool_call = {"id": item.get("call_id"), "type": "function", "function": call}
            messages.append({"role": "assistant", "content": None, "tool_calls": [tool_call]})
        elif kind == "function_call_output":
            output = item.get("output")
            text = output if isinstance(output, str) else _text(output)
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": text})
    return messages


def _text(content: Any) -> str:
    """A message's text: a string, or the text of its content parts."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(
        part["text"]
        for part in content
        if isinstance(part, Mapping) and isinstance(part.get("text"), str)
    )


def output_of(response: Mapping[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """The text of a response's messages (their `output_text` parts, joined) and its function
    calls, each as {"name", "arguments"}."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for item in response.get("output") or []:
        if not isinstance(item, Mapping):
            continue
        if item.get("type") == "message":
            parts = item.get("content")
            for part in parts if isinstance(parts, list) else []:
                if isinstance(part, Mapping) and part.get("type") == "output_text":
                    texts.append(part.get("text") or "")
        elif item.get("type") == "function_call":
            calls.append({"name": item.get("name"), "arguments": item.get("arguments")})
    return "".join(texts), calls


# ---- streaming ----------------------------------------------------------------------------------

# What the last event is called for each final status of a response.
_FINAL_EVENT = {"incomplete": "response.incomplete", "failed": "response.failed"}


STREAM_TYPE = "text/event-stream"


def event_stream(response: Mapping[str, Any]) -> bytes:
    """The response as the server-sent events the Responses API streams: `response.created` and
    `response.in_progress` (the response with no output yet), then each output item added, its
    text or arguments as one delta and done, then the whole response as `response.completed`
    (or `response.incomplete`/`response.failed`, as its status says)."""
    events: list[dict[str, Any]] = []
    started = {**response, "status": "in_progress", "output": [], "usage": None}
    events.append({"type": "response.created", "response": started})
    events.append({"type": "response.in_progress", "response": started})
    output = response.get("output")
    for index, item in enumerate(output if isinstance(output, list) else []):
        if isinstance(item, Mapping):
            events.extend(_item_events(index, item))
    last = _FINAL_EVENT.get(str(response.get("status")), "response.completed")
    events.append({"type": last, "response": dict(response)})
    chunks = []
    for number, event in enumerate(events):
        event["sequence_number"] = number
        data = json.dumps(event, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        chunks.append(f"event: {event['type']}\ndata: {data}\n\n")
    return "".join(chunks).encode("utf-8")


def _item_events(index: int, item: Mapping[str, Any]) -> list[dict[str, Any]]:
    kind, item_id = item.get("type"), item.get("id")
    where = {"item_id": item_id, "output_index": index}
    if kind == "message":
        parts = item.get("content")
        parts = [p for p in parts if isinstance(p, Mapping)] if isinstance(parts, list) else []
        added = {**item, "status": "in_progress", "content": []}
        events = [{"type": "response.output_item.added", "output_index": index, "item": added}]
        for position, part in enumerate(parts):
            events.extend(_part_events({**where, "content_index": position}, part))
    elif kind == "function_call":
        added = {**item, "status": "in_progress", "arguments": ""}
        arguments = item.get("arguments") or ""
        events = [
            {"type": "response.output_item.added", "output_index": index, "item": added},
            {"type": "response.function_call_arguments.delta", **where, "delta": arguments},
            {"type": "response.function_call_arguments.done", **where, "arguments": arguments},
        ]
    else:  # reasoning, a built-in tool's call: added and done whole
        events = [{"type": "response.output_item.added", "output_index": index, "item": item}]
    events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    return events


# The field holding the text of each kind of content part that streams as deltas.
_PART_TEXT = {"output_text": "text", "refusal": "refusal"}


def _part_events(where: Mapping[str, Any], part: Mapping[str, Any]) -> list[dict[str, Any]]:
    field = _PART_TEXT.get(str(part.get("type")))
    if field is None:
        return [
            {"type": "response.content_part.added", **where, "part": part},
            {"type": "response.content_part.done", **where, "part": part},
        ]
    text = part.get(field) or ""
    empty = {**part, field: ""}
    name = "output_text" if field == "text" else "refusal"
    extra: dict[str, Any] = {"logprobs": []} if field == "text" else {}
    return [
        {"type": "response.content_part.added", **where, "part": empty},
        {"type": f"response.{name}.delta", **where, "delta": text, **extra},
        {"type": f"response.{name}.done", **where, field: text, **extra},
        {"type": "response.content_part.done", **where, "part": part},
    ]
