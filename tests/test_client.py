"""The caching client: one call, one canonical request, one key, one entry; what each mode does."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from cachelint.errors import CachelintError
from cachelint.runner.client import (
    CacheMiss,
    CachingClient,
    LiveCallRefused,
    Mode,
    OfflineRefuser,
    Recorder,
    parse_mode,
)
from cachelint.runner.providers.transport import OpenAICompatibleTransport
from cachelint.store import Store
from tests.fakes import fake_server

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi there"}]
MOMENT = datetime(2026, 1, 15, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Done:
    response: Any
    latency_s: float


class ScriptedTransport:
    """An in-process stand-in for the HTTP transport: answers from a list, remembers bodies."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.bodies: list[Mapping[str, Any]] = []

    def complete(self, body: Mapping[str, Any]) -> Done:
        self.bodies.append(body)
        text = self.answers[min(len(self.bodies), len(self.answers)) - 1]
        return Done(
            {
                "object": "chat.completion",
                "choices": [{"message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
            },
            0.25,
        )


def client(tmp_path: Path, mode: Mode, transport: Any, *, prefix: int = 16) -> CachingClient:
    store = Store(tmp_path / "eval-cache", key_prefix=prefix, clock=lambda: MOMENT)
    return CachingClient(
        store=store,
        scenario="support/acme/greet",
        trial=0,
        mode=mode,
        transport=transport,
        provider="cachelint-fake",
        model="scripted-v1",
        recorder=Recorder(
            command="cachelint run --scenario support/acme/greet --refresh-cache",
            url="http://127.0.0.1:9/v1",
            api_key_env="OPENAI_API_KEY",
            env_file=None,
        ),
        repo_prefix="eval-cache",
    )


def entries(tmp_path: Path) -> list[str]:
    return sorted(
        p.relative_to(tmp_path).as_posix() for p in (tmp_path / "eval-cache").rglob("*.json")
    )


def test_modes_parse_at_the_boundary() -> None:
    assert parse_mode("auto") is Mode.AUTO
    with pytest.raises(CachelintError, match="use one of replay, auto, live, off"):
        parse_mode("Replay")
    assert not Mode.REPLAY.calls_live and not Mode.OFF.records and Mode.AUTO.records


def test_refuser_never_calls_out() -> None:
    with pytest.raises(LiveCallRefused, match="replay mode refuses live model calls"):
        OfflineRefuser().complete({"model": "m", "messages": []})


def test_auto_records_a_miss_then_replay_hits(tmp_path: Path) -> None:
    live = ScriptedTransport("hello")
    first = client(tmp_path, Mode.AUTO, live)
    answer = first.chat(MESSAGES, options={"temperature": 0})
    assert answer["choices"][0]["message"]["content"] == "hello"
    assert live.bodies == [{"temperature": 0, "model": "scripted-v1", "messages": MESSAGES}]
    [call] = first.calls
    assert (
        not call.hit
        and call.latency_s == 0.25
        and call.usage
        == {
            "prompt_tokens": 3,
            "completion_tokens": 2,
            "total_tokens": 5,
        }
    )
    assert call.entry == f"eval-cache/cache/support/acme/greet/{call.key[:16]}"
    entry = json.loads((tmp_path / call.entry / "entry.json").read_text(encoding="utf-8"))
    assert entry["provider"] == "cachelint-fake" and entry["model"] == "scripted-v1"
    assert entry["created"] == "2026-01-15T00:00:00Z" and entry["key"] == call.key

    replay = client(tmp_path, Mode.REPLAY, OfflineRefuser())
    assert replay.chat(MESSAGES, options={"temperature": 0}) == answer
    assert replay.calls[0].hit and replay.calls[0].key == call.key


def test_replay_miss_raises_and_is_remembered(tmp_path: Path) -> None:
    replay = client(tmp_path, Mode.REPLAY, OfflineRefuser())
    with pytest.raises(CacheMiss) as info:
        replay.chat(MESSAGES)
    assert replay.misses == [str(info.value)]
    assert replay.calls == []
    assert "nothing is recorded for this scenario" in str(info.value)


def test_options_tools_and_trial_change_the_key(tmp_path: Path) -> None:
    live = ScriptedTransport("a")
    c = client(tmp_path, Mode.OFF, live)
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    c.chat(MESSAGES)
    c.chat(MESSAGES, options={"temperature": 0.2})
    c.chat(MESSAGES, tools=tools)
    c.trial = 1
    c.chat(MESSAGES)
    assert len({call.key for call in c.calls}) == 4
    assert live.bodies[2]["tools"] == tools
    assert not (tmp_path / "eval-cache").exists()  # off records nothing


def test_live_overwrites_and_auto_does_not_call_on_a_hit(tmp_path: Path) -> None:
    client(tmp_path, Mode.AUTO, ScriptedTransport("old")).chat(MESSAGES)
    fresh = ScriptedTransport("new")
    client(tmp_path, Mode.LIVE, fresh).chat(MESSAGES)
    assert len(fresh.bodies) == 1
    unused = ScriptedTransport("unused")
    again = client(tmp_path, Mode.AUTO, unused).chat(MESSAGES)
    assert unused.bodies == [] and again["choices"][0]["message"]["content"] == "new"
    assert len(entries(tmp_path)) == 1


def test_a_prefix_collision_is_a_miss_never_a_wrong_answer(tmp_path: Path) -> None:
    recorded = client(tmp_path, Mode.AUTO, ScriptedTransport("first"), prefix=8)
    recorded.chat(MESSAGES)
    key = recorded.calls[0].key
    entry_path = tmp_path / recorded.calls[0].entry / "entry.json"
    entry = json.loads(entry_path.read_text(encoding="utf-8"))
    entry["key"] = key[:8] + ("0" if key[8] != "0" else "1") + key[9:]  # same prefix, other key
    entry_path.write_text(json.dumps(entry), encoding="utf-8")
    with pytest.raises(CacheMiss) as miss:
        client(tmp_path, Mode.REPLAY, OfflineRefuser(), prefix=8).chat(MESSAGES)
    # The request is the one recorded: the message says what differs instead of nothing.
    assert f"the entry's key {entry['key']} is not its request's hash {key}" in str(miss.value)


def test_records_through_the_real_http_transport(tmp_path: Path) -> None:
    script = {"rules": [{"match": {"contains": "Hi"}, "reply": {"content": "Hello!"}}]}
    with fake_server(script) as fake:
        transport = OpenAICompatibleTransport(
            fake.url, api_key=None, params={"seed": 7}, timeout=5.0, max_retries=0
        )
        c = client(tmp_path, Mode.AUTO, transport)
        answer = c.chat(MESSAGES)
        sent = fake.requests[0].body
    assert answer["choices"][0]["message"]["content"] == "Hello!"
    assert sent["model"] == "scripted-v1" and sent["seed"] == 7 and sent["messages"] == MESSAGES
    assert client(tmp_path, Mode.REPLAY, OfflineRefuser()).chat(MESSAGES) == answer
