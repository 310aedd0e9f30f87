"""The cache endpoint against hostile local clients (issue 37): a request is authenticated before
its body is read, the body is bounded by its Content-Length, a malformed request is a 400 and one
line on stderr (never a traceback), and a proxy request without the run's key blames no scenario.

Each test talks to a real loopback endpoint over a raw socket, as a hostile process would."""

from __future__ import annotations

import base64
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cachelint import netguard
from cachelint.runner.client import Mode, OfflineRefuser
from cachelint.runner.endpoint import Endpoint
from tests.helpers import direct_client

IDENTITY = "support/acme/refund"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Endpoint, Any]]:
    """An endpoint serving one replaying scenario trial."""
    with Endpoint() as endpoint:
        client = direct_client(tmp_path, Mode.REPLAY, OfflineRefuser(), endpoint)
        client.base_url  # noqa: B018 (serves the trial from now on)
        yield endpoint, client


def exchange(port: int, head: str, body: bytes = b"", *, wait: float = 10) -> bytes:
    """Send `head` (the request line and headers, without the blank line) and `body`; what the
    server sends back within `wait` seconds, up to when it closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as sock:
        sock.sendall(head.encode("latin-1") + b"\r\n\r\n" + body)
        received = b""
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                break
            received += chunk
            if b"\r\n\r\n" in received and _complete(received):
                break
        return received


def _complete(received: bytes) -> bool:
    head, _, body = received.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value)
    return False


def status_of(received: bytes) -> int:
    assert received.startswith(b"HTTP/1."), received[:200]
    return int(received.split(b" ", 2)[1])


def route(client: Any) -> str:
    return client.base_url.split(":", 2)[2].split("/", 1)[1]


def test_an_unauthenticated_request_is_refused_before_its_body_is_read(
    served: tuple[Endpoint, Any],
) -> None:
    endpoint, client = served
    # Announces a gigabyte and sends none of it: the old endpoint waited to read it all.
    head = (
        f"POST /{route(client)}/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {1 << 30}"
    )
    started = time.monotonic()
    received = exchange(endpoint.port, head, wait=5)
    assert status_of(received) == 401
    assert time.monotonic() - started < 4


@pytest.mark.parametrize(
    ("length", "status"),
    [("abc", 400), ("10^15", 400), ("-5", 400), ("1_000", 400), (str(10**15), 413)],
)
def test_a_malformed_or_oversized_content_length_is_one_answer_and_one_line(
    served: tuple[Endpoint, Any], capfd: pytest.CaptureFixture[str], length: str, status: int
) -> None:
    endpoint, client = served
    head = (
        f"POST /{route(client)}/chat/completions HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer {client.api_key}\r\nContent-Length: {length}"
    )
    received = exchange(endpoint.port, head, wait=5)
    assert status_of(received) == status
    time.sleep(0.2)  # the handler's thread logs as it answers
    err = capfd.readouterr().err
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1, err
    assert err.startswith("cachelint: cache endpoint: refused a request from 127.0.0.1"), err
    assert "Content-Length" in err


def test_a_body_within_the_bound_is_still_answered(served: tuple[Endpoint, Any]) -> None:
    endpoint, client = served
    body = b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}'
    head = (
        f"POST /{route(client)}/chat/completions HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer {client.api_key}\r\nContent-Length: {len(body)}"
    )
    received = exchange(endpoint.port, head, body)
    assert status_of(received) == 404  # a replay miss: the body was read and keyed
    assert b"cache_miss" in received


def test_an_unauthenticated_connect_blames_no_running_scenario(
    served: tuple[Endpoint, Any], capfd: pytest.CaptureFixture[str]
) -> None:
    endpoint, _ = served
    with netguard.played(IDENTITY) as hosts:
        received = exchange(endpoint.port, "CONNECT api.example.invalid:443 HTTP/1.1")
        forged = base64.b64encode(f"{IDENTITY}:1".encode()).decode()
        guessed = exchange(
            endpoint.port,
            f"CONNECT api.example.invalid:443 HTTP/1.1\r\nProxy-Authorization: Basic {forged}",
        )
    assert status_of(received) == 407 and status_of(guessed) == 407
    assert b"Proxy-Authenticate: Basic" in received
    assert hosts == []
    assert "Traceback" not in capfd.readouterr().err


def test_a_proxy_request_with_the_runs_key_blames_its_scenario(
    served: tuple[Endpoint, Any],
) -> None:
    endpoint, _ = served
    sent = base64.b64encode(f"{IDENTITY}:{endpoint.token}".encode()).decode()
    with netguard.played(IDENTITY) as hosts:
        received = exchange(
            endpoint.port,
            f"CONNECT api.example.invalid:443 HTTP/1.1\r\nProxy-Authorization: Basic {sent}",
        )
    assert status_of(received) == 403
    assert hosts == ["api.example.invalid:443"]
