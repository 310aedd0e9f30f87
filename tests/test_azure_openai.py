"""Azure OpenAI's deployments API through the cache endpoint: an agent written against the real
`openai.AzureOpenAI` client (the `/openai/deployments/<deployment>/...?api-version=` routes and
the `api-key` header), recorded against the fake provider and replayed offline, whole and
streamed, over the socket and in process; the deployment as the model keyed; embeddings; a
program reaching the endpoint through the variables Azure's SDKs read."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import run_cachelint
from tests.helpers import (
    ROUND_TRIP_SCRIPT,
    command_target,
    direct_client,
    do_run,
    edit_module,
    entry_files,
    python_target,
    record_requests,
    recorded_entries,
    replayed_offline,
    result,
)
from tests.helpers import write_targets_repo as write_repo

openai = pytest.importorskip("openai")
pytestmark = pytest.mark.usefixtures("recording_env")

# A small deployment asks for a tool, the agent runs it, a big deployment answers: the code a team
# on Azure OpenAI has, with nothing but the endpoint and the key from cachelint.
AGENT = """
import json

import openai

TOOLS = [{"type": "function", "function": {"name": "lookup_order", "parameters": {
    "type": "object", "properties": {"order_id": {"type": "string"}}}}}]
STREAM = @STREAM@
IN_PROCESS = @IN_PROCESS@


def _create(sdk, **kw):
    if not STREAM:
        return sdk.chat.completions.create(**kw)
    with sdk.chat.completions.stream(**kw) as events:
        for _ in events:
            pass
        return events.get_final_completion()


def answer(scenario, client):
    extra = {"http_client": client.http_client()} if IN_PROCESS else {}
    sdk = openai.AzureOpenAI(
        azure_endpoint=client.azure_endpoint,
        api_key=client.api_key,
        api_version="2024-10-21",
        max_retries=0,
        **extra,
    )
    turns = [
        {"role": "system", "content": "You answer questions about orders."},
        {"role": "user", "content": scenario.messages[-1]["content"]},
    ]
    first = _create(sdk, model="small-model", messages=turns, tools=TOOLS)
    [call] = first.choices[0].message.tool_calls
    assert json.loads(call.function.arguments) == {"order_id": "A-1"}, call
    turns.append(first.choices[0].message.model_dump(exclude_none=True))
    turns.append({"role": "tool", "tool_call_id": call.id, "content": "shipped"})
    return _create(sdk, model="big-model", messages=turns)
"""

ORDER = {"input": "Where is order A-1?", "assert": [{"type": "contains", "value": "shipped"}]}

# The same conversation through the plain OpenAI client, on Azure's v1 API, where the model named
# is the deployment.
V1_AGENT = """
import openai

from azure_agent import TOOLS


def answer(scenario, client):
    sdk = openai.OpenAI(base_url=client.base_url, api_key=client.api_key, max_retries=0)
    turns = [
        {"role": "system", "content": "You answer questions about orders."},
        {"role": "user", "content": scenario.messages[-1]["content"]},
    ]
    first = sdk.chat.completions.create(model="small-model", messages=turns, tools=TOOLS)
    [call] = first.choices[0].message.tool_calls
    turns.append(first.choices[0].message.model_dump(exclude_none=True))
    turns.append({"role": "tool", "tool_call_id": call.id, "content": "shipped"})
    return sdk.chat.completions.create(model="big-model", messages=turns)
"""


def agent_code(*, stream: bool, in_process: bool) -> str:
    return AGENT.replace("@STREAM@", str(stream)).replace("@IN_PROCESS@", str(in_process))


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("in_process", [False, True], ids=["socket", "in-process"])
def test_an_azure_openai_agent_records_a_tool_round_trip_then_replays_offline(
    git_repo: Path, stream: bool, in_process: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_repo(
        git_repo,
        targets=python_target("azure_agent:answer"),
        scenarios={"support/acme/order": ORDER},
        files={"azure_agent.py": agent_code(stream=stream, in_process=in_process)},
    )
    monkeypatch.setenv("CACHELINT_TEST_KEY", "azure-real-key")
    outcome, requests = record_requests(git_repo, ROUND_TRIP_SCRIPT)
    assert outcome.rc == 0, outcome.out + outcome.err
    # A recording calls the target's url (Azure's v1 API, here the fake) with each deployment as
    # the model, without the stream flag, with the real key; the placeholder never left.
    assert [r.path for r in requests] == ["/v1/chat/completions"] * 2
    assert [r.body["model"] for r in requests] == ["small-model", "big-model"]
    assert all("stream" not in r.body for r in requests)
    assert {r.header("authorization") for r in requests} == {"Bearer azure-real-key"}
    entries = recorded_entries(git_repo)
    assert sorted(e["request"]["model"] for e in entries) == ["big-model", "small-model"]
    # Chat calls, keyed as any chat call: the route and api-version are transport.
    assert all("api" not in e["request"] for e in entries)
    before = entry_files(git_repo)

    monkeypatch.delenv("CACHELINT_TEST_KEY")
    trial = replayed_offline(git_repo, "support/acme/order", calls=2, in_process=in_process)
    assert trial["output"]["text"] == "Order A-1 has shipped."
    assert entry_files(git_repo) == before


def test_moving_to_azures_v1_api_replays_the_same_cache(git_repo: Path) -> None:
    write_repo(
        git_repo,
        targets=python_target("azure_agent:answer"),
        scenarios={"support/acme/order": ORDER},
        files={
            "azure_agent.py": agent_code(stream=False, in_process=False),
            "v1_agent.py": V1_AGENT,
        },
    )
    outcome, _ = record_requests(git_repo, ROUND_TRIP_SCRIPT)
    assert outcome.rc == 0, outcome.out + outcome.err
    pyproject = git_repo / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    pyproject.write_text(text.replace("azure_agent:answer", "v1_agent:answer"), encoding="utf-8")
    # A process of its own, so the target is imported afresh.
    replay = run_cachelint(git_repo, "run", "--execution", "v1")
    assert replay.returncode == 0, replay.stdout + replay.stderr
    trial = result(git_repo, "support/acme/order", "v1")["trials"][0]
    assert trial["cache_hit"] is True and len(trial["calls"]) == 2


FIXED_DEPLOYMENT_AGENT = """
import openai


def answer(scenario, client):
    sdk = openai.AzureOpenAI(
        azure_endpoint=client.azure_endpoint,
        azure_deployment="@DEPLOYMENT@",
        api_key=client.api_key,
        api_version="2024-10-21",
        max_retries=0,
    )
    # Azure answers with the deployment in the URL; the model the body names is not used there.
    reply = sdk.chat.completions.create(
        model="named-in-body", messages=[{"role": "user", "content": "How do refunds work?"}]
    )
    vectors = sdk.embeddings.create(model="named-in-body", input=["refunds", "returns"])
    assert len(vectors.data) == 2 and len(vectors.data[0].embedding) > 0, vectors
    return reply.choices[0].message.content
"""

REFUND = {"input": "How do refunds work?", "assert": [{"type": "contains", "value": "30"}]}


def test_the_deployment_in_the_url_is_the_model_recorded_and_keyed(git_repo: Path) -> None:
    write_repo(
        git_repo,
        targets=python_target("fixed_agent:answer"),
        scenarios={"support/acme/refund": REFUND},
        files={"fixed_agent.py": FIXED_DEPLOYMENT_AGENT.replace("@DEPLOYMENT@", "gpt-4o-eu")},
    )
    outcome, requests = record_requests(git_repo, ROUND_TRIP_SCRIPT)
    assert outcome.rc == 0, outcome.out + outcome.err
    assert [(r.path, r.body["model"]) for r in requests] == [
        ("/v1/chat/completions", "gpt-4o-eu"),
        ("/v1/embeddings", "gpt-4o-eu"),
    ]
    entries = recorded_entries(git_repo)
    assert sorted(e["request"].get("api", "chat") for e in entries) == ["chat", "embeddings"]
    assert {e["request"]["model"] for e in entries} == {"gpt-4o-eu"}
    assert do_run(git_repo).rc == 0

    # Another deployment is another model: a miss that names it.
    edit_module(git_repo / "fixed_agent.py", "gpt-4o-eu", "gpt-4o-us")
    replay = run_cachelint(git_repo, "run", "--execution", "other")
    assert replay.returncode == 1, replay.stdout + replay.stderr
    error = result(git_repo, "support/acme/refund", "other")["trials"][0]["error"]
    assert "model: 'gpt-4o-eu' -> 'gpt-4o-us'" in error, error


SHELL_AGENT = """#!/bin/sh
# A non-Python program on Azure OpenAI: the two variables are all it knows of cachelint, as they
# are all a .NET AzureOpenAIClient built from the environment knows.
test -z "$AZURE_OPENAI_AD_TOKEN" || { echo "an Entra token reached the program" >&2; exit 3; }
curl -sS --fail-with-body \\
  "$AZURE_OPENAI_ENDPOINT/openai/deployments/shell-model/chat/completions?api-version=2024-10-21" \\
  -H "api-key: $AZURE_OPENAI_API_KEY" -H "Content-Type: application/json" \\
  -d '{"messages": [{"role": "user", "content": "refunds?"}]}' \\
  | sed -e 's/.*"content": *"\\([^"]*\\)".*/\\1/'
"""


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
def test_a_command_target_reaches_the_endpoint_through_the_azure_variables(
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
    # The program never sees a real Azure key or Entra token, even ones set in the environment.
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "azure-must-not-leak")
    monkeypatch.setenv("AZURE_OPENAI_AD_TOKEN", "eyJ-must-not-leak")
    outcome, requests = record_requests(git_repo, ROUND_TRIP_SCRIPT)
    assert outcome.rc == 0, outcome.out + outcome.err
    # The body named no model: the deployment is the one recorded.
    assert [r.body["model"] for r in requests] == ["shell-model"]
    assert "azure-must-not-leak" not in str(requests[0].header("authorization"))
    replay = do_run(git_repo)
    assert replay.rc == 0, replay.out
    output = result(git_repo, "support/acme/refund")["trials"][0]["output"]["text"]
    assert output.strip() == "Refunds take 30 days."


def test_the_api_key_header_must_carry_this_runs_key(tmp_path: Path) -> None:
    import httpx

    from cachelint.runner.client import Mode, OfflineRefuser
    from cachelint.runner.endpoint import Endpoint

    with Endpoint() as endpoint:
        client = direct_client(tmp_path, Mode.REPLAY, OfflineRefuser(), endpoint)
        route = "openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21"
        url = f"{client.azure_endpoint}/{route}"
        body = {"messages": [{"role": "user", "content": "How do refunds work?"}]}
        refused = httpx.post(url, json=body, headers={"api-key": "azure-real-key"})
        assert refused.status_code == 401
        assert "AZURE_OPENAI_API_KEY" in refused.json()["error"]["message"]
        missed = httpx.post(url, json=body, headers={"api-key": client.api_key})
        endpoint.release(client)
    assert missed.status_code == 404
    assert missed.json()["error"]["message"].startswith("cache miss in replay mode")
