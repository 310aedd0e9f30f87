"""Programs in another language through the cache endpoint, as `command` targets configured
from the environment alone: OpenAI's own Node.js SDK (the `openai` npm package, on the chat
completions API), Vercel's AI SDK (`ai` with `@ai-sdk/openai`, on the Responses API) and
Anthropic's TypeScript SDK (`@anthropic-ai/sdk`, on the Messages API).

The packages are those .ci/node/package.json names, installed by .ci/run (`cd .ci/node && npm
install`); locally, run the same command. Without Node.js or the packages the tests skip, and
fail under CI=true, so CI cannot pass by skipping.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import PROJECT
from tests.helpers import (
    ROUND_TRIP_SCRIPT,
    command_target,
    do_run,
    node_or_skip,
    record_requests,
    replayed_offline,
    result,
)
from tests.helpers import write_targets_repo as write_repo

pytestmark = pytest.mark.usefixtures("recording_env")

NODE_PROJECT = PROJECT / ".ci" / "node"
NODE_MODULES = NODE_PROJECT / "node_modules"

# A tool loop: the SDK reads OPENAI_BASE_URL and OPENAI_API_KEY; `stream` as its argument
# streams each call through the SDK's own stream helper.
OPENAI_AGENT = """
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
const messages = [
  { role: "system", content: "You answer questions about orders." },
  { role: "user", content: "Where is order A-1?" },
];

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
# The same tool loop run by the AI SDK, whose `openai` provider reads the same two variables and
# calls the Responses API; `stream` as its argument streams with `streamText`.
AI_SDK_AGENT = """
import { generateText, stepCountIs, streamText, tool } from "ai";
import { openai } from "@ai-sdk/openai";
import { z } from "zod";

const options = {
  model: openai("node-model"),
  system: "You answer questions about orders.",
  prompt: "Where is order A-1?",
  tools: {
    lookup_order: tool({
      description: "Look an order up.",
      inputSchema: z.object({ order_id: z.string() }),
      execute: async () => "shipped",
    }),
  },
  stopWhen: stepCountIs(5),
  maxRetries: 0,
};
const text = process.argv[2] === "stream"
  ? await streamText(options).text
  : (await generateText(options)).text;
console.log(text);
"""
# The same tool loop on Anthropic's TypeScript SDK, which reads ANTHROPIC_BASE_URL and
# ANTHROPIC_API_KEY; `stream` as its argument streams through the SDK's message stream.
ANTHROPIC_AGENT = """
import Anthropic from "@anthropic-ai/sdk";

const client = new Anthropic({ maxRetries: 0 });
const stream = process.argv[2] === "stream";
const tools = [{
  name: "lookup_order",
  description: "Look an order up.",
  input_schema: { type: "object", properties: { order_id: { type: "string" } } },
}];
const messages = [{ role: "user", content: "Where is order A-1?" }];

async function ask() {
  const request = {
    model: "node-model",
    max_tokens: 256,
    system: "You answer questions about orders.",
    messages,
    tools,
  };
  return stream
    ? await client.messages.stream(request).finalMessage()
    : await client.messages.create(request);
}

let reply = await ask();
while (reply.stop_reason === "tool_use") {
  messages.push({ role: "assistant", content: reply.content });
  const calls = reply.content.filter((block) => block.type === "tool_use");
  const results = calls.map((call) => ({
    type: "tool_result",
    tool_use_id: call.id,
    content: "shipped",
  }));
  messages.push({ role: "user", content: results });
  reply = await ask();
}
console.log(reply.content.filter((block) => block.type === "text").map((b) => b.text).join(""));
"""
AGENTS = {
    "openai": (OPENAI_AGENT, "/v1/chat/completions"),
    "ai-sdk": (AI_SDK_AGENT, "/v1/responses"),
    "anthropic": (ANTHROPIC_AGENT, "/v1/messages"),
}
ORDER = {"input": "Where is order A-1?", "assert": [{"type": "contains", "value": "shipped"}]}


def node_with_packages() -> str:
    node = node_or_skip()
    names = json.loads((NODE_PROJECT / "package.json").read_text())["dependencies"]
    if all((NODE_MODULES / n / "package.json").is_file() for n in names):
        return node
    if os.environ.get("CI"):
        pytest.fail("CI needs the npm packages; .ci/run installs them")
    pytest.skip("needs the npm packages: cd .ci/node && npm install")


@pytest.mark.parametrize("mode", ["create", "stream"])
@pytest.mark.parametrize("sdk", sorted(AGENTS))
def test_a_node_sdk_records_and_replays(git_repo: Path, sdk: str, mode: str) -> None:
    node = node_with_packages()
    agent, route = AGENTS[sdk]
    (git_repo / "node_modules").symlink_to(NODE_MODULES, target_is_directory=True)
    write_repo(
        git_repo,
        targets=command_target([node, "agent.mjs", mode]),
        scenarios={"support/acme/order": ORDER},
        files={"agent.mjs": agent},
    )
    outcome, requests = record_requests(git_repo, ROUND_TRIP_SCRIPT)
    assert outcome.rc == 0, outcome.out + outcome.err
    # Recorded whole either way; a streaming SDK gets the answer back as its API's events.
    assert [(r.path, r.body["model"]) for r in requests] == [(route, "node-model")] * 2

    trial = replayed_offline(git_repo, "support/acme/order", calls=2, in_process=False)
    assert trial["output"]["text"].strip() == "Order A-1 has shipped."

    # A changed question reaches the SDK as an HTTP error; the scenario fails on the miss.
    (git_repo / "agent.mjs").write_text(agent.replace("order A-1?", "order B-2?"))
    missed = do_run(git_repo)
    assert missed.rc == 1
    error = result(git_repo, "support/acme/order")["trials"][0]["error"]
    assert error.startswith("cache miss in replay mode"), error
    assert "'Where is order A-1?' -> 'Where is order B-2?'" in error, error
