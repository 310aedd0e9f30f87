"""Answers in the shapes the providers send today, with the fields the fake provider never sends
(a search's citations, reasoning items, built-in tools' calls and results, thinking, token
details, the service tier), written from each API's reference. Each is recorded whole, then
replayed streamed from the cache: the SDK's own stream helper must build the answer it builds
from the whole one, so code that streams sees what was recorded."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from cachelint.runner.client import Mode, OfflineRefuser
from cachelint.runner.endpoint import Endpoint
from cachelint.runner.providers.transport import Completion
from tests.helpers import direct_client

openai = pytest.importorskip("openai")

# gpt-4o-search-preview: the answer cites a page; the usage has its token details.
CHAT = {
    "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
    "object": "chat.completion",
    "created": 1741569952,
    "model": "gpt-4o-search-preview-2025-03-11",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "Refunds take 30 days ([policy](https://example.com/refunds)).",
                "refusal": None,
                "annotations": [
                    {
                        "type": "url_citation",
                        "url_citation": {
                            "end_index": 60,
                            "start_index": 21,
                            "title": "Refund policy",
                            "url": "https://example.com/refunds",
                        },
                    }
                ],
            },
            "logprobs": None,
            "finish_reason": "stop",
        }
    ],
    "usage": {
        "prompt_tokens": 19,
        "completion_tokens": 10,
        "total_tokens": 29,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    },
    "service_tier": "default",
    "system_fingerprint": "fp_6ec83003ad",
}

# o4-mini with web search and a function tool: a reasoning summary, the search call, a cited
# message and a function call, in one response.
RESPONSE = {
    "id": "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
    "object": "response",
    "created_at": 1741476542,
    "status": "completed",
    "background": False,
    "error": None,
    "incomplete_details": None,
    "instructions": None,
    "max_output_tokens": None,
    "model": "o4-mini-2025-04-16",
    "output": [
        {
            "id": "rs_67ccd2c0",
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "Looking the policy up."}],
            "encrypted_content": None,
        },
        {
            "id": "ws_67ccd2c1",
            "type": "web_search_call",
            "status": "completed",
            "action": {"type": "search", "query": "acme refund policy"},
        },
        {
            "id": "msg_67ccd2c2",
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [
                {
                    "type": "output_text",
                    "text": "Refunds take 30 days.",
                    "logprobs": [],
                    "annotations": [
                        {
                            "type": "url_citation",
                            "start_index": 0,
                            "end_index": 21,
                            "title": "Refund policy",
                            "url": "https://example.com/refunds",
                        }
                    ],
                }
            ],
        },
        {
            "id": "fc_67ccd2c3",
            "type": "function_call",
            "status": "completed",
            "call_id": "call_7K1a",
            "name": "lookup_order",
            "arguments": '{"order_id":"A-1"}',
        },
    ],
    "parallel_tool_calls": True,
    "previous_response_id": None,
    "reasoning": {"effort": "medium", "summary": "auto"},
    "service_tier": "default",
    "store": True,
    "temperature": 1.0,
    "text": {"format": {"type": "text"}, "verbosity": "medium"},
    "tool_choice": "auto",
    "tools": [],
    "top_p": 1.0,
    "truncation": "disabled",
    "usage": {
        "input_tokens": 36,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 87,
        "output_tokens_details": {"reasoning_tokens": 64},
        "total_tokens": 123,
    },
    "user": None,
    "metadata": {},
}

# Claude with extended thinking and web search: thinking (and a redacted block), the server
# tool's use and result, a cited text block and a tool call, with the server tool's usage.
MESSAGE = {
    "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5-20250929",
    "content": [
        {
            "type": "thinking",
            "thinking": "The user asks about refunds; search first.",
            "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds",
        },
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
        {
            "type": "server_tool_use",
            "id": "srvtoolu_01WYG3ziw53XMcoyKL4XcZmE",
            "name": "web_search",
            "input": {"query": "acme refund policy"},
        },
        {
            "type": "web_search_tool_result",
            "tool_use_id": "srvtoolu_01WYG3ziw53XMcoyKL4XcZmE",
            "content": [
                {
                    "type": "web_search_result",
                    "url": "https://example.com/refunds",
                    "title": "Refund policy",
                    "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5",
                    "page_age": "April 30, 2025",
                }
            ],
        },
        {
            "type": "text",
            "text": "Refunds take 30 days.",
            "citations": [
                {
                    "type": "web_search_result_location",
                    "url": "https://example.com/refunds",
                    "title": "Refund policy",
                    "encrypted_index": "Eo8BCioIAhgBIiQyYjQ0OWJmZi1lNm",
                    "cited_text": "Refunds are paid within 30 days.",
                }
            ],
        },
        {
            "type": "tool_use",
            "id": "toolu_01A09q90qw90lq917835lq9",
            "name": "lookup_order",
            "input": {"order_id": "A-1", "fields": ["status", "eta"]},
        },
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {
        "input_tokens": 2095,
        "output_tokens": 503,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "server_tool_use": {"web_search_requests": 1},
        "service_tier": "standard",
    },
}

# Gemini 2.5 with thinking and Google Search grounding: a thought summary part, the answer, its
# grounding, and token counts with the thinking's share.
GENERATE = {
    "candidates": [
        {
            "content": {
                "role": "model",
                "parts": [
                    {"text": "Looking the policy up.", "thought": True},
                    {"text": "Refunds take 30 days."},
                ],
            },
            "finishReason": "STOP",
            "index": 0,
            "groundingMetadata": {
                "webSearchQueries": ["acme refund policy"],
                "groundingChunks": [
                    {"web": {"uri": "https://example.com/refunds", "title": "example.com"}}
                ],
                "groundingSupports": [
                    {
                        "segment": {
                            "startIndex": 0,
                            "endIndex": 21,
                            "text": "Refunds take 30 days.",
                        },
                        "groundingChunkIndices": [0],
                    }
                ],
            },
        }
    ],
    "usageMetadata": {
        "promptTokenCount": 12,
        "candidatesTokenCount": 7,
        "thoughtsTokenCount": 48,
        "totalTokenCount": 67,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 12}],
    },
    "modelVersion": "gemini-2.5-flash",
    "responseId": "Gm5daKvXA4S1nvgPr8S_0Ak",
}


class Provider:
    """Upstream for a recording: answers every call with `answer`, as the provider sent it."""

    api_key = None

    def __init__(self, answer: Mapping[str, Any]) -> None:
        self.answer = answer
        self.calls = 0

    def complete(self, body: Any, route: str = "", headers: Any = None) -> Completion:
        self.calls += 1
        return Completion(dict(self.answer), 0.01)


def chat(sdk: Any, stream: bool) -> Any:
    question = {"model": "gpt-4o-search-preview", "messages": [{"role": "user", "content": "?"}]}
    if not stream:
        return sdk.chat.completions.create(**question)
    with sdk.chat.completions.stream(**question, stream_options={"include_usage": True}) as s:
        for _ in s:
            pass
        return s.get_final_completion()


def responses(sdk: Any, stream: bool) -> Any:
    question = {"model": "o4-mini", "input": "How do refunds work?"}
    if not stream:
        return sdk.responses.create(**question)
    with sdk.responses.stream(**question) as s:
        for _ in s:
            pass
        return s.get_final_response()


def messages(sdk: Any, stream: bool) -> Any:
    question = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": "How do refunds work?"}],
    }
    if not stream:
        return sdk.messages.create(**question)
    with sdk.messages.stream(**question) as s:
        for _ in s:
            pass
        return s.get_final_message()


def generate(sdk: Any, stream: bool) -> Any:
    question = {"model": "gemini-2.5-flash", "contents": "How do refunds work?"}
    if not stream:
        return sdk.models.generate_content(**question)
    [chunk] = sdk.models.generate_content_stream(**question)  # the whole answer in one event
    return chunk


def openai_sdk(client: Any) -> Any:
    return openai.OpenAI(base_url=client.base_url, api_key=client.api_key, max_retries=0)


def anthropic_sdk(client: Any) -> Any:
    anthropic = pytest.importorskip("anthropic")
    return anthropic.Anthropic(
        base_url=client.anthropic_base_url, api_key=client.api_key, max_retries=0
    )


def gemini_sdk(client: Any) -> Any:
    genai = pytest.importorskip("google.genai")
    options = genai.types.HttpOptions(base_url=client.gemini_base_url, api_version="v1beta")
    return genai.Client(api_key=client.api_key, http_options=options)


# What the SDKs add of their own: the stream helpers' parsed content and arguments, and
# google-genai's HTTP response and function-calling history (by field name and by alias).
SDK_FIELDS = frozenset(
    {
        "parsed",
        "parsed_arguments",
        "sdk_http_response",
        "sdkHttpResponse",
        "automatic_function_calling_history",
        "automaticFunctionCallingHistory",
    }
)


def plain(value: Any) -> Any:
    """The SDK object as JSON without `SDK_FIELDS`: what was sent, not how the SDK read it."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items() if k not in SDK_FIELDS}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


@pytest.mark.parametrize(
    ("answer", "ask", "sdk_for"),
    [
        (CHAT, chat, openai_sdk),
        (RESPONSE, responses, openai_sdk),
        (MESSAGE, messages, anthropic_sdk),
        (GENERATE, generate, gemini_sdk),
    ],
    ids=["chat", "responses", "messages", "generateContent"],
)
def test_an_answer_recorded_whole_replays_streamed_as_the_sdk_built_it(
    tmp_path: Path, answer: Mapping[str, Any], ask: Any, sdk_for: Any
) -> None:
    provider = Provider(answer)
    with Endpoint() as endpoint:
        recording = direct_client(tmp_path, Mode.AUTO, provider, endpoint)
        whole = ask(sdk_for(recording), False)
        endpoint.release(recording)
        replaying = direct_client(tmp_path, Mode.REPLAY, OfflineRefuser(), endpoint)
        streamed = ask(sdk_for(replaying), True)
        endpoint.release(replaying)
    assert provider.calls == 1  # the streamed call was the recorded one, replayed
    assert replaying.misses == []
    assert plain(streamed.model_dump()) == plain(whole.model_dump())
    # Every field the provider sent is in what the code sees, streamed as whole.
    sent = whole.model_dump(exclude_unset=True, by_alias=True)
    assert plain(sent) == answer
