"""The bundled example's agent on OpenAI's Responses API, the API the OpenAI Agents SDK calls.

Like `orders.py` it knows nothing of cachelint beyond the client it is handed, but it calls
`client.responses` instead of chat completions: a small model asks for the `check_return` tool,
the tool's output goes back as an input item, and a larger model's answer is streamed through
the SDK's `responses.stream` helper. Recorded through the cache endpoint against the scripted fake
provider (examples/README.md); `cachelint run` replays it offline.
"""

from __future__ import annotations

import json
from typing import Any

import openai

PLANNER = "scripted-mini"  # a small model picks the tool
WRITER = "scripted-large"  # a larger one writes the answer from the tool's output

TOOLS = [
    {
        "type": "function",
        "name": "check_return",
        "description": "Whether an order can still be returned, and until when.",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
        },
    }
]

_RETURNS = {"A-1042": {"returnable": True, "return_by": "2026-02-11", "fee": "none"}}


def check_return(order_id: str) -> dict[str, Any]:
    return _RETURNS.get(order_id, {"returnable": False, "reason": "unknown order"})


def answer(scenario: Any, client: Any) -> str:
    sdk = openai.OpenAI(
        base_url=client.base_url,
        api_key=client.api_key,
        http_client=client.http_client(),
        max_retries=0,
    )
    system = "".join(m["content"] for m in scenario.messages if m["role"] == "system")
    items: list[dict[str, Any]] = [
        {"role": m["role"], "content": m["content"]}
        for m in scenario.messages
        if m["role"] != "system"
    ]
    plan = sdk.responses.create(
        model=PLANNER, instructions=system, input=items, tools=TOOLS, temperature=0
    )
    calls = [item for item in plan.output if item.type == "function_call"]
    if not calls:
        return plan.output_text
    # Each call is written out field by field, not model_dump()ed: SDK majors add fields.
    for call in calls:
        items.append(
            {
                "type": "function_call",
                "call_id": call.call_id,
                "name": call.name,
                "arguments": call.arguments,
            }
        )
        output = check_return(**json.loads(call.arguments))
        items.append(
            {"type": "function_call_output", "call_id": call.call_id, "output": json.dumps(output)}
        )
    with sdk.responses.stream(model=WRITER, instructions=system, input=items) as events:
        for _ in events:
            pass
        return events.get_final_response().output_text
