"""A replay switches off the network calls frameworks make of their own accord: trace exports
from threads of their own, a catalog fetched when the framework is imported.

Such a call could only be refused in a replay (`cachelint.netguard`), and the refusal would fail
every running scenario although each answer came from the cache, or fail the import of the
target's module. These tests replay in a process of their own: a framework reads its switch
once, when it is imported or first makes the call. The last test is of a framework's own
response cache (DSPy's), which a replay cannot switch off and must name.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cachelint
from tests.helpers import ROUND_TRIP_SCRIPT, command_target, python_target, record, result
from tests.helpers import write_targets_repo as write_repo

pytestmark = pytest.mark.usefixtures("recording_env")

ORDER = {"input": "Where is order A-1?", "assert": [{"type": "contains", "value": "A-1"}]}
SCRIPT = {"rules": [], "default": {"content": "Order A-1 has shipped."}}

# A LangChain agent: ChatOpenAI with a tool, in a loop until the model answers. With tracing
# on, LangChain's tracer posts each run to LangSmith from a background thread as soon as the run
# ends, while the scenario is still running.
LANGCHAIN_AGENT = """
from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

STREAM = @STREAM@


@tool
def lookup_order(order_id: str) -> str:
    \"\"\"Look an order up.\"\"\"
    return "shipped"


def answer(scenario, client):
    model = ChatOpenAI(
        model="small-model",
        base_url=client.base_url,
        api_key=client.api_key,
        http_client=client.http_client(),
        max_retries=0,
        streaming=STREAM,
    ).bind_tools([lookup_order])
    messages = [
        SystemMessage("You answer questions about orders."),
        HumanMessage(scenario.messages[-1]["content"]),
    ]
    reply = model.invoke(messages)
    while reply.tool_calls:
        messages.append(reply)
        for call in reply.tool_calls:
            said = lookup_order.invoke(call["args"])
            messages.append(ToolMessage(said, tool_call_id=call["id"]))
        reply = model.invoke(messages)
    return reply.content
"""

# How teams turn LangSmith on in CI: the current variable, or LangChain's older one.
LANGSMITH_ON = [
    {"LANGSMITH_TRACING": "true", "LANGSMITH_API_KEY": "lsv2-in-the-ci-environment"},
    {"LANGCHAIN_TRACING_V2": "true", "LANGCHAIN_API_KEY": "lsv2-in-the-ci-environment"},
]


def record_and_replay(
    repo: Path,
    target: str,
    files: dict[str, str],
    env: dict[str, str] | None = None,
    *,
    script: dict[str, Any] = SCRIPT,
    recording_env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Record scenario support/acme/order through the fake provider answering by `script` (in
    this process, with `recording_env` set), then replay it in a process of its own with `env`
    added: the trial, once the replay has passed with every call a cache hit."""
    write_repo(repo, targets=target, scenarios={"support/acme/order": ORDER}, files=files)
    with pytest.MonkeyPatch.context() as recording:
        for name, value in (recording_env or {}).items():
            recording.setenv(name, value)
        outcome, calls = record(repo, script)
    assert outcome.rc == 0 and calls > 0, outcome.out + outcome.err
    replay = run_cachelint(repo, "run", "--execution", "offline", env=env)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    trial: dict[str, Any] = result(repo, "support/acme/order", "offline")["trials"][0]
    assert trial["cache_hit"] is True and len(trial["calls"]) == calls, trial
    return trial


@pytest.mark.parametrize(
    ("tracing", "stream"),
    [(LANGSMITH_ON[0], False), (LANGSMITH_ON[1], True)],
    ids=["LANGSMITH_TRACING-invoke", "LANGCHAIN_TRACING_V2-streaming"],
)
def test_a_langchain_agent_traced_to_langsmith_replays_offline(
    git_repo: Path, tracing: dict[str, str], stream: bool
) -> None:
    pytest.importorskip("langchain_openai")
    target = python_target("langchain_agent:answer")
    files = {"langchain_agent.py": LANGCHAIN_AGENT.replace("@STREAM@", str(stream))}
    trial = record_and_replay(git_repo, target, files, tracing, script=ROUND_TRIP_SCRIPT)
    assert len(trial["calls"]) == 2
    assert trial["output"]["text"] == "Order A-1 has shipped."


# A program of its own, configured from the environment alone, traced with LangSmith's own
# `@traceable`.
LANGSMITH_PROGRAM = """
import openai
from langsmith import traceable


@traceable(name="orders-agent")
def ask(question):
    reply = openai.OpenAI(max_retries=0).chat.completions.create(
        model="small-model", messages=[{"role": "user", "content": question}]
    )
    return reply.choices[0].message.content


print(ask("Where is order A-1?"))
"""


def test_a_langsmith_traced_program_replays_offline(git_repo: Path) -> None:
    """A command target gets the switches in its environment, as every program it starts does."""
    pytest.importorskip("langsmith")
    pytest.importorskip("openai")
    target = command_target([sys.executable, "traced_program.py"])
    files = {"traced_program.py": LANGSMITH_PROGRAM}
    trial = record_and_replay(git_repo, target, files, LANGSMITH_ON[0])
    assert "Order A-1 has shipped." in trial["output"]["text"]


# An agent calling its model through LiteLLM, imported at the top of the module as usual.
LITELLM_AGENT = """
import litellm


def answer(scenario, client):
    reply = litellm.completion(
        model="openai/small-model",
        api_base=client.base_url,
        api_key=client.api_key,
        messages=[{"role": "user", "content": scenario.messages[-1]["content"]}],
        num_retries=0,
    )
    return reply.choices[0].message.content
"""


def test_a_litellm_agent_replays_offline(git_repo: Path) -> None:
    """Importing LiteLLM fetches its model catalog from GitHub. In a replay that fetch was
    refused inside the import of the target's module, and no scenario could run."""
    pytest.importorskip("openai")
    if importlib.util.find_spec("litellm") is None:  # not imported here: that would fetch
        pytest.skip("litellm is not installed")
    # The recording, in this process, takes the catalog LiteLLM ships, as a test must.
    offline = {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    target = python_target("litellm_agent:answer")
    files = {"litellm_agent.py": LITELLM_AGENT}
    trial = record_and_replay(git_repo, target, files, recording_env=offline)
    assert trial["output"]["text"] == "Order A-1 has shipped."


# A Haystack pipeline of one chat generator. Haystack sends each pipeline run to PostHog from a
# thread of its own; flushing PostHog inside the scenario makes it send while the scenario runs.
HAYSTACK_AGENT = """
import posthog
from haystack import Pipeline
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.dataclasses import ChatMessage
from haystack.utils import Secret


def answer(scenario, client):
    generator = OpenAIChatGenerator(
        model="small-model", api_base_url=client.base_url, api_key=Secret.from_token(client.api_key)
    )
    pipeline = Pipeline()
    pipeline.add_component("llm", generator)
    question = ChatMessage.from_user(scenario.messages[-1]["content"])
    out = pipeline.run({"llm": {"messages": [question]}})
    posthog.flush()
    return out["llm"]["replies"][0].text
"""


def test_a_haystack_pipeline_replays_offline(git_repo: Path) -> None:
    """Haystack's telemetry is on by default."""
    pytest.importorskip("haystack")
    target = python_target("haystack_agent:answer")
    trial = record_and_replay(git_repo, target, {"haystack_agent.py": HAYSTACK_AGENT})
    assert trial["output"]["text"] == "Order A-1 has shipped."


# A CrewAI crew of one agent. CrewAI's telemetry exports from a thread of its own every few
# seconds; flushing it inside the scenario makes that export happen while the scenario runs.
CREWAI_AGENT = """
from crewai import LLM, Agent, Crew, Task
from crewai.telemetry import Telemetry


def answer(scenario, client):
    llm = LLM(model="openai/small-model", base_url=client.base_url, api_key=client.api_key)
    agent = Agent(role="orders", goal="Answer about orders.", backstory="You know orders.", llm=llm)
    task = Task(description=scenario.messages[-1]["content"], expected_output="an answer")
    task.agent = agent
    said = str(Crew(agents=[agent], tasks=[task]).kickoff())
    provider = getattr(Telemetry(), "provider", None)
    if provider is not None:
        provider.force_flush()
    return said
"""
CREWAI_SCRIPT = {
    "default": {"content": "Thought: I know it.\nFinal Answer: Order A-1 has shipped."}
}


def test_a_crewai_crew_replays_offline(git_repo: Path) -> None:
    """CrewAI's telemetry is on by default. Not in the test extras: it pins openai below 3 and
    brings about a gigabyte of vector stores, so this runs where crewai is installed."""
    if importlib.util.find_spec("crewai") is None:
        pytest.skip("crewai is not installed")
    target = python_target("crew_agent:answer")
    files = {"crew_agent.py": CREWAI_AGENT}
    trial = record_and_replay(git_repo, target, files, script=CREWAI_SCRIPT)
    assert "Order A-1 has shipped." in trial["output"]["text"]


# A DSPy program. DSPy answers a request it has seen from a response cache of its own, on disk
# and in memory, whatever base URL it is given: cachelint's cache must be the one that answers,
# so the program turns DSPy's off, as the docs say.
DSPY_AGENT = """
import dspy


def answer(scenario, client):
    lm = dspy.LM(
        "openai/small-model",
        api_base=client.base_url,
        api_key=client.api_key,
        num_retries=0,
        cache=@CACHE@,
    )
    with dspy.context(lm=lm):
        predict = dspy.Predict("question -> answer")
        return predict(question=scenario.messages[-1]["content"]).answer
"""
DSPY_SCRIPT = {
    "default": {"content": "[[ ## answer ## ]]\nOrder A-1 has shipped.\n\n[[ ## completed ## ]]"}
}


@pytest.mark.parametrize("cache", [False, True], ids=["dspy-cache-off", "dspy-cache-on"])
def test_a_dspy_program_replays_from_cachelints_cache(
    git_repo: Path, tmp_path: Path, cache: bool
) -> None:
    """DSPy calls through LiteLLM, whose switches hold for it too. With DSPy's own cache on, the
    replay is answered by it and fails, saying how to turn it off."""
    if importlib.util.find_spec("dspy") is None:  # not imported here: that would fetch
        pytest.skip("dspy is not installed")
    # Both runs share DSPy's disk cache, as two runs on a developer's machine do.
    shared = {"DSPY_CACHEDIR": str(tmp_path / "dspy-cache")}
    files = {"dspy_agent.py": DSPY_AGENT.replace("@CACHE@", str(cache))}
    write_repo(
        git_repo,
        targets=python_target("dspy_agent:answer"),
        scenarios={"support/acme/order": ORDER},
        files=files,
    )
    with pytest.MonkeyPatch.context() as recording:
        for name, value in {**shared, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}.items():
            recording.setenv(name, value)
        outcome, calls = record(git_repo, DSPY_SCRIPT)
    assert outcome.rc == 0 and calls == 1, outcome.out + outcome.err

    replay = run_cachelint(git_repo, "run", "--execution", "offline", env=shared)
    trial = result(git_repo, "support/acme/order", "offline")["trials"][0]
    if not cache:
        assert replay.returncode == 0, replay.stdout + replay.stderr
        assert trial["cache_hit"] is True and trial["output"]["text"] == "Order A-1 has shipped."
    else:
        assert replay.returncode == 1
        assert "made no model call through the cache" in trial["error"]
        assert "dspy.LM(..., cache=False)" in trial["error"]
