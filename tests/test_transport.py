"""The live transport against the real fake provider over loopback HTTP; sleeps are recorded."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from cachelint.credentials import load_api_key
from cachelint.runner.providers.transport import (
    Completion,
    OpenAICompatibleTransport,
    TransportError,
    parse_retry_after,
    retry_delays,
)
from tests.conftest import PROJECT
from tests.fakes import fake_server
from tests.helpers import put

KEY = "sk-test-SECRET-4242"
USER = {"role": "user", "content": "hello"}


def body(text: str = "hello", **extra: Any) -> dict[str, Any]:
    return {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": text}], **extra}


class Sleeps(list[float]):
    """The injected sleep: records the delays instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def transport(url: str, sleeps: Sleeps | None = None, **kw: Any) -> OpenAICompatibleTransport:
    options: dict[str, Any] = {
        "api_key": KEY,
        "params": {},
        "timeout": 5.0,
        "max_retries": 5,
        "sleep": sleeps if sleeps is not None else Sleeps(),
    }
    options.update(kw)
    return OpenAICompatibleTransport(url, **options)


# ---- schedule -------------------------------------------------------------------------------


def test_retry_delays_double_from_half_a_second_and_cap_at_ten() -> None:
    assert retry_delays(0) == []
    assert retry_delays(3) == [0.5, 1.0, 2.0]
    assert retry_delays(7) == [0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_parse_retry_after_seconds_date_and_garbage() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(" 1.5 ") == 1.5
    assert parse_retry_after("3600") == 60.0  # capped
    assert parse_retry_after("-4") == 0.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    now = datetime(2026, 1, 31, 12, 0, 0, tzinfo=timezone.utc)
    date = format_datetime(now + timedelta(seconds=7), usegmt=True)
    assert parse_retry_after(date, now=now.timestamp()) == 7.0
    past = format_datetime(now - timedelta(seconds=30), usegmt=True)
    assert parse_retry_after(past, now=now.timestamp()) == 0.0


# ---- successful calls -----------------------------------------------------------------------


def test_plain_content_bearer_header_and_completion_fields() -> None:
    with fake_server({"default": {"content": "Hi there."}}) as fake:
        with transport(fake.url) as t:
            got = t.complete(body())
    assert isinstance(got, Completion)
    assert len(fake.requests) == 1
    assert got.latency_s > 0
    message = got.response["choices"][0]["message"]
    assert message == {"role": "assistant", "content": "Hi there."}
    assert got.response["object"] == "chat.completion"
    [seen] = fake.requests
    assert seen.path == "/v1/chat/completions"
    assert seen.header("authorization") == f"Bearer {KEY}"
    # The api-key header is Azure's; other hosts must not receive the key twice.
    assert seen.header("api-key") is None
    assert seen.body == body()


def test_no_authorization_header_without_a_key() -> None:
    with fake_server({"default": {"content": "ok"}}) as fake:
        with transport(fake.url, api_key=None) as t:
            t.complete(body())
    assert fake.requests[0].header("authorization") is None


def test_tool_calls_pass_through_in_openai_shape() -> None:
    script = {
        "rules": [
            {
                "match": {"has_tools": True},
                "reply": {"tool_calls": [{"name": "lookup_order", "arguments": {"id": "A-1"}}]},
            }
        ]
    }
    tools = [{"type": "function", "function": {"name": "lookup_order", "parameters": {}}}]
    with fake_server(script) as fake:
        with transport(fake.url) as t:
            got = t.complete(body("where is A-1?", tools=tools))
    choice = got.response["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    [call] = choice["message"]["tool_calls"]
    assert call["type"] == "function"
    assert call["function"]["name"] == "lookup_order"
    assert json.loads(call["function"]["arguments"]) == {"id": "A-1"}
    assert fake.requests[0].body["tools"] == tools


def test_json_output_request_and_reply() -> None:
    script = {"default": {"json": {"sentiment": "positive", "score": 0.9}}}
    with fake_server(script) as fake:
        with transport(fake.url) as t:
            got = t.complete(body(response_format={"type": "json_object"}))
    content = got.response["choices"][0]["message"]["content"]
    assert json.loads(content) == {"sentiment": "positive", "score": 0.9}
    assert fake.requests[0].body["response_format"] == {"type": "json_object"}


def test_params_merge_under_the_body_and_body_wins() -> None:
    with fake_server({"default": {"content": "ok"}}) as fake:
        params = {"temperature": 0.7, "seed": 42, "model": "from-params"}
        with transport(fake.url, params=params) as t:
            t.complete(body(temperature=0))
    sent = fake.requests[0].body
    assert sent["temperature"] == 0
    assert sent["seed"] == 42
    assert sent["model"] == "gpt-4o-mini"


def test_url_with_trailing_slash_and_query_is_kept() -> None:
    with fake_server({"default": {"content": "ok"}}) as fake:
        with transport(fake.url + "/?api-version=preview") as t:
            t.complete(body())
    assert fake.requests[0].path == "/v1/chat/completions?api-version=preview"


def test_azure_hosts_also_get_the_api_key_header() -> None:
    azure = transport("https://res.openai.azure.com/openai/v1")
    other = transport("https://api.openai.com/v1")
    assert azure._headers["api-key"] == KEY
    assert azure._headers["Authorization"] == f"Bearer {KEY}"
    assert str(azure.endpoint) == "https://res.openai.azure.com/openai/v1/chat/completions"
    assert "api-key" not in other._headers
    assert "api-key" not in transport("https://notazure.com.evil.example/v1")._headers
    azure.close()
    other.close()


# ---- retries --------------------------------------------------------------------------------


def test_429_with_retry_after_sleeps_what_the_server_says() -> None:
    script = {
        "rules": [{"reply": {"status": 429, "retry_after": 3}, "times": 1}],
        "default": {"content": "finally"},
    }
    sleeps = Sleeps()
    with fake_server(script) as fake:
        with transport(fake.url, sleeps) as t:
            got = t.complete(body())
    assert sleeps == [3.0]
    assert got.response["choices"][0]["message"]["content"] == "finally"
    assert len(fake.requests) == 2


def test_429_without_retry_after_follows_the_schedule() -> None:
    script = {
        "rules": [{"reply": {"status": 429}, "times": 3}],
        "default": {"content": "ok"},
    }
    sleeps = Sleeps()
    with fake_server(script) as fake:
        with transport(fake.url, sleeps) as t:
            got = t.complete(body())
    assert sleeps == [0.5, 1.0, 2.0]
    assert len(fake.requests) == 4
    assert got.response["choices"][0]["message"]["content"] == "ok"


def test_503s_then_success() -> None:
    script = {
        "rules": [{"reply": {"status": 503, "body": "overloaded"}, "times": 2}],
        "default": {"content": "ok"},
    }
    sleeps = Sleeps()
    with fake_server(script) as fake:
        with transport(fake.url, sleeps) as t:
            t.complete(body())
        assert len(fake.requests) == 3
    assert sleeps == [0.5, 1.0]


def test_500_then_success() -> None:
    script = {"rules": [{"reply": {"status": 500}, "times": 1}], "default": {"content": "ok"}}
    sleeps = Sleeps()
    with fake_server(script) as fake:
        with transport(fake.url, sleeps) as t:
            assert t.complete(body()).response["choices"][0]["message"]["content"] == "ok"
    assert sleeps == [0.5]


def test_exhaustion_is_one_line_with_url_status_excerpt_and_hint() -> None:
    script = {"default": {"status": 503, "body": "upstream\nexploded " + "x" * 500}}
    sleeps = Sleeps()
    with fake_server(script) as fake:
        with transport(fake.url, sleeps, max_retries=2) as t:
            with pytest.raises(TransportError) as info:
                t.complete(body())
    message = str(info.value)
    assert sleeps == [0.5, 1.0]
    assert len(fake.requests) == 3
    assert "\n" not in message
    assert f"POST {fake.url}/chat/completions failed after 3 attempts: HTTP 503" in message
    assert "upstream exploded xxx" in message
    assert "x" * 201 not in message  # excerpt is short
    assert "retry later" in message


def test_401_is_not_retried_and_names_the_key_source_but_not_the_key() -> None:
    script = {"api_key": "sk-the-right-one", "default": {"content": "ok"}}
    sleeps = Sleeps()
    with fake_server(script) as fake:
        with transport(fake.url, sleeps, api_key_env="ACME_KEY", env_file=".env.eval") as t:
            with pytest.raises(TransportError) as info:
                t.complete(body())
    message = str(info.value)
    assert sleeps == []
    assert len(fake.requests) == 1
    assert "HTTP 401" in message
    assert "check ACME_KEY (environment or env-file .env.eval)" in message
    assert KEY not in message


def test_401_without_a_key_says_none_was_sent() -> None:
    with fake_server({"api_key": "sk-x", "default": {"content": "ok"}}) as fake:
        with transport(fake.url, api_key=None) as t:
            with pytest.raises(TransportError, match="no API key was sent; set OPENAI_API_KEY"):
                t.complete(body())


@pytest.mark.parametrize("status", [400, 403, 404])
def test_client_errors_are_never_retried(status: int) -> None:
    sleeps = Sleeps()
    with fake_server({"default": {"status": status}}) as fake:
        with transport(fake.url, sleeps) as t:
            with pytest.raises(TransportError, match=f"failed with HTTP {status}"):
                t.complete(body())
    assert sleeps == []
    assert len(fake.requests) == 1


def test_key_echoed_by_the_server_is_redacted() -> None:
    script = {"default": {"status": 400, "body": f"bad key {KEY} in header"}}
    with fake_server(script) as fake:
        with transport(fake.url) as t:
            with pytest.raises(TransportError) as info:
                t.complete(body())
    assert KEY not in str(info.value)
    assert "bad key *** in header" in str(info.value)


def test_connection_refused_is_retried_then_reported() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # Nothing listens on `port` now: every attempt is refused at once.
    sleeps = Sleeps()
    with transport(f"http://127.0.0.1:{port}/v1", sleeps, max_retries=2) as t:
        with pytest.raises(TransportError) as info:
            t.complete(body())
    assert sleeps == [0.5, 1.0]
    assert "failed after 3 attempts: ConnectError" in str(info.value)
    assert "check that the server is running" in str(info.value)


def test_timeout_is_retried() -> None:
    script = {
        "rules": [{"reply": {"content": "slow"}, "times": 1, "delay_ms": 5000}],
        "default": {"content": "fast"},
    }
    sleeps = Sleeps()
    with fake_server(script) as fake:
        # A timeout a loaded machine's loopback reply stays well inside, a delay far beyond it.
        with transport(fake.url, sleeps, timeout=1.0) as t:
            got = t.complete(body())
    assert got.response["choices"][0]["message"]["content"] == "fast"
    assert sleeps == [0.5]


@contextmanager
def static_server(status: int, text: str) -> Iterator[str]:
    """A loopback server answering every POST with one fixed body (a proxy or a wrong url)."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            data = text.encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    ("text", "problem"),
    [("<html>login</html>", "not JSON: <html>login</html>"), ('{"data": []}', "no choices")],
)
def test_a_success_that_is_not_a_chat_completion_is_an_error(text: str, problem: str) -> None:
    with static_server(200, text) as url:
        with transport(url) as t:
            with pytest.raises(TransportError, match=problem) as info:
                t.complete(body())
    assert f"POST {url}/chat/completions" in str(info.value)


@pytest.mark.parametrize(
    ("url", "problem"),
    [("localhost:8000/v1", "must start with http"), ("ftp://x/v1", "must start with http")],
)
def test_bad_url_is_one_line(url: str, problem: str) -> None:
    with pytest.raises(TransportError, match=problem):
        transport(url)


def test_key_with_whitespace_is_refused_without_echoing_it() -> None:
    with pytest.raises(TransportError, match="contains spaces") as info:
        transport("http://127.0.0.1:1/v1", api_key="sk-abc def")
    assert "sk-abc" not in str(info.value)


# ---- load_api_key ---------------------------------------------------------------------------


@pytest.fixture
def no_key_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("CACHELINT_TEST_KEY", raising=False)
    yield


def test_load_api_key_reads_env_file_without_touching_environ(
    tmp_path: Path, no_key_env: None
) -> None:
    import os

    (tmp_path / ".env").write_text("CACHELINT_TEST_KEY=sk-from-file\nOTHER=1\n")
    assert load_api_key(tmp_path, "CACHELINT_TEST_KEY", ".env") == "sk-from-file"
    assert "CACHELINT_TEST_KEY" not in os.environ
    assert "OTHER" not in os.environ


def test_load_api_key_environment_wins(
    tmp_path: Path, no_key_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".env").write_text("CACHELINT_TEST_KEY=sk-from-file\n")
    monkeypatch.setenv("CACHELINT_TEST_KEY", "sk-from-env")
    assert load_api_key(tmp_path, "CACHELINT_TEST_KEY", ".env") == "sk-from-env"


def test_load_api_key_missing_everywhere(tmp_path: Path, no_key_env: None) -> None:
    assert load_api_key(tmp_path, "CACHELINT_TEST_KEY", None) is None
    assert load_api_key(tmp_path, "CACHELINT_TEST_KEY", "absent.env") is None
    (tmp_path / ".env").write_text("CACHELINT_TEST_KEY=\n")
    assert load_api_key(tmp_path, "CACHELINT_TEST_KEY", ".env") is None


def test_importing_the_transport_and_the_fake_command_does_not_import_httpx() -> None:
    # The CLI imports every command module, and `cachelint check` runs in pre-commit hooks.
    code = (
        "import sys, cachelint.runner.providers.transport, cachelint.commands.fake_provider; "
        "print('httpx' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=PROJECT, check=True
    )
    assert out.stdout.strip() == "False"


def test_a_check_does_not_import_the_transport(tmp_path: Path) -> None:
    # The secret rule reads the configured key (`credentials`), not the HTTP machinery: a
    # pre-commit hook's check pays for neither the transport nor what it imports.
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    put(repo)
    code = (
        "import sys; from cachelint.cli import main; main(['check']); "
        "print([m for m in ('cachelint.runner.providers.transport', 'email.utils', 'httpx') "
        "if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
    )
    assert "eval-cache" in out.stdout, out.stdout + out.stderr  # the check ran
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout + out.stderr
