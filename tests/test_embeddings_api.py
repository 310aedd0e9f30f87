"""OpenAI's embeddings API through the cache endpoint: a retrieval agent on the real `openai` SDK
embeds its documents and the question, picks the nearest document and asks a model with it;
recorded against the fake provider, replayed offline over the socket and in process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cachelint
from tests.helpers import (
    ROUND_TRIP_SCRIPT,
    direct_client,
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

# The SDK asks for base64 vectors unless told otherwise, and decodes them itself.
AGENT = """
import math
import openai

IN_PROCESS = @IN_PROCESS@
DOCUMENTS = ["Refunds take 30 days.", "Shipping is free over 50 euros.", "We ship to the EU."]


def answer(scenario, client):
    extra = {"http_client": client.http_client()} if IN_PROCESS else {}
    sdk = openai.OpenAI(base_url=client.base_url, api_key=client.api_key, max_retries=0, **extra)
    question = scenario.messages[-1]["content"]
    vectors = [d.embedding for d in sdk.embeddings.create(
        model="embed-model", input=[*DOCUMENTS, question], dimensions=16).data]
    assert all(len(v) == 16 for v in vectors), [len(v) for v in vectors]
    *documents, asked = vectors
    nearest = max(range(len(DOCUMENTS)), key=lambda i: sum(
        a * b for a, b in zip(documents[i], asked)) / math.hypot(*documents[i]))
    reply = sdk.chat.completions.create(model="answer-model", messages=[
        {"role": "system", "content": "Answer from this document: " + DOCUMENTS[nearest]},
        {"role": "user", "content": question}])
    return {"text": reply.choices[0].message.content + " [doc " + str(nearest) + "]"}
"""

REFUND = {"input": "How long do refunds take?", "assert": [{"type": "contains", "value": "30"}]}


@pytest.mark.parametrize("in_process", [False, True], ids=["socket", "in-process"])
def test_a_retrieval_agent_records_its_embeddings_then_replays_offline(
    git_repo: Path, in_process: bool
) -> None:
    write_repo(
        git_repo,
        targets=python_target("rag_agent:answer"),
        scenarios={"support/acme/refund": REFUND},
        files={"rag_agent.py": AGENT.replace("@IN_PROCESS@", str(in_process))},
    )
    outcome, requests = record_requests(git_repo, ROUND_TRIP_SCRIPT)
    assert outcome.rc == 0, outcome.out + outcome.err
    assert [r.path for r in requests] == ["/v1/embeddings", "/v1/chat/completions"]
    embedded = requests[0].body
    assert embedded["encoding_format"] == "base64" and len(embedded["input"]) == 4
    entries = recorded_entries(git_repo)
    assert sorted(e["request"].get("api", "chat") for e in entries) == ["chat", "embeddings"]
    before = entry_files(git_repo)
    first = result(git_repo, "support/acme/refund")["trials"][0]["output"]["text"]

    trial = replayed_offline(git_repo, "support/acme/refund", calls=2, in_process=in_process)
    # The replayed vectors pick the same document as the recorded ones did.
    assert trial["output"]["text"] == first
    assert trial["usage"]["prompt_tokens"] > 0
    assert entry_files(git_repo) == before


def test_a_changed_document_is_a_miss_naming_the_input(git_repo: Path) -> None:
    write_repo(
        git_repo,
        targets=python_target("rag_agent:answer"),
        scenarios={"support/acme/refund": REFUND},
        files={"rag_agent.py": AGENT.replace("@IN_PROCESS@", "True")},
    )
    outcome, _ = record_requests(git_repo, ROUND_TRIP_SCRIPT)
    assert outcome.rc == 0, outcome.out + outcome.err
    # The same length, so only dropping the bytecode makes the next process see it.
    edit_module(git_repo / "rag_agent.py", "free over 50", "free over 75")
    replay = run_cachelint(git_repo, "run", "--execution", "changed")
    assert replay.returncode == 1, replay.stdout + replay.stderr
    error = result(git_repo, "support/acme/refund", "changed")["trials"][0]["error"]
    assert "input[1]: 'Shipping is free over 50 euros.' -> 'Shipping is free over 75 euros.'" in (
        error
    )


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'{"model": "m"}', "'input' must be a string, or a non-empty list"),
        (b'{"model": "m", "input": []}', "'input' must be a string, or a non-empty list"),
        (b'{"model": "m", "input": [{"a": 1}]}', "'input' must be a string, or a non-empty list"),
        (b'{"input": "hi"}', "'model' must be a non-empty string"),
    ],
    ids=["no-input", "empty", "objects", "no-model"],
)
def test_a_bad_embeddings_request_is_a_400(tmp_path: Path, body: bytes, expected: str) -> None:
    from cachelint.runner.client import Mode, OfflineRefuser
    from cachelint.runner.endpoint import answer

    client = direct_client(tmp_path, Mode.REPLAY, OfflineRefuser())
    status, headers, data = answer(client, "POST", "/v1/embeddings", body)
    assert status == 400 and headers["x-should-retry"] == "false", data
    assert expected in json.loads(data)["error"]["message"]
