"""The fake provider's answers in the shape of each API it serves besides chat completions.

The script's rules answer a chat.completion (`fake_provider.FakeProvider`); these turn it into
a Responses API `response`, an Anthropic `message` or a Gemini `generateContent` response, and
answer an embeddings request with vectors derived from its texts. Each is as deterministic as
the completion it comes from: the same request, the same bytes.
"""

from __future__ import annotations

import base64
import json
import math
import struct
from collections.abc import Mapping
from typing import Any

import blake3


def tokens(text: str) -> int:
    """The fake's token count of a text: a quarter of its characters, rounded up."""
    return math.ceil(len(text) / 4)


def as_response(completion: Mapping[str, Any], body: Mapping[str, Any]) -> dict[str, Any]:
    """The chat.completion as the Responses API's `response` object for `body`: its message as
    a message item, its tool calls as function_call items, its usage as input/output tokens."""
    ident = completion["id"].removeprefix("chatcmpl-")
    message = completion["choices"][0]["message"]
    output: list[dict[str, Any]] = []
    for call in message.get("tool_calls") or []:
        function = call["function"]
        output.append(
            {
                "type": "function_call",
                "id": f"fc_{call['id'].removeprefix('call_')}",
                "call_id": call["id"],
                "name": function["name"],
                "arguments": function["arguments"],
                "status": "completed",
            }
        )
    if message.get("content") is not None:
        text = {"type": "output_text", "text": message["content"], "annotations": []}
        output.insert(
            0,
            {
                "type": "message",
                "id": f"msg_{ident}",
                "role": "assistant",
                "status": "completed",
                "content": [text],
            },
        )
    usage = completion["usage"]
    finish = completion["choices"][0]["finish_reason"]
    return {
        "id": f"resp_{ident}",
        "object": "response",
        "created_at": completion["created"],
        "model": completion["model"],
        "status": "incomplete" if finish == "length" else "completed",
        "incomplete_details": {"reason": "max_output_tokens"} if finish == "length" else None,
        "error": None,
        "instructions": body.get("instructions"),
        "output": output,
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "usage": {
            "input_tokens": usage["prompt_tokens"],
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": usage["completion_tokens"],
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage["total_tokens"],
        },
    }


def as_message(completion: Mapping[str, Any]) -> dict[str, Any]:
    """The chat.completion as the Messages API's `message`: its text as a text block, its tool
    calls as tool_use blocks (their arguments decoded), its usage as input/output tokens."""
    message = completion["choices"][0]["message"]
    content: list[dict[str, Any]] = []
    if message.get("content") is not None:
        content.append({"type": "text", "text": message["content"]})
    for call in message.get("tool_calls") or []:
        function = call["function"]
        content.append(
            {
                "type": "tool_use",
                "id": f"toolu_{call['id'].removeprefix('call_')}",
                "name": function["name"],
                "input": json.loads(function["arguments"]),
            }
        )
    finish = completion["choices"][0]["finish_reason"]
    stop = {"length": "max_tokens", "tool_calls": "tool_use"}.get(finish, "end_turn")
    usage = completion["usage"]
    tokens = {"input_tokens": usage["prompt_tokens"], "output_tokens": usage["completion_tokens"]}
    return {
        "id": f"msg_{completion['id'].removeprefix('chatcmpl-')}",
        "type": "message",
        "role": "assistant",
        "model": completion["model"],
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": tokens,
    }


def as_gemini(completion: Mapping[str, Any]) -> dict[str, Any]:
    """The chat.completion as a Gemini `generateContent` response: its text and tool calls as
    the parts of one candidate, its usage as prompt and candidates token counts."""
    message = completion["choices"][0]["message"]
    parts: list[dict[str, Any]] = []
    if message.get("content") is not None:
        parts.append({"text": message["content"]})
    for call in message.get("tool_calls") or []:
        function = call["function"]
        arguments = json.loads(function["arguments"])
        parts.append({"functionCall": {"name": function["name"], "args": arguments}})
    finish = completion["choices"][0]["finish_reason"]
    usage = completion["usage"]
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": parts},
                "finishReason": "MAX_TOKENS" if finish == "length" else "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": usage["prompt_tokens"],
            "candidatesTokenCount": usage["completion_tokens"],
            "totalTokenCount": usage["total_tokens"],
        },
        "modelVersion": completion["model"],
        "responseId": completion["id"].removeprefix("chatcmpl-"),
    }


def as_converse(completion: Mapping[str, Any]) -> dict[str, Any]:
    """The chat.completion as a Bedrock Converse response: its text and tool calls as the
    content blocks of the output message, its usage as input and output tokens."""
    message = completion["choices"][0]["message"]
    content: list[dict[str, Any]] = []
    if message.get("content") is not None:
        content.append({"text": message["content"]})
    for call in message.get("tool_calls") or []:
        function = call["function"]
        use = {"toolUseId": call["id"], "name": function["name"]}
        content.append({"toolUse": {**use, "input": json.loads(function["arguments"])}})
    finish = completion["choices"][0]["finish_reason"]
    stop = {"length": "max_tokens", "tool_calls": "tool_use"}.get(finish, "end_turn")
    usage = completion["usage"]
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop,
        "usage": {
            "inputTokens": usage["prompt_tokens"],
            "outputTokens": usage["completion_tokens"],
            "totalTokens": usage["total_tokens"],
        },
        "metrics": {"latencyMs": 1},
    }


# Dimensions of a fake embedding when the request names none.
_DIMENSIONS = 8


def _size(asked: Any) -> int:
    usable = isinstance(asked, int) and not isinstance(asked, bool) and asked > 0
    return asked if usable else _DIMENSIONS


def _vector(text: Any, size: int) -> list[float]:
    """A fake embedding of `text`: the same text, the same vector."""
    seed = blake3.blake3(json.dumps(text).encode("utf-8")).digest(length=4 * size)
    return [round(v / 2**31 - 1, 6) for v in struct.unpack(f"<{size}I", seed)]


def gemini_embeddings(body: Mapping[str, Any]) -> dict[str, Any]:
    """A Gemini `batchEmbedContents` answer: per request a vector derived from its parts' text."""
    found = []
    for request in body["requests"]:
        content = request.get("content") or {}
        text = "".join(p.get("text") or "" for p in content.get("parts") or [])
        size = _size(request.get("outputDimensionality"))
        found.append({"values": _vector(text, size)})
    return {"embeddings": found}


def titan_embedding(body: Mapping[str, Any]) -> dict[str, Any]:
    """A Titan Text Embeddings answer to an InvokeModel body (`inputText`): the text's vector and
    its token count."""
    text = body["inputText"]
    return {
        "embedding": _vector(text, _size(body.get("dimensions"))),
        "inputTextTokenCount": tokens(text),
    }


def embeddings(body: Mapping[str, Any], default_model: str) -> dict[str, Any]:
    """An embeddings response for `body`: per input a vector derived from its text (the same
    text, the same vector), as floats or, when asked (`encoding_format`, as the openai SDK
    asks), as base64 of little-endian float32, with usage counted from the texts."""
    given = body["input"]
    inputs = [given] if isinstance(given, str) else list(given)
    size = _size(body.get("dimensions"))
    data = []
    for index, text in enumerate(inputs):
        vector = _vector(text, size)
        encoded: Any = vector
        if body.get("encoding_format") == "base64":
            encoded = base64.b64encode(struct.pack(f"<{size}f", *vector)).decode("ascii")
        data.append({"object": "embedding", "index": index, "embedding": encoded})
    counted = sum(tokens(t if isinstance(t, str) else " " * 4 * len(t)) for t in inputs)
    model = body.get("model")
    return {
        "object": "list",
        "data": data,
        "model": model if isinstance(model, str) and model else default_model,
        "usage": {"prompt_tokens": counted, "total_tokens": counted},
    }
