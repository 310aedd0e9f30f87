"""Google's Gemini API (`generateContent`), as the cache endpoint serves it.

The `google-genai` SDK POSTs to `<base_url>/<version>/models/<model>:generateContent` (or
`:streamGenerateContent?alt=sse` to stream) with its key as `x-goog-api-key`; the model is in
the path, not the body. The endpoint answers such a call from the cache like a chat completion:
the key is the body with the path's model, marked `"api": "generateContent"`; the cache holds the
whole response, and a streamed request gets it back as one server-sent event: the same bytes at
record and replay. A recording calls `<url>/models/<model>:generateContent`.

This module knows the API's shapes: the model a path names, what a request must hold, the
conversation it carries (for the run's records and the fake provider), the text and function
calls of a response, and its event stream. A response read back from the SDK's own object
(`model_dump`) has snake_case names where the wire has camelCase; both are read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

ROUTE = "generateContent"
CONVERSATION = "contents"
ANSWER_FIELD, ANSWER_TYPE, ANSWER_NAME = "candidates", list, "a generateContent response"
KEY_HEADER: str | None = "x-goog-api-key"
UPSTREAM_HEADERS: dict[str, str] = {}
# Whose words an error is put in, and the request headers that are part of the key.
ERROR_SHAPE = "google"
KEYED_HEADERS: tuple[str, ...] = ()
# A path of Google's APIs: the model, and the method called on it.
_PATH = re.compile(r".*/models/(?P<model>[^/:]+):(?P<method>[A-Za-z]+)")


def path_method(route: str) -> tuple[str, str] | None:
    """The model and the method a path (`.../models/<model>:<method>`) names; None for another
    path. Each of Google's APIs served (this one, `gemini_embed_api`, `gemini_count_api`) is a
    method."""
    match = _PATH.fullmatch(route)
    return None if match is None else (match["model"], match["method"])


def method_upstream(body: Mapping[str, Any], method: str) -> tuple[str, dict[str, Any]]:
    """The route under the target's url and the body a recording sends for a keyed call to
    `method`, whose `model` came from the path."""
    sent = {k: v for k, v in body.items() if k != "model"}
    return f"models/{body['model']}:{method}", sent


def route_model(route: str) -> tuple[str, bool] | None:
    """The model a path (`.../models/<model>:generateContent`) asks for, and whether it asks for
    a stream; None for another path."""
    found = path_method(route)
    if found is None or found[1] not in (ROUTE, "streamGenerateContent"):
        return None
    return found[0], found[1] == "streamGenerateContent"


def upstream(body: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The route under the target's url and the body a recording sends for a keyed call."""
    return method_upstream(body, ROUTE)


def conversation_problem(body: Mapping[str, Any]) -> str | None:
    """Why the conversation of a request (a JSON object) is not one this API takes, or None."""
    contents = body.get("contents")
    if not isinstance(contents, list) or not all(isinstance(c, dict) for c in contents):
        return "'contents' must be a list of content objects"
    return None


def is_answer(value: Any) -> bool:
    """Whether `value` is a `generateContent` response (as JSON, or as the SDK dumps it)."""
    return isinstance(value, Mapping) and isinstance(value.get("candidates"), list)


def _get(part: Mapping[str, Any], camel: str, snake: str) -> Any:
    return part.get(camel, part.get(snake))


def _parts(content: Any) -> list[Mapping[str, Any]]:
    parts = content.get("parts") if isinstance(content, Mapping) else None
    return [p for p in parts if isinstance(p, Mapping)] if isinstance(parts, list) else []


def _text(content: Any) -> str:
    texts = (part.get("text") for part in _parts(content) if not part.get("thought"))
    return "".join(text for text in texts if isinstance(text, str))


def as_messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The request's conversation as chat messages: the system instruction as the system
    message, each content's text as a user or assistant message, function calls as an
    assistant's tool calls and function responses as tool messages."""
    chat: list[dict[str, Any]] = []
    system = _get(body, "systemInstruction", "system_instruction")
    if system:
        chat.append({"role": "system", "content": _text(system)})
    for content in body.get("contents") or []:
        if not isinstance(content, Mapping):
            continue
        role = "assistant" if content.get("role") == "model" else "user"
        calls, results = [], []
        for part in _parts(content):
            call = _get(part, "functionCall", "function_call")
            if isinstance(call, Mapping):
                arguments = json.dumps(call.get("args"), ensure_ascii=False, sort_keys=True)
                function = {"name": call.get("name"), "arguments": arguments}
                calls.append({"id": call.get("id"), "type": "function", "function": function})
            result = _get(part, "functionResponse", "function_response")
            if isinstance(result, Mapping):
                said = json.dumps(result.get("response"), ensure_ascii=False, sort_keys=True)
                results.append({"role": "tool", "tool_call_id": result.get("id"), "content": said})
        text = _text(content)
        if text or calls or not results:
            turn: dict[str, Any] = {"role": role, "content": text or None}
            if calls:
                turn["tool_calls"] = calls
            chat.append(turn)
        chat.extend(results)
    return chat


def output_of(response: Mapping[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """The text of the first candidate's parts (joined, thoughts left out) and its function
    calls, each as {"name", "arguments"}."""
    candidates = response.get("candidates") or []
    first = candidates[0] if candidates and isinstance(candidates[0], Mapping) else {}
    content = first.get("content")
    calls = []
    for part in _parts(content):
        call = _get(part, "functionCall", "function_call")
        if isinstance(call, Mapping):
            calls.append({"name": call.get("name"), "arguments": call.get("args")})
    return _text(content), calls


STREAM_TYPE = "text/event-stream"


def event_stream(response: Mapping[str, Any]) -> bytes:
    """The response as the API streams it with `alt=sse`, in one event: the SDK joins the
    chunks' text, and one chunk holding all of it is what was recorded."""
    data = json.dumps(response, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return f"data: {data}\r\n\r\n".encode()
