"""The Responses API through the cache endpoint: agents written against the real `openai` SDK's
`client.responses` and against the OpenAI Agents SDK (which calls it by default), recorded
against the fake provider and replayed offline, whole and streamed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cachelint.canonical import cache_key
from cachelint.runner.providers.responses_api import event_stream
from cachelint.runner.request import build_request, build_sdk_request
from tests.conftest import commit_all, run_cachelint
from tests.helpers import (
    ROUND_TRIP_SCRIPT,
    TREE_CODES,
    direct_client,
    edit_module,
    entry_files,
    python_target,
    record_requests,
    recorded_entries,
    replayed_miss,
    replayed_offline,
    result,
)
from tests.helpers import write_targets_repo as write_repo

openai = pytest.importorskip("openai")
pytestmark = pytest.mark.usefixtures("recording_env")

# One agent that asks a small model for a tool call, runs the tool, and asks a big model for the
# answer, sending the call and its output back as input items (as the Agents SDK does). Streamed,
# it reads the events through the SDK's own accumulating helper, `responses.stream`.
AGENT = """
import openai

TOOLS = [{"type": "function", "name": "lookup_order", "parameters": {
    "type": "object", "properties": {"order_id": {"type": "string"}}}}]
STREAM = @STREAM@
IN_PROCESS = @IN_PROCESS@


def _create(sdk, **kw):
    if not STREAM:
        return sdk.responses.create(**kw)
    with sdk.responses.stream(**kw) as events:
        kinds = [event.type for event in events]
        assert kinds[0] == "response.created" and kinds[-1] == "response.completed", kinds
        return events.get_final_response()


def answer(scenario, client):
    extra = {"http_client": client.http_client()} if IN_PROCESS else {}
    sdk = openai.OpenAI(base_url=client.base_url, api_key=client.api_key, max_retries=0, **extra)
    items = [{"role": m["role"], "content": m["content"]} for m in scenario.messages]
    rules = "You answer questions about orders."
    first = _create(sdk, model="small-model", instructions=rules, input=items, tools=TOOLS)
    call = next(item for item in first.output if item.type == "function_call")
    items.append(call.model_dump(exclude_none=True))
    items.append({"type": "function_call_output", "call_id": call.call_id, "output": "shipped"})
    return _create(sdk, model="big-model", instructions=rules, input=items)
"""

ORDER = {"input": "Where is order A-1?", "assert": [{"type": "contains", "value": "shipped"}]}


def agent_code(*, stream: bool, in_process: bool) -> str:
    return AGENT.replace("@STREAM@", str(stream)).replace("@IN_PROCESS@", str(in_process))


def record(repo: Path) -> tuple[Any, list[Any]]:
    """Record through the fake provider; every request must have gone to the Responses API."""
    outcome, requests = record_requests(repo, ROUND_TRIP_SCRIPT)
    assert {r.path for r in requests} == {"/v1/responses"}, [r.path for r in requests]
    return outcome, [r.body for r in requests]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("in_process", [False, True], ids=["socket", "in-process"])
def test_responses_agent_records_a_tool_round_trip_then_replays_offline(
    git_repo: Path, stream: bool, in_process: bool
) -> None:
    write_repo(
        git_repo,
        targets=python_target("responses_agent:answer"),
        scenarios={"support/acme/order": ORDER},
        files={"responses_agent.py": agent_code(stream=stream, in_process=in_process)},
    )
    outcome, bodies = record(git_repo)
    assert outcome.rc == 0, outcome.out + outcome.err
    # Upstream got each body as the SDK sent it, but never the stream flag.
    assert [b["model"] for b in bodies] == ["small-model", "big-model"]
    assert all("stream" not in b for b in bodies)
    assert bodies[1]["input"][-1] == {
        "type": "function_call_output",
        "call_id": bodies[1]["input"][-2]["call_id"],
        "output": "shipped",
    }
    entries = recorded_entries(git_repo)
    assert sorted(e["request"]["model"] for e in entries) == ["big-model", "small-model"]
    assert all(e["request"]["api"] == "responses" for e in entries)
    before = entry_files(git_repo)

    trial = replayed_offline(git_repo, "support/acme/order", calls=2, in_process=in_process)
    # The returned `Response` object is read as the trial's output.
    assert trial["output"]["text"] == "Order A-1 has shipped."
    assert entry_files(git_repo) == before


# The OpenAI Agents SDK, whose default model calls the Responses API: an agent with a function
# tool, run with `Runner.run` and with `Runner.run_streamed`.
# Tracing is switched off: the SDK would otherwise export traces to OpenAI over the network.
AGENTS_SDK_AGENT = """
import openai
from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled

set_tracing_disabled(True)
STREAM = @STREAM@


@function_tool
def lookup_order(order_id: str) -> str:
    \"\"\"Look an order up.\"\"\"
    return "shipped"


async def answer(scenario, client):
    sdk = openai.AsyncOpenAI(
        base_url=client.base_url,
        api_key=client.api_key,
        http_client=client.http_client(asynchronous=True),
        max_retries=0,
    )
    agent = Agent(
        name="orders",
        instructions="You answer questions about orders.",
        tools=[lookup_order],
        model=OpenAIResponsesModel(model="small-model", openai_client=sdk),
    )
    question = scenario.messages[-1]["content"]
    if not STREAM:
        return (await Runner.run(agent, question)).final_output
    run = Runner.run_streamed(agent, question)
    async for _ in run.stream_events():
        pass
    return run.final_output
"""


@pytest.mark.parametrize("stream", [False, True], ids=["run", "run_streamed"])
def test_an_agents_sdk_agent_records_and_replays_with_no_socket(
    git_repo: Path, stream: bool
) -> None:
    pytest.importorskip("agents")
    write_repo(
        git_repo,
        targets=python_target("orders_agent:answer"),
        scenarios={"support/acme/order": ORDER},
        files={"orders_agent.py": AGENTS_SDK_AGENT.replace("@STREAM@", str(stream))},
    )
    outcome, bodies = record(git_repo)  # every request went to /v1/responses
    assert outcome.rc == 0, outcome.out + outcome.err
    assert len(bodies) == 2 and all(b["model"] == "small-model" for b in bodies)
    assert [e["request"]["api"] for e in recorded_entries(git_repo)] == ["responses", "responses"]

    trial = replayed_offline(git_repo, "support/acme/order", calls=2)
    assert trial["output"]["text"] == "Order A-1 has shipped."


def test_an_agents_sdk_agent_with_tracing_on_replays_offline(git_repo: Path) -> None:
    """The Agents SDK traces by default and exports from a thread of its own whenever an OpenAI
    key is in the environment, as it often is in CI. A replay switches the export off: it could
    only be refused, and would fail a scenario whose every answer came from the cache."""
    pytest.importorskip("agents")
    flushed = AGENTS_SDK_AGENT.replace("set_tracing_disabled(True)", "").replace(
        "        return (await Runner.run(agent, question)).final_output",
        "        said = (await Runner.run(agent, question)).final_output\n"
        "        if os.environ.get('FLUSH_TRACES'):  # export now, in the scenario's thread\n"
        "            get_trace_provider().force_flush()\n"
        "        return said",
    )
    code = "import os\nfrom agents.tracing import get_trace_provider\n" + flushed
    write_repo(
        git_repo,
        targets=python_target("orders_agent:answer"),
        scenarios={"support/acme/order": ORDER},
        files={"orders_agent.py": code.replace("@STREAM@", "False")},
    )
    outcome, _ = record(git_repo)
    assert outcome.rc == 0, outcome.out + outcome.err

    ci = {"OPENAI_API_KEY": "sk-in-the-ci-environment", "FLUSH_TRACES": "1"}
    # A process of its own: the SDK reads its switch once, when it first traces.
    replay = run_cachelint(git_repo, "run", "--execution", "traced", env=ci)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    trial = result(git_repo, "support/acme/order", "traced")["trials"][0]
    assert trial["cache_hit"] is True and len(trial["calls"]) == 2


def test_check_verifies_the_recorded_responses_entries(git_repo: Path) -> None:
    write_repo(
        git_repo,
        targets=python_target("responses_agent:answer"),
        scenarios={"support/acme/order": ORDER},
        files={"responses_agent.py": agent_code(stream=False, in_process=True)},
    )
    outcome, _ = record(git_repo)
    assert outcome.rc == 0, outcome.out + outcome.err
    (git_repo / ".gitattributes").write_text("eval-cache/** -text\n", encoding="utf-8")
    commit_all(git_repo)
    tree = ",".join(TREE_CODES)
    clean = run_cachelint(git_repo, "check", "--select", tree)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "2 entries" in clean.stdout + clean.stderr
    contents = sorted((git_repo / "eval-cache").rglob("contents.data"))[0]
    contents.write_bytes(contents.read_bytes().replace(b"resp_", b"resq_"))
    edited = run_cachelint(git_repo, "check", "--select", tree)
    assert edited.returncode == 1
    assert "contents.data does not match the blake3" in edited.stdout


def test_a_miss_is_the_sdks_not_found_error_with_the_miss_explanation(git_repo: Path) -> None:
    agent = """
import openai

def answer(scenario, client):
    sdk = openai.OpenAI(base_url=client.base_url, api_key=client.api_key)
    try:
        sdk.responses.create(model="big-model", input="How do refunds work?")
    except openai.NotFoundError as exc:
        return "swallowed: " + str(exc)
    return "answered"
"""
    error = replayed_miss(git_repo, agent)["error"]
    assert "model 'big-model'" in error


def test_a_changed_instruction_is_a_miss_naming_it(git_repo: Path) -> None:
    write_repo(
        git_repo,
        targets=python_target("responses_agent:answer"),
        scenarios={"support/acme/order": ORDER},
        files={"responses_agent.py": agent_code(stream=False, in_process=True)},
    )
    outcome, _ = record(git_repo)
    assert outcome.rc == 0, outcome.out + outcome.err
    agent = git_repo / "responses_agent.py"
    edit_module(agent, "questions about orders", "questions about parcels")
    # A process of its own: this one has imported the agent as it was.
    replay = run_cachelint(git_repo, "run", "--execution", "changed")
    assert replay.returncode == 1, replay.stdout + replay.stderr
    error = result(git_repo, "support/acme/order", "changed")["trials"][0]["error"]
    assert "    options.instructions: 'You answer questions about orders.' -> " in error


def test_a_chat_call_keeps_its_key_and_a_responses_call_differs() -> None:
    chat = build_request(
        provider="p", model="m", scenario="a/b/c", messages=[{"role": "user", "content": "hi"}]
    )
    assert "api" not in chat and "input" not in chat
    # Pinned: a chat key must never change with a cachelint upgrade.
    assert cache_key(chat) == cache_key(
        {
            "format": chat["format"],
            "provider": "p",
            "model": "m",
            "scenario": "a/b/c",
            "messages": [{"role": "user", "content": "hi"}],
        }
    )
    same = {"provider": "p", "model": "m", "scenario": "a/b/c"}
    responses = build_sdk_request(api="responses", **same, body={"model": "m", "input": "hi"})
    assert responses["api"] == "responses" and responses["input"] == "hi"
    assert "messages" not in responses
    assert cache_key(responses) != cache_key(chat)
    crlf = build_sdk_request(
        api="responses",
        **same,
        body={
            "model": "m",
            "input": [{"role": "user", "content": "a\r\nb"}],
            "instructions": "x\r\ny",
        },
    )
    assert crlf["input"][0]["content"] == "a\nb" and crlf["options"]["instructions"] == "x\ny"


RESPONSE: dict[str, Any] = {
    "id": "resp_1",
    "object": "response",
    "created_at": 1,
    "model": "m",
    "status": "completed",
    "output": [
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "hi", "annotations": []}],
        },
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "f",
            "arguments": '{"a":1}',
            "status": "completed",
        },
    ],
    "usage": {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
}


def test_the_event_stream_is_deterministic_and_ends_with_the_whole_response() -> None:
    stream = event_stream(RESPONSE)
    assert stream == event_stream(json.loads(json.dumps(RESPONSE)))
    blocks = [b for b in stream.decode().split("\n\n") if b]
    events = []
    for block in blocks:
        name, data = block.split("\n")
        event = json.loads(data.removeprefix("data: "))
        assert name == f"event: {event['type']}"
        events.append(event)
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert [e["type"] for e in events] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert events[0]["response"]["output"] == [] and events[0]["response"]["usage"] is None
    assert events[4]["delta"] == "hi" and events[9]["delta"] == '{"a":1}'
    assert events[-1]["response"] == RESPONSE
    incomplete = event_stream({**RESPONSE, "status": "incomplete"})
    assert incomplete.decode().rsplit("event: ", 1)[1].startswith("response.incomplete\n")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"[]", "the request body must be a JSON object"),
        (b'{"input": "hi"}', "'model' must be a non-empty string"),
        (b'{"model": "m"}', "'input' must be a string or a list of input items"),
        (b'{"model": "m", "input": ["hi"]}', "'input' must be a string or a list"),
        (b'{"model": "m", "input": "hi", "instructions": 1}', "'instructions' must be a string"),
        (b'{"model": "m", "input": "hi", "tools": {}}', "'tools' must be a list"),
        (b'{"model": "m", "input": "hi", "seed": 1152921504606846976}', "cannot be part of a"),
        # Too deep for the JSON parser before Python 3.12, too deep to key from then on.
        (
            b'{"model": "m", "input": [{"role": "user", "content": '
            + b"[" * 3000
            + b"]" * 3000
            + b"}]}",
            ("must be a JSON object", "cannot be part of a cache key"),
        ),
    ],
    ids=["array", "no-model", "no-input", "bare-item", "instructions", "tools", "huge-int", "deep"],
)
def test_a_bad_responses_request_is_a_400_the_sdk_does_not_retry(
    tmp_path: Path, body: bytes, expected: str | tuple[str, ...]
) -> None:
    from cachelint.runner.client import Mode, OfflineRefuser
    from cachelint.runner.endpoint import answer

    client = direct_client(tmp_path, Mode.REPLAY, OfflineRefuser())
    status, headers, data = answer(client, "POST", "/v1/responses", body)
    assert status == 400 and headers["x-should-retry"] == "false", data
    message = json.loads(data)["error"]["message"]
    assert any(part in message for part in ([expected] if isinstance(expected, str) else expected))
