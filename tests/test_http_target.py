"""The `http` target: EvalCore's identity rules, recorded against a real HTTP server on 127.0.0.1
and replayed offline through the same cache."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from cachelint.config import from_table
from cachelint.errors import ConfigError
from cachelint.httpidentity import identity
from tests.conftest import commit_all, run_cachelint
from tests.helpers import do_run, network_blocked, refund, result, write_datasets

KEY = "app-secret-key-0123456789"
SCENARIO = "support/acme/refund"


class _App(BaseHTTPRequestHandler):
    """A tiny app: answers `{"answer": {"text": ...}, "n": ...}` and keeps what it received."""

    received: list[dict[str, Any]] = []

    def _answer(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        self.received.append(
            {
                "method": self.command,
                "path": self.path,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": body,
            }
        )
        question = json.loads(body)["question"] if body else ""
        data = json.dumps({"answer": {"text": f"We issue refunds within 30 days ({question})"}})
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data.encode())

    do_POST = do_PUT = do_GET = _answer

    def log_message(self, *_args: Any) -> None:
        pass


@contextmanager
def app() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    received: list[dict[str, Any]] = []
    handler = type("App", (_App,), {"received": received})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def target_toml(url: str, extra: str = "") -> str:
    return (
        "[tool.cachelint]\n"
        'cache = "eval-cache"\n'
        "[tool.cachelint.target]\n"
        'type = "http"\n'
        f'url = "{url}/ask?q={{{{input}}}}&tenant={{{{ tenant }}}}"\n'
        'method = "post"\n'
        'headers = { "X-Tenant" = "acme", "Accept" = "application/json" }\n'
        'body = { question = "{{input}}", meta = { scenario = "{{scenario}}", n = 3 } }\n'
        'response-path = "/answer/text"\n'
        'api-key-env = "APP_KEY"\n' + extra
    )


def http_repo(repo: Path, url: str, extra: str = "") -> Path:
    (repo / "pyproject.toml").write_text(target_toml(url, extra))
    (repo / ".gitattributes").write_text("eval-cache/** -text\n")
    (repo / "prompts").mkdir()
    (repo / "prompts/acme.md").write_text("You are Acme's support agent.\n")
    write_datasets(repo, {SCENARIO: refund(prompt="prompts/acme.md")}, None)
    return repo


def cache_text(repo: Path) -> str:
    return "".join(p.read_text() for p in sorted((repo / "eval-cache").rglob("*")) if p.is_file())


def test_recorded_with_the_identity_rules_and_replayed_offline(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APP_KEY", KEY)
    with app() as (url, received):
        repo = http_repo(git_repo, url)
        recorded = do_run(repo, refresh=True)
        assert recorded.rc == 0, recorded.out + recorded.err
    (sent,) = received
    assert sent["method"] == "POST"
    assert sent["path"] == "/ask?q=How%20do%20refunds%20work%3F&tenant=acme"
    assert sent["headers"]["authorization"] == f"Bearer {KEY}"
    assert sent["headers"]["x-tenant"] == "acme"
    assert json.loads(sent["body"]) == {
        "question": "How do refunds work?",
        "meta": {"scenario": SCENARIO, "n": 3},
    }
    stored = cache_text(repo)
    assert KEY not in stored and "authorization" not in stored.lower()
    (entry,) = [p for p in (repo / "eval-cache").rglob("contents.data")]
    request = json.loads((entry.parent / "entry.json").read_text())["request"]
    assert request["identity"] == {
        "http": {
            "url": f"{url}/ask?q={{{{input}}}}&tenant={{{{ tenant }}}}",
            "method": "POST",
            "headers": {"accept": "application/json", "x-tenant": "acme"},
            "body": {"question": "{{input}}", "meta": {"scenario": "{{scenario}}", "n": 3}},
            "response_path": "/answer/text",
        }
    }
    assert request["input"] == {
        "input": "How do refunds work?",
        "scenario": SCENARIO,
        "tenant": "acme",
    }
    commit_all(repo)
    # The server is gone, every socket refused, the key unset: a replay answers from the cache.
    monkeypatch.delenv("APP_KEY")
    with network_blocked() as attempts:
        replay = do_run(repo)
    assert attempts == [] and replay.rc == 0, replay.out + replay.err
    trial = result(repo, SCENARIO)["trials"][0]
    assert trial["cache_hit"] is True
    # The entry verifies (its key is its request's hash) and holds no secret.
    checked = run_cachelint(repo, "check", "--select", "eval-cache-corrupt,eval-cache-secret")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_header_is_part_of_the_key_and_the_api_key_is_not(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APP_KEY", KEY)
    with app() as (url, _received):
        repo = http_repo(git_repo, url)
        assert do_run(repo, refresh=True).rc == 0
        commit_all(repo)
        monkeypatch.setenv("APP_KEY", "another-key-9876543210")
        assert do_run(repo).rc == 0  # the key is no part of the identity
        text = (
            (repo / "pyproject.toml")
            .read_text()
            .replace('"X-Tenant" = "acme"', '"X-Tenant" = "globex"')
        )
        assert "globex" in text
        (repo / "pyproject.toml").write_text(text)
        missed = do_run(repo)
    assert missed.rc == 1
    trial = result(repo, SCENARIO)["trials"][0]
    assert trial["error"].startswith("cache miss in replay mode"), trial["error"]


def test_an_answer_without_the_response_path_fails_the_scenario(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("APP_KEY", raising=False)
    with app() as (url, received):
        repo = http_repo(git_repo, url)
        text = (repo / "pyproject.toml").read_text().replace("/answer/text", "/answer/missing")
        (repo / "pyproject.toml").write_text(text)
        outcome = do_run(repo, refresh=True)
    assert "authorization" not in received[0]["headers"]  # no key named: none sent
    assert outcome.rc == 1
    error = result(repo, SCENARIO)["trials"][0]["error"]
    assert "no value at response-path '/answer/missing'" in error


def table(**target: Any) -> dict[str, Any]:
    return {"target": {"type": "http", "url": "http://127.0.0.1:1/x?q={{input}}", **target}}


@pytest.mark.parametrize(
    ("target", "says"),
    [
        ({"headers": {"Authorization": "Bearer abc"}}, "its name is a credential's"),
        ({"headers": {"X-Api-Key": "abc"}}, "its name is a credential's"),
        ({"headers": {"X-Forward": "Bearer abcdef"}}, "its value looks like a credential"),
        ({"headers": {"X-Org": "sk-proj-" + "a" * 40}}, "its value looks like a credential"),
        ({"headers": {"X-Org": "${ORG}"}}, "names an environment variable"),
        ({"headers": {"X-Q": "{{input}}"}}, "headers take no placeholder"),
        ({"headers": {"x-a": "1", "X-A": "2"}}, "set twice"),
        ({"body": {"q": "{{question}}"}}, "unknown placeholder {{question}}"),
        ({"method": "fetch"}, "key 'method' = 'FETCH'"),
        ({"method": "GET", "body": {"q": "{{input}}"}}, "'body' with method GET"),
        ({"response-path": "answer.text"}, "expected a JSON Pointer"),
        ({"auth-header": "X-Org", "headers": {"x-org": "v"}}, "also the auth-header"),
    ],
)
def test_config_validation_refuses(target: dict[str, Any], says: str) -> None:
    with pytest.raises(ConfigError, match=None) as raised:
        from_table(Path("/repo"), table(**target), "cachelint.toml")
    assert says in str(raised.value), str(raised.value)


def test_the_identity_omits_unset_fields_and_keeps_secrets_out() -> None:
    config = from_table(
        Path("/repo"),
        table(**{"api-key-env": "APP_KEY", "auth-header": "X-Key", "auth-prefix": "Token "}),
        "cachelint.toml",
    )
    target = config.target
    assert target.method == "POST" and target.provider == "http"
    keyed = identity(
        url=target.url,
        method=target.method,
        headers=target.headers,
        body=target.body,
        response_path=target.response_path,
    )
    assert keyed == {"http": {"url": "http://127.0.0.1:1/x?q={{input}}", "method": "POST"}}
    assert "APP_KEY" not in json.dumps(keyed) and "x-key" not in json.dumps(keyed)


def test_no_api_key_env_means_no_key_at_all() -> None:
    config = from_table(Path("/repo"), table(), "cachelint.toml")
    assert config.target.api_key_env == ""  # never OPENAI_API_KEY's key sent to an app
