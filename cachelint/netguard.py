"""Replay fails closed: while a replay runs its targets, no code in the process reaches a network.

The refusing transport only stops calls made through the client a target is given. A python
target that builds its own SDK client would go live, pass, and earn a green record. So during
replay an audit hook (PEP 578) watches every `socket.connect`, `socket.getaddrinfo` and friends
in the process: anything but loopback to a port cachelint itself opened (its cache endpoint,
`allow_loopback_port`) raises `NetworkRefused`, naming the scenario and the host, and the
scenario fails even when the target swallows the exception. An audit hook cannot be removed;
it is installed once and only acts while a replay is armed, and this module's attributes cannot
be assigned (`cachelint.netguard._armed = 0` raises), so no target switches it off by accident.
What replay would refuse, it does not provoke: the network calls frameworks make of their own
accord (trace exports, catalogs fetched at import) are switched off while it is armed
(`own_calls_off`).

It is a guard against answers that did not come from the cache, not a security boundary against
the target: code in the same process can still reach its state through the interpreter (the
module's `__dict__`, ctypes), and native code (a C or Rust HTTP library, a libc call through
ctypes) makes no audit event at all. docs/security.md says what it sees and what it cannot.
"""

from __future__ import annotations

import ipaddress
import os
import sys
import threading
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, NamedTuple

from cachelint.errors import CachelintError

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

_lock = threading.Lock()
_allowed_ports: set[int] = set()
# `allow-hosts`: (host, port) a replay lets through, for the agent's own services; host is
# "localhost" (any loopback address or name) or an IP literal in its compressed form.
_allowed_hosts: tuple[tuple[str, int], ...] = ()
# The only networks `allow-hosts` may name: loopback and private (RFC 1918, IPv6 unique local).
_PRIVATE = tuple(
    ipaddress.ip_network(n)
    for n in ("127.0.0.0/8", "::1/128", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7")
)
ALLOW_HOSTS_ENV = "CACHELINT_ALLOW_HOSTS"  # the children's guards read the same list
_armed = 0  # nesting depth of `replay_only`
_running: dict[int, str] = {}  # thread id -> scenario identity running a target there
_refused: dict[str, list[str]] = {}  # scenario -> hosts it tried to reach
_installed = False


class Advice(NamedTuple):
    """What a refusal tells the person: where model calls must go, and how to record instead."""

    calls: str
    record: str


# `cachelint run`'s advice; the pytest plugin gives its own.
RUN_ADVICE = Advice(
    calls="make model calls through the client, or the OPENAI_BASE_URL, cachelint gives the target",
    record="rerun with --cache auto or --refresh-cache to record",
)
_advice = RUN_ADVICE  # while armed: the advice `replay_only` was given


class NetworkRefused(CachelintError):
    """A replay tried to open a network connection: the answer would not come from the cache."""


def allow_loopback_port(port: int) -> None:
    """Let replays connect to 127.0.0.1 / ::1 on `port`: for an endpoint cachelint itself opened."""
    with _lock:
        _allowed_ports.add(int(port))


def disallow_loopback_port(port: int) -> None:
    with _lock:
        _allowed_ports.discard(int(port))


def parse_allow_host(text: str) -> tuple[str, int]:
    """`127.0.0.1:6379`, `[::1]:6379`, `localhost:6333` as (host, port); ValueError saying what
    is allowed: loopback and private IP literals or `localhost`, each with a port."""
    host, sep, port = text.rpartition(":")
    why = (
        f"{text!r}: a loopback or private IP address, or localhost, with a port (127.0.0.1:6379, "
        "[::1]:6379); a public host or a name other than localhost stays refused in replay"
    )
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(why)
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if host.lower() == "localhost":
        return "localhost", int(port)
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise ValueError(why) from None
    if not any(address in network for network in _PRIVATE if network.version == address.version):
        raise ValueError(why)
    return address.compressed, int(port)


@contextmanager
def allowing(hosts: Iterable[tuple[str, int]]) -> Iterator[None]:
    """While inside, replays (and the children's guards, through `ALLOW_HOSTS_ENV`) let
    connections to `hosts` through: `allow-hosts`, the agent's own services. The variable is
    set even when there are none, so a value inherited from the shell never widens a replay."""
    global _allowed_hosts
    given = tuple(hosts)
    with _lock:
        saved, _allowed_hosts = _allowed_hosts, _allowed_hosts + given
    put_back = put_in_environ({ALLOW_HOSTS_ENV: allow_hosts_text(_allowed_hosts)})
    try:
        yield
    finally:
        put_back()
        with _lock:
            _allowed_hosts = saved


def allowed_hosts() -> tuple[tuple[str, int], ...]:
    """The (host, port) `allowing` lets through now."""
    return _allowed_hosts


def allow_hosts_text(hosts: Iterable[tuple[str, int]]) -> str:
    """The list as the children's guards read it: `host:port` items separated by commas."""
    return ",".join(f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in hosts)


def _host_allowed(host: Any, port: Any) -> bool:
    """Whether `allow-hosts` lets (host, port) through; a lookup (port None) of a host it
    names is let through too, since the connection that follows is checked."""
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str) or not _allowed_hosts:
        return False
    try:
        wanted = None if port is None else int(port)
    except (TypeError, ValueError):
        return False
    try:
        shown = ipaddress.ip_address(host.split("%", 1)[0]).compressed
    except ValueError:
        shown = host.lower()
    loopback = _is_loopback(host)
    name = shown in _LOOPBACK_NAMES  # a loopback name stands for every loopback address
    for allowed, allowed_port in _allowed_hosts:
        if wanted is not None and wanted != allowed_port:
            continue
        if shown == allowed or (loopback and allowed == "localhost"):
            return True
        if name and _is_loopback(allowed):
            return True
    return False


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
    if event == "socket.connect" or event in ("socket.sendto", "socket.sendmsg"):
        address = args[1] if len(args) > 1 else None
        if isinstance(address, (str, bytes)):
            return None  # an AF_UNIX path: local IPC, not a network
        if isinstance(address, tuple) and address:
            host, port = address[0], address[1] if len(address) > 1 else None
            return f"{host}:{port}", host, port
        return (repr(address), address, None) if address is not None else None
    if event == "socket.getaddrinfo":
        host, port = args[0], args[1] if len(args) > 1 else None
        if host is None:
            return None  # a passive lookup for binding, nothing remote
        shown = host.decode("ascii", "replace") if isinstance(host, bytes) else str(host)
        return (f"{shown}:{port}" if port is not None else shown), host, port
    if event == "socket.getnameinfo":
        # (sockaddr,): the port only names a service, the address is what is looked up.
        address = args[0] if args else None
        host = address[0] if isinstance(address, tuple) and address else address
        return str(host), host, None
    host = args[0] if args else None
    return str(host), host, None


def _allowed(host: Any, port: Any) -> bool:
    if _host_allowed(host, port):
        return True
    if not _is_loopback(host):
        return False
    if port is None:
        return True  # resolving a loopback name; the connect that follows is checked
    try:
        return int(port) in _allowed_ports
    except (TypeError, ValueError):
        return False


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if not _armed or event not in _EVENTS:
        return
    found = _target(event, args)
    if found is None:
        return
    shown, host, port = found
    if _allowed(host, port):
        return
    ident = threading.get_ident()
    with _lock:
        own = _running.get(ident)
        blamed = [own] if own is not None else sorted(set(_running.values()))
        for scenario in blamed:
            _refused.setdefault(scenario, []).append(shown)
    # No scenario runs while a target's module is imported, say.
    who = f"scenario {', '.join(blamed)}: " if blamed else ""
    raise NetworkRefused(
        f"{who}replay mode refuses network access to {shown}; the answer did not come from the "
        f"cache ({_advice.calls}); {_advice.record}"
    )


@contextmanager
def replay_only(advice: Advice = RUN_ADVICE) -> Iterator[None]:
    """While inside, every non-loopback network attempt in the process raises `NetworkRefused`,
    giving `advice`."""
    global _armed, _advice, _installed
    with _lock:
        if not _installed:
            sys.addaudithook(_hook)
            _installed = True
        _armed += 1
        saved, _advice = _advice, advice
    try:
        yield
    finally:
        with _lock:
            _armed -= 1
            _advice = saved


def report_refused(scenario: str | None, shown: str) -> None:
    """Record a refusal that happened outside this process (a command target's child, through
    the refusing proxy or its own guard, `cachelint.runner.childguard`) against `scenario`, or
    against every running scenario when the child did not say which it played."""
    with _lock:
        running = set(_running.values())
        blamed = [scenario] if scenario in running else sorted(running)
        for name in blamed:
            _refused.setdefault(name, []).append(shown)


def refusal(identity: str, hosts: list[str], advice: Advice = RUN_ADVICE) -> NetworkRefused:
    """The error that fails scenario `identity` for reaching for `hosts` in a replay."""
    return NetworkRefused(
        f"scenario {identity}: tried to reach {', '.join(dict.fromkeys(hosts))} in replay mode; "
        f"the answer did not come from the cache ({advice.calls})"
    )


@contextmanager
def played(identity: str) -> Iterator[list[str]]:
    """While inside, this thread plays scenario `identity`: a refusal in it names the scenario.
    On the way out, the list yielded holds every host refused for it (in this thread, in another
    no scenario runs, or in a command's child)."""
    ident = threading.get_ident()
    with _lock:
        _running[ident] = identity
        _refused.pop(identity, None)
    hosts: list[str] = []
    try:
        yield hosts
    finally:
        with _lock:
            _running.pop(ident, None)
            hosts.extend(_refused.pop(identity, []))


def guard_target(
    target: Callable[[Any, Any], Any], *, must_use_cache: bool
) -> Callable[[Any, Any], Any]:
    """`target` run under replay: its scenario is named in any refusal, and it fails when it
    reached for the network (even if it caught the error) or, with `must_use_cache` (a python
    target, which may ignore its client), when it made no model call through the cache."""

    def guarded(scenario: Any, client: Any) -> Any:
        identity = scenario.identity
        with played(identity) as hosts:
            try:
                value = target(scenario, client)
            except NetworkRefused:
                raise
            except Exception as exc:
                # A command whose child was refused usually exits non-zero: the refusal, naming
                # the host, is the cause to report, not the exit code.
                with _lock:
                    refused = list(_refused.get(identity, []))
                if refused:
                    raise refusal(identity, refused) from exc
                raise
        if hosts:
            raise refusal(identity, hosts)
        if must_use_cache and not client.calls and not client.misses:
            raise NetworkRefused(
                f"scenario {identity}: the python target made no model call through the cache, "
                "so the answer did not come from the cache; call the client it is given "
                "(client.chat(...)) instead of building its own, and turn off any response cache "
                "of its own that answered instead (DSPy's: dspy.LM(..., cache=False))"
            )
        return value

    return guarded


@contextmanager
def armed(*, replay: bool, advice: Advice = RUN_ADVICE) -> Iterator[None]:
    """`replay_only(advice)` with `own_calls_off()` for a replay, nothing otherwise: what
    `cachelint run` executes under, and the pytest plugin's eval tests."""
    if not replay:
        yield
        return
    with replay_only(advice), own_calls_off():
        yield


# The switches of the network calls frameworks make of their own accord, as the frameworks read
# them: in a replay such a call could only be refused, and would fail scenarios whose every
# answer came from the cache, or the import of a target's module. Each framework reads its
# switch when it is imported or first makes the call; a target's module is imported while the
# replay is armed.
OWN_CALLS_OFF = {
    # The OpenAI Agents SDK exports traces by default, whenever an OpenAI key is in the
    # environment, from a thread of its own.
    "OPENAI_AGENTS_DISABLE_TRACING": "1",
    # LangSmith (LangChain's tracing) exports from a thread of its own when a team turns it on,
    # as CI jobs often do. It takes the first of these it finds set, so each one a team may have
    # set is overridden.
    "LANGSMITH_TRACING_V2": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING": "false",
    # CrewAI's telemetry is on by default and exports every few seconds from a thread of its
    # own; its tracing to CrewAI's platform is turned on with the second switch.
    "CREWAI_DISABLE_TELEMETRY": "true",
    "CREWAI_TRACING_ENABLED": "false",
    # Haystack's telemetry is on by default: each pipeline run is sent to PostHog from a
    # thread of its own. Read when Haystack is imported.
    "HAYSTACK_TELEMETRY_ENABLED": "False",
    # LiteLLM fetches its model catalog from GitHub when it is imported, retrying for seconds.
    # Its offline mode takes the copy it ships (and keeps its other fetches home); releases
    # before that mode read the second switch.
    "LITELLM_OFFLINE_MODE": "true",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
}


# Of those, the switches a framework reads when it is imported. Under the pytest plugin, conftest
# files and test modules import their frameworks before any eval test replays, so a replaying
# session sets these from its start (`cachelint.pytest_plugin`).
READ_AT_IMPORT = (
    "HAYSTACK_TELEMETRY_ENABLED",
    "LITELLM_OFFLINE_MODE",
    "LITELLM_LOCAL_MODEL_COST_MAP",
)


@contextmanager
def own_calls_off() -> Iterator[None]:
    """While inside, `OWN_CALLS_OFF` is in the environment (this process's, and so its
    commands'); on the way out, what was there before is put back."""
    put_back = switch_off(OWN_CALLS_OFF)
    try:
        yield
    finally:
        put_back()


def switch_off(names: Iterable[str]) -> Callable[[], None]:
    """Set the `OWN_CALLS_OFF` switches named in this process's environment; the function that
    puts back what was there before."""
    return put_in_environ({name: OWN_CALLS_OFF[name] for name in names})


def put_in_environ(values: Mapping[str, str]) -> Callable[[], None]:
    """Set `values` in this process's environment (and so its children's); the function that
    puts back what was there before."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)

    def put_back() -> None:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    return put_back


class _Sealed(types.ModuleType):
    """This module, whose attributes cannot be assigned or deleted from outside it: replay's
    switch (`_armed`) and what the hook consults are changed by its own functions only."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("__") and name.endswith("__") and name != "__class__":
            super().__setattr__(name, value)  # the import system's own (`__spec__` on reload)
            return
        raise AttributeError(_SEALED.format(name=name))

    def __delattr__(self, name: str) -> None:
        raise AttributeError(_SEALED.format(name=name))


_SEALED = (
    "cachelint.netguard.{name} cannot be assigned: replay's network guard is not switched off "
    "from inside a replay; record with --cache auto or --refresh-cache instead"
)
# Through ModuleType, so that a reload (whose module is already sealed) can seal it again.
types.ModuleType.__setattr__(sys.modules[__name__], "__class__", _Sealed)
