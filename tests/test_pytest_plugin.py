"""The pytest plugin, through a real inner `pytest -m eval` run in a tmp repository."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cachelint.pytest_plugin import scenario_identity
from tests.conftest import PROJECT, commit_all, run_cachelint
from tests.fakes import fake_server
from tests.helpers import DEAD, ENDPOINT_CHILD
from tests.helpers import RUN_NOW as NOW

pytest.importorskip("openai")

SCRIPT = {"default": {"content": "Refunds take 30 days."}}

EVAL_TESTS = """
import openai
import pytest


@pytest.mark.eval
@pytest.mark.parametrize("tenant", ["acme", "globex"])
def test_refund(cachelint, tenant):
    sdk = openai.OpenAI(base_url=cachelint.base_url, api_key=cachelint.api_key,
                        http_client=cachelint.http_client(), max_retries=0)
    answer = sdk.chat.completions.create(
        model="bot-model", messages=[{"role": "user", "content": f"{tenant}: refunds?"}])
    assert "30 days" in answer.choices[0].message.content


@pytest.mark.eval
def test_swallowed_miss(cachelint):
    sdk = openai.OpenAI(base_url=cachelint.base_url, api_key=cachelint.api_key, max_retries=0)
    try:
        sdk.chat.completions.create(
            model="bot-model", messages=[{"role": "user", "content": QUESTION}])
    except openai.APIStatusError:
        pass


QUESTION = "first"


def test_not_an_eval():
    assert True
"""


def inner_pytest(
    repo: Path, *args: str, netns: bool = False, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    # The plugins of two test dependencies (langsmith's, hypothesis') are left out: about 2 s of
    # every inner run's start-up, and no part of what these tests look at.
    quiet = ["-p", "no:cacheprovider", "-p", "no:langsmith_plugin", "-p", "no:hypothesispytest"]
    command = [sys.executable, "-m", "pytest", *quiet, "-q", *args]
    if netns:
        script = "ip link set lo up && " + " ".join(command)
        command = ["unshare", "-n", "sh", "-c", script]
    return subprocess.run(
        command,
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(PROJECT), "CACHELINT_NOW": NOW, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


def can_unshare() -> bool:
    if not (sys.platform == "linux" and shutil.which("unshare") and os.geteuid() == 0):
        return False
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, timeout=10)
    return probe.returncode == 0


def test_node_ids_become_portable_scenario_paths() -> None:
    assert scenario_identity("tests/test_bot.py::test_refund[acme]") == (
        "tests/test_bot.py/test_refund/acme"
    )
    assert scenario_identity("t.py::C::test[a:b?]") == "t.py/C/test/a_b_"


def test_pytest_m_eval_records_then_replays_offline(git_repo: Path) -> None:
    (git_repo / "pyproject.toml").write_text(
        "[tool.cachelint]\n"
        "ttl-days = 3650\n"
        "[tool.cachelint.target]\n"
        f'url = "{DEAD}"\nprovider = "cachelint-fake"\nmodel = "scripted-v1"\n'
        'api-key-env = "CACHELINT_TEST_KEY"\n',
        encoding="utf-8",
    )
    (git_repo / "requirements.txt").write_text("cachelint==0.1.0\nopenai\n", encoding="utf-8")
    (git_repo / ".gitattributes").write_text("eval-cache/** -text\n", encoding="utf-8")
    (git_repo / "tests").mkdir()
    (git_repo / "tests/test_bot.py").write_text(EVAL_TESTS, encoding="utf-8")
    pyproject = git_repo / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    with fake_server(SCRIPT) as fake:
        pyproject.write_text(text.replace(DEAD, fake.url), encoding="utf-8")
        recorded = inner_pytest(git_repo, "-m", "eval", "--cachelint-cache", "auto")
        pyproject.write_text(text, encoding="utf-8")
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert "3 passed, 1 deselected" in recorded.stdout
    assert [b["model"] for b in fake.bodies] == ["bot-model"] * 3
    entries = sorted(
        p.parent.parent.relative_to(git_repo).as_posix()
        for p in (git_repo / "eval-cache").rglob("entry.json")
    )
    assert entries == [
        "eval-cache/cache/tests/test_bot.py/test_refund/acme",
        "eval-cache/cache/tests/test_bot.py/test_refund/globex",
        "eval-cache/cache/tests/test_bot.py/test_swallowed_miss",
    ]

    # What the plugin wrote is an ordinary cache: `cachelint check` lints it.
    stamped = run_cachelint(git_repo, "stamp", env={"CACHELINT_NOW": NOW})
    assert stamped.returncode == 0, stamped.stdout + stamped.stderr
    commit_all(git_repo)
    checked = run_cachelint(git_repo, "check", env={"CACHELINT_NOW": NOW})
    assert checked.returncode == 0, checked.stdout + checked.stderr

    replay = inner_pytest(git_repo, "-m", "eval", netns=can_unshare())
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert "3 passed, 1 deselected" in replay.stdout

    # A miss fails the test with the miss explanation, even though the test swallowed the error.
    source = git_repo / "tests/test_bot.py"
    source.write_text(EVAL_TESTS.replace('QUESTION = "first"', 'QUESTION = "second"'))
    missed = inner_pytest(git_repo, "-m", "eval")
    assert missed.returncode == 1
    assert "FAILED tests/test_bot.py::test_swallowed_miss" in missed.stdout
    assert "cache miss in replay mode: scenario tests/test_bot.py/test_swallowed_miss" in (
        missed.stdout
    )
    assert "pytest tests/test_bot.py::test_swallowed_miss --cachelint-cache live" in missed.stdout


def test_a_replayed_entry_above_max_entry_bytes_is_not_read(git_repo: Path) -> None:
    """The plugin opens the cache as `cachelint run` does, with the configured entry-size limit."""
    config = (
        "[tool.cachelint]\nttl-days = 3650\nmax-entry-bytes = 1024\n[tool.cachelint.target]\n"
        'url = "{url}"\nprovider = "cachelint-fake"\nmodel = "scripted-v1"\n'
        'api-key-env = "CACHELINT_TEST_KEY"\n'
    )
    pyproject = git_repo / "pyproject.toml"
    (git_repo / "tests").mkdir()
    (git_repo / "tests/test_bot.py").write_text(EVAL_TESTS, encoding="utf-8")
    with fake_server(SCRIPT) as fake:
        pyproject.write_text(config.format(url=fake.url), encoding="utf-8")
        recorded = inner_pytest(git_repo, "-m", "eval", "-k", "acme", "--cachelint-cache", "auto")
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    pyproject.write_text(config.format(url=DEAD), encoding="utf-8")
    contents = next((git_repo / "eval-cache").rglob("contents.data"))
    contents.write_bytes(contents.read_bytes() + b" " * 2048)
    replay = inner_pytest(git_repo, "-m", "eval", "-k", "acme")
    assert replay.returncode == 1, replay.stdout + replay.stderr
    assert "above the limit of 1024 (max-entry-bytes); not read" in replay.stdout


def test_a_bad_mode_is_a_usage_error(git_repo: Path) -> None:
    (git_repo / "test_x.py").write_text("def test_x(cachelint):\n    pass\n")
    done = inner_pytest(git_repo, "--cachelint-cache", "replya")
    assert done.returncode == 4
    assert "cachelint: --cachelint-cache 'replya'" in done.stderr


SDK_TESTS = """
import anthropic
import openai
import pytest
from google import genai
from google.genai import types


@pytest.mark.eval
def test_responses_api(cachelint):
    sdk = openai.OpenAI(base_url=cachelint.base_url, api_key=cachelint.api_key, max_retries=0)
    assert "30 days" in sdk.responses.create(model="gpt-model", input="refunds?").output_text


@pytest.mark.eval
def test_claude(cachelint):
    sdk = anthropic.Anthropic(
        base_url=cachelint.anthropic_base_url, api_key=cachelint.api_key, max_retries=0)
    reply = sdk.messages.create(
        model="claude-model", max_tokens=50, messages=[{"role": "user", "content": "refunds?"}])
    assert "30 days" in reply.content[0].text


@pytest.mark.eval
def test_gemini(cachelint):
    options = types.HttpOptions(base_url=cachelint.gemini_base_url, api_version="v1beta")
    sdk = genai.Client(api_key=cachelint.api_key, http_options=options)
    assert "30 days" in sdk.models.generate_content(model="gemini-model", contents="refunds?").text
"""


def record_evals(repo: Path, source: str, *args: str) -> list[str]:
    """`source` as tests/test_evals.py of a repository recording through the fake provider:
    `pytest -m eval --cachelint-cache auto` run once (with `args`), and the paths the provider
    was asked."""
    (repo / "pyproject.toml").write_text(
        "[tool.cachelint]\n"
        "[tool.cachelint.target]\n"
        f'url = "{DEAD}"\nprovider = "cachelint-fake"\nmodel = "scripted-v1"\n'
        'api-key-env = "CACHELINT_TEST_KEY"\n',
        encoding="utf-8",
    )
    (repo / "tests").mkdir(exist_ok=True)
    (repo / "tests/test_evals.py").write_text(source, encoding="utf-8")
    pyproject = repo / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    with fake_server(SCRIPT) as fake:
        pyproject.write_text(text.replace(DEAD, fake.url), encoding="utf-8")
        recorded = inner_pytest(repo, "-m", "eval", "--cachelint-cache", "auto", *args)
        pyproject.write_text(text, encoding="utf-8")
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    return [r.path for r in fake.requests]


def test_pytest_m_eval_serves_the_openai_anthropic_and_gemini_sdks(git_repo: Path) -> None:
    pytest.importorskip("anthropic")
    pytest.importorskip("google.genai")
    assert sorted(record_evals(git_repo, SDK_TESTS)) == [
        "/v1/messages",
        "/v1/models/gemini-model:generateContent",
        "/v1/responses",
    ]
    replay = inner_pytest(git_repo, "-m", "eval", netns=can_unshare())
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert "3 passed" in replay.stdout


def test_tests_spread_over_xdist_workers_record_and_replay_offline(git_repo: Path) -> None:
    """`pytest -n 2`: each worker process serves its own tests through an endpoint of its own."""
    pytest.importorskip("xdist")
    assert sorted(record_evals(git_repo, EVAL_TESTS, "-n", "2")) == ["/v1/chat/completions"] * 3
    replay = inner_pytest(git_repo, "-m", "eval", "-n", "2", netns=can_unshare())
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert "3 passed" in replay.stdout
    source = git_repo / "tests/test_evals.py"
    source.write_text(EVAL_TESTS.replace('QUESTION = "first"', 'QUESTION = "second"'))
    missed = inner_pytest(git_repo, "-m", "eval", "-n", "2")
    assert missed.returncode == 1, missed.stdout + missed.stderr
    assert "cache miss in replay mode: scenario tests/test_evals.py/test_swallowed_miss" in (
        missed.stdout
    )


LANGCHAIN_TESTS = """
import pytest
from langchain_core.messages import HumanMessage
from langchain_openai import ChatOpenAI


@pytest.mark.eval
def test_refund(cachelint):
    model = ChatOpenAI(model="bot-model", base_url=cachelint.base_url, api_key=cachelint.api_key,
                       http_client=cachelint.http_client(), max_retries=0)
    assert "30 days" in model.invoke([HumanMessage("refunds?")]).content
"""


def test_a_langchain_eval_test_replays_with_langsmith_tracing_on(git_repo: Path) -> None:
    """LangSmith reads its switch when it first traces: in the eval test, where the replay has
    switched its export off (cachelint.netguard.OWN_CALLS_OFF), when no test traced before."""
    pytest.importorskip("langchain_openai")
    assert record_evals(git_repo, LANGCHAIN_TESTS) == ["/v1/chat/completions"]
    tracing = {"LANGSMITH_TRACING": "true", "LANGSMITH_API_KEY": "lsv2-in-the-ci-environment"}
    replay = inner_pytest(git_repo, "-m", "eval", env=tracing)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert "1 passed" in replay.stdout


# Haystack reads its telemetry switch when it is imported, here by the suite's conftest.py before
# any test runs, and sends each pipeline run to PostHog from a thread of its own; flushing PostHog
# in the test makes it send while the test runs.
HAYSTACK_CONFTEST = """
import haystack  # noqa: F401
"""

HAYSTACK_TESTS = """
import posthog
import pytest
from haystack import Pipeline
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.dataclasses import ChatMessage
from haystack.utils import Secret


@pytest.mark.eval
def test_refund(cachelint):
    generator = OpenAIChatGenerator(
        model="bot-model", api_base_url=cachelint.base_url,
        api_key=Secret.from_token(cachelint.api_key),
    )
    pipeline = Pipeline()
    pipeline.add_component("llm", generator)
    out = pipeline.run({"llm": {"messages": [ChatMessage.from_user("refunds?")]}})
    posthog.flush()
    assert "30 days" in out["llm"]["replies"][0].text
"""


def test_a_haystack_eval_test_replays_when_conftest_imports_haystack(git_repo: Path) -> None:
    """A replaying session switches Haystack's telemetry off before conftest.py is imported
    (netguard.READ_AT_IMPORT); switched off only in the test, it came too late."""
    pytest.importorskip("haystack")
    (git_repo / "tests").mkdir()
    (git_repo / "tests/conftest.py").write_text(HAYSTACK_CONFTEST, encoding="utf-8")
    assert record_evals(git_repo, HAYSTACK_TESTS) == ["/v1/chat/completions"]
    replay = inner_pytest(git_repo, "-m", "eval")
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert "1 passed" in replay.stdout


def test_only_a_replaying_session_sets_the_switches_read_at_import(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # This suite's own session replays, so its environment has the switch: the inner one must not.
    monkeypatch.delenv("HAYSTACK_TELEMETRY_ENABLED", raising=False)
    (git_repo / "test_env.py").write_text(
        "import os\n\n\ndef test_env():\n"
        "    print('switch:', os.environ.get('HAYSTACK_TELEMETRY_ENABLED'))\n",
        encoding="utf-8",
    )
    for mode, seen in (("replay", "False"), ("auto", "None"), ("live", "None")):
        done = inner_pytest(git_repo, "-s", "--cachelint-cache", mode)
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"switch: {seen}" in done.stdout, mode


BYPASS_TESTS = """
import openai
import pytest


@pytest.mark.eval
def test_own_client(cachelint):
    # The provider called directly, not through the fixture's base_url, and the error swallowed.
    sdk = openai.OpenAI(base_url="https://api.openai.com/v1", api_key="sk-own", max_retries=0)
    try:
        sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    except openai.APIConnectionError as exc:
        while exc is not None:  # what a log of the error would show
            print("refused:", exc)
            exc = exc.__cause__ or exc.__context__
"""


def test_a_replayed_eval_test_that_reaches_for_the_network_fails_naming_the_host(
    git_repo: Path,
) -> None:
    (git_repo / "pyproject.toml").write_text(
        f'[tool.cachelint.target]\nurl = "{DEAD}"\nprovider = "p"\nmodel = "m"\n',
        encoding="utf-8",
    )
    (git_repo / "test_bypass.py").write_text(BYPASS_TESTS, encoding="utf-8")
    replay = inner_pytest(git_repo, "-m", "eval", "-s")
    assert replay.returncode == 1, replay.stdout + replay.stderr
    assert "FAILED test_bypass.py::test_own_client" in replay.stdout
    assert (
        "scenario test_bypass.py/test_own_client: tried to reach api.openai.com:443 in replay mode;"
        " the answer did not come from the cache (make model calls through the cachelint fixture"
        in replay.stdout
    )
    # The refusal the test swallowed tells how to record in pytest's terms, not cachelint run's.
    assert "rerun pytest with --cachelint-cache auto to record" in replay.stdout
    assert "--refresh-cache" not in replay.stdout


CHILD_TESTS = """
import os, subprocess, sys

import pytest

CHILD = @CHILD@


@pytest.mark.eval
@pytest.mark.parametrize("sneak", ["", "1"])
def test_child(cachelint, sneak):
    env = dict(os.environ, OPENAI_BASE_URL=cachelint.base_url, OPENAI_API_KEY=cachelint.api_key)
    env["SNEAK"] = sneak
    done = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True)
    assert "30 days" in done.stdout, done.stderr
"""


def test_an_eval_tests_child_replays_through_the_endpoint_and_is_refused_elsewhere(
    git_repo: Path,
) -> None:
    tests = CHILD_TESTS.replace("@CHILD@", repr(ENDPOINT_CHILD))
    assert record_evals(git_repo, tests) == ["/v1/chat/completions"] * 2
    replay = inner_pytest(git_repo, "-m", "eval")
    assert replay.returncode == 1, replay.stdout + replay.stderr
    assert "1 failed, 1 passed" in replay.stdout
    assert "FAILED tests/test_evals.py::test_child[1]" in replay.stdout
    assert (
        "scenario tests/test_evals.py/test_child/1: tried to reach 127.0.0.2:443 in replay mode"
        in replay.stdout
    )
