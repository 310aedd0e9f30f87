"""`cachelint import vcrpy`: cassettes recorded by vcrpy itself, through the real openai, anthropic
and google-genai SDKs against the fake provider (a real server on 127.0.0.1), imported, then
replayed offline by `cachelint run` through a python target making the same SDK calls."""

from __future__ import annotations

import gzip
import http.server
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from cachelint.cli import main
from tests.fakes import fake_server
from tests.helpers import (
    do_run,
    entry_files,
    python_target,
    recorded_entries,
    replayed_offline,
    write_targets_repo,
)

vcr = pytest.importorskip("vcr")

OPENAI_KEY = "sk-proj-" + "a1B2c3D4e5" * 4
ANTHROPIC_KEY = "sk-ant-api03-" + "Zy9Xw8Vu7T" * 3
GOOGLE_KEY = "AIza" + "Sy0123456789abcdefghijklmnopqrstuvw"
SCRIPT: dict[str, Any] = {"rules": [], "default": {"content": "Refunds take 30 days."}}
SCENARIO = {"input": "refunds?", "assert": [{"type": "contains", "value": "30 days"}]}

# The team's agent: the same three SDK calls, given base URLs and a key. Its tests recorded them
# with vcrpy against the provider; under cachelint it gets the cache endpoint's.
AGENT = """
import anthropic, openai
from google import genai


def ask(openai_url, anthropic_url, gemini_url, key, stream=False):
    chat = openai.OpenAI(base_url=openai_url, api_key=key, max_retries=0)
    said = chat.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "refunds?"}], temperature=0
    ).choices[0].message.content
    claude = anthropic.Anthropic(base_url=anthropic_url, api_key=key, max_retries=0)
    said += " " + claude.messages.create(
        model="claude-sonnet-4-5", max_tokens=200,
        messages=[{"role": "user", "content": "refunds?"}],
    ).content[0].text
    gemini = genai.Client(api_key=key, http_options={"base_url": gemini_url})
    said += " " + gemini.models.generate_content(model="gemini-2.5-flash", contents="refunds?").text
    if stream:
        for _ in chat.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "stream?"}], stream=True
        ):
            pass
    return said


def answer(scenario, client):
    base = client.base_url
    return ask(base, client.anthropic_base_url, client.gemini_base_url, client.api_key)
"""


def _agent(repo: Path) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("import_test_agent", repo / "agent.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _repo(repo: Path) -> Path:
    write_targets_repo(
        repo,
        targets=python_target("agent:answer"),
        scenarios={"support/acme/refund": SCENARIO},
        files={"agent.py": AGENT},
    )
    return repo


def _record(repo: Path, url: str, name: str = "refund.yaml", **kw: Any) -> Path:
    """The agent's calls recorded by vcrpy into tests/cassettes/<name>, keys in the headers."""
    cassette = repo / "tests" / "cassettes" / name
    base = url.removesuffix("/v1")
    serializer = "json" if name.endswith(".json") else "yaml"
    with vcr.use_cassette(str(cassette), record_mode="all", serializer=serializer):
        _agent(repo).ask(url, base, base, OPENAI_KEY, **kw)
    return cassette


def _import(repo: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    monkeypatch.chdir(repo)
    return main(["import", "vcrpy", *args])


def test_imported_cassette_replays_offline_as_hits(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = _repo(git_repo)
    with fake_server(SCRIPT) as fake:
        cassette = _record(repo, fake.url)
    assert OPENAI_KEY in cassette.read_text()  # vcrpy keeps the authorization header
    assert do_run(repo).rc == 1  # nothing recorded yet: a replay misses

    rc = _import(repo, monkeypatch, "tests/cassettes", "--scenario", "support/acme/refund")
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "imported 3 entries from 1 cassette into eval-cache (1 scenario)" in out
    assert "request header authorization holds a credential (OpenAI API key sk-p..." in out
    assert OPENAI_KEY not in out
    assert "next: `cachelint stamp`" in out
    for entry in recorded_entries(repo):
        assert OPENAI_KEY not in json.dumps(entry)
    assert {e["request"].get("api", "chat") for e in recorded_entries(repo)} == {
        "chat",
        "messages",
        "generateContent",
    }

    trial = replayed_offline(repo, "support/acme/refund", calls=3, in_process=False)
    assert all(call["cache_hit"] for call in trial["calls"]), trial

    before = {p: (repo / p).read_bytes() for p in entry_files(repo)}
    assert _import(repo, monkeypatch, "tests/cassettes", "--scenario", "support/acme/refund") == 0
    assert "imported 0 entries" in capsys.readouterr().out
    assert {p: (repo / p).read_bytes() for p in entry_files(repo)} == before


@contextmanager
def provider_server(script: dict[str, Any], *, compress: bool) -> Iterator[str]:
    """The fake provider's answers from a real server on 127.0.0.1 that gzips each of them, as
    real providers do (vcrpy then records the answer as `!!binary` gzip bytes), and that
    streams a chat completion asked with `stream: true` as server-sent events."""
    from cachelint.devtools.fake_provider import FakeProvider, parse_script
    from cachelint.runner.endpoint import sse_stream

    provider = FakeProvider(parse_script(script, source="<inline script>"))

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
            raw = self.rfile.read(int(self.headers.get("content-length", "0")))
            body = json.loads(raw)
            streamed = body.pop("stream", False)
            sent = json.dumps(body).encode()
            status, headers, data = provider.respond("POST", self.path, dict(self.headers), sent)
            if streamed:
                data = sse_stream(json.loads(data), include_usage=False)
                headers = {"Content-Type": "text/event-stream"}
            if compress:
                data = gzip.compress(data)
                headers = {**headers, "Content-Encoding": "gzip"}
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_gzip_binary_and_json_cassettes_import_and_replay(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = _repo(git_repo)
    with provider_server(SCRIPT, compress=True) as url:
        zipped = _record(repo, url, "zipped.yaml")
    assert "!!binary" in zipped.read_text()
    assert _import(repo, monkeypatch, str(zipped), "--scenario", "support/acme/refund") == 0
    assert "imported 3 entries" in capsys.readouterr().out
    answers = [json.loads((repo / p).read_text()) for p in entry_files(repo) if "contents" in p]
    assert any(a.get("object") == "chat.completion" for a in answers)
    replayed_offline(repo, "support/acme/refund", calls=3, in_process=False)

    with fake_server(SCRIPT) as fake:
        as_json = _record(repo, fake.url, "refund.json")
    json.loads(as_json.read_text())  # vcrpy's JSON serializer
    rc = _import(repo, monkeypatch, str(as_json), "--scenario", "support/other/refund")
    assert rc == 0, capsys.readouterr().out


def test_streamed_answers_are_listed_not_imported(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = _repo(git_repo)
    with provider_server(SCRIPT, compress=False) as url:
        cassette = _record(repo, url, stream=True)
    rc = _import(repo, monkeypatch, str(cassette), "--scenario", "support/acme/refund")
    out = capsys.readouterr().out
    assert rc == 1, out
    assert "imported 3 entries" in out
    assert "not imported (1):\n  tests/cassettes/refund.yaml#4: a streamed answer" in out


def test_an_answer_holding_a_secret_is_refused_masked(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = _repo(git_repo)
    leaky = {"rules": [], "default": {"content": f"Your key is {ANTHROPIC_KEY}."}}
    with fake_server(leaky) as fake:
        cassette = _record(repo, fake.url)
    rc = _import(repo, monkeypatch, str(cassette), "--scenario", "support/acme/refund")
    out = capsys.readouterr().out
    assert rc == 1, out
    assert out.count("refused: the answer holds a secret (Anthropic API key sk-a...") == 3, out
    assert ANTHROPIC_KEY not in out
    assert not (repo / "eval-cache").exists()


def test_the_request_key_from_the_header_is_refused_in_a_body(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A credential of no well-known format, sent in a header, is refused where an entry would
    hold it: the fake echoes the prompt, which quotes the key."""
    repo = _repo(git_repo)
    odd_key = "team-internal-credential-0042"
    echo = {"rules": [], "default": {"content": f"the header said {odd_key}"}}
    with fake_server(echo) as fake:
        cassette = repo / "tests" / "cassettes" / "odd.yaml"
        with vcr.use_cassette(str(cassette), record_mode="all"):
            import openai

            openai.OpenAI(base_url=fake.url, api_key=odd_key).chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}]
            )
    rc = _import(repo, monkeypatch, str(cassette), "--scenario", "support/acme/refund")
    out = capsys.readouterr().out
    assert rc == 1 and "refused: the answer holds a secret" in out, out
    assert odd_key not in out


def test_a_file_that_is_no_cassette_stops_before_anything_is_written(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = _repo(git_repo)
    with fake_server(SCRIPT) as fake:
        _record(repo, fake.url)
    (repo / "tests" / "cassettes" / "zz-broken.yaml").write_text("interactions: [\n")
    rc = _import(repo, monkeypatch, "tests/cassettes", "--scenario", "support/acme/refund")
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith("cachelint: error: tests/cassettes/zz-broken.yaml: not a YAML vcrpy")
    assert err.count("\n") == 1
    assert not (repo / "eval-cache").exists()


def test_a_map_file_names_each_cassettes_scenario(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = _repo(git_repo)
    with fake_server(SCRIPT) as fake:
        _record(repo, fake.url)
        _record(repo, fake.url, "other.yaml")
    (repo / "import-map.toml").write_text(
        '[scenarios]\n"tests/cassettes/refund.yaml" = "support/acme/refund"\n'
    )
    rc = _import(repo, monkeypatch, "tests/cassettes", "--map", "import-map.toml")
    err = capsys.readouterr().err
    assert rc == 2
    assert "tests/cassettes/other.yaml: no scenario for this cassette in import-map.toml" in err
    (repo / "import-map.toml").write_text(
        '[scenarios]\n"tests/cassettes/refund.yaml" = "support/acme/refund"\n'
        '"tests/cassettes/*" = "support/globex/refund"\n'
    )
    assert _import(repo, monkeypatch, "tests/cassettes", "--map", "import-map.toml") == 0
    scenarios = {e["scenario"] for e in recorded_entries(repo)}
    assert scenarios == {"support/acme/refund", "support/globex/refund"}
