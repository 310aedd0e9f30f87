"""Amazon Bedrock's Converse API through the cache endpoint: an agent written against the real
boto3 `bedrock-runtime` client, recorded against the fake provider and replayed offline, whole
(`converse`) and streamed (`converse_stream`, AWS's binary event stream); model ids with a
version suffix and inference-profile ARNs in the path; a miss as boto3's own error; a program
reaching the endpoint through the variables the AWS SDKs read."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from cachelint.runner.providers.converse_api import event_stream, route_model
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
    result,
)
from tests.helpers import write_targets_repo as write_repo

boto3 = pytest.importorskip("boto3")
pytestmark = pytest.mark.usefixtures("recording_env")

SMALL = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
BIG = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5"

# A small model asks for a tool, the agent runs it and sends the result back, a big model (an
# inference profile, named by its ARN) answers. Streamed, the agent joins the events itself, as
# code on boto3 does.
AGENT = """
import json

import boto3
from botocore.config import Config

TOOLS = {"tools": [{"toolSpec": {"name": "lookup_order", "description": "Look an order up.",
    "inputSchema": {"json": {"type": "object", "properties": {"order_id": {"type": "string"}}}}}}]}
STREAM = @STREAM@


def _joined(events):
    \"\"\"The message a ConverseStream's events make.\"\"\"
    blocks, stop = {}, None
    for event in events:
        if "contentBlockStart" in event:
            start = event["contentBlockStart"]
            use = start["start"]["toolUse"]
            blocks[start["contentBlockIndex"]] = {"toolUse": {**use, "input": ""}}
        elif "contentBlockDelta" in event:
            change = event["contentBlockDelta"]
            at, delta = change["contentBlockIndex"], change["delta"]
            block = blocks.setdefault(at, {"text": ""} if "text" in delta else {})
            if "text" in delta:
                block["text"] += delta["text"]
            else:
                block["toolUse"]["input"] += delta["toolUse"]["input"]
        elif "messageStop" in event:
            stop = event["messageStop"]["stopReason"]
    for block in blocks.values():
        if "toolUse" in block:
            block["toolUse"]["input"] = json.loads(block["toolUse"]["input"])
    content = [blocks[at] for at in sorted(blocks)]
    return {"output": {"message": {"role": "assistant", "content": content}}, "stopReason": stop}


def _converse(sdk, **kw):
    if not STREAM:
        return sdk.converse(**kw)
    return _joined(sdk.converse_stream(**kw)["stream"])


def answer(scenario, client):
    sdk = boto3.client(
        "bedrock-runtime",
        endpoint_url=client.bedrock_endpoint_url,
        region_name="us-east-1",
        aws_access_key_id=client.api_key,
        aws_secret_access_key="unused",
        config=Config(retries={"max_attempts": 1}),
    )
    system = [{"text": "You answer questions about orders."}]
    turns = [{"role": "user", "content": [{"text": scenario.messages[-1]["content"]}]}]
    first = _converse(sdk, modelId="@SMALL@", system=system, messages=turns, toolConfig=TOOLS)
    assert first["stopReason"] == "tool_use", first
    said = first["output"]["message"]
    [use] = [block["toolUse"] for block in said["content"] if "toolUse" in block]
    assert use["input"] == {"order_id": "A-1"}, use
    turns.append(said)
    turns.append({"role": "user", "content": [{"toolResult": {
        "toolUseId": use["toolUseId"], "content": [{"text": "shipped"}]}}]})
    return _converse(sdk, modelId="@BIG@", system=system, messages=turns, toolConfig=TOOLS)
"""

ORDER = {"input": "Where is order A-1?", "assert": [{"type": "contains", "value": "shipped"}]}


def agent_code(*, stream: bool) -> str:
    code = AGENT.replace("@STREAM@", str(stream))
    return code.replace("@SMALL@", SMALL).replace("@BIG@", BIG)


@pytest.mark.parametrize("stream", [False, True], ids=["converse", "converse_stream"])
def test_a_boto3_agent_records_a_tool_round_trip_then_replays_offline(
    git_repo: Path, stream: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_repo(
        git_repo,
        targets=python_target("bedrock_agent:answer"),
        scenarios={"support/acme/order": ORDER},
        files={"bedrock_agent.py": agent_code(stream=stream)},
    )
    monkeypatch.setenv("CACHELINT_TEST_KEY", "bedrock-api-key-real")
    outcome, requests = record_requests(git_repo, ROUND_TRIP_SCRIPT)
    assert outcome.rc == 0, outcome.out + outcome.err
    # Upstream (the target's url: the fake's /v1) got each call at its model's path (the id
    # percent-encoded, never streamed), the body without the model, and the real key as a
    # Bedrock API key: a bearer token.
    assert [r.path for r in requests] == [
        "/v1/model/us.anthropic.claude-haiku-4-5-20251001-v1%3A0/converse",
        "/v1/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile"
        "%2Fus.anthropic.claude-sonnet-4-5/converse",
    ]
    assert all("model" not in r.body and "modelId" not in r.body for r in requests)
    assert {r.header("authorization") for r in requests} == {"Bearer bedrock-api-key-real"}
    assert requests[1].body["messages"][-1]["content"][0]["toolResult"]["content"] == [
        {"text": "shipped"}
    ]
    entries = recorded_entries(git_repo)
    assert sorted(e["request"]["model"] for e in entries) == sorted([SMALL, BIG])
    assert [e["request"]["api"] for e in entries] == ["converse", "converse"]
    before = entry_files(git_repo)

    monkeypatch.delenv("CACHELINT_TEST_KEY")
    replay = do_run(git_repo)
    assert replay.rc == 0, replay.out + replay.err
    trial = result(git_repo, "support/acme/order")["trials"][0]
    assert trial["cache_hit"] is True and len(trial["calls"]) == 2
    assert trial["output"]["text"] == "Order A-1 has shipped."
    # The recorded usage is counted, in Bedrock's names.
    assert trial["usage"]["inputTokens"] > 0 and trial["usage"]["outputTokens"] > 0
    assert entry_files(git_repo) == before


def test_a_miss_is_boto3s_not_found_error_with_the_miss_explanation(git_repo: Path) -> None:
    agent = """
import boto3
from botocore.exceptions import ClientError


def answer(scenario, client):
    sdk = boto3.client("bedrock-runtime", endpoint_url=client.bedrock_endpoint_url,
        region_name="eu-west-1", aws_access_key_id=client.api_key, aws_secret_access_key="x")
    try:
        sdk.converse(modelId="m", messages=[{"role": "user", "content": [{"text": "refunds?"}]}])
    except sdk.exceptions.ResourceNotFoundException as exc:
        return "swallowed: " + exc.response["Error"]["Message"]
    return "answered"
"""
    # The agent swallows boto3's error: the miss still fails the scenario.
    trial = replayed_miss(git_repo, agent)
    assert trial["output"]["text"].startswith("swallowed: cache miss in replay mode")


def test_a_request_signed_with_another_access_key_is_refused(tmp_path: Path) -> None:
    from botocore.exceptions import ClientError

    from cachelint.runner.client import Mode, OfflineRefuser
    from cachelint.runner.endpoint import Endpoint

    with Endpoint() as endpoint:
        client = direct_client(tmp_path, Mode.REPLAY, OfflineRefuser(), endpoint)
        sdk = boto3.client(
            "bedrock-runtime",
            endpoint_url=client.bedrock_endpoint_url,
            region_name="us-east-1",
            aws_access_key_id="AKIAIOSFODNN7EXAMPLE",
            aws_secret_access_key="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        )
        with pytest.raises(ClientError) as refused:
            sdk.converse(modelId="m", messages=[{"role": "user", "content": [{"text": "?"}]}])
        endpoint.release(client)
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 401


# A program that knows nothing of cachelint: boto3 reads the endpoint and the Bedrock API key
# from the environment, as the AWS SDKs of every language do.
ENV_AGENT = """
import boto3

sdk = boto3.client("bedrock-runtime", region_name="us-east-1")
question = [{"role": "user", "content": [{"text": "refunds?"}]}]
reply = sdk.converse(modelId="env-model", messages=question)
print(reply["output"]["message"]["content"][0]["text"])
"""


def test_a_command_target_reaches_the_endpoint_through_the_aws_variables(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    targets = command_target([Path(sys.executable).as_posix(), "agent.py"])
    scenario = {"input": "refunds?", "assert": [{"type": "contains", "value": "30 days"}]}
    write_repo(
        git_repo,
        targets=targets,
        scenarios={"support/acme/refund": scenario},
        files={"agent.py": ENV_AGENT},
    )
    # The program's own Bedrock key never reaches the endpoint, nor the provider.
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-must-not-leak")
    monkeypatch.setenv("CACHELINT_TEST_KEY", "bedrock-api-key-real")
    outcome, requests = record_requests(git_repo, ROUND_TRIP_SCRIPT)
    assert outcome.rc == 0, outcome.out + outcome.err
    assert [r.path for r in requests] == ["/v1/model/env-model/converse"]
    assert requests[0].header("authorization") == "Bearer bedrock-api-key-real"
    replay = do_run(git_repo)
    assert replay.rc == 0, replay.out
    output = result(git_repo, "support/acme/refund")["trials"][0]["output"]["text"]
    assert output.strip() == "Refunds take 30 days."


def test_check_verifies_the_recorded_converse_entries(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_repo(
        git_repo,
        targets=python_target("bedrock_agent:answer"),
        scenarios={"support/acme/order": ORDER},
        files={"bedrock_agent.py": agent_code(stream=False)},
    )
    monkeypatch.setenv("CACHELINT_TEST_KEY", "bedrock-api-key-real")
    outcome, _ = record_requests(git_repo, ROUND_TRIP_SCRIPT)
    assert outcome.rc == 0, outcome.out + outcome.err
    (git_repo / ".gitattributes").write_text("eval-cache/** -text\n", encoding="utf-8")
    commit_all(git_repo)
    tree = ",".join(TREE_CODES)
    clean = run_cachelint(git_repo, "check", "--select", tree)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "2 entries" in clean.stdout + clean.stderr


RESPONSE: dict[str, Any] = {
    "output": {
        "message": {
            "role": "assistant",
            "content": [
                {"reasoningContent": {"reasoningText": {"text": "look it up", "signature": "s1"}}},
                {"text": "Let me check."},
                {"toolUse": {"toolUseId": "tooluse_1", "name": "f", "input": {"a": [1, 2]}}},
            ],
        }
    },
    "stopReason": "tool_use",
    "usage": {"inputTokens": 3, "outputTokens": 5, "totalTokens": 8},
    "metrics": {"latencyMs": 412},
}


def test_the_event_stream_is_framed_as_botocore_reads_it() -> None:
    from botocore.eventstream import EventStreamBuffer

    stream = event_stream(RESPONSE)
    assert stream == event_stream(json.loads(json.dumps(RESPONSE)))
    buffer = EventStreamBuffer()
    buffer.add_data(stream)  # each message's prelude and message CRC32 are checked here
    messages = list(buffer)
    kinds = [m.headers[":event-type"] for m in messages]
    assert kinds == [
        "messageStart",
        *["contentBlockDelta"] * 2 + ["contentBlockStop"],  # reasoning: text, signature
        *["contentBlockDelta", "contentBlockStop"],  # text
        *["contentBlockStart", "contentBlockDelta", "contentBlockStop"],  # tool use
        "messageStop",
        "metadata",
    ]
    assert {m.headers[":message-type"] for m in messages} == {"event"}
    payloads = [json.loads(m.payload) for m in messages]
    assert payloads[1]["delta"] == {"reasoningContent": {"text": "look it up"}}
    assert payloads[2]["delta"] == {"reasoningContent": {"signature": "s1"}}
    assert payloads[7]["delta"] == {"toolUse": {"input": '{"a":[1,2]}'}}
    assert payloads[-2] == {"stopReason": "tool_use"}
    assert payloads[-1] == {"usage": RESPONSE["usage"], "metrics": RESPONSE["metrics"]}


def test_the_model_is_read_from_the_path() -> None:
    assert route_model("/model/amazon.nova-lite-v1%3A0/converse") == (
        "amazon.nova-lite-v1:0",
        False,
    )
    assert route_model("/model/m/converse-stream") == ("m", True)
    assert route_model("/model/m/invoke") is None
    assert route_model("/v1/chat/completions") is None


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"[]", "the request body must be a JSON object"),
        (b'{"messages": "hi"}', "'messages' must be a list of message objects"),
        (b'{"messages": [], "system": "be brief"}', "'system' must be a list"),
    ],
    ids=["array", "messages", "system"],
)
def test_a_bad_converse_request_is_a_validation_exception(
    tmp_path: Path, body: bytes, expected: str
) -> None:
    from cachelint.runner.client import Mode, OfflineRefuser
    from cachelint.runner.endpoint import answer

    client = direct_client(tmp_path, Mode.REPLAY, OfflineRefuser())
    status, headers, data = answer(client, "POST", "/model/m/converse", body)
    assert status == 400 and headers["x-amzn-ErrorType"] == "ValidationException", data
    assert expected in json.loads(data)["message"]


def test_without_a_bedrock_api_key_a_recording_signs_with_the_aws_credentials(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_repo(
        git_repo,
        targets=python_target("bedrock_agent:answer"),
        scenarios={"support/acme/order": ORDER},
        files={"bedrock_agent.py": agent_code(stream=False)},
    )
    monkeypatch.delenv("CACHELINT_TEST_KEY", raising=False)
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(git_repo / "no-such-file"))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDRECORDINGEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "recording-secret-example")
    monkeypatch.setenv("AWS_REGION", "eu-central-1")
    outcome, requests = record_requests(git_repo, ROUND_TRIP_SCRIPT)
    assert outcome.rc == 0, outcome.out + outcome.err
    # Each call upstream is signed by botocore for Bedrock in the configured region, with the
    # machine's access key; the secret is never sent.
    for request in requests:
        authorization = request.header("authorization") or ""
        assert re.fullmatch(
            r"AWS4-HMAC-SHA256 Credential=AKIDRECORDINGEXAMPLE/\d{8}/eu-central-1/bedrock/"
            r"aws4_request, SignedHeaders=[a-z0-9;-]*host;x-amz-date[a-z0-9;-]*, "
            r"Signature=[0-9a-f]{64}",
            authorization,
        ), authorization
        assert request.header("x-amz-date")
        assert "recording-secret-example" not in str(request.headers)
    assert len({r.header("authorization") for r in requests}) == 2  # each body signed
    assert do_run(git_repo).rc == 0


def test_the_region_comes_from_bedrocks_host_and_missing_credentials_are_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cachelint.errors import CachelintError
    from cachelint.runner.providers import awssign

    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret-example")
    host = "bedrock-runtime.ap-southeast-2.amazonaws.com"
    url = f"https://{host}/model/m/converse"
    headers = awssign.signed(url, host, b"{}", {"Content-Type": "application/json"})
    assert "/ap-southeast-2/bedrock/aws4_request" in headers["Authorization"]
    with pytest.raises(CachelintError, match="set AWS_REGION"):
        awssign.signed("http://127.0.0.1:9/model/m/converse", "127.0.0.1", b"{}", {})
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    with pytest.raises(CachelintError, match="needs a Bedrock API key .* or AWS credentials"):
        awssign.signed(url, host, b"{}", {})


# A retrieval agent on Bedrock: it embeds the question and each document with Titan through
# InvokeModel (a body of Titan's own, not the Messages API's) and answers with the nearest.
RETRIEVAL_AGENT = """
import json
import math

import boto3

DOCS = ["Refunds are paid within 30 days.", "Orders ship within 2 days."]


def _embed(sdk, text):
    reply = sdk.invoke_model(
        modelId="amazon.titan-embed-text-v2:0", body=json.dumps({"inputText": text}),
        contentType="application/json", accept="application/json")
    return json.loads(reply["body"].read())["embedding"]


def _cosine(a, b):
    norms = math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b)) / norms


def answer(scenario, client):
    sdk = boto3.client("bedrock-runtime", endpoint_url=client.bedrock_endpoint_url,
        region_name="us-east-1", aws_access_key_id=client.api_key, aws_secret_access_key="x")
    asked = _embed(sdk, scenario.messages[-1]["content"])
    return max(DOCS, key=lambda doc: _cosine(_embed(sdk, doc), asked))
"""


def test_a_retrieval_agent_embedding_through_invoke_model_replays_offline(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refund = {"input": "How do refunds work?", "assert": [{"type": "contains", "value": "within"}]}
    write_repo(
        git_repo,
        targets=python_target("retrieval_agent:answer"),
        scenarios={"support/acme/refund": refund},
        files={"retrieval_agent.py": RETRIEVAL_AGENT},
    )
    monkeypatch.setenv("CACHELINT_TEST_KEY", "bedrock-api-key-real")
    outcome, requests = record_requests(git_repo, ROUND_TRIP_SCRIPT)
    assert outcome.rc == 0, outcome.out + outcome.err
    titan = "/v1/model/amazon.titan-embed-text-v2%3A0/invoke"
    assert [r.path for r in requests] == [titan] * 3
    assert [r.body for r in requests][1] == {"inputText": "Refunds are paid within 30 days."}
    entries = recorded_entries(git_repo)
    assert [e["request"]["api"] for e in entries] == ["invoke"] * 3
    picked = result(git_repo, "support/acme/refund")["trials"][0]["output"]["text"]

    monkeypatch.delenv("CACHELINT_TEST_KEY")
    replay = do_run(git_repo)
    assert replay.rc == 0, replay.out + replay.err
    trial = result(git_repo, "support/acme/refund")["trials"][0]
    assert trial["cache_hit"] is True and len(trial["calls"]) == 3
    assert trial["output"]["text"] == picked  # the same vectors, the same document

    # An edited document is another body: a miss naming the text that changed.
    edit_module(git_repo / "retrieval_agent.py", "within 30 days", "within 14 days")
    changed = run_cachelint(git_repo, "run", "--execution", "edited")
    assert changed.returncode == 1, changed.stdout + changed.stderr
    error = result(git_repo, "support/acme/refund", "edited")["trials"][0]["error"]
    assert "inputText" in error and "within 14 days" in error, error
