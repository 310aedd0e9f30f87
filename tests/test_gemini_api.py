"""Google's Gemini API through the cache endpoint: an agent written against the real `google-genai`
SDK, recorded against the fake provider and replayed offline, whole and streamed, over the socket
and in process; a miss as the SDK's own error; check over the recorded entries."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cachelint.runner.providers.gemini_api import event_stream, output_of, route_model
from tests.conftest import commit_all, run_cachelint
from tests.helpers import (
    DEAD,
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

genai = pytest.importorskip("google.genai")
pytestmark = pytest.mark.usefixtures("recording_env")

# A small model asks for a function call (automatic calling off, as an agent loop has it), the
# agent sends the function's response back, a big model answers; streamed, the SDK joins chunks.
AGENT = """
from google import genai
from google.genai import types

STREAM = @STREAM@
IN_PROCESS = @IN_PROCESS@
TOOLS = [types.Tool(function_declarations=[types.FunctionDeclaration(
    name="lookup_order", description="Look an order up.",
    parameters={"type": "object", "properties": {"order_id": {"type": "string"}}})])]
RULES = "You answer questions about orders."


def make_sdk(client):
    options = {"base_url": client.gemini_base_url, "api_version": "v1beta"}
    if IN_PROCESS:
        options["httpx_client"] = client.http_client()
    return genai.Client(api_key=client.api_key, http_options=types.HttpOptions(**options))


def answer(scenario, client):
    sdk = make_sdk(client)
    question = scenario.messages[-1]["content"]
    contents = [types.Content(role="user", parts=[types.Part(text=question)])]
    manual = types.AutomaticFunctionCallingConfig(disable=True)
    config = types.GenerateContentConfig(
        system_instruction=RULES, tools=TOOLS, automatic_function_calling=manual)
    first = sdk.models.generate_content(model="small-model", contents=contents, config=config)
    call = first.function_calls[0]
    assert call.args == {"order_id": "A-1"}, call.args
    contents.append(first.candidates[0].content)
    contents.append(types.Content(role="user", parts=[
        types.Part.from_function_response(name=call.name, response={"status": "shipped"})]))
    final = types.GenerateContentConfig(system_instruction=RULES)
    if STREAM:
        chunks = sdk.models.generate_content_stream(
            model="big-model", contents=contents, config=final)
        return "".join(chunk.text or "" for chunk in chunks)
    return sdk.models.generate_content(model="big-model", contents=contents, config=final)
"""

ORDER = {"input": "Where is order A-1?", "assert": [{"type": "contains", "value": "shipped"}]}


def agent_code(*, stream: bool, in_process: bool) -> str:
    return AGENT.replace("@STREAM@", str(stream)).replace("@IN_PROCESS@", str(in_process))


def record(repo: Path) -> tuple[Any, list[Any]]:
    """Record through the fake provider; every request must have gone to generateContent."""
    outcome, requests = record_requests(repo, ROUND_TRIP_SCRIPT)
    paths = [r.path for r in requests]
    assert paths == [
        "/v1/models/small-model:generateContent",
        "/v1/models/big-model:generateContent",
    ]
    return outcome, requests


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("in_process", [False, True], ids=["socket", "in-process"])
def test_gemini_agent_records_a_function_call_round_trip_then_replays_offline(
    git_repo: Path, stream: bool, in_process: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_repo(
        git_repo,
        targets=python_target("gemini_agent:answer"),
        scenarios={"support/acme/order": ORDER},
        files={"gemini_agent.py": agent_code(stream=stream, in_process=in_process)},
    )
    monkeypatch.setenv("CACHELINT_TEST_KEY", "AIza-real-key")
    outcome, requests = record(git_repo)
    assert outcome.rc == 0, outcome.out + outcome.err
    # Upstream got the body as the SDK sent it (the model stays in the path) and the real key
    # as x-goog-api-key; the SDK's placeholder never left cachelint.
    assert all("model" not in r.body for r in requests)
    assert {r.header("x-goog-api-key") for r in requests} == {"AIza-real-key"}
    assert all(r.header("authorization") is None for r in requests)
    entries = recorded_entries(git_repo)
    assert [e["request"]["api"] for e in entries] == ["generateContent"] * 2
    assert sorted(e["request"]["model"] for e in entries) == ["big-model", "small-model"]
    before = entry_files(git_repo)

    monkeypatch.delenv("CACHELINT_TEST_KEY")
    trial = replayed_offline(git_repo, "support/acme/order", calls=2, in_process=in_process)
    # The returned response (or the streamed text) is the trial's output; its usage is counted.
    assert trial["output"]["text"] == "Order A-1 has shipped."
    assert trial["usage"]["promptTokenCount"] > 0
    assert entry_files(git_repo) == before


# The same conversation on Vertex AI: google-genai with `vertexai=True`, in express mode (an API
# key, which a recording sends upstream) or for a project and location (an OAuth token, here the
# run's key as the token: the endpoint takes it as a bearer token).
VERTEX_AGENT = """
from google import genai
from google.genai import types
from google.oauth2.credentials import Credentials

import gemini_agent

EXPRESS = @EXPRESS@


def make_sdk(client):
    options = types.HttpOptions(base_url=client.gemini_base_url)
    if EXPRESS:
        return genai.Client(vertexai=True, api_key=client.api_key, http_options=options)
    return genai.Client(
        vertexai=True, project="acme-evals", location="us-central1",
        credentials=Credentials(token=client.api_key), http_options=options)


gemini_agent.make_sdk = make_sdk  # the Gemini agent's conversation, on a Vertex AI client
answer = gemini_agent.answer
"""


# How each kind of Vertex AI client records: the target's url, where its calls go, and the
# header the key goes in (an express-mode API key, or a project's OAuth access token).
VERTEX_RECORDINGS = {
    "express": ("/publishers/google", "x-goog-api-key", "AQ.vertex-express-key"),
    "project": (
        "/projects/acme-evals/locations/us-central1/publishers/google",
        "authorization",
        "ya29.access-token",
    ),
}


@pytest.mark.parametrize("recorder", sorted(VERTEX_RECORDINGS))
def test_vertex_ai_clients_of_either_kind_replay_what_the_other_recorded(
    git_repo: Path, recorder: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    under, header, key = VERTEX_RECORDINGS[recorder]
    express = recorder == "express"
    write_repo(
        git_repo,
        targets=python_target("vertex_agent:answer", url=f"{DEAD}{under}"),
        scenarios={"support/acme/order": ORDER},
        files={
            "gemini_agent.py": agent_code(stream=False, in_process=False),
            "vertex_agent.py": VERTEX_AGENT.replace("@EXPRESS@", str(express)),
        },
    )
    monkeypatch.setenv("CACHELINT_TEST_KEY", key)
    outcome, requests = record_requests(git_repo, ROUND_TRIP_SCRIPT)
    assert outcome.rc == 0, outcome.out + outcome.err
    # Each records at its publisher path under the target's url, the key in the header its
    # kind takes: an API key as x-goog-api-key, an access token as the bearer token.
    assert [r.path for r in requests] == [
        f"/v1{under}/models/small-model:generateContent",
        f"/v1{under}/models/big-model:generateContent",
    ]
    sent = key if express else f"Bearer {key}"
    assert {r.header(header) for r in requests} == {sent}
    other = "authorization" if express else "x-goog-api-key"
    assert {r.header(other) for r in requests} == {None}
    assert [e["request"]["api"] for e in recorded_entries(git_repo)] == ["generateContent"] * 2

    # The other kind of client (its path with or without the project) asks the same keys.
    edit_module(git_repo / "vertex_agent.py", f"EXPRESS = {express}", f"EXPRESS = {not express}")
    replay = run_cachelint(git_repo, "run", "--execution", "other")
    assert replay.returncode == 0, replay.stdout + replay.stderr
    trial = result(git_repo, "support/acme/order", "other")["trials"][0]
    assert trial["cache_hit"] is True and len(trial["calls"]) == 2
    assert trial["output"]["text"] == "Order A-1 has shipped."


def test_a_miss_is_the_sdks_client_error_with_the_miss_explanation(git_repo: Path) -> None:
    agent = """
from google import genai
from google.genai import errors, types

def answer(scenario, client):
    options = types.HttpOptions(base_url=client.gemini_base_url, api_version="v1beta")
    sdk = genai.Client(api_key=client.api_key, http_options=options)
    try:
        sdk.models.generate_content(model="big-model", contents="How do refunds work?")
    except errors.ClientError as exc:
        assert exc.code == 404 and exc.status == "NOT_FOUND", (exc.code, exc.status)
        return "swallowed: " + exc.message
    return "answered"
"""
    # The agent swallows the SDK's error: the miss still fails the scenario.
    trial = replayed_miss(git_repo, agent)
    assert "model 'big-model'" in trial["error"]
    assert trial["output"]["text"].startswith("swallowed: cache miss in replay mode")


def test_check_verifies_the_recorded_gemini_entries(git_repo: Path) -> None:
    write_repo(
        git_repo,
        targets=python_target("gemini_agent:answer"),
        scenarios={"support/acme/order": ORDER},
        files={"gemini_agent.py": agent_code(stream=False, in_process=True)},
    )
    outcome, _ = record(git_repo)
    assert outcome.rc == 0, outcome.out + outcome.err
    (git_repo / ".gitattributes").write_text("eval-cache/** -text\n", encoding="utf-8")
    commit_all(git_repo)
    clean = run_cachelint(git_repo, "check", "--select", ",".join(TREE_CODES))
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "2 entries" in clean.stdout + clean.stderr


def test_the_path_names_the_model_and_the_stream() -> None:
    assert route_model("/v1beta/models/gemini-2.5-flash:generateContent") == (
        "gemini-2.5-flash",
        False,
    )
    assert route_model("/v1/models/m:streamGenerateContent") == ("m", True)
    assert route_model("/v1/models/m:countTokens") is None
    assert route_model("/v1/chat/completions") is None


def test_a_response_dumped_by_the_sdk_reads_as_its_wire_form() -> None:
    wire = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {"text": "thinking...", "thought": True},
                        {"text": "Let me look."},
                        {"functionCall": {"name": "f", "args": {"a": 1}}},
                    ],
                }
            }
        ]
    }
    dumped = json.loads(json.dumps(wire).replace("functionCall", "function_call"))
    expected = ("Let me look.", [{"name": "f", "arguments": {"a": 1}}])
    assert output_of(wire) == output_of(dumped) == expected
    stream = event_stream(wire)
    assert stream.startswith(b"data: ") and stream.endswith(b"\r\n\r\n")
    assert json.loads(stream[len(b"data: ") :]) == wire


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"[]", "the request body must be a JSON object"),
        (b'{"contents": "hi"}', "'contents' must be a list of content objects"),
        (b'{"contents": [], "tools": {}}', "'tools' must be a list"),
        (b'{"contents": [], "seed": 1152921504606846976}', "cannot be part of a cache key"),
    ],
    ids=["array", "contents", "tools", "huge-int"],
)
def test_a_bad_gemini_request_is_a_400_in_googles_error_shape(
    tmp_path: Path, body: bytes, expected: str
) -> None:
    from cachelint.runner.client import Mode, OfflineRefuser
    from cachelint.runner.endpoint import answer

    client = direct_client(tmp_path, Mode.REPLAY, OfflineRefuser())
    status, headers, data = answer(client, "POST", "/v1beta/models/m:generateContent", body)
    assert status == 400 and headers["x-should-retry"] == "false", data
    error = json.loads(data)["error"]
    assert error["code"] == 400 and error["status"] == "INVALID_ARGUMENT"
    assert expected in error["message"]


# A retrieval agent on Gemini: it embeds the question and the documents with `embed_content`
# (one batchEmbedContents call each) and answers with the nearest document.
RETRIEVAL_AGENT = """
import math

from google import genai
from google.genai import types

DOCS = ["Refunds are paid within 30 days.", "Orders ship within 2 days."]
IN_PROCESS = @IN_PROCESS@


def _cosine(a, b):
    norms = math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b)) / norms


def answer(scenario, client):
    options = {"base_url": client.gemini_base_url, "api_version": "v1beta"}
    if IN_PROCESS:
        options["httpx_client"] = client.http_client()
    sdk = genai.Client(api_key=client.api_key, http_options=types.HttpOptions(**options))
    embedded = sdk.models.embed_content(model="gemini-embedding-001", contents=DOCS)
    [asked] = sdk.models.embed_content(
        model="gemini-embedding-001", contents=scenario.messages[-1]["content"]).embeddings
    scores = [_cosine(doc.values, asked.values) for doc in embedded.embeddings]
    return DOCS[scores.index(max(scores))]
"""


@pytest.mark.parametrize("in_process", [False, True], ids=["socket", "in-process"])
def test_a_retrieval_agent_embedding_with_gemini_replays_offline(
    git_repo: Path, in_process: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    refund = {"input": "How do refunds work?", "assert": [{"type": "contains", "value": "within"}]}
    write_repo(
        git_repo,
        targets=python_target("retrieval_agent:answer"),
        scenarios={"support/acme/refund": refund},
        files={"retrieval_agent.py": RETRIEVAL_AGENT.replace("@IN_PROCESS@", str(in_process))},
    )
    monkeypatch.setenv("CACHELINT_TEST_KEY", "AIza-real-key")
    outcome, requests = record_requests(git_repo, ROUND_TRIP_SCRIPT)
    assert outcome.rc == 0, outcome.out + outcome.err
    path = "/v1/models/gemini-embedding-001:batchEmbedContents"
    assert [r.path for r in requests] == [path, path]
    assert {r.header("x-goog-api-key") for r in requests} == {"AIza-real-key"}
    assert len(requests[0].body["requests"]) == 2
    entries = recorded_entries(git_repo)
    assert [e["request"]["api"] for e in entries] == ["batchEmbedContents"] * 2
    picked = result(git_repo, "support/acme/refund")["trials"][0]["output"]["text"]

    monkeypatch.delenv("CACHELINT_TEST_KEY")
    trial = replayed_offline(git_repo, "support/acme/refund", calls=2, in_process=in_process)
    assert trial["output"]["text"] == picked  # the same vectors, the same document

    # An edited document is another body: a miss naming the text that changed.
    edit_module(git_repo / "retrieval_agent.py", "within 30 days", "within 14 days")
    changed = run_cachelint(git_repo, "run", "--execution", "edited")
    assert changed.returncode == 1, changed.stdout + changed.stderr
    error = result(git_repo, "support/acme/refund", "edited")["trials"][0]["error"]
    assert "within 14 days" in error, error


def test_a_token_count_is_recorded_and_replayed_like_a_generation(git_repo: Path) -> None:
    agent = """
from google import genai
from google.genai import types


def answer(scenario, client):
    options = types.HttpOptions(
        base_url=client.gemini_base_url, api_version="v1beta", httpx_client=client.http_client())
    sdk = genai.Client(api_key=client.api_key, http_options=options)
    question = scenario.messages[-1]["content"]
    counted = sdk.models.count_tokens(model="big-model", contents=question)
    assert counted.total_tokens > 0, counted
    reply = sdk.models.generate_content(model="big-model", contents=question)
    return f"{reply.text} ({counted.total_tokens} tokens asked)"
"""
    refund = {"input": "How do refunds work?", "assert": [{"type": "contains", "value": "30"}]}
    write_repo(
        git_repo,
        targets=python_target("counting_agent:answer"),
        scenarios={"support/acme/refund": refund},
        files={"counting_agent.py": agent},
    )
    outcome, requests = record_requests(git_repo, ROUND_TRIP_SCRIPT)
    assert outcome.rc == 0, outcome.out + outcome.err
    assert [r.path for r in requests] == [
        "/v1/models/big-model:countTokens",
        "/v1/models/big-model:generateContent",
    ]
    entries = recorded_entries(git_repo)
    assert sorted(e["request"]["api"] for e in entries) == ["countTokens", "generateContent"]
    recorded = result(git_repo, "support/acme/refund")["trials"][0]["output"]["text"]

    trial = replayed_offline(git_repo, "support/acme/refund", calls=2)
    assert trial["output"]["text"] == recorded
