"""`allow-hosts` (issue 43, item 7): a replay lets a target reach the agent's own services on
loopback or private addresses, at the ports listed only, through `cachelint run` (in process, in
a python target's Python child and in a command target's Node.js program) and the pytest plugin;
anything else stays refused. An IPv6 address is one service however the list or the program
writes it, in cachelint's process and in its Python and Node.js children alike."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from cachelint import netguard
from cachelint.runner.childguard import child_env
from tests.conftest import PROJECT, run_cachelint
from tests.fakes import fake_server
from tests.helpers import (
    DEAD,
    RUN_NOW,
    command_target,
    do_run,
    node_or_skip,
    python_target,
    record,
    result,
    write_targets_repo,
)

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
def service(host: str = "127.0.0.1") -> Iterator[tuple[int, list[int]]]:
    """A TCP server on `host` answering PONG to each connection: (its port, the count)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    server = socket.create_server((host, 0), family=family)
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


# ---- Node.js children, and IPv6 written every way ----------------------------------------------

# A command target's Node.js program: asks the agent's service at the port its scenario names
# (swallowing a refusal, as a program with a fallback would), then the model.
NODE_AGENT = """
import net from "node:net";

const PORTS = %s;
const port = PORTS[process.env.CACHELINT_SCENARIO.split("/").pop()];
const pong = await new Promise((done) => {
  const socket = net.connect({ host: "127.0.0.1", port }, () => {});
  socket.on("data", (data) => { done(data.toString().trim()); socket.destroy(); });
  socket.on("error", (error) => done("ignored: " + error.message));
});
const reply = await fetch(process.env.OPENAI_BASE_URL + "/chat/completions", {
  method: "POST",
  headers: {
    Authorization: "Bearer " + process.env.OPENAI_API_KEY,
    "Content-Type": "application/json",
  },
  body: JSON.stringify({ model: "agent-model", messages: [{ role: "user", content: "refunds?" }] }),
});
console.log(pong + " " + (await reply.json()).choices[0].message.content);
"""


def test_a_command_targets_node_program_reaches_a_listed_service_only(git_repo: Path) -> None:
    node = node_or_skip()
    with service() as (port, served), service() as (other, other_served):
        write_targets_repo(
            git_repo,
            targets=command_target([node, "agent.mjs"]),
            scenarios={
                "support/acme/listed": scenario("the listed service"),
                "support/acme/unlisted": scenario("the other service"),
            },
            files={"agent.mjs": NODE_AGENT % f'{{"listed": {port}, "unlisted": {other}}}'},
        )
        recorded, calls = record(git_repo, SCRIPT)
        assert recorded.rc == 0 and calls == 2, recorded.out + recorded.err

        refused = do_run(git_repo, execution="without")
        assert refused.rc == 1, refused.out + refused.err
        for name, at in (("listed", port), ("unlisted", other)):
            error = str(result(git_repo, f"support/acme/{name}", "without")["trials"][0]["error"])
            assert f"tried to reach 127.0.0.1:{at} in replay" in error, error

        set_allow(git_repo, f'allow-hosts = ["127.0.0.1:{port}"]\n')
        before, before_other = len(served), len(other_served)
        allowed = do_run(git_repo, execution="with")
        assert allowed.rc == 1, allowed.out + allowed.err
        assert "PASS  support/acme/listed" in allowed.out, allowed.out
        assert "FAIL  support/acme/unlisted" in allowed.out, allowed.out
        error = str(result(git_repo, "support/acme/unlisted", "with")["trials"][0]["error"])
        assert error.startswith(
            f"scenario support/acme/unlisted: tried to reach 127.0.0.1:{other} in replay"
        ), error
        assert len(served) == before + 1 and len(other_served) == before_other


PYTHON_ASK = """
import socket, sys
try:
    with socket.create_connection((sys.argv[1], int(sys.argv[2])), 5) as conn:
        print(conn.recv(16).decode().strip())
except Exception as exc:
    print("refused:", exc)
"""

NODE_ASK = """
const [host, port] = process.argv.slice(-2);
const socket = require("net").connect({ host, port: Number(port) });
socket.on("data", (data) => { console.log(data.toString().trim()); socket.destroy(); });
socket.on("error", (error) => console.log("refused: " + error.message));
"""

# (the list's item, the address the program connects to, let through); P: the service's port.
IPV6 = [
    ("[::1]:P", "::1", True),
    ("[::1]:P", "0:0:0:0:0:0:0:1", True),
    ("::1:P", "::1", True),
    ("::1:P", "0000::0001", True),
    ("[0:0:0:0:0:0:0:1]:P", "::1", True),
    ("[0:0::1]:P", "0:0:0:0:0:0:0:1", True),
    ("localhost:P", "::1", True),
    ("[::1]:9", "::1", False),  # another port
    ("127.0.0.1:P", "::1", False),  # another address
]


def _in_process(item: str, host: str, port: int) -> str:
    """What cachelint's own process (netguard, the python target's and the plugin's guard) does
    with a connection under `allow-hosts = [item]`, parsed as the config parses it."""
    with netguard.allowing([netguard.parse_allow_host(item)]), netguard.replay_only():
        try:
            with socket.create_connection((host, port), 5) as conn:
                return conn.recv(16).decode().strip()
        except netguard.NetworkRefused as exc:
            return f"refused: {exc}"


@pytest.mark.parametrize(("item", "host", "allowed"), IPV6)
def test_ipv6_is_one_service_however_written_in_process_python_and_node(
    tmp_path: Path, item: str, host: str, allowed: bool
) -> None:
    node = node_or_skip()
    with service("::1") as (port, served):
        item = item.replace("P", str(port))
        env = {**os.environ, "CACHELINT_SCENARIO": "a/t/s"}
        env.update(child_env("a/t/s", 1, 9, str(tmp_path / "refused.log"), env))
        env[netguard.ALLOW_HOSTS_ENV] = item  # as written, not as cachelint rewrites it
        said = {"cachelint": _in_process(item, host, port)}
        for name, command in (
            ("python", [sys.executable, "-c", PYTHON_ASK, host, str(port)]),
            ("node", [node, "-e", NODE_ASK, host, str(port)]),
        ):
            done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, (name, done.stderr)
            said[name] = done.stdout.strip()
    if allowed:
        assert said == dict.fromkeys(said, "PONG"), said
        assert len(served) == 3
    else:
        for name, text in said.items():
            assert f"replay mode refuses network access to {host}:{port}" in text, (name, text)
        assert not served
