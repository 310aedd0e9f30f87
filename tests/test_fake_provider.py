"""The scripted fake provider: real HTTP on 127.0.0.1, and the CLI subcommand as a subprocess."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from cachelint.cli import COMMANDS
from cachelint.devtools.fake_provider import (
    FakeProvider,
    ScriptError,
    load_script,
    make_server,
    parse_script,
)
from cachelint.errors import CachelintError
from tests.conftest import PROJECT
from tests.fakes import fake_server


def chat(url: str, *messages: dict[str, Any], **extra: Any) -> httpx.Response:
    body = {"model": "gpt-4o-mini", "messages": list(messages), **extra}
    return httpx.post(f"{url}/chat/completions", json=body, timeout=10)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def content(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    return response.json()["choices"][0]["message"]["content"]


# ---- matching -------------------------------------------------------------------------------


def test_rules_are_tried_in_order_and_the_default_answers_the_rest() -> None:
    script = {
        "rules": [
            {"match": {"contains": "refund"}, "reply": {"content": "first"}},
            {"match": {"contains": "refund now"}, "reply": {"content": "never reached"}},
            {"match": {"contains": "hello"}, "reply": {"content": "greeting"}},
        ],
        "default": {"content": "I don't know."},
    }
    with fake_server(script) as fake:
        assert content(chat(fake.url, user("a refund now please"))) == "first"
        assert content(chat(fake.url, user("hello"))) == "greeting"
        assert content(chat(fake.url, user("weather?"))) == "I don't know."


def test_contains_looks_at_the_last_user_message_only() -> None:
    script = {
        "rules": [{"match": {"contains": "refund"}, "reply": {"content": "refund rule"}}],
        "default": {"content": "default"},
    }
    history = [user("I want a refund"), {"role": "assistant", "content": "ok"}, user("thanks")]
    with fake_server(script) as fake:
        assert content(chat(fake.url, *history)) == "default"
        # Content-part lists count as text too.
        parts = {"role": "user", "content": [{"type": "text", "text": "refund?"}]}
        assert content(chat(fake.url, parts)) == "refund rule"


def test_match_on_system_model_tools_and_tool_results() -> None:
    script = {
        "rules": [
            {"match": {"tool_result_contains": "shipped"}, "reply": {"content": "it shipped"}},
            {"match": {"has_tool_result": True}, "reply": {"content": "some tool result"}},
            {"match": {"has_tools": True}, "reply": {"tool_calls": [{"name": "lookup"}]}},
            {"match": {"system_contains": "pirate"}, "reply": {"content": "arr"}},
            {"match": {"model": "big-model"}, "reply": {"content": "big"}},
            {"match": {"any_contains": "earlier"}, "reply": {"content": "remembered"}},
        ],
        "default": {"content": "plain"},
    }
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {}}}]
    call = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function"}]}
    with fake_server(script) as fake:
        url = fake.url
        shipped = {"role": "tool", "tool_call_id": "c1", "content": "status: shipped"}
        pending = {"role": "tool", "tool_call_id": "c1", "content": "status: pending"}
        assert content(chat(url, user("q"), call, shipped, tools=tools)) == "it shipped"
        assert content(chat(url, user("q"), call, pending, tools=tools)) == "some tool result"
        tool_reply = chat(url, user("q"), tools=tools).json()["choices"][0]
        assert tool_reply["message"]["tool_calls"][0]["function"]["name"] == "lookup"
        system = {"role": "system", "content": "You are a pirate."}
        assert content(chat(url, system, user("hi"))) == "arr"
        assert content(chat(url, user("hi"), model="big-model")) == "big"
        earlier = [user("earlier thing"), {"role": "assistant", "content": "ok"}, user("now")]
        assert content(chat(url, *earlier)) == "remembered"
        assert content(chat(url, user("hi"))) == "plain"


def test_times_limits_a_rule_to_its_first_matches() -> None:
    script = {
        "rules": [{"match": {"contains": "x"}, "reply": {"status": 429}, "times": 2}],
        "default": {"content": "ok"},
    }
    with fake_server(script) as fake:
        statuses = [chat(fake.url, user("x")).status_code for _ in range(4)]
        # A request that does not match must not use up the rule.
        assert statuses == [429, 429, 200, 200]


def test_times_counts_each_request_once_under_concurrency() -> None:
    script = {"rules": [{"reply": {"status": 503}, "times": 5}], "default": {"content": "ok"}}
    with fake_server(script) as fake:
        statuses: list[int] = []
        lock = threading.Lock()

        def hit() -> None:
            code = chat(fake.url, user("x")).status_code
            with lock:
                statuses.append(code)

        threads = [threading.Thread(target=hit) for _ in range(12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=10)
    assert sorted(statuses) == [200] * 7 + [503] * 5


def test_delay_ms_adds_latency() -> None:
    script = {
        "rules": [{"match": {"contains": "slow"}, "reply": {"content": "s"}, "delay_ms": 300}],
        "default": {"content": "f"},
    }
    with fake_server(script) as fake:
        started = time.perf_counter()
        assert content(chat(fake.url, user("slow"))) == "s"
        slow = time.perf_counter() - started
        assert content(chat(fake.url, user("fast"))) == "f"
    assert slow >= 0.3  # a lower bound only: a loaded machine makes calls slower, never faster


# ---- replies --------------------------------------------------------------------------------


def test_replies_are_byte_reproducible_and_shaped_like_openai() -> None:
    script = {"default": {"content": "Hello there!"}}
    with fake_server(script) as fake:
        first = chat(fake.url, user("hi")).content
        second = chat(fake.url, user("hi")).content
        other = chat(fake.url, user("hi!")).json()
    with fake_server(script) as again:
        third = chat(again.url, user("hi")).content
    assert first == second == third
    data = json.loads(first)
    assert data["object"] == "chat.completion"
    assert data["created"] == 1_700_000_000
    assert data["model"] == "gpt-4o-mini"
    assert data["id"].startswith("chatcmpl-")
    assert other["id"] != data["id"]
    assert data["choices"] == [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Hello there!"},
            "logprobs": None,
            "finish_reason": "stop",
        }
    ]
    # ceil(len("hi") / 4) = 1, ceil(len("Hello there!") / 4) = 3
    assert data["usage"] == {"prompt_tokens": 1, "completion_tokens": 3, "total_tokens": 4}


def test_tool_call_reply_shape() -> None:
    script = {
        "default": {
            "tool_calls": [
                {"name": "lookup_order", "arguments": {"order_id": "A-1"}},
                {"name": "notify", "arguments": '{"raw": true}', "id": "call_fixed"},
            ]
        }
    }
    with fake_server(script) as fake:
        choice = chat(fake.url, user("where is my order")).json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None
    first, second = choice["message"]["tool_calls"]
    assert first["type"] == "function"
    assert first["id"].startswith("call_")
    assert first["function"] == {"name": "lookup_order", "arguments": '{"order_id": "A-1"}'}
    assert second["id"] == "call_fixed"
    assert second["function"]["arguments"] == '{"raw": true}'


def test_json_echo_usage_and_finish_reason() -> None:
    script = {
        "rules": [
            {"match": {"contains": "json"}, "reply": {"json": {"b": 1, "a": [True, None]}}},
            {
                "match": {"contains": "cut"},
                "reply": {"content": "trunc", "finish_reason": "length"},
            },
            {
                "match": {"contains": "usage"},
                "reply": {"content": "u"},
                "usage": {"prompt_tokens": 100, "completion_tokens": 7},
            },
        ],
        "default": {"echo": True},
    }
    with fake_server(script) as fake:
        assert content(chat(fake.url, user("json please"))) == '{"a":[true,null],"b":1}'
        cut = chat(fake.url, user("cut")).json()["choices"][0]
        assert cut["finish_reason"] == "length"
        usage = chat(fake.url, user("usage")).json()["usage"]
        assert usage == {"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107}
        assert content(chat(fake.url, user("say this back"))) == "say this back"


def test_error_replies_carry_retry_after_and_body() -> None:
    script = {
        "rules": [
            {"match": {"contains": "rate"}, "reply": {"status": 429, "retry_after": 2}},
            {
                "match": {"contains": "date"},
                "reply": {"status": 503, "retry_after": "Wed, 21 Oct 2015 07:28:00 GMT"},
            },
            {"match": {"contains": "text"}, "reply": {"status": 500, "body": "upstream exploded"}},
        ]
    }
    with fake_server(script) as fake:
        rate = chat(fake.url, user("rate"))
        date = chat(fake.url, user("date"))
        text = chat(fake.url, user("text"))
        nothing = chat(fake.url, user("unmatched"))
    assert rate.status_code == 429
    assert rate.headers["retry-after"] == "2"
    assert rate.json()["error"]["type"] == "rate_limit_error"
    assert date.headers["retry-after"] == "Wed, 21 Oct 2015 07:28:00 GMT"
    assert (text.status_code, text.text) == (500, "upstream exploded")
    assert nothing.status_code == 400
    assert nothing.json()["error"]["type"] == "no_rule_matched"


def test_api_key_models_and_unknown_routes() -> None:
    script = {"model": "scripted-v9", "api_key": "sk-good", "default": {"content": "ok"}}
    with fake_server(script) as fake:
        anonymous = chat(fake.url, user("hi"))
        good = httpx.post(
            f"{fake.url}/chat/completions",
            json={"messages": [user("hi")]},
            headers={"Authorization": "Bearer sk-good"},
        )
        models = httpx.get(f"{fake.url}/models").json()
        missing = httpx.post(f"{fake.url}/completions", json={})
        streaming = httpx.post(
            f"{fake.url}/chat/completions",
            json={"messages": [user("hi")], "stream": True},
            headers={"Authorization": "Bearer sk-good"},
        )
        not_json = httpx.post(
            f"{fake.url}/chat/completions",
            content=b"{nope",
            headers={"Authorization": "Bearer sk-good"},
        )
    assert anonymous.status_code == 401
    assert anonymous.json()["error"]["code"] == "invalid_api_key"
    assert good.json()["model"] == "scripted-v9"  # no model in the request: the script's
    assert [m["id"] for m in models["data"]] == ["scripted-v9"]
    assert missing.status_code == 404
    assert streaming.status_code == 400 and "does not stream" in streaming.text
    assert not_json.status_code == 400
    assert fake.requests[-1].body is None
    assert fake.requests[1].header("authorization") == "Bearer sk-good"


def test_binds_loopback_only() -> None:
    provider = FakeProvider(parse_script({}))
    for host in ("0.0.0.0", "localhost", "::"):
        with pytest.raises(CachelintError, match="binds 127.0.0.1 only"):
            make_server(provider, host=host)
    with fake_server({}) as fake:
        assert fake.url.startswith("http://127.0.0.1:")
        assert fake.url.endswith("/v1")


def test_busy_port_is_one_line() -> None:
    with fake_server({}) as fake:
        port = int(fake.url.split(":")[2].split("/")[0])
        with pytest.raises(CachelintError, match=f"cannot listen on 127.0.0.1:{port}"):
            make_server(FakeProvider(parse_script({})), port=port)


# ---- bad scripts ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ([], "the script must be a JSON object"),
        ({"rulez": []}, "the script has unknown key 'rulez'"),
        ({"rules": {}}, "rules must be a list"),
        ({"rules": [{"match": {}}]}, "rules[0] has no reply"),
        ({"rules": [{"reply": {}}]}, "rules[0].reply needs exactly one of"),
        (
            {"rules": [{"reply": {"content": "a", "json": 1}}]},
            "rules[0].reply needs exactly one of content, json, echo, tool_calls, status "
            "(found content, json)",
        ),
        ({"rules": [{"reply": {"content": 3}}]}, "rules[0].reply.content must be a string"),
        (
            {"rules": [{"reply": {"content": "a"}, "match": {"has_tools": "yes"}}]},
            "rules[0].match.has_tools must be true or false",
        ),
        (
            {"rules": [{"reply": {"content": "a"}, "match": {"contain": "x"}}]},
            "rules[0].match has unknown key 'contain'",
        ),
        ({"rules": [{"reply": {"content": "a"}, "times": 0}]}, "rules[0].times must be"),
        ({"rules": [{"reply": {"content": "a"}, "delay_ms": -1}]}, "rules[0].delay_ms must be"),
        ({"rules": [{"reply": {"status": 200}}]}, "rules[0].reply.status must be an HTTP error"),
        ({"rules": [{"reply": {"content": "a", "retry_after": 1}}]}, "only allowed with status"),
        (
            {"rules": [{"reply": {"tool_calls": [{"arguments": {}}]}}]},
            "rules[0].reply.tool_calls[0].name must be a non-empty string",
        ),
        ({"default": {"contents": "x"}}, "default has unknown key 'contents'"),
        ({"model": ""}, "model must be a non-empty string"),
    ],
)
def test_bad_scripts_name_the_file_and_field(script: Any, message: str, tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    with pytest.raises(ScriptError) as info:
        load_script(path)
    assert str(info.value).startswith(f"{path}: ")
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_unreadable_scripts(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match="script not found"):
        load_script(tmp_path / "absent.json")
    broken = tmp_path / "broken.json"
    broken.write_text('{"rules": [\n  {,}\n]}')
    with pytest.raises(ScriptError, match=r"broken.json: not valid JSON at line 2 column 4"):
        load_script(broken)


def test_fake_server_accepts_a_path(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"default": {"content": "from file"}}))
    with fake_server(path) as fake:
        assert content(chat(fake.url, user("x"))) == "from file"


# ---- the CLI --------------------------------------------------------------------------------


def _cli() -> list[str]:
    # The real `python -m cachelint` once every command module exists; until the team's other
    # commands land, the same main() with only this subcommand registered.
    if all(importlib.util.find_spec(f"cachelint.commands.{c.replace('-', '_')}") for c in COMMANDS):
        return [sys.executable, "-m", "cachelint"]
    code = (
        "import sys, cachelint.cli as c; c.COMMANDS = ('fake-provider',); "
        "raise SystemExit(c.main())"
    )
    return [sys.executable, "-c", code]


@contextmanager
def _served(script: Path) -> Iterator[subprocess.Popen[str]]:
    """`cachelint fake-provider` on any free port, killed on the way out if still running."""
    env = {**os.environ, "PYTHONPATH": str(PROJECT), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [*_cli(), "fake-provider", "--script", str(script), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=PROJECT,
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=20)


def _read_url(proc: subprocess.Popen[str]) -> str:
    # readline would block forever if the server never printed; a watchdog kills it instead.
    watchdog = threading.Timer(20, proc.kill)
    watchdog.start()
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
    finally:
        watchdog.cancel()
    assert line.startswith("listening on http://127.0.0.1:"), (line, proc.poll())
    return line.split("listening on ", 1)[1].strip()


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_cli_serves_until_signalled_and_exits_zero(tmp_path: Path, stop: signal.Signals) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"default": {"content": "from the cli"}}))
    with _served(script) as proc:
        url = _read_url(proc)
        assert content(chat(url, user("hi"))) == "from the cli"
        proc.send_signal(stop)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "POST /v1/chat/completions -> 200" in out
    assert err == ""


def test_cli_stops_on_a_signal_while_a_request_is_being_answered(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"rules": [{"reply": {"content": "late"}, "delay_ms": 60_000}]}))
    with _served(script) as proc:
        url = _read_url(proc)
        # The request's thread sleeps in the server; the client gives up when the server exits.
        caller = threading.Thread(target=_call_ignoring_errors, args=(url,), daemon=True)
        caller.start()
        time.sleep(0.2)  # usually lets the request arrive; the assertions hold either way
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "-> 200" not in out
    assert err == ""


def _call_ignoring_errors(url: str) -> None:
    try:
        chat(url, user("slow"))
    except httpx.HTTPError:
        pass


def test_cli_bad_script_is_one_line_exit_2(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"rules": [{"reply": {"status": 99}}]}))
    with _served(script) as proc:
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert out == ""
    assert err.strip() == (
        f"cachelint: error: {script}: rules[0].reply.status must be an HTTP error status "
        "between 400 and 599"
    )
