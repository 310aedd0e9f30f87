"""Claude on Amazon Bedrock and on Google's Vertex AI through the cache endpoint: an agent written
against the anthropic SDK's own `AnthropicBedrock` and `AnthropicVertex` clients (the Messages API
at `/model/<id>/invoke` and at `.../publishers/anthropic/models/<model>:rawPredict`), recorded
against the fake provider and replayed offline, whole and streamed (Bedrock's stream in AWS's
event-stream framing, Vertex AI's as server-sent events), over the socket and in process; a miss
as the SDK's own error."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import (
    DEAD,
    ROUND_TRIP_SCRIPT,
    entry_files,
    python_target,
    record_requests,
    recorded_entries,
    replayed_miss,
    replayed_offline,
)
from tests.helpers import write_targets_repo as write_repo

anthropic = pytest.importorskip("anthropic")
pytest.importorskip("botocore")  # AnthropicBedrock reads AWS's event stream with it
pytestmark = pytest.mark.usefixtures("recording_env")

# The Messages API tool round trip of test_messages_api, on a cloud platform's client.
AGENT = """
import anthropic

TOOLS = [{"name": "lookup_order", "description": "Look an order up.", "input_schema": {
    "type": "object", "properties": {"order_id": {"type": "string"}}}}]
PLATFORM = "@PLATFORM@"
STREAM = @STREAM@
IN_PROCESS = @IN_PROCESS@
SMALL = {"bedrock": "us.anthropic.claude-haiku-4-5-20251001-v1:0",
         "vertex": "claude-haiku-4-5@20251001"}[PLATFORM]
BIG = {"bedrock": "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
       "vertex": "claude-sonnet-4-5@20250929"}[PLATFORM]


def _sdk(client):
    extra = {"http_client": client.http_client("httpx2")} if IN_PROCESS else {}
    if PLATFORM == "bedrock":
        return anthropic.AnthropicBedrock(
            api_key=client.api_key, base_url=client.bedrock_endpoint_url,
            aws_region="us-east-1", max_retries=0, **extra)
    return anthropic.AnthropicVertex(
        access_token=client.api_key, base_url=client.anthropic_base_url,
        region="us-east5", project_id="acme-evals", max_retries=0, **extra)


def _create(sdk, **kw):
    if not STREAM:
        return sdk.messages.create(**kw)
    with sdk.messages.stream(**kw) as events:
        kinds = [event.type for event in events]
        assert kinds[0] == "message_start" and kinds[-1] == "message_stop", kinds
        return events.get_final_message()


def answer(scenario, client):
    sdk = _sdk(client)
    rules = "You answer questions about orders."
    turns = [{"role": "user", "content": scenario.messages[-1]["content"]}]
    first = _create(sdk, model=SMALL, max_tokens=200, system=rules, messages=turns, tools=TOOLS)
    call = next(block for block in first.content if block.type == "tool_use")
    assert call.input == {"order_id": "A-1"}, call.input
    turns.append({"role": "assistant", "content": [b.model_dump() for b in first.content]})
    turns.append({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": call.id, "content": "shipped"}]})
    return _create(sdk, model=BIG, max_tokens=200, system=rules, messages=turns)
"""

ORDER = {"input": "Where is order A-1?", "assert": [{"type": "contains", "value": "shipped"}]}

# Where each platform's recording goes: its target's url (the fake's /v1 standing for the
# platform's host) and the path of each call under it.
PLATFORMS = {
    "bedrock": (
        "",
        [
            "/v1/model/us.anthropic.claude-haiku-4-5-20251001-v1%3A0/invoke",
            "/v1/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke",
        ],
    ),
    "vertex": (
        "/projects/acme-evals/locations/us-east5",
        [
            "/v1/projects/acme-evals/locations/us-east5/publishers/anthropic/models/"
            "claude-haiku-4-5@20251001:rawPredict",
            "/v1/projects/acme-evals/locations/us-east5/publishers/anthropic/models/"
            "claude-sonnet-4-5@20250929:rawPredict",
        ],
    ),
}


def targets(under: str) -> str:
    return python_target("cloud_agent:answer", url=f"{DEAD}{under}")


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("in_process", [False, True], ids=["socket", "in-process"])
def test_a_claude_agent_on_a_cloud_platform_records_then_replays_offline(
    git_repo: Path, platform: str, stream: bool, in_process: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    under, paths = PLATFORMS[platform]
    code = AGENT.replace("@PLATFORM@", platform).replace("@STREAM@", str(stream))
    write_repo(
        git_repo,
        targets=targets(under),
        scenarios={"support/acme/order": ORDER},
        files={"cloud_agent.py": code.replace("@IN_PROCESS@", str(in_process))},
    )
    monkeypatch.setenv("CACHELINT_TEST_KEY", "cloud-real-token")
    outcome, requests = record_requests(git_repo, ROUND_TRIP_SCRIPT)
    assert outcome.rc == 0, outcome.out + outcome.err
    # Upstream got each call at its model's path under the target's url, the body as the SDK
    # sent it (with its platform's API version, no model, never streamed) and the real key as a
    # bearer token.
    assert [r.path for r in requests] == paths
    assert all(r.body["anthropic_version"] for r in requests)  # the one its SDK release sends
    assert all("model" not in r.body and "stream" not in r.body for r in requests)
    assert {r.header("authorization") for r in requests} == {"Bearer cloud-real-token"}
    entries = recorded_entries(git_repo)
    api = "invoke" if platform == "bedrock" else "rawPredict"
    assert [e["request"]["api"] for e in entries] == [api, api]
    before = entry_files(git_repo)

    monkeypatch.delenv("CACHELINT_TEST_KEY")
    trial = replayed_offline(git_repo, "support/acme/order", calls=2, in_process=in_process)
    assert trial["output"]["text"] == "Order A-1 has shipped."
    assert trial["usage"]["input_tokens"] > 0 and trial["usage"]["output_tokens"] > 0
    assert entry_files(git_repo) == before


MISS_AGENT = """
import anthropic


def answer(scenario, client):
    if "@PLATFORM@" == "bedrock":
        sdk = anthropic.AnthropicBedrock(api_key=client.api_key,
            base_url=client.bedrock_endpoint_url, aws_region="us-east-1", max_retries=0)
    else:
        sdk = anthropic.AnthropicVertex(access_token=client.api_key,
            base_url=client.anthropic_base_url, region="us-east5", project_id="p", max_retries=0)
    try:
        sdk.messages.create(model="m", max_tokens=10, messages=[
            {"role": "user", "content": "How do refunds work?"}])
    except anthropic.NotFoundError as exc:
        return "swallowed: " + exc.message
    return "answered"
"""


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_a_miss_is_the_sdks_not_found_error_with_the_miss_explanation(
    git_repo: Path, platform: str
) -> None:
    trial = replayed_miss(git_repo, MISS_AGENT.replace("@PLATFORM@", platform))
    assert "cache miss in replay mode" in trial["output"]["text"]
