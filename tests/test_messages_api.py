"""Anthropic's Messages API through the cache endpoint: an agent written against the real
`anthropic` SDK, recorded against the fake provider and replayed offline, whole and streamed,
over the socket and in process; the beta header in the key; a miss as the SDK's own error."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from cachelint.runner.providers.messages_api import event_stream
from tests.conftest import commit_all, run_cachelint
from tests.helpers import (
    ROUND_TRIP_SCRIPT,
    TREE_CODES,
    command_target,
    direct_client,
    do_run,
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

anthropic = pytest.importorskip("anthropic")
pytestmark = pytest.mark.usefixtures("recording_env")

# A small model asks for a tool, the agent runs it and sends the result back in a user turn, a
# big model answers. Streamed, it reads the events through the SDK's accumulating helper.
AGENT = """
import anthropic

TOOLS = [{"name": "lookup_order", "description": "Look an order up.", "input_schema": {
    "type": "object", "properties": {"order_id": {"type": "string"}}}}]
STREAM = @STREAM@
IN_PROCESS = @IN_PROCESS@
LIBRARY = "httpx2" if int(anthropic.__version__.split(".")[0]) >= 2 else "httpx"


def _create(sdk, **kw):
    if not STREAM:
        return sdk.messages.create(**kw)
    with sdk.messages.stream(**kw) as events:
        kinds = [event.type for event in events]
        assert kinds[0] == "message_start" and kinds[-1] == "message_stop", kinds
        return events.get_final_message()


def answer(scenario, client):
    extra = {"http_client": client.http_client(LIBRARY)} if IN_PROCESS else {}
    sdk = anthropic.Anthropic(
        base_url=client.anthropic_base_url, api_key=client.api_key, max_retries=0, **extra
    )
    rules = "You answer questions about orders."
    turns = [{"role": "user", "content": scenario.messages[-1]["content"]}]
    first = _create(
        sdk, model="small-model", max_tokens=200, system=rules, messages=turns, tools=TOOLS
    )
    call = next(block for block in first.content if block.type == "tool_use")
    assert call.input == {"order_id": "A-1"}, call.input
    turns.append({"role": "assistant", "content": [b.model_dump() for b in first.content]})
    turns.append({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": call.id, "content": "shipped"}]})
    return _create(sdk, model="big-model", max_tokens=200, system=rules, messages=turns)
"""

ORDER = {"input": "Where is order A-1?", "assert": [{"type": "contains", "value": "shipped"}]}


def agent_code(*, stream: bool, in_process: bool) -> str:
    return AGENT.replace("@STREAM@", str(stream)).replace("@IN_PROCESS@", str(in_process))


def record(repo: Path) -> tuple[Any, list[Any]]:
    """Record through the fake provider; every request must have gone to the Messages API."""
    outcome, requests = record_requests(repo, ROUND_TRIP_SCRIPT)
    assert {r.path for r in requests} == {"/v1/messages"}, [r.path for r in requests]
    return outcome, requests


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("in_process", [False, True], ids=["socket", "in-process"])
def test_anthropic_agent_records_a_tool_round_trip_then_replays_offline(
    git_repo: Path, stream: bool, in_process: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_repo(
        git_repo,
        targets=python_target("claude_agent:answer"),
        scenarios={"support/acme/order": ORDER},
        files={"claude_agent.py": agent_code(stream=stream, in_process=in_process)},
    )
    monkeypatch.setenv("CACHELINT_TEST_KEY", "sk-ant-real")
    outcome, requests = record(git_repo)
    assert outcome.rc == 0, outcome.out + outcome.err
    # Upstream got the body as the SDK sent it (never the stream flag), the real key as
    # x-api-key and the API version; the SDK's placeholder key never left cachelint.
    bodies = [r.body for r in requests]
    assert [b["model"] for b in bodies] == ["small-model", "big-model"]
    assert all("stream" not in b for b in bodies)
    assert {r.header("x-api-key") for r in requests} == {"sk-ant-real"}
    assert {r.header("anthropic-version") for r in requests} == {"2023-06-01"}
    assert all(r.header("authorization") is None for r in requests)
    assert bodies[1]["messages"][-1]["content"][0]["type"] == "tool_result"
    entries = recorded_entries(git_repo)
    assert [e["request"]["api"] for e in entries] == ["messages", "messages"]
    assert all(e["request"]["options"]["system"] for e in entries)
    before = entry_files(git_repo)

    monkeypatch.delenv("CACHELINT_TEST_KEY")
    trial = replayed_offline(git_repo, "support/acme/order", calls=2, in_process=in_process)
    # The returned `Message` is read as the trial's output; its usage is counted.
    assert trial["output"]["text"] == "Order A-1 has shipped."
    assert trial["usage"]["input_tokens"] > 0 and trial["usage"]["output_tokens"] > 0
    assert entry_files(git_repo) == before


BETA_AGENT = """
import anthropic

def answer(scenario, client):
    sdk = anthropic.Anthropic(base_url=client.anthropic_base_url, api_key=client.api_key)
    reply = sdk.messages.create(
        model="m", max_tokens=50, messages=[{"role": "user", "content": "How do refunds work?"}],
        extra_headers={"anthropic-beta": "@BETA@"},
    )
    return reply.content[0].text
"""


def test_the_beta_header_is_sent_upstream_and_part_of_the_key(git_repo: Path) -> None:
    refund = {"input": "How do refunds work?", "assert": [{"type": "contains", "value": "30"}]}
    write_repo(
        git_repo,
        targets=python_target("beta_agent:answer"),
        scenarios={"support/acme/refund": refund},
        files={"beta_agent.py": BETA_AGENT.replace("@BETA@", "tools-2024-04-04")},
    )
    outcome, requests = record(git_repo)
    assert outcome.rc == 0, outcome.out + outcome.err
    assert [r.header("anthropic-beta") for r in requests] == ["tools-2024-04-04"]
    [entry] = recorded_entries(git_repo)
    assert entry["request"]["options"]["headers"] == {"anthropic-beta": "tools-2024-04-04"}

    edit_module(git_repo / "beta_agent.py", "tools-2024-04-04", "output-128k-2025-02-19")
    # A process of its own: this one has imported the agent as it was.
    replay = run_cachelint(git_repo, "run", "--execution", "beta")
    assert replay.returncode == 1, replay.stdout + replay.stderr
    error = result(git_repo, "support/acme/refund", "beta")["trials"][0]["error"]
    assert "options.headers.anthropic-beta: 'tools-2024-04-04' -> 'output-128k-2025-02-19'" in error


def test_a_miss_is_the_sdks_not_found_error_with_the_miss_explanation(git_repo: Path) -> None:
    agent = """
import anthropic

def answer(scenario, client):
    sdk = anthropic.Anthropic(base_url=client.anthropic_base_url, api_key=client.api_key)
    try:
        sdk.messages.create(model="big-model", max_tokens=10, messages=[
            {"role": "user", "content": "How do refunds work?"}])
    except anthropic.NotFoundError as exc:
        assert exc.body["error"]["type"] == "not_found_error", exc.body
        return "swallowed: " + exc.body["error"]["message"]
    return "answered"
"""
    # The agent swallows the SDK's error: the miss still fails the scenario.
    trial = replayed_miss(git_repo, agent)
    assert trial["output"]["text"].startswith("swallowed: cache miss in replay mode")


def test_check_verifies_the_recorded_messages_entries(git_repo: Path) -> None:
    write_repo(
        git_repo,
        targets=python_target("claude_agent:answer"),
        scenarios={"support/acme/order": ORDER},
        files={"claude_agent.py": agent_code(stream=False, in_process=True)},
    )
    outcome, _ = record(git_repo)
    assert outcome.rc == 0, outcome.out + outcome.err
    (git_repo / ".gitattributes").write_text("eval-cache/** -text\n", encoding="utf-8")
    commit_all(git_repo)
    tree = ",".join(TREE_CODES)
    clean = run_cachelint(git_repo, "check", "--select", tree)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "2 entries" in clean.stdout + clean.stderr


MESSAGE: dict[str, Any] = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "m",
    "content": [
        {"type": "thinking", "thinking": "look it up", "signature": "sig"},
        {"type": "text", "text": "Let me check."},
        {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}},
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {"input_tokens": 3, "output_tokens": 5},
}


def test_the_event_stream_rebuilds_the_recorded_message_in_the_sdk() -> None:
    stream = event_stream(MESSAGE)
    assert stream == event_stream(json.loads(json.dumps(MESSAGE)))
    blocks = [b for b in stream.decode().split("\n\n") if b]
    kinds = [b.split("\n")[0].removeprefix("event: ") for b in blocks]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    assert kinds.count("content_block_start") == kinds.count("content_block_stop") == 3
    # The SDK's own accumulator, fed these events, gives back the message that was recorded.
    rebuilt = accumulated(stream)
    assert rebuilt["content"] == MESSAGE["content"]
    assert rebuilt["stop_reason"] == "tool_use" and rebuilt["usage"] == MESSAGE["usage"]
    # A message from a server that sent no usage still streams: the accumulator needs one.
    bare = {k: v for k, v in MESSAGE.items() if k != "usage"}
    assert accumulated(event_stream(bare))["content"] == MESSAGE["content"]


def accumulated(stream: bytes) -> dict[str, Any]:
    """The message the anthropic SDK's stream accumulator builds from `stream`."""
    from anthropic.lib.streaming._messages import accumulate_event
    from anthropic.types import RawMessageStreamEvent

    snapshot = None
    for block in (b for b in stream.decode().split("\n\n") if b):
        data = json.loads(block.split("\n")[1].removeprefix("data: "))
        event = anthropic._models.construct_type(type_=RawMessageStreamEvent, value=data)
        snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs={})
    assert snapshot is not None
    return dict(snapshot.model_dump(exclude_none=True))


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"[]", "the request body must be a JSON object"),
        (b'{"messages": []}', "'model' must be a non-empty string"),
        (b'{"model": "m", "messages": "hi"}', "'messages' must be a list of message objects"),
        (b'{"model": "m", "messages": [], "system": 1}', "'system' must be a string or a list"),
        (b'{"model": "m", "messages": [], "tools": {}}', "'tools' must be a list"),
        (b'{"model": "m", "messages": [], "seed": 1152921504606846976}', "cannot be part of a"),
    ],
    ids=["array", "no-model", "messages", "system", "tools", "huge-int"],
)
def test_a_bad_messages_request_is_a_400_in_anthropics_error_shape(
    tmp_path: Path, body: bytes, expected: str
) -> None:
    from cachelint.runner.client import Mode, OfflineRefuser
    from cachelint.runner.endpoint import answer

    client = direct_client(tmp_path, Mode.REPLAY, OfflineRefuser())
    status, headers, data = answer(client, "POST", "/v1/messages", body)
    assert status == 400 and headers["x-should-retry"] == "false", data
    error = json.loads(data)
    assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
    assert expected in error["error"]["message"]


SHELL_AGENT = """#!/bin/sh
# A non-Python program on Anthropic's API: the two variables are all it knows of cachelint.
curl -sS --fail-with-body "$ANTHROPIC_BASE_URL/v1/messages" \\
  -H "x-api-key: $ANTHROPIC_API_KEY" -H "anthropic-version: 2023-06-01" \\
  -H "Content-Type: application/json" \\
  -d '{"model": "shell-model", "max_tokens": 50,
       "messages": [{"role": "user", "content": "refunds?"}]}' \\
  | sed -e 's/.*"text": *"\\([^"]*\\)".*/\\1/'
"""


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
def test_a_command_target_reaches_the_endpoint_through_the_anthropic_variables(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    targets = command_target(["sh", "agent.sh"])
    scenario = {"input": "refunds?", "assert": [{"type": "contains", "value": "30 days"}]}
    write_repo(
        git_repo,
        targets=targets,
        scenarios={"support/acme/refund": scenario},
        files={"agent.sh": SHELL_AGENT},
    )
    # The program never sees a real Anthropic key, even one set in the environment.
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-must-not-leak")
    outcome, requests = record(git_repo)
    assert outcome.rc == 0, outcome.out + outcome.err
    assert [r.body["model"] for r in requests] == ["shell-model"]
    assert requests[0].header("x-api-key") != "sk-ant-must-not-leak"
    replay = do_run(git_repo)
    assert replay.rc == 0, replay.out
    output = result(git_repo, "support/acme/refund")["trials"][0]["output"]["text"]
    assert output.strip() == "Refunds take 30 days."


# An agent that keeps its conversation within a budget: it counts the tokens a request would
# take before sending it, as code on the SDK (or LangChain's token counter for Claude) does.
COUNTING_AGENT = """
import anthropic

LIBRARY = "httpx2" if int(anthropic.__version__.split(".")[0]) >= 2 else "httpx"


def answer(scenario, client):
    sdk = anthropic.Anthropic(base_url=client.anthropic_base_url, api_key=client.api_key,
        http_client=client.http_client(LIBRARY), max_retries=0)
    turns = [{"role": "user", "content": scenario.messages[-1]["content"]}]
    counted = sdk.messages.count_tokens(model="big-model", messages=turns)
    assert counted.input_tokens > 0, counted
    reply = sdk.messages.create(model="big-model", max_tokens=100, messages=turns)
    return f"{reply.content[0].text} ({counted.input_tokens} tokens asked)"
"""


def test_a_token_count_is_recorded_and_replayed_like_a_message(git_repo: Path) -> None:
    refund = {"input": "How do refunds work?", "assert": [{"type": "contains", "value": "30"}]}
    write_repo(
        git_repo,
        targets=python_target("counting_agent:answer"),
        scenarios={"support/acme/refund": refund},
        files={"counting_agent.py": COUNTING_AGENT},
    )
    outcome, requests = record_requests(git_repo, ROUND_TRIP_SCRIPT)
    assert outcome.rc == 0, outcome.out + outcome.err
    assert [r.path for r in requests] == ["/v1/messages/count_tokens", "/v1/messages"]
    assert requests[0].header("anthropic-version") == "2023-06-01"
    entries = recorded_entries(git_repo)
    assert sorted(e["request"]["api"] for e in entries) == ["count_tokens", "messages"]
    recorded = result(git_repo, "support/acme/refund")["trials"][0]["output"]["text"]

    trial = replayed_offline(git_repo, "support/acme/refund", calls=2)
    assert trial["output"]["text"] == recorded
