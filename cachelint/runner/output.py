"""What a target answered, reduced to the parts assertions look at: text and tool calls.

Targets answer in several shapes (an OpenAI chat.completion from the HTTP transport, or whatever a
python target returns); everything is turned into one `Output` here so assertions and judges have a
single input type.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cachelint.errors import CachelintError


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: Any  # parsed JSON arguments when valid JSON, else the raw string


@dataclass(frozen=True)
class Output:
    text: str
    tool_calls: tuple[ToolCall, ...] = ()

    @property
    def json(self) -> Any:
        """The text parsed as JSON, or None when it is not JSON (for custom evaluators)."""
        try:
            return json.loads(self.text)
        except (ValueError, RecursionError):
            return None


def _parse_arguments(raw: Any) -> Any:
    # OpenAI sends arguments as a JSON *string*; models sometimes emit invalid JSON, which
    # tool-arg must report rather than crash on, so the raw text is kept in that case.
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):
            return raw
    return raw


def call_arguments(value: Any) -> str:
    """Tool-call arguments one way, whether sent as a JSON string or an object, so a call's
    answer and the next call's echo of it read alike."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        # Content parts: [{"type": "text", "text": "..."}]; non-text parts carry no text.
        return "".join(
            part.get("text", "") if isinstance(part, Mapping) else str(part) for part in content
        )
    raise CachelintError(
        f"response message content is a {type(content).__name__}, expected a string or a list "
        "of content parts; re-record the entry with a chat-completions endpoint"
    )


def _tool_call(item: Any, where: str) -> ToolCall:
    if isinstance(item, ToolCall):
        return item
    if not isinstance(item, Mapping):
        raise CachelintError(f"{where}: a tool call must be an object, got {type(item).__name__}")
    function = item.get("function", item)  # OpenAI nests name/arguments under "function"
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        raise CachelintError(f"{where}: a tool call needs a string 'name'")
    return ToolCall(function["name"], _parse_arguments(function.get("arguments")))


def output_from_completion(completion: Mapping[str, Any]) -> Output:
    """The first choice of an OpenAI chat.completion JSON object."""
    choices = completion.get("choices") if isinstance(completion, Mapping) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise CachelintError(
            "response is not an OpenAI chat.completion (no choices[0]); check that the target "
            "url points at a /chat/completions-compatible endpoint and re-record"
        )
    message = choices[0].get("message")
    if not isinstance(message, Mapping):
        raise CachelintError("response choices[0] has no 'message' object; re-record the entry")
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise CachelintError("response choices[0].message.tool_calls is not a list")
    tool_calls = [_tool_call(c, f"response tool_calls[{i}]") for i, c in enumerate(calls)]
    legacy = message.get("function_call")  # pre-tools API, still sent by some compatible servers
    if isinstance(legacy, Mapping):
        tool_calls.append(_tool_call(legacy, "response function_call"))
    return Output(_content_text(message.get("content")), tuple(tool_calls))


def output_from_value(value: Any) -> Output:
    """Whatever a python target returned: a string, an `Output`, an OpenAI chat.completion or
    Responses API response, an Anthropic message, a Gemini response or a Bedrock Converse
    response (a dict, or the SDK's object), or `{"text": ..., "tool_calls": [...]}`."""
    if isinstance(value, Output):
        return value
    if isinstance(value, str):
        return Output(value)
    dump = getattr(value, "model_dump", None)
    if callable(dump):  # a provider SDK's pydantic ChatCompletion, e.g. openai's
        value = dump(mode="json")
    if isinstance(value, Mapping):
        if "choices" in value:
            return output_from_completion(value)
        # Here, not at the top: a run of chat targets never loads the other APIs' modules.
        from cachelint.runner.providers import converse_api, gemini_api, messages_api, responses_api

        for api in (responses_api, messages_api, gemini_api, converse_api):
            if api.is_answer(value):
                text, calls = api.output_of(value)
                where = f"{api.ROUTE} answer's tool call"
                return Output(
                    text, tuple(_tool_call(c, f"{where} {i}") for i, c in enumerate(calls))
                )
        if "text" in value or "tool_calls" in value:
            unknown = sorted(set(value) - {"text", "tool_calls"})
            if unknown:
                raise CachelintError(
                    f"target returned unknown key(s) {', '.join(map(repr, unknown))}; return "
                    "a string, a chat.completion, or {'text': ..., 'tool_calls': [...]}"
                )
            text = value.get("text") or ""
            if not isinstance(text, str):
                raise CachelintError(
                    f"target returned 'text' as a {type(text).__name__}, expected a string"
                )
            calls = value.get("tool_calls") or []
            if not isinstance(calls, (list, tuple)):
                raise CachelintError("target returned 'tool_calls' that is not a list")
            return Output(
                text, tuple(_tool_call(c, f"target tool_calls[{i}]") for i, c in enumerate(calls))
            )
    raise CachelintError(
        f"target returned a {type(value).__name__}; return a string, a chat.completion, "
        "response or message dict, or {'text': ..., 'tool_calls': [...]}"
    )
