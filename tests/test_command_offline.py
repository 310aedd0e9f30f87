"""Replay keeps a command target's children offline (issue 14, replay fails closed).

A Python child is refused by the guard its interpreter imports at startup (before any packet: a
DNS name under .invalid is never looked up, 10.255.255.1 never dialled), a program honouring the
proxy variables by the cache endpoint acting as a refusing proxy. Either way the scenario fails
naming itself and the host, even when the program swallows the error. A command that calls only
the cache endpoint replays green.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cachelint.runner.childguard import NODE_GUARD, SITE_DIR, child_env
from tests.conftest import run_cachelint
from tests.fakes import fake_server
from tests.helpers import (
    CHILD_ANSWER,
    CHILD_SCRIPT,
    DEAD,
    ENDPOINT_CHILD,
    RUN_NOW,
    command_target,
    do_run,
    node_or_skip,
    result,
)
from tests.helpers import write_targets_repo as write_repo

ANSWER, SCRIPT = CHILD_ANSWER, CHILD_SCRIPT


# Reaches for a private address, swallows the error, and answers as if nothing happened.
SWALLOWER = """
import socket
try:
    socket.create_connection(("10.255.255.1", 443), timeout=3)
except OSError as exc:
    print("ignored:", exc)
print("Refunds take 30 days.")
"""

RESOLVER = """
import socket
socket.getaddrinfo("api.example.invalid", 443)
print("Refunds take 30 days.")
"""

# No site, so no guard in the interpreter: only the proxy variables stop it.
NO_SITE_PROXIED = """
import urllib.request
urllib.request.urlopen("http://api.example.invalid/v1/models", timeout=10)
print("Refunds take 30 days.")
"""

CURL = """#!/bin/sh
curl -sS --max-time 10 https://api.example.invalid/v1/models
echo "Refunds take 30 days."
"""


# Node.js's fetch and https module ignore the proxy variables: only the guard its processes load
# stops them. Each swallows the error and answers as if nothing happened.
NODE_FETCH = """
try {
  await fetch("https://api.example.invalid/v1/models", { signal: AbortSignal.timeout(5000) });
} catch (error) {
  console.log("ignored:", error.cause?.message ?? error.message);
}
console.log("Refunds take 30 days.");
"""

NODE_HTTPS = """
import https from "node:https";

await new Promise((done) => {
  https.get("https://10.255.255.1/v1/models", { timeout: 3000 }, done)
    .on("error", (error) => { console.log("ignored:", error.message); done(); })
    .on("timeout", function () { this.destroy(new Error("timed out")); });
});
console.log("Refunds take 30 days.");
"""


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CACHELINT_TEST_KEY", raising=False)
    monkeypatch.delenv("CACHELINT_EXECUTION", raising=False)
    monkeypatch.setenv("CACHELINT_NOW", RUN_NOW)


def command_repo(repo: Path, command: list[str], files: dict[str, str], jobs: int = 1) -> None:
    targets = command_target(command)
    scenarios = {"support/acme/refund": ANSWER, "support/globex/refund": ANSWER}
    write_repo(repo, targets=targets, scenarios=scenarios, files=files)


def record(repo: Path) -> Any:
    pyproject = repo / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    with fake_server(SCRIPT) as fake:
        pyproject.write_text(text.replace(DEAD, fake.url), encoding="utf-8")
        try:
            return do_run(repo, refresh=True)
        finally:
            pyproject.write_text(text, encoding="utf-8")


def error_of(repo: Path, identity: str) -> str:
    return str(result(repo, identity)["trials"][0]["error"])


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_python_child_that_swallows_a_refused_connect_fails_its_scenario(
    git_repo: Path, jobs: int
) -> None:
    command_repo(git_repo, [sys.executable, "agent.py"], {"agent.py": SWALLOWER})
    outcome = do_run(git_repo, jobs=jobs)
    assert outcome.rc == 1
    for identity in ("support/acme/refund", "support/globex/refund"):
        error = error_of(git_repo, identity)
        assert error.startswith(f"scenario {identity}: tried to reach 10.255.255.1:443 in replay")
        assert "the answer did not come from the cache" in error
    assert not (git_repo / ".eval-green.json").exists()


def test_a_python_child_is_refused_before_any_dns_lookup(git_repo: Path) -> None:
    command_repo(git_repo, [sys.executable, "agent.py"], {"agent.py": RESOLVER})
    outcome = do_run(git_repo, scenarios=["support/acme/*"])
    assert outcome.rc == 1
    error = error_of(git_repo, "support/acme/refund")
    assert error.startswith(
        "scenario support/acme/refund: tried to reach api.example.invalid:443 in replay mode"
    )


def test_the_childs_own_error_names_scenario_and_host_and_is_logged(tmp_path: Path) -> None:
    log = tmp_path / "refused.log"
    log.write_text("")
    env = {**os.environ, "CACHELINT_SCENARIO": "a/t/s"}
    env.update(child_env("a/t/s", 1, 9, str(log), env))
    done = subprocess.run(
        [sys.executable, "-c", RESOLVER], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        "sitecustomize.NetworkRefused: cachelint: scenario a/t/s: replay mode refuses network "
        "access to api.example.invalid:443; the answer must come from the cache (call "
        "OPENAI_BASE_URL)"
    )
    assert log.read_text() == "api.example.invalid:443\n"


@pytest.mark.parametrize(
    ("program", "host"),
    [(NODE_FETCH, "api.example.invalid:443"), (NODE_HTTPS, "10.255.255.1:443")],
    ids=["fetch", "https"],
)
def test_a_node_child_that_swallows_a_refused_connect_fails_its_scenario(
    git_repo: Path, program: str, host: str
) -> None:
    command_repo(git_repo, [node_or_skip(), "agent.mjs"], {"agent.mjs": program})
    outcome = do_run(git_repo, jobs=2)
    assert outcome.rc == 1, outcome.out
    for identity in ("support/acme/refund", "support/globex/refund"):
        error = error_of(git_repo, identity)
        assert error.startswith(f"scenario {identity}: tried to reach {host} in replay"), error


def test_the_node_guard_loads_from_a_path_with_spaces_quotes_and_backslashes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    odd = tmp_path / 'a "quoted" dir\\with spaces'
    odd.mkdir()
    shutil.copy(NODE_GUARD, odd / "node_guard.cjs")
    monkeypatch.setattr("cachelint.runner.childguard.NODE_GUARD", str(odd / "node_guard.cjs"))
    log = tmp_path / "refused.log"
    env = {**os.environ, "CACHELINT_SCENARIO": "a/t/s", "NODE_OPTIONS": "--no-warnings"}
    env.update(child_env("a/t/s", 1, 9, str(log), env))
    done = subprocess.run(
        [node_or_skip(), "--input-type=module", "-e", NODE_FETCH],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == (
        "ignored: cachelint: scenario a/t/s: replay mode refuses network access to "
        "api.example.invalid:443; the answer must come from the cache (call OPENAI_BASE_URL)"
    )
    assert log.read_text() == "api.example.invalid:443\n"


def test_a_python_child_without_site_is_refused_by_the_proxy(git_repo: Path) -> None:
    command_repo(git_repo, [sys.executable, "-S", "agent.py"], {"agent.py": NO_SITE_PROXIED})
    outcome = do_run(git_repo)
    assert outcome.rc == 1
    for identity in ("support/acme/refund", "support/globex/refund"):
        error = error_of(git_repo, identity)
        assert error.startswith(f"scenario {identity}: tried to reach api.example.invalid:80")


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
def test_curl_in_a_shell_child_is_refused_by_the_proxy(git_repo: Path) -> None:
    command_repo(git_repo, ["sh", "agent.sh"], {"agent.sh": CURL})
    outcome = do_run(git_repo, jobs=2)
    assert outcome.rc == 1
    for identity in ("support/acme/refund", "support/globex/refund"):
        error = error_of(git_repo, identity)
        assert error.startswith(f"scenario {identity}: tried to reach api.example.invalid:443")


def test_a_child_that_calls_only_the_cache_endpoint_replays_green(git_repo: Path) -> None:
    command_repo(git_repo, [sys.executable, "agent.py"], {"agent.py": ENDPOINT_CHILD})
    recorded = record(git_repo)
    assert recorded.rc == 0, recorded.out
    replay = do_run(git_repo, jobs=2)
    assert replay.rc == 0, replay.out
    assert result(git_repo, "support/acme/refund")["trials"][0]["output"]["text"] == (
        "Refunds take 30 days."
    )
    assert (git_repo / ".eval-green.json").is_file()


def test_the_sitecustomize_it_shadows_still_runs(git_repo: Path, tmp_path: Path) -> None:
    own = tmp_path / "own-site"
    own.mkdir()
    (own / "sitecustomize.py").write_text("import builtins\nbuiltins.OWN_SITE = 'ran'\n")
    seen = tmp_path / "seen.txt"
    probe = (
        "import builtins, sys\n"
        f"open({str(seen)!r}, 'w').write("
        f"getattr(builtins, 'OWN_SITE', 'missing') + ' ' + str({SITE_DIR!r} in sys.path))\n"
    )
    command_repo(git_repo, [sys.executable, "agent.py"], {"agent.py": probe + SWALLOWER})
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", str(own))
        outcome = do_run(git_repo, scenarios=["support/acme/*"])
    assert outcome.rc == 1
    assert "tried to reach 10.255.255.1:443" in error_of(git_repo, "support/acme/refund")
    # The project's own sitecustomize ran after the guard; the guard's directory left sys.path.
    assert seen.read_text() == "ran False"


ONE_ROGUE = """#!/bin/sh
if [ "$CACHELINT_SCENARIO" = support/acme/refund ]; then
  sleep 0.3
  curl -sS --max-time 10 https://api.example.invalid/v1/models
else
  sleep 1
fi
echo "Refunds take 30 days."
"""


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
def test_the_proxy_blames_only_the_scenario_whose_child_reached_out(git_repo: Path) -> None:
    command_repo(git_repo, ["sh", "agent.sh"], {"agent.sh": ONE_ROGUE})
    # The other scenario's program answers without a model call, and its dataset says so.
    quiet = git_repo / "eval-datasets/support/globex/refund.json"
    quiet.write_text(json.dumps({**ANSWER, "model-calls": False}), encoding="utf-8")
    outcome = do_run(git_repo, jobs=2)
    assert outcome.rc == 1
    error = error_of(git_repo, "support/acme/refund")
    assert error.startswith("scenario support/acme/refund: tried to reach api.example.invalid:443")
    # Running at the same time, the other scenario is not blamed: the proxy credentials say
    # which scenario's child asked.
    assert result(git_repo, "support/globex/refund")["passed"] is True


def test_through_the_cli_a_refused_child_fails_the_run_and_writes_no_green_record(
    git_repo: Path,
) -> None:
    command_repo(git_repo, [sys.executable, "agent.py"], {"agent.py": SWALLOWER})
    proc = run_cachelint(git_repo, "run", "--scenario", "support/acme/*")
    assert proc.returncode == 1, proc.stderr
    assert "scenario support/acme/refund: tried to reach 10.255.255.1:443 in replay" in proc.stdout
    assert not (git_repo / ".eval-green.json").exists()
