"""Amazon Bedrock's Converse API, as the cache endpoint serves it.

boto3's `bedrock-runtime` client (and what is built on it: LangChain's ChatBedrockConverse,
Strands) POSTs to `<endpoint_url>/model/<model id>/converse`, or `/converse-stream` to stream,
with the model id percent-encoded in the path, signed with SigV4 or carrying a Bedrock API key
as a bearer token. The endpoint answers such a call from the cache like a chat completion: the
key is the body with the path's model, marked `"api": "converse"`; the cache holds the whole
response, and a streamed request gets it back as the events ConverseStream sends, in AWS's
binary event-stream framing: the same bytes at record and replay. A recording calls
`<url>/model/<model id>/converse` with the target's key as a bearer token (a Bedrock API key).

This module knows the API's shapes: the model a path names, what a request must hold, the
conversation it carries (for the run's records and the fake provider), the text and tool calls
of a response, and its event stream.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, unquote

from cachelint.runner.providers.awsevents import aws_event

ROUTE = "converse"
CONVERSATION = "messages"
ANSWER_FIELD, ANSWER_TYPE, ANSWER_NAME = "output", dict, "a Converse response"
# A Bedrock API key is a bearer token, as OpenAI's keys are.
KEY_HEADER: str | None = None
UPSTREAM_HEADERS: dict[str, str] = {}
# Whose words an error is put in, and the request headers that are part of the key.
ERROR_SHAPE = "aws"
KEYED_HEADERS: tuple[str, ...] = ()
STREAM_TYPE = "application/vnd.amazon.eventstream"
_PATH = re.compile(r".*/model/(?P<model>[^/]+)/(?P<method>converse|converse-stream)")


def route_model(route: str) -> tuple[str, bool] | None:
    """The model id a path (`.../model/<model id>/converse`) asks for, and whether it asks for a
    stream; None for another path."""
    match = _PATH.fullmatch(route)
    if match is None:
        return None
    return unquote(match["model"]), match["method"] == "converse-stream"


def upstream(body: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The route under the target's url and the body a recording sends for a keyed call (whose
    `model` came from the path)."""
    sent = {k: v for k, v in body.items() if k != "model"}
    return f"model/{quote(str(body['model']), safe='')}/{ROUTE}", sent


def conversation_problem(body: Mapping[str, Any]) -> str | None:
    """Why the conversation of a request (a JSON object) is not one this API takes, or None."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        return "'messages' must be a list of message objects"
    system = body.get("system")
    if system is not None and not isinstance(system, list):
        return "'system' must be a list of system content blocks"
    return None


def is_answer(value: Any) -> bool:
    """Whether `value` is a Converse response (as JSON, or as boto3 returns it)."""
    output = value.get("output") if isinstance(value, Mapping) else None
    message = output.get("message") if isinstance(output, Mapping) else None
    return isinstance(message, Mapping) and isinstance(message.get("content"), list)


def _blocks(content: Any, kind: str) -> list[Any]:
    """The value of each block of `kind` ("text", "toolUse", ...) in a content list."""
    if not isinstance(content, list):
        return []
    return [block[kind] for block in content if isinstance(block, Mapping) and kind in block]


def _text(content: Any) -> str:
    return "".join(text for text in _blocks(content, "text") if isinstance(text, str))


def as_messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The request's conversation as chat messages: the system blocks as the system message,
    each message's text blocks as its content, `toolUse` blocks as an assistant's tool calls
    and `toolResult` blocks as tool messages. Other blocks (images, documents) are left out."""
    chat: list[dict[str, Any]] = []
    system = _text(body.get("system"))
    if system:
        chat.append({"role": "system", "content": system})
    for message in body.get("messages") or []:
        if not isinstance(message, Mapping):
            continue
        content = message.get("content")
        results = [r for r in _blocks(content, "toolResult") if isinstance(r, Mapping)]
        for result in results:
            chat.append(
                {
                    "role": "tool",
                    "tool_call_id": result.get("toolUseId"),
                    "content": _result_text(result.get("content")),
                }
            )
        calls = [_tool_call(use) for use in _blocks(content, "toolUse") if isinstance(use, Mapping)]
        text = _text(content)
        if text or calls or not results:
            turn: dict[str, Any] = {"role": message.get("role"), "content": text or None}
            if calls:
                turn["tool_calls"] = calls
            chat.append(turn)
    return chat


def _result_text(content: Any) -> str:
    """A tool result's content: its text blocks, and its JSON blocks as JSON text."""
    said = [_text(content)]
    said += [json.dumps(v, ensure_ascii=False, sort_keys=True) for v in _blocks(content, "json")]
    return "".join(said)


def _tool_call(use: Mapping[str, Any]) -> dict[str, Any]:
    arguments = json.dumps(use.get("input"), ensure_ascii=False, sort_keys=True)
    call = {"name": use.get("name"), "arguments": arguments}
    return {"id": use.get("toolUseId"), "type": "function", "function": call}


def output_of(response: Mapping[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """The text of the response message's text blocks (joined) and its tool calls, each as
    {"name", "arguments"}."""
    content = response["output"]["message"]["content"]
    calls = [
        {"name": use.get("name"), "arguments": use.get("input")}
        for use in _blocks(content, "toolUse")
        if isinstance(use, Mapping)
    ]
    return _text(content), calls


# ---- streaming ----------------------------------------------------------------------------------


def event_stream(response: Mapping[str, Any]) -> bytes:
    """The response as the events ConverseStream sends: `messageStart`, then for each content
    block its start (a tool use's id and name), its text, tool input or reasoning as one delta
    each, and its stop, then `messageStop` (the stop reason) and `metadata` (usage and metrics),
    each an event-stream message. boto3 gives the code these events as dicts, which it joins.
    A block of another kind (a document's citations, an image) gets its stop event alone: the
    stream carries text, tool use and reasoning, as the code reading it joins them."""
    output = response.get("output")
    message = output.get("message") if isinstance(output, Mapping) else None
    message = message if isinstance(message, Mapping) else {}
    content = message.get("content")
    events: list[tuple[str, dict[str, Any]]] = [
        ("messageStart", {"role": message.get("role") or "assistant"})
    ]
    for index, block in enumerate(content if isinstance(content, list) else []):
        if isinstance(block, Mapping):
            events.extend(_block_events(index, block))
    stop = {"stopReason": response.get("stopReason")}
    if "additionalModelResponseFields" in response:
        stop["additionalModelResponseFields"] = response["additionalModelResponseFields"]
    events.append(("messageStop", stop))
    metadata = {k: response[k] for k in _METADATA if k in response}
    events.append(("metadata", {"metrics": {"latencyMs": 0}, **metadata}))
    return b"".join(aws_event(kind, payload) for kind, payload in events)


# What a response's `metadata` event carries.
_METADATA = ("usage", "metrics", "trace", "performanceConfig")


def _block_events(index: int, block: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    at = {"contentBlockIndex": index}
    events: list[tuple[str, dict[str, Any]]] = []
    deltas: list[dict[str, Any]] = []
    if "text" in block:
        deltas = [{"text": block["text"]}]
    elif isinstance(block.get("toolUse"), Mapping):
        use = block["toolUse"]
        start = {"toolUse": {"toolUseId": use.get("toolUseId"), "name": use.get("name")}}
        events.append(("contentBlockStart", {**at, "start": start}))
        arguments = json.dumps(use.get("input"), ensure_ascii=False, separators=(",", ":"))
        deltas = [{"toolUse": {"input": arguments}}]
    elif isinstance(block.get("reasoningContent"), Mapping):
        deltas = _reasoning_deltas(block["reasoningContent"])
    events.extend(("contentBlockDelta", {**at, "delta": delta}) for delta in deltas)
    events.append(("contentBlockStop", at))
    return events


def _reasoning_deltas(reasoning: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Reasoning streams as its text, then its signature; redacted reasoning as its bytes."""
    if "redactedContent" in reasoning:
        return [{"reasoningContent": {"redactedContent": reasoning["redactedContent"]}}]
    said = reasoning.get("reasoningText")
    said = said if isinstance(said, Mapping) else {}
    deltas = [{"reasoningContent": {"text": said.get("text") or ""}}]
    if said.get("signature"):
        deltas.append({"reasoningContent": {"signature": said["signature"]}})
    return deltas
