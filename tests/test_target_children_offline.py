"""Replay keeps a python target's child processes offline too. A Python or Node.js program the
target starts inherits the guards a command target's children get (`childguard`), so a child that
reaches for the network fails the scenario, named with the host, even when it swallows the error,
while a child that calls the cache endpoint replays green. The run leaves the environment as it
found it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from cachelint.runner.childguard import SITE_DIR, guard_env
from tests.helpers import (
    CHILD_ANSWER,
    CHILD_SCRIPT,
    ENDPOINT_CHILD,
    RUN_NOW,
    do_run,
    node_or_skip,
    python_target,
    record_requests,
    result,
    sneak,
    write_targets_repo,
)

ANSWER, SCRIPT = CHILD_ANSWER, CHILD_SCRIPT

# The target starts a child with the cache endpoint's URL and key, and answers what it prints.
AGENT = """
import os, subprocess, sys

CHILD = {child!r}
HERE = os.path.dirname(os.path.abspath(__file__))


def answer(scenario, client):
    program, script = CHILD
    command = [sys.executable if program == "python" else program, os.path.join(HERE, script)]
    env = dict(os.environ, OPENAI_BASE_URL=client.base_url, OPENAI_API_KEY=client.api_key)
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]
"""

NODE_CHILD = """
if (process.env.SNEAK) {
  try {
    await fetch("http://127.0.0.2:443/v1/models", { signal: AbortSignal.timeout(3000) });
  } catch (error) {
    console.log("ignored:", error.cause?.message ?? error.message);
  }
}
const reply = await fetch(process.env.OPENAI_BASE_URL + "/chat/completions", {
  method: "POST",
  headers: {
    Authorization: "Bearer " + process.env.OPENAI_API_KEY,
    "Content-Type": "application/json",
  },
  body: JSON.stringify({ model: "child-model", messages: [{ role: "user", content: "refunds?" }] }),
});
console.log((await reply.json()).choices[0].message.content);
"""

GUARD_VARIABLES = ("PYTHONPATH", "NODE_OPTIONS", "CACHELINT_ALLOW_PORT", "CACHELINT_REFUSED_LOG")
IDENTITIES = ("support/acme/refund", "support/globex/refund")


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CACHELINT_TEST_KEY", raising=False)
    monkeypatch.delenv("CACHELINT_EXECUTION", raising=False)
    monkeypatch.delenv("SNEAK", raising=False)
    monkeypatch.delenv("SNEAK_AT_IMPORT", raising=False)
    monkeypatch.setenv("CACHELINT_NOW", RUN_NOW)


def recorded(repo: Path, child: list[str], files: dict[str, str]) -> None:
    """A repository whose python target runs `child`, recorded through the fake provider."""
    write_targets_repo(
        repo,
        targets=python_target("agent:answer"),
        scenarios=dict.fromkeys(IDENTITIES, ANSWER),
        files={"agent.py": AGENT.format(child=child), **files},
    )
    outcome, requests = record_requests(repo, SCRIPT)
    assert outcome.rc == 0, outcome.out + outcome.err
    assert len(requests) == 2


@pytest.mark.parametrize(("language", "jobs"), [("python", 1), ("python", 2), ("node", 1)])
def test_a_python_targets_child_replays_through_the_endpoint_and_is_refused_elsewhere(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch, language: str, jobs: int
) -> None:
    if language == "python":
        recorded(git_repo, ["python", "child.py"], {"child.py": ENDPOINT_CHILD})
    else:
        recorded(git_repo, [node_or_skip(), "child.mjs"], {"child.mjs": NODE_CHILD})
    before = {name: os.environ.get(name) for name in GUARD_VARIABLES}

    replay = do_run(git_repo, jobs=jobs)
    assert replay.rc == 0, replay.out + replay.err

    monkeypatch.setenv("SNEAK", "1")  # the children now reach for 127.0.0.2:443 first
    sneaky = do_run(git_repo, jobs=jobs)
    assert sneaky.rc == 1, sneaky.out
    for identity in IDENTITIES:
        error = str(result(git_repo, identity)["trials"][0]["error"])
        assert error.startswith(f"scenario {identity}: tried to reach 127.0.0.2:443 in replay"), (
            error
        )
    assert {name: os.environ.get(name) for name in GUARD_VARIABLES} == before


# Started as the target's module is imported, as a module-level MCP client starts its server.
IMPORT_TIME_CHILD = """
subprocess.run([sys.executable, os.path.join(HERE, "sneak.py")], timeout=60, check=True)
"""


def test_a_child_the_targets_module_starts_as_it_is_imported_is_kept_offline(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_targets_repo(
        git_repo,
        targets=python_target("agent:answer"),
        scenarios=dict.fromkeys(IDENTITIES, ANSWER),
        files={
            "agent.py": AGENT.format(child=["python", "child.py"]) + IMPORT_TIME_CHILD,
            "child.py": ENDPOINT_CHILD,
            "sneak.py": sneak("SNEAK_AT_IMPORT"),
        },
    )
    outcome, _ = record_requests(git_repo, SCRIPT)
    assert outcome.rc == 0, outcome.out + outcome.err
    before = {name: os.environ.get(name) for name in GUARD_VARIABLES}
    monkeypatch.delitem(sys.modules, "agent")  # imported again by the replay
    replay = do_run(git_repo)
    assert replay.rc == 0, replay.out + replay.err

    monkeypatch.setenv("SNEAK_AT_IMPORT", "1")
    monkeypatch.delitem(sys.modules, "agent")
    sneaky = do_run(git_repo)
    assert sneaky.rc == 1, sneaky.out
    # Reported as the first scenario ends: no scenario runs while the module is imported.
    error = str(result(git_repo, IDENTITIES[0])["trials"][0]["error"])
    assert "tried to reach 127.0.0.2:443 in replay" in error, error
    assert {name: os.environ.get(name) for name in GUARD_VARIABLES} == before


def test_a_recording_leaves_a_python_targets_children_alone(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SNEAK", "1")  # refused in a replay; in a recording, merely unanswered
    recorded(git_repo, ["python", "child.py"], {"child.py": ENDPOINT_CHILD})


def test_the_guards_are_loaded_once_when_a_guarded_child_starts_a_command(tmp_path: Path) -> None:
    """A python target's child environment already holds the guards; a command target started
    from it (or a child's own child) does not load them a second time."""
    log = str(tmp_path / "refused.log")
    first = guard_env(9, log, {"PYTHONPATH": "src", "NODE_OPTIONS": "--no-warnings"})
    assert first["PYTHONPATH"] == os.pathsep.join([SITE_DIR, "src"])
    assert first["NODE_OPTIONS"].startswith("--require ")
    assert first["NODE_OPTIONS"].endswith(" --no-warnings")
    again = guard_env(9, log, first)
    assert again == first
