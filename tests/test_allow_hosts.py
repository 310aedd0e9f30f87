"""`allow-hosts` (issue 43, item 7): a replay lets a target reach the agent's own services on
loopback or private addresses, at the ports listed only, through `cachelint run` (in process and
in a python target's Python child) and the pytest plugin; anything else stays refused."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.conftest import PROJECT, run_cachelint
from tests.fakes import fake_server
from tests.helpers import DEAD, RUN_NOW, do_run, python_target, record, write_targets_repo

SCRIPT = {"rules": [], "default": {"content": "Refunds take 30 days."}}

# The agent asks its own service (a TCP server on 127.0.0.1 at the port its prompt names) before
# the model; with `child`, it asks from a Python child process, as a worker pool would.
AGENT = """
import socket
import subprocess
import sys

ASK = (
    "import socket, sys; s = socket.create_connection(('127.0.0.1', int(sys.argv[1])), 5); "
    "print(s.recv(16).decode().strip())"
)


def answer(scenario, client):
    text = scenario.messages[-1]["content"]
    port = int(text.split()[-1])
    if "child" in text:
        command = [sys.executable, "-c", ASK, str(port)]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode:
            raise ConnectionError(done.stderr.strip().splitlines()[-1])
        pong = done.stdout.strip()
    else:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
            pong = conn.recv(16).decode().strip()
    reply = client.chat([{"role": "user", "content": "How do refunds work?"}])
    return pong + " " + reply["choices"][0]["message"]["content"]
"""


@contextmanager
def service() -> Iterator[tuple[int, list[int]]]:
    """A TCP server on 127.0.0.1 answering PONG to each connection: (its port, the count)."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    served: list[int] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.sendall(b"PONG\n")
                served.append(1)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], served
    finally:
        stop.set()
        thread.join(5)
        server.close()


def scenario(text: str) -> dict[str, object]:
    return {"input": text, "assert": [{"type": "contains", "value": "PONG Refunds"}]}


def repo_with(repo: Path, listed: int, other: int) -> None:
    write_targets_repo(
        repo,
        targets=python_target("svc_agent:answer"),
        scenarios={
            "support/acme/listed": scenario(f"service at port {listed}"),
            "support/acme/child": scenario(f"child asks the service at port {listed}"),
            "support/acme/unlisted": scenario(f"service at port {other}"),
        },
        files={"svc_agent.py": AGENT},
    )


def set_allow(repo: Path, line: str) -> None:
    pyproject = repo / "pyproject.toml"
    text = pyproject.read_text("utf-8")
    pyproject.write_text(text.replace('cache = "eval-cache"\n', f'cache = "eval-cache"\n{line}'))


def test_replay_lets_a_listed_local_service_through_and_nothing_else(git_repo: Path) -> None:
    with service() as (port, served), service() as (other, other_served):
        repo_with(git_repo, port, other)
        recorded, calls = record(git_repo, SCRIPT)
        assert recorded.rc == 0 and calls == 3, recorded.out + recorded.err

        refused = do_run(git_repo, execution="without")
        assert refused.rc == 1, refused.out + refused.err
        assert f"replay mode refuses network access to 127.0.0.1:{port}" in refused.out
        assert "3 failed" in refused.out, refused.out

        set_allow(git_repo, f'allow-hosts = ["127.0.0.1:{port}"]\n')
        before, before_other = len(served), len(other_served)
        allowed = do_run(git_repo, execution="with")
        out = allowed.out
        assert allowed.rc == 1, out + allowed.err
        assert "PASS  support/acme/listed" in out and "PASS  support/acme/child" in out, out
        assert "FAIL  support/acme/unlisted" in out, out
        assert f"network access to 127.0.0.1:{other}" in out, out
        assert len(served) == before + 2 and len(other_served) == before_other


def test_a_public_or_named_host_is_refused_at_config_load(git_repo: Path) -> None:
    for value in ("93.184.215.14:443", "redis.internal:6379", "127.0.0.1", "10.0.0.5:70000"):
        repo_with(git_repo, 1, 2)
        set_allow(git_repo, f'allow-hosts = ["{value}"]\n')
        done = run_cachelint(git_repo, "run")
        assert done.returncode == 2, (value, done.stdout + done.stderr)
        assert done.stderr.count("\n") == 1 and "'allow-hosts'" in done.stderr, done.stderr
        assert "a loopback or private IP address, or localhost, with a port" in done.stderr


PLUGIN_TEST = """
import socket

import pytest


@pytest.mark.eval
def test_agent(cachelint):
    with socket.create_connection(("127.0.0.1", PORT), timeout=5) as conn:
        assert conn.recv(16).startswith(b"PONG")
    reply = cachelint.chat([{"role": "user", "content": "How do refunds work?"}])
    assert "30 days" in reply["choices"][0]["message"]["content"]
"""


def inner_pytest(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    quiet = ["-p", "no:cacheprovider", "-p", "no:langsmith_plugin", "-p", "no:hypothesispytest"]
    return subprocess.run(
        [sys.executable, "-m", "pytest", *quiet, "-q", "-m", "eval", *args],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(PROJECT), "CACHELINT_NOW": RUN_NOW},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_pytest_plugin_lets_a_listed_service_through(git_repo: Path) -> None:
    pyproject = git_repo / "pyproject.toml"
    pyproject.write_text(
        '[tool.cachelint]\ncache = "eval-cache"\n[tool.cachelint.target]\n'
        f'url = "{DEAD}"\nprovider = "cachelint-fake"\nmodel = "scripted-v1"\n'
        'api-key-env = "CACHELINT_TEST_KEY"\n',
        encoding="utf-8",
    )
    (git_repo / "tests").mkdir()
    with service() as (port, served):
        (git_repo / "tests/test_bot.py").write_text(PLUGIN_TEST.replace("PORT", str(port)))
        text = pyproject.read_text("utf-8")
        with fake_server(SCRIPT) as fake:
            pyproject.write_text(text.replace(DEAD, fake.url), encoding="utf-8")
            recorded = inner_pytest(git_repo, "--cachelint-cache", "auto")
            pyproject.write_text(text, encoding="utf-8")
        assert recorded.returncode == 0, recorded.stdout + recorded.stderr

        refused = inner_pytest(git_repo)
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert f"refuses network access to 127.0.0.1:{port}" in refused.stdout

        set_allow(git_repo, f'allow-hosts = ["localhost:{port}"]\n')
        before = len(served)
        allowed = inner_pytest(git_repo)
        assert allowed.returncode == 0, allowed.stdout + allowed.stderr
        assert len(served) == before + 1
