"""The cache endpoint end to end: agents written against the real `openai` SDK, a shell program,
and named targets, recorded through the endpoint against the fake provider and replayed offline."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cachelint.runner.endpoint import sse_stream
from tests.conftest import PROJECT
from tests.fakes import fake_server
from tests.helpers import (
    DEAD,
    command_target,
    direct_client,
    do_run,
    entry_files,
    network_blocked,
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

SCRIPT: dict[str, Any] = {
    "rules": [
        {"match": {"has_tool_result": True}, "reply": {"content": "Order A-1 has shipped."}},
        {
            "match": {"has_tools": True},
            "reply": {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A-1"}}]},
        },
        {"match": {"model": "triage-model"}, "reply": {"json": {"queue": "billing"}}},
    ],
    "default": {"content": "Refunds take 30 days."},
}

# One agent, four ways of reaching the endpoint: the loopback socket or the in-process transport,
# sync or async; streaming or not. It asks for two models and makes a tool round trip.
AGENT = """
import asyncio
import openai

TOOLS = [{"type": "function", "function": {"name": "lookup_order", "parameters": {
    "type": "object", "properties": {"order_id": {"type": "string"}}}}}]
STREAM = @STREAM@
IN_PROCESS = @IN_PROCESS@


def _sdk(client, asynchronous):
    kind = openai.AsyncOpenAI if asynchronous else openai.OpenAI
    extra = {"http_client": client.http_client(asynchronous=asynchronous)} if IN_PROCESS else {}
    return kind(base_url=client.base_url, api_key=client.api_key, max_retries=0, **extra)


def _text(response):
    if not STREAM:
        return response.choices[0].message
    parts, calls = [], []
    for chunk in response:
        for choice in chunk.choices:
            parts.append(choice.delta.content or "")
            calls.extend(choice.delta.tool_calls or [])
    return parts, calls


def _args(model, messages, **kw):
    args = dict(model=model, messages=messages, **kw)
    if STREAM:
        args.update(stream=True, stream_options={"include_usage": True})
    return args


def answer(scenario, client):
    sdk = _sdk(client, False)
    messages = [dict(m) for m in scenario.messages]
    first = sdk.chat.completions.create(**_args("small-model", messages, tools=TOOLS))
    if STREAM:
        _, calls = _text(first)
        call_id, name, arguments = calls[0].id, calls[0].function.name, calls[0].function.arguments
    else:
        call = first.choices[0].message.tool_calls[0]
        call_id, name, arguments = call.id, call.function.name, call.function.arguments
    messages.append({"role": "assistant", "tool_calls": [{"id": call_id, "type": "function",
        "function": {"name": name, "arguments": arguments}}]})
    messages.append({"role": "tool", "tool_call_id": call_id, "content": "shipped"})
    final = sdk.chat.completions.create(**_args("big-model", messages))
    if STREAM:
        return "".join(_text(final)[0])
    return final


async def answer_async(scenario, client):
    sdk = _sdk(client, True)
    final = await sdk.chat.completions.create(
        model="big-model", messages=[dict(m) for m in scenario.messages], stream=STREAM
    )
    if STREAM:
        return "".join([c.choices[0].delta.content or "" async for c in final if c.choices])
    return final.choices[0].message.content
"""


def agent_code(*, stream: bool, in_process: bool) -> str:
    return AGENT.replace("@STREAM@", str(stream)).replace("@IN_PROCESS@", str(in_process))


ORDER = {"input": "Where is order A-1?", "assert": [{"type": "contains", "value": "shipped"}]}
REFUND = {"input": "How do refunds work?", "assert": [{"type": "contains", "value": "30 days"}]}


def record(repo: Path, **kw: Any) -> tuple[Any, list[Any]]:
    outcome, requests = record_requests(repo, SCRIPT, **kw)
    return outcome, [r.body for r in requests]


def recorded_requests(repo: Path) -> list[dict[str, Any]]:
    return [entry["request"] for entry in recorded_entries(repo)]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("in_process", [False, True], ids=["socket", "in-process"])
def test_openai_sdk_agent_records_two_models_and_a_tool_round_trip_then_replays(
    git_repo: Path, stream: bool, in_process: bool
) -> None:
    code = agent_code(stream=stream, in_process=in_process)
    write_repo(
        git_repo,
        targets=python_target("sdk_agent:answer"),
        scenarios={"support/acme/order": ORDER},
        files={"sdk_agent.py": code},
    )
    outcome, bodies = record(git_repo)
    assert outcome.rc == 0, outcome.out + outcome.err
    # Upstream saw the models the code asked for, never a stream flag, never the placeholder key.
    assert [b["model"] for b in bodies] == ["small-model", "big-model"]
    assert all("stream" not in b and "stream_options" not in b for b in bodies)
    models = sorted(r["model"] for r in recorded_requests(git_repo))
    assert models == ["big-model", "small-model"]
    before = entry_files(git_repo)

    trial = replayed_offline(git_repo, "support/acme/order", calls=2, in_process=in_process)
    assert trial["output"]["text"] == "Order A-1 has shipped."
    assert entry_files(git_repo) == before


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_async_agent_is_awaited_and_replays(git_repo: Path, stream: bool) -> None:
    write_repo(
        git_repo,
        targets=python_target("async_agent:answer_async"),
        scenarios={"support/acme/refund": REFUND},
        files={"async_agent.py": agent_code(stream=stream, in_process=True)},
    )
    outcome, bodies = record(git_repo)
    assert outcome.rc == 0, outcome.out + outcome.err
    assert [b["model"] for b in bodies] == ["big-model"]
    with network_blocked() as attempts:
        replay = do_run(git_repo)
    assert replay.rc == 0 and attempts == [], replay.out
    assert result(git_repo, "support/acme/refund")["trials"][0]["cache_hit"] is True


def test_streamed_and_whole_requests_share_one_entry_and_the_stream_is_deterministic() -> None:
    completion = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "hi"},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
    stream = sse_stream(completion, include_usage=True)
    assert stream == sse_stream(json.loads(json.dumps(completion)), include_usage=True)
    events = [e for e in stream.decode().split("\n\n") if e]
    assert events[-1] == "data: [DONE]"
    chunks = [json.loads(e.removeprefix("data: ")) for e in events[:-1]]
    assert [c["object"] for c in chunks] == ["chat.completion.chunk"] * 3
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": "hi"}
    assert chunks[1]["choices"][0]["finish_reason"] == "stop"
    assert chunks[2]["usage"]["total_tokens"] == 2
    assert b"usage" not in sse_stream(completion, include_usage=False)


def test_a_miss_is_an_sdk_error_carrying_the_miss_explanation(git_repo: Path) -> None:
    agent = """
import openai

def answer(scenario, client):
    sdk = openai.OpenAI(base_url=client.base_url, api_key=client.api_key)
    try:
        sdk.chat.completions.create(model="big-model", messages=list(scenario.messages))
    except openai.NotFoundError as exc:
        return "swallowed: " + str(exc)
    return "answered"
"""
    # The agent swallows the SDK's error: the miss still fails the scenario, never a pass.
    trial = replayed_miss(git_repo, agent)
    assert "model 'big-model'" in trial["error"]
    assert (
        "to re-record: cachelint run --scenario support/acme/refund --refresh-cache"
        in (trial["error"])
    )


def test_params_are_in_the_key_and_a_change_is_a_miss_naming_the_field(git_repo: Path) -> None:
    targets = python_target("sdk_agent:answer_async") + "params = {temperature = 0.2}\n"
    write_repo(
        git_repo,
        targets=targets,
        scenarios={"support/acme/refund": REFUND},
        files={"sdk_agent.py": agent_code(stream=False, in_process=True)},
    )
    outcome, bodies = record(git_repo)
    assert outcome.rc == 0, outcome.out
    assert bodies[0]["temperature"] == 0.2
    assert recorded_requests(git_repo)[0]["options"] == {"temperature": 0.2}
    pyproject = git_repo / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text().replace("temperature = 0.2", "temperature = 1.5"), encoding="utf-8"
    )
    replay = do_run(git_repo)
    assert replay.rc == 1
    error = result(git_repo, "support/acme/refund")["trials"][0]["error"]
    assert "    options.temperature: 0.2 -> 1.5" in error.splitlines()


SHELL_AGENT = """#!/bin/sh
# A non-Python program: the endpoint is all it knows of cachelint.
curl -sS --fail-with-body "$OPENAI_BASE_URL/chat/completions" \\
  -H "Authorization: Bearer $OPENAI_API_KEY" -H "Content-Type: application/json" \\
  -d '{"model": "shell-model", "messages": [{"role": "user", "content": "refunds?"}]}' \\
  | sed -e 's/.*"content": *"\\([^"]*\\)".*/\\1/'
echo " [$CACHELINT_SCENARIO]"
"""


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
def test_command_target_runs_a_shell_program_per_scenario(git_repo: Path) -> None:
    targets = command_target(["sh", "agent.sh"])
    scenario = {"input": "refunds?", "assert": [{"type": "contains", "value": "30 days"}]}
    write_repo(
        git_repo,
        targets=targets,
        scenarios={"support/acme/refund": scenario, "support/globex/refund": scenario},
        files={"agent.sh": SHELL_AGENT},
    )
    outcome, bodies = record(git_repo)
    assert outcome.rc == 0, outcome.out + outcome.err
    assert [b["model"] for b in bodies] == ["shell-model", "shell-model"]
    replay = do_run(git_repo)
    assert replay.rc == 0, replay.out
    text = result(git_repo, "support/globex/refund")["trials"][0]["output"]["text"]
    assert text == "Refunds take 30 days. [support/globex/refund]"

    # A miss reaches the program as an HTTP error and fails the scenario with the explanation.
    (git_repo / "agent.sh").write_text(SHELL_AGENT.replace("refunds?", "returns?"))
    missed = do_run(git_repo)
    assert missed.rc == 1
    error = result(git_repo, "support/acme/refund")["trials"][0]["error"]
    assert error.startswith("cache miss in replay mode")
    assert "messages[0] (user): 'refunds?' -> 'returns?'" in error


def test_two_agents_on_two_models_share_one_config_and_cache(git_repo: Path) -> None:
    targets = (
        python_target("sdk_agent:answer", name="support-bot")
        + f"""
        [tool.cachelint.targets.triage-bot]
        url = "{DEAD}"
        provider = "cachelint-fake"
        model = "triage-model"
        api-key-env = "CACHELINT_TEST_KEY"

        [tool.cachelint.agents.support]
        target = "support-bot"
        [tool.cachelint.agents.triage]
        target = "triage-bot"
        """
    )
    triage = {"input": "I was charged twice", "assert": [{"type": "json-valid"}]}
    write_repo(
        git_repo,
        targets=targets,
        scenarios={"support/acme/order": ORDER, "triage/acme/classify": triage},
        files={"sdk_agent.py": agent_code(stream=False, in_process=True)},
    )
    outcome, bodies = record(git_repo)
    assert outcome.rc == 0, outcome.out + outcome.err
    assert sorted(b["model"] for b in bodies) == ["big-model", "small-model", "triage-model"]
    with network_blocked():
        replay = do_run(git_repo)
    assert replay.rc == 0, replay.out
    assert (git_repo / ".eval-green.json").is_file()


def test_a_dataset_naming_an_unknown_target_is_one_line(git_repo: Path) -> None:
    write_repo(
        git_repo,
        targets=python_target("x:y"),
        scenarios={"support/acme/refund": {**REFUND, "target": "nope"}},
    )
    from cachelint.errors import CachelintError

    with pytest.raises(CachelintError) as err:
        do_run(git_repo)
    message = str(err.value)
    assert message.startswith("eval-datasets/support/acme/refund.json: field 'target' = 'nope'")
    assert "defined: default" in message


COMMAND_TARGET = f"""
    [tool.cachelint.target]
    type = "command"
    command = ["sh", "agent.sh"]
    url = "{DEAD}"
    provider = "cachelint-fake"
    model = "configured-model"
    api-key-env = "CACHELINT_TEST_KEY"
"""


@pytest.mark.skipif(
    not (sys.platform == "linux" and os.geteuid() == 0 and shutil.which("unshare")),
    reason="needs root and unshare to make a network namespace",
)
@pytest.mark.parametrize("kind", ["sdk-streamed-socket", "sdk-async-in-process", "shell-curl"])
def test_replay_in_a_network_namespace_with_only_loopback(git_repo: Path, kind: str) -> None:
    if kind == "shell-curl":
        scenario = {"input": "refunds?", "assert": [{"type": "contains", "value": "30 days"}]}
        write_repo(
            git_repo,
            targets=COMMAND_TARGET,
            scenarios={"support/acme/refund": scenario},
            files={"agent.sh": SHELL_AGENT},
        )
    else:
        streamed = kind == "sdk-streamed-socket"
        write_repo(
            git_repo,
            targets=python_target("sdk_agent:" + ("answer" if streamed else "answer_async")),
            scenarios={"support/acme/order": ORDER if streamed else REFUND},
            files={"sdk_agent.py": agent_code(stream=streamed, in_process=not streamed)},
        )
    outcome, _ = record(git_repo)
    assert outcome.rc == 0, outcome.out
    command = f"ip link set lo up && {sys.executable} -m cachelint run --execution netns"
    done = subprocess.run(
        ["unshare", "-n", "sh", "-c", command],
        cwd=git_repo,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0 and "Operation not permitted" in done.stderr:
        pytest.skip("this sandbox cannot make a network namespace")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed, 0 failed" in done.stdout


@pytest.mark.parametrize("library", ["httpx", "httpx2"])
def test_a_streamed_answer_replays_as_the_same_event_stream(tmp_path: Path, library: str) -> None:
    module = pytest.importorskip(library)
    from cachelint.runner.client import Mode, OfflineRefuser
    from cachelint.runner.endpoint import Endpoint
    from cachelint.runner.providers.transport import OpenAICompatibleTransport

    body = {
        "model": "small-model",
        "messages": [{"role": "user", "content": "refunds?"}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "user": "someone",
    }
    streams = []
    with Endpoint() as endpoint, fake_server(SCRIPT) as fake:
        upstream = OpenAICompatibleTransport(
            fake.url, api_key=None, params={}, timeout=5, max_retries=0
        )
        for mode, transport in ((Mode.AUTO, upstream), (Mode.REPLAY, OfflineRefuser())):
            client = direct_client(tmp_path / "eval-cache", mode, transport, endpoint)
            with client.http_client(library) as http:
                assert isinstance(http, module.Client)
                reply = http.post(f"{client.base_url}/chat/completions", json=body)
            assert reply.status_code == 200, reply.text
            assert reply.headers["content-type"] == "text/event-stream"
            streams.append(reply.content)
        upstream.close()
        # Upstream saw one whole (not streamed) call without the transport fields.
        assert fake.bodies == [{"model": "small-model", "messages": body["messages"]}]
    assert streams[0] == streams[1]
    assert b'"usage"' in streams[0] and streams[0].endswith(b"data: [DONE]\n\n")
    [request] = recorded_requests(tmp_path)
    assert request["trial"] == 1 and "options" not in request


def test_a_request_for_a_scenario_that_is_not_running_is_refused(tmp_path: Path) -> None:
    import httpx

    from cachelint.runner.client import Mode, OfflineRefuser
    from cachelint.runner.endpoint import Endpoint

    with Endpoint() as endpoint:
        client = direct_client(tmp_path, Mode.REPLAY, OfflineRefuser(), endpoint)
        url = client.base_url
        endpoint.release(client)
        auth = {"Authorization": f"Bearer {client.api_key}"}
        unauthorised = httpx.post(f"{url}/chat/completions", json={})
        assert unauthorised.status_code == 401
        reply = httpx.post(
            f"{url}/chat/completions", json={"model": "m", "messages": []}, headers=auth
        )
        assert reply.status_code == 404
        assert "is not running in this cachelint run" in reply.json()["error"]["message"]
        other = httpx.get(f"http://127.0.0.1:{endpoint.port}/v1/models", headers=auth)
        assert other.status_code == 404


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"{bad", "the request body must be a JSON object"),
        (b'{"messages": []}', "'model' must be a non-empty string"),
        (b'{"model": "m", "messages": "hi"}', "'messages' must be a list of message objects"),
        (b'{"model": "m", "messages": [], "tools": {}}', "'tools' must be a list"),
        (
            b'{"model": "m", "messages": [], "seed": 1152921504606846976}',
            "cannot be part of a cache key",
        ),
    ],
)
def test_a_bad_request_is_a_400_the_sdk_does_not_retry(
    tmp_path: Path, body: bytes, expected: str
) -> None:
    from cachelint.runner.client import Mode, OfflineRefuser
    from cachelint.runner.endpoint import answer

    client = direct_client(tmp_path, Mode.REPLAY, OfflineRefuser(), None)
    status, headers, data = answer(client, "POST", "/v1/chat/completions", body)
    assert status == 400 and headers["x-should-retry"] == "false"
    assert expected in json.loads(data)["error"]["message"]


def test_a_bug_on_the_way_is_one_500_naming_it_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from cachelint.runner.client import CachingClient, Mode, OfflineRefuser
    from cachelint.runner.endpoint import answer

    def broken(self: Any, body: Any) -> Any:
        raise AttributeError("'str' object has no attribute 'get'")

    monkeypatch.setattr(CachingClient, "complete_body", broken)
    client = direct_client(tmp_path, Mode.REPLAY, OfflineRefuser())
    body = b'{"model": "m", "messages": []}'
    status, headers, data = answer(client, "POST", "/v1/chat/completions", body)
    assert status == 500 and headers["x-should-retry"] == "false"
    message = json.loads(data)["error"]["message"]
    assert message == (
        "internal error in the cachelint cache endpoint (AttributeError: 'str' object has no "
        "attribute 'get'); please report it"
    )
    assert capsys.readouterr().err == ""
