"""A replay switches off the trace exports agent frameworks run from threads of their own.

Such an export could only be refused in a replay (`cachelint.netguard`), and the refusal would
fail every running scenario, although each answer came from the cache. These tests turn tracing
on as a team's CI does and replay in a process of their own: a framework reads its switch once,
when it first traces.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import run_cachelint
from tests.helpers import command_target, python_target, record, result
from tests.helpers import write_targets_repo as write_repo

pytestmark = pytest.mark.usefixtures("recording_env")

ORDER = {"input": "Where is order A-1?", "assert": [{"type": "contains", "value": "A-1"}]}
SCRIPT = {"rules": [], "default": {"content": "Order A-1 has shipped."}}

# A LangChain-style agent traced with LangSmith's `@traceable`, as LangChain traces its runs.
# With LANGSMITH_TRACING=true and a key, LangSmith posts each run to its API from a background
# thread as soon as the run ends, while the scenario is still running.
LANGSMITH_AGENT = """
import openai
from langsmith import traceable


@traceable(name="orders-agent")
def ask(sdk, question):
    reply = sdk.chat.completions.create(
        model="small-model", messages=[{"role": "user", "content": question}]
    )
    return reply.choices[0].message.content


def answer(scenario, client):
    sdk = openai.OpenAI(
        base_url=client.base_url,
        api_key=client.api_key,
        http_client=client.http_client(),
        max_retries=0,
    )
    return ask(sdk, scenario.messages[-1]["content"])
"""

# How teams turn LangSmith on in CI: the current variable, or LangChain's older one.
LANGSMITH_ON = [
    {"LANGSMITH_TRACING": "true", "LANGSMITH_API_KEY": "lsv2-in-the-ci-environment"},
    {"LANGCHAIN_TRACING_V2": "true", "LANGCHAIN_API_KEY": "lsv2-in-the-ci-environment"},
]


@pytest.mark.parametrize("tracing", LANGSMITH_ON, ids=["LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2"])
def test_a_langsmith_traced_agent_replays_offline(git_repo: Path, tracing: dict[str, str]) -> None:
    pytest.importorskip("langsmith")
    pytest.importorskip("openai")
    write_repo(
        git_repo,
        targets=python_target("traced_agent:answer"),
        scenarios={"support/acme/order": ORDER},
        files={"traced_agent.py": LANGSMITH_AGENT},
    )
    outcome, calls = record(git_repo, SCRIPT)
    assert outcome.rc == 0 and calls == 1, outcome.out + outcome.err

    replay = run_cachelint(git_repo, "run", "--execution", "traced", env=tracing)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    trial = result(git_repo, "support/acme/order", "traced")["trials"][0]
    assert trial["cache_hit"] is True and trial["output"]["text"] == "Order A-1 has shipped."


# The same agent as a program of its own, configured from the environment alone.
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
    write_repo(
        git_repo,
        targets=command_target([sys.executable, "traced_program.py"]),
        scenarios={"support/acme/order": ORDER},
        files={"traced_program.py": LANGSMITH_PROGRAM},
    )
    outcome, calls = record(git_repo, SCRIPT)
    assert outcome.rc == 0 and calls == 1, outcome.out + outcome.err

    replay = run_cachelint(git_repo, "run", "--execution", "traced", env=LANGSMITH_ON[0])
    assert replay.returncode == 0, replay.stdout + replay.stderr
    trial = result(git_repo, "support/acme/order", "traced")["trials"][0]
    assert trial["cache_hit"] is True and "Order A-1 has shipped." in trial["output"]["text"]
