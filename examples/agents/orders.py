"""The bundled example's agent written against the real `openai` SDK: two models, a tool round trip.

It knows nothing of cachelint beyond the client it is handed: the SDK talks to the cache endpoint
(`client.base_url`, in-process through `client.http_client()`), asks for its own models, and the
final answer is streamed. Recorded through the endpoint against the scripted fake provider
(examples/README.md); `cachelint run` replays it offline.
"""

from __future__ import annotations

import json
from typing import Any

import openai

PLANNER = "scripted-mini"  # a small model picks the tool
WRITER = "scripted-large"  # a larger one writes the answer from the tool's result

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Look up an order's shipping status by its id.",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            },
        },
    }
]

_ORDERS = {"A-1042": {"status": "shipped", "shipped_on": "2026-01-12", "arrives": "Friday"}}


def lookup_order(order_id: str) -> dict[str, Any]:
    return _ORDERS.get(order_id, {"status": "unknown order"})


def answer(scenario: Any, client: Any) -> str:
    sdk = openai.OpenAI(
        base_url=client.base_url,
        api_key=client.api_key,
        http_client=client.http_client(),
        max_retries=0,
    )
    messages: list[dict[str, Any]] = [dict(m) for m in scenario.messages]
    plan = sdk.chat.completions.create(model=PLANNER, messages=messages, tools=TOOLS, temperature=0)
    message = plan.choices[0].message
    if not message.tool_calls:
        return message.content or ""
    # The assistant turn is written out field by field, not model_dump()ed: SDK majors add fields.
    calls = [
        {
            "id": c.id,
            "type": "function",
            "function": {"name": c.function.name, "arguments": c.function.arguments},
        }
        for c in message.tool_calls
    ]
    messages.append({"role": "assistant", "content": None, "tool_calls": calls})
    for call in calls:
        result = lookup_order(**json.loads(call["function"]["arguments"]))
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)})
    final = sdk.chat.completions.create(model=WRITER, messages=messages, stream=True)
    return "".join(chunk.choices[0].delta.content or "" for chunk in final if chunk.choices)
