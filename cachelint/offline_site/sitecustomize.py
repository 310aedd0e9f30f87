"""Replay fails closed in Python children: the guard `cachelint.netguard` puts on cachelint itself.

In replay, a `command` target's program runs with this directory first on PYTHONPATH, so every
Python interpreter it starts (and their children, which inherit the environment) imports this
module at startup (`site`). It installs an audit hook (PEP 578, which the program cannot remove)
refusing every connect and DNS lookup except loopback to cachelint's cache endpoint
(`CACHELINT_ALLOW_PORT`) and the agent's own services `allow-hosts` lists
(`CACHELINT_ALLOW_HOSTS`: `host:port` items, commas between): the error names the scenario
(`CACHELINT_SCENARIO`) and the host, and the host is appended to `CACHELINT_REFUSED_LOG`, so
the scenario fails even when the program swallows the error. Then the `sitecustomize` this one
shadows, if any, is imported as usual.

Stdlib only and Python 3.8+: the child may be another interpreter without cachelint installed.
An interpreter started with -S, -E or -I skips this file; the refusing proxy still applies.
"""

from __future__ import annotations

import importlib
import ipaddress
import os
import sys
from typing import Any

_EVENTS = frozenset(
    {
        "socket.connect",
        "socket.getaddrinfo",
        "socket.gethostbyname",
        "socket.gethostbyaddr",
        "socket.getnameinfo",  # a reverse lookup leaves the process as a forward one does
        "socket.sendto",
        "socket.sendmsg",
    }
)
_LOOPBACK_NAMES = frozenset({"localhost", "localhost.", "ip6-localhost"})
_MAX_LOGGED = 20  # per process: enough to name the hosts, bounded for a program that loops


class NetworkRefused(ConnectionRefusedError):
    """Raised in the child: a network error, so the program fails as it would offline."""


def _is_loopback(host: Any) -> bool:
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def _target(event: str, args: tuple[Any, ...]) -> tuple[str, Any, Any] | None:
    """(host shown, host, port) of a network event, or None when it names no remote host."""
    if event == "socket.getaddrinfo":
        host, port = args[0], args[1] if len(args) > 1 else None
        if host is None:
            return None  # a passive lookup for binding
        shown = host.decode("ascii", "replace") if isinstance(host, bytes) else str(host)
        return (f"{shown}:{port}" if port is not None else shown), host, port
    if event in ("socket.gethostbyname", "socket.gethostbyaddr"):
        host = args[0] if args else None
        return str(host), host, None
    if event == "socket.getnameinfo":  # (sockaddr,): the address is what is looked up
        address = args[0] if args else None
        host = address[0] if isinstance(address, tuple) and address else address
        return str(host), host, None
    address = args[1] if len(args) > 1 else None
    if address is None or isinstance(address, (str, bytes)):
        return None  # an AF_UNIX path: local IPC, not a network
    if isinstance(address, tuple) and address:
        port = address[1] if len(address) > 1 else None
        return f"{address[0]}:{port}", address[0], port
    return repr(address), address, None


def _canonical(host: Any) -> str:
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    text = str(host).lower()
    try:
        return ipaddress.ip_address(text.split("%", 1)[0]).compressed
    except ValueError:
        return text


def _allow_hosts(text: str) -> list[tuple[str, str]]:
    """`CACHELINT_ALLOW_HOSTS` as (host, port) pairs; cachelint validated it at config load."""
    pairs = []
    for item in text.split(","):
        host, _, port = item.strip().rpartition(":")
        if host and port:
            pairs.append((_canonical(host.strip("[]")), port))
    return pairs


class _Guard:
    def __init__(self) -> None:
        self.hosts = _allow_hosts(os.environ.get("CACHELINT_ALLOW_HOSTS", ""))
        self.port = os.environ.get("CACHELINT_ALLOW_PORT", "")
        self.scenario = os.environ.get("CACHELINT_SCENARIO", "?")
        self.log = os.environ.get("CACHELINT_REFUSED_LOG", "")
        self.logged = 0

    def allowed(self, host: Any, port: Any) -> bool:
        if self.listed(host, port):
            return True
        if not _is_loopback(host):
            return False
        return port is None or str(port) == self.port

    def listed(self, host: Any, port: Any) -> bool:
        """In `allow-hosts`: the address at its port (a lookup, port None, at any), `localhost`
        standing for every loopback address, a loopback name for a loopback address."""
        shown, loopback = _canonical(host), _is_loopback(host)
        for allowed, allowed_port in self.hosts:
            if port is not None and str(port) != allowed_port:
                continue
            if shown == allowed or (loopback and allowed == "localhost"):
                return True
            if shown in _LOOPBACK_NAMES and _is_loopback(allowed):
                return True
        return False

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if event not in _EVENTS:
            return
        found = _target(event, args)
        if found is None or self.allowed(found[1], found[2]):
            return
        shown = found[0].encode("unicode_escape").decode("ascii")
        self.record(shown)
        raise NetworkRefused(
            f"cachelint: scenario {self.scenario}: replay mode refuses network access to {shown}; "
            "the answer must come from the cache (call OPENAI_BASE_URL)"
        )

    def record(self, shown: str) -> None:
        if not self.log or self.logged >= _MAX_LOGGED:
            return
        self.logged += 1
        try:
            with open(self.log, "a", encoding="utf-8") as fh:
                fh.write(shown + "\n")
        except OSError:
            pass  # the error raised in the program still fails it


def _chain() -> None:
    """Import the sitecustomize this module shadows (a distribution's, a virtualenv's), then
    leave sys.path as it would be without this directory."""
    here = os.path.dirname(os.path.abspath(__file__))
    mine = sys.modules.pop("sitecustomize", None)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    try:
        importlib.import_module("sitecustomize")
    except ModuleNotFoundError as exc:
        if exc.name != "sitecustomize":
            raise
    finally:
        if "sitecustomize" not in sys.modules and mine is not None:
            sys.modules["sitecustomize"] = mine


if os.environ.get("CACHELINT_ALLOW_PORT") and hasattr(sys, "addaudithook"):
    sys.addaudithook(_Guard())
_chain()
