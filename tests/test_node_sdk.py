"""A program in another language through the cache endpoint: OpenAI's own Node.js SDK (the `openai`
npm package), configured from the environment alone, as a `command` target.

The package is installed by .ci/run (`npm install --prefix .ci/node openai@6`); locally, run the
same command. Without Node.js or the package the test skips, and fails under CI=true, so CI
cannot pass by skipping.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import PROJECT
from tests.helpers import command_target, do_run, record_requests, result
from tests.helpers import write_targets_repo as write_repo

pytestmark = pytest.mark.usefixtures("recording_env")

NODE_MODULES = PROJECT / ".ci" / "node" / "node_modules"

# A tool loop: the SDK reads OPENAI_BASE_URL and OPENAI_API_KEY; `stream` as its argument
# streams each call through the SDK's own stream helper.
AGENT = """
import OpenAI from "openai";

const client = new OpenAI({ maxRetries: 0 });
const stream = process.argv[2] === "stream";
const tools = [{
  type: "function",
  function: {
    name: "lookup_order",
    parameters: { type: "object", properties: { order_id: { type: "string" } } },
  },
}];
const messages = [{ role: "user", content: "Where is order A-1?" }];

async function ask() {
  const request = { model: "node-model", messages, tools };
  const done = stream
    ? await client.chat.completions.stream(request).finalChatCompletion()
    : await client.chat.completions.create(request);
  return done.choices[0].message;
}

let reply = await ask();
while (reply.tool_calls?.length) {
  messages.push(reply);
  for (const call of reply.tool_calls) {
    messages.push({ role: "tool", tool_call_id: call.id, content: "shipped" });
  }
  reply = await ask();
}
console.log(reply.content);
"""
SCRIPT = {
    "rules": [
        {
            "match": {"tool_result_contains": "shipped"},
            "reply": {"content": "Order A-1 has shipped."},
        }
    ],
    "default": {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A-1"}}]},
}
ORDER = {"input": "Where is order A-1?", "assert": [{"type": "contains", "value": "shipped"}]}


def node_with_openai() -> str:
    node = shutil.which("node")
    if node is not None and (NODE_MODULES / "openai" / "package.json").is_file():
        return node
    if os.environ.get("CI"):
        pytest.fail("CI needs Node.js and the openai npm package; .ci/run installs the package")
    pytest.skip("needs node and `npm install --prefix .ci/node openai@6`")


@pytest.mark.parametrize("mode", ["create", "stream"])
def test_the_openai_node_sdk_records_and_replays(git_repo: Path, mode: str) -> None:
    node = node_with_openai()
    (git_repo / "node_modules").symlink_to(NODE_MODULES, target_is_directory=True)
    write_repo(
        git_repo,
        targets=command_target([node, "agent.mjs", mode]),
        scenarios={"support/acme/order": ORDER},
        files={"agent.mjs": AGENT},
    )
    outcome, requests = record_requests(git_repo, SCRIPT)
    assert outcome.rc == 0, outcome.out + outcome.err
    bodies = [r.body for r in requests]
    # Recorded whole either way; a streaming SDK gets the answer back as chunks.
    assert [b["model"] for b in bodies] == ["node-model", "node-model"]

    replay = do_run(git_repo)
    assert replay.rc == 0, replay.out + replay.err
    trial = result(git_repo, "support/acme/order")["trials"][0]
    assert trial["cache_hit"] is True and len(trial["calls"]) == 2
    assert trial["output"]["text"].strip() == "Order A-1 has shipped."

    # A changed question reaches the SDK as an HTTP error; the scenario fails on the miss.
    (git_repo / "agent.mjs").write_text(AGENT.replace("order A-1?", "order B-2?"))
    missed = do_run(git_repo)
    assert missed.rc == 1
    error = result(git_repo, "support/acme/order")["trials"][0]["error"]
    assert error.startswith("cache miss in replay mode"), error
    assert "'Where is order A-1?' -> 'Where is order B-2?'" in error
