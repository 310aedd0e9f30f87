"""Replay fails closed for a command target's children too, as far as the platform allows.

`cachelint.netguard` guards the cachelint process; a `command` target runs another program per
scenario, which it cannot reach. Without root and without compiled code, three layers do:

- Every Python interpreter the program starts imports `cachelint/offline_site/sitecustomize.py`
  (first on PYTHONPATH): the same audit hook as netguard, loopback to the cache endpoint only. The
  hosts it refused are appended to a per-trial log, read back here when the program exits.
- Every Node.js process loads `cachelint/offline_site/node_guard.cjs` first (`--require` in
  NODE_OPTIONS), which refuses the same connections in `net.Socket`'s connect: Node's fetch and
  its http modules ignore the proxy variables. It appends the hosts to the same log.
- Every program that honours the proxy variables (curl, wget, the Python and .NET HTTP stacks
  that read them) is sent to the cache endpoint acting as a proxy that refuses everything:
  `CONNECT host:port` or `GET http://host/...` gets a 403 naming the host, and the attempt is
  recorded. The proxy URL's user name is the scenario, so concurrent scenarios are told apart,
  and its password the run's key: a proxy request without it (another local process's) gets a
  407 and blames no scenario. NO_PROXY keeps the endpoint's own address direct.

A python target's children get all three (`offline_target_children`), through the environment
of the process the target runs in; their proxy credentials name no scenario, so a refusal blames
the scenarios running then (the one, with `--jobs 1`).

Each refusal is reported to netguard (`report_refused`) and fails the scenario with its name and
the host. A program that ignores the proxy variables and is neither Python nor Node.js can still
connect: `unshare -n` (a network namespace with loopback only) is the complete answer where it
is allowed.
"""

from __future__ import annotations

import base64
import hmac
import os
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from cachelint import netguard
from cachelint.httpreply import Response

SITE_DIR = str(Path(__file__).resolve().parent.parent / "offline_site")
NODE_GUARD = str(Path(SITE_DIR) / "node_guard.cjs")
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
_MAX_LOG_BYTES = 64 * 1024
# The proxy user of a python target's children: no scenario's name (identities hold a slash), so
# a refusal blames every scenario running then.
_ANY_SCENARIO = "python-target"


def child_env(
    scenario: str, trial: int, port: int, log: str, inherited: Mapping[str, str], token: str = ""
) -> dict[str, str]:
    """The variables that keep a replayed command's children offline (added to its env); the
    proxy's credentials are the scenario and the run's key `token` (the trial when none)."""
    return {**guard_env(port, log, inherited), **_proxy_env(scenario, token or str(trial), port)}


def _proxy_env(scenario: str, secret: str, port: int) -> dict[str, str]:
    """The proxy variables that send every program honouring them to the refusing proxy, with
    `scenario` and `secret` as its credentials; loopback and `allow-hosts` stay direct."""
    from cachelint.runner.endpoint import LOOPBACK  # imports this module: not at the top

    proxy = f"http://{quote(scenario, safe='')}:{quote(secret, safe='')}@{LOOPBACK}:{port}"
    env: dict[str, str] = {}
    # `allow-hosts` are reached directly, not through the refusing proxy: NO_PROXY names hosts
    # (the guards still check the port; docs/security.md says what a program with neither does).
    direct = dict.fromkeys([LOOPBACK, *(h for h, _ in netguard.allowed_hosts())])
    env.update(NO_PROXY=",".join(direct), no_proxy=",".join(direct))
    for name in PROXY_VARIABLES:
        env[name] = env[name.lower()] = proxy
    return env


def guard_env(port: int, log: str, inherited: Mapping[str, str]) -> dict[str, str]:
    """The variables that load the Python and Node.js guards in every process started with them
    (and in theirs): loopback to `port` only, refusals appended to `log`. Added once: a guard
    already in `inherited` (a python target's child running a command) is not loaded twice."""
    path = inherited.get("PYTHONPATH", "")
    node_options = inherited.get("NODE_OPTIONS", "")
    require = f"--require {_node_quoted(NODE_GUARD)}"
    return {
        "PYTHONPATH": path if path.split(os.pathsep)[0] == SITE_DIR else _joined(SITE_DIR, path),
        "NODE_OPTIONS": node_options
        if require in node_options
        else f"{require} {node_options}".rstrip(),
        "CACHELINT_ALLOW_PORT": str(port),
        "CACHELINT_REFUSED_LOG": log,
    }


def _joined(first: str, path: str) -> str:
    return first + (os.pathsep + path if path else "")


def _node_quoted(path: str) -> str:
    """`path` as one value in NODE_OPTIONS, which Node splits at spaces outside double quotes
    and reads a backslash inside them as an escape (a Windows path is full of them)."""
    return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'


@contextmanager
def offline_children(client: Any, inherited: Mapping[str, str]) -> Iterator[dict[str, str]]:
    """While inside, the command runs with `child_env`; on the way out, what its Python children
    refused is reported to netguard against the scenario."""
    with _refused_log() as log:
        try:
            endpoint = client.endpoint
            yield child_env(
                client.scenario, client.trial, endpoint.port, log, inherited, endpoint.token
            )
        finally:
            with open(log, "rb") as fh:
                refused = _hosts(fh.read(_MAX_LOG_BYTES))
    for host in refused:
        netguard.report_refused(client.scenario, host)


@contextmanager
def offline_target_children(port: int, token: str = "") -> Iterator[Callable[[], None]]:
    """While inside, every process a python target starts is kept off the network as a
    command's children are: the Python and Node.js guards through this process's environment,
    which they inherit, and, given the run's key `token`, the refusing proxy through the C-level
    environment only (`os.putenv`), which a child started with the inherited environment gets
    (`subprocess` without `env=`, `os.system`) but this process's own HTTP clients, which read
    `os.environ`, do not: netguard refuses those with its own advice. Yields `drain`, called as
    each scenario ends: the hosts the children refused since are reported to netguard against
    the scenarios running then (the one that ends, with `--jobs 1`)."""
    read = 0
    lock = threading.Lock()
    with _refused_log() as log:

        def drain() -> None:
            nonlocal read
            with lock, open(log, "rb") as fh:
                fh.seek(read)
                data = fh.read(_MAX_LOG_BYTES)
                whole = data[: data.rfind(b"\n") + 1]  # a line still being written waits
                read += len(whole)
            for host in _hosts(whole):
                netguard.report_refused(None, host)

        put_back = netguard.put_in_environ(guard_env(port, log, os.environ))
        proxied = _proxy_env(_ANY_SCENARIO, token, port) if token else {}
        for name, value in proxied.items():
            os.putenv(name, value)
        try:
            yield drain
        finally:
            for name in proxied:
                _put_back_outside(name)
            put_back()


def _put_back_outside(name: str) -> None:
    """The C-level environment's `name` as `os.environ` holds it (unset when it holds none)."""
    if name in os.environ:
        os.putenv(name, os.environ[name])
    else:
        os.unsetenv(name)


@contextmanager
def _refused_log() -> Iterator[str]:
    """A temporary file the guards append refused hosts to, a line each."""
    fd, log = tempfile.mkstemp(prefix="cachelint-refused-", suffix=".log")
    os.close(fd)
    try:
        yield log
    finally:
        os.unlink(log)


def _hosts(logged: bytes) -> list[str]:
    """The distinct hosts in lines of a refused log."""
    return list(
        dict.fromkeys(line for line in logged.decode("utf-8", "replace").splitlines() if line)
    )


def is_proxy_request(method: str, path: str) -> bool:
    """A request meant for a proxy: a tunnel, or an absolute URI instead of a path."""
    return method == "CONNECT" or not path.startswith("/")


def refuse_proxied(method: str, path: str, headers: Any, token: str) -> Response:
    """The cache endpoint's answer to a proxy request: 403 naming the host, recorded against the
    scenario in the proxy credentials (every running scenario when it names none running). A
    request whose credentials do not hold the run's key `token` is no child of the run: a 407
    that blames no scenario (a client that sends credentials only when challenged, as .NET's
    does, then sends them)."""
    scenario = _credentials(headers.get_all("Proxy-Authorization") or [], token)
    if scenario is None:
        body = b"cachelint replay: proxy credentials required\n"
        return 407, {**_CLOSE, "Proxy-Authenticate": 'Basic realm="cachelint"'}, body
    host = _host(method, path)
    netguard.report_refused(scenario or None, host)
    body_text = (
        f"cachelint replay refuses network access to {host}: the answer must come from the "
        "cache, call the cache endpoint (OPENAI_BASE_URL) instead\n"
    )
    return 403, dict(_CLOSE), body_text.encode()


_CLOSE = {"Content-Type": "text/plain; charset=utf-8", "Connection": "close"}


def _host(method: str, path: str) -> str:
    if method == "CONNECT":
        return path
    try:
        parts = urlsplit(path)
        port = parts.port or {"http": 80, "https": 443, "ftp": 21}.get(parts.scheme)
        name = parts.hostname or path
    except ValueError:
        return path
    return f"{name}:{port}" if port else name


def _credentials(given: list[str], token: str) -> str | None:
    """The scenario named by Basic proxy credentials whose password is `token` ("" when they
    name none), or None when there are no such credentials."""
    if len(given) != 1 or not token:
        return None
    scheme, _, value = given[0].partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        user, _, password = base64.b64decode(value.strip(), validate=True).decode().partition(":")
    except ValueError:
        return None
    # Clients percent-decode a proxy URL's user name and password before sending them, most but
    # not all: one that did not is decoded here. A name that matches no running scenario blames
    # them all.
    if not hmac.compare_digest(unquote(password).encode(), token.encode()):
        return None
    return unquote(user)
