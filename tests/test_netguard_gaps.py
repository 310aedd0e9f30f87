"""Replay's network guard, where the third hostile pass got past it (issue 37): a reverse lookup
(`socket.getnameinfo`) in cachelint's process and in a Python child, Node's `dns` module in a
Node child, and target code assigning the guard's switch (`cachelint.netguard._armed = 0`)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import types
from pathlib import Path

import pytest

import cachelint.netguard
from cachelint.netguard import NetworkRefused, replay_only
from cachelint.runner.childguard import child_env
from tests.helpers import (
    CHILD_ANSWER,
    CHILD_SCRIPT,
    RUN_NOW,
    do_run,
    node_or_skip,
    python_target,
    record_requests,
    result,
    write_targets_repo,
)

IDENTITY = "support/acme/refund"


def test_a_reverse_lookup_is_refused_in_replay() -> None:
    with replay_only():
        with pytest.raises(NetworkRefused, match=r"refuses network access to 192\.0\.2\.1;"):
            socket.getnameinfo(("192.0.2.1", 443), 0)
        socket.getnameinfo(("127.0.0.1", 80), socket.NI_NUMERICHOST)  # loopback stays local


def guarded_env(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """A child's environment under the guards (refusals logged to the file returned)."""
    log = tmp_path / "refused.log"
    log.write_text("")
    env = {**os.environ, "CACHELINT_SCENARIO": "a/t/s", "NODE_OPTIONS": "--no-warnings"}
    env.update(child_env("a/t/s", 1, 9, str(log), env))
    return env, log


def test_a_python_childs_reverse_lookup_is_refused_and_logged(tmp_path: Path) -> None:
    env, log = guarded_env(tmp_path)
    program = "import socket\nsocket.getnameinfo(('192.0.2.1', 443), 0)\n"
    done = subprocess.run(
        [sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "sitecustomize.NetworkRefused: cachelint: scenario a/t/s: replay mode refuses network "
        "access to 192.0.2.1; the answer must come from the cache (call OPENAI_BASE_URL)"
    )
    assert log.read_text() == "192.0.2.1\n"


# Every way Node's dns module asks a resolver, each error swallowed; then a loopback lookup,
# which stays on the machine and must keep working.
NODE_DNS = """
import dns from "node:dns";
import dnsPromises from "node:dns/promises";

const said = (label) => (error) => console.log(label, error ? error.message : "answered");
const called = (label, start) => new Promise((done) => start((error) => {
  said(label)(error);
  done();
}));
await called("lookup", (cb) => dns.lookup("api.example.invalid", cb));
await called("resolve4", (cb) => dns.resolve4("api.example.invalid", cb));
await called("resolver", (cb) => new dns.Resolver().resolveTxt("api.example.invalid", cb));
await called("reverse", (cb) => dns.reverse("192.0.2.7", cb));
await called("service", (cb) => dns.lookupService("192.0.2.8", 443, cb));
await dnsPromises.lookup("api2.example.invalid").then(said("promise"), said("promise"));
await new dnsPromises.Resolver().resolve6("api3.example.invalid").then(
  said("promise-resolver"), said("promise-resolver"));
await called("loopback", (cb) => dns.lookup("localhost", cb));
"""


def test_a_node_childs_dns_lookups_are_refused_and_logged(tmp_path: Path) -> None:
    env, log = guarded_env(tmp_path)
    done = subprocess.run(
        [node_or_skip(), "--input-type=module", "-e", NODE_DNS],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    refusal = "cachelint: scenario a/t/s: replay mode refuses network access to {}; the answer"
    lines = done.stdout.splitlines()
    expected = [
        ("lookup", "api.example.invalid"),
        ("resolve4", "api.example.invalid"),
        ("resolver", "api.example.invalid"),
        ("reverse", "192.0.2.7"),
        ("service", "192.0.2.8:443"),
        ("promise", "api2.example.invalid"),
        ("promise-resolver", "api3.example.invalid"),
    ]
    for line, (label, host) in zip(lines, expected, strict=False):
        assert line.startswith(f"{label} {refusal.format(host)}"), line
    assert lines[-1] == "loopback answered"
    assert log.read_text().splitlines() == [host for _, host in expected]


def test_target_code_cannot_switch_the_guard_off() -> None:
    with replay_only():
        with pytest.raises(AttributeError, match="cannot be assigned"):
            cachelint.netguard._armed = 0  # type: ignore[attr-defined]
        with pytest.raises(AttributeError, match="cannot be assigned"):
            del cachelint.netguard._hook
        with pytest.raises(AttributeError, match="cannot be assigned"):
            cachelint.netguard.__class__ = types.ModuleType  # unsealed, it could then be
        with pytest.raises(NetworkRefused, match="api.example.invalid"):
            socket.getaddrinfo("api.example.invalid", 443)


# A python target that switches the guard off, then makes its own call to a provider.
DISARMING = """
import socket
import cachelint.netguard


def answer(scenario, client):
    try:
        cachelint.netguard._armed = 0
    except AttributeError as exc:
        print("refused:", exc)
    try:
        socket.getaddrinfo("api.example.invalid", 443)
    except Exception:
        pass
    return client.chat(scenario.messages)
"""


def test_a_target_that_switches_the_guard_off_fails_its_scenario(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CACHELINT_TEST_KEY", raising=False)
    monkeypatch.delenv("CACHELINT_EXECUTION", raising=False)
    monkeypatch.setenv("CACHELINT_NOW", RUN_NOW)
    write_targets_repo(
        git_repo,
        targets=python_target("disarming:answer"),
        scenarios={IDENTITY: CHILD_ANSWER},
        files={"disarming.py": DISARMING},
    )
    recorded, _ = record_requests(git_repo, CHILD_SCRIPT)
    assert recorded.rc == 0, recorded.out + recorded.err
    monkeypatch.delitem(sys.modules, "disarming", raising=False)
    replay = do_run(git_repo)
    assert replay.rc == 1, replay.out
    error = str(result(git_repo, IDENTITY)["trials"][0]["error"])
    assert error.startswith(f"scenario {IDENTITY}: tried to reach api.example.invalid:443"), error
