"""The scripted fake provider serving requests: `FakeProvider` answers one request from a
`Script` (see `cachelint.devtools.fake_script` for the format) and `make_server`/`running` put it
on 127.0.0.1 over real HTTP. It binds loopback only: it has no authentication worth the name.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import blake3

from cachelint.canonical import canonical_bytes
from cachelint.devtools import fake_shapes
from cachelint.devtools.fake_script import (
    LOOPBACK,
    Rule,
    Script,
    ScriptError,
    load_script,
    parse_script,
)
from cachelint.errors import CachelintError
from cachelint.httpreply import Response, json_response, reply
from cachelint.runner import providers
from cachelint.runner.providers import (
    bedrock_invoke_api,
    converse_api,
    count_tokens_api,
    embeddings_api,
    gemini_api,
    gemini_count_api,
    gemini_embed_api,
    messages_api,
    responses_api,
    vertex_messages_api,
)

__all__ = [
    "FakeProvider",
    "FakeServer",
    "ReceivedRequest",
    "Script",
    "ScriptError",
    "load_script",
    "make_server",
    "parse_script",
    "running",
    "server_url",
]


@dataclass(frozen=True)
class ReceivedRequest:
    """One request as the fake saw it, for tests to assert what a client sent."""

    method: str
    path: str  # including any query string
    headers: Mapping[str, str]  # names lower-cased
    body: Any  # parsed JSON, or None when there was no body or it was not JSON

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


# ---- answering requests ----------------------------------------------------------------------


def _text(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of a content-part list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "\n".join(parts)
    return ""


def _messages(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [m for m in body.get("messages", []) if isinstance(m, Mapping)]


def _last_user_text(body: Mapping[str, Any]) -> str:
    for message in reversed(_messages(body)):
        if message.get("role") == "user":
            return _text(message.get("content"))
    return ""


def _matches(match: Mapping[str, Any], body: Mapping[str, Any]) -> bool:
    messages = _messages(body)
    if "contains" in match and match["contains"] not in _last_user_text(body):
        return False
    if "any_contains" in match and not any(
        match["any_contains"] in _text(m.get("content")) for m in messages
    ):
        return False
    if "system_contains" in match and not any(
        match["system_contains"] in _text(m.get("content"))
        for m in messages
        if m.get("role") in ("system", "developer")
    ):
        return False
    if "model" in match and body.get("model") != match["model"]:
        return False
    if "has_tools" in match and bool(body.get("tools")) != match["has_tools"]:
        return False
    tool_texts = [_text(m.get("content")) for m in messages if m.get("role") == "tool"]
    if "has_tool_result" in match and bool(tool_texts) != match["has_tool_result"]:
        return False
    if "tool_result_contains" in match and not any(
        match["tool_result_contains"] in t for t in tool_texts
    ):
        return False
    return True


def _hash(data: bytes) -> str:
    return blake3.blake3(data).hexdigest()


def _error_body(status: int, message: str, kind: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def _unknown_route(method: str, route: str) -> Response:
    return json_response(
        404,
        _error_body(
            404,
            f"the fake provider serves POST {', '.join(_APIS)}, "
            "/v1beta/models/MODEL:generateContent (or /v1/...), /model/MODEL/converse, "
            "/model/MODEL/invoke, .../publishers/anthropic/models/MODEL:rawPredict "
            "and GET /v1/models, "
            f"not {method} {route}",
            "invalid_request_error",
            "unknown_url",
        ),
    )


def _computed(api: Any, body: Any, model: str) -> Response | None:
    """The answer of an API the script has no rules for (embeddings, token counts), computed
    from the request; None for the others."""
    if api is embeddings_api:  # no rules: vectors derived from the texts
        return json_response(200, fake_shapes.embeddings(body, model))
    if api is gemini_embed_api:
        return json_response(200, fake_shapes.gemini_embeddings(body))
    if api in (count_tokens_api, gemini_count_api):  # the conversation's tokens, counted
        said = "".join(str(m.get("content") or "") for m in api.as_messages(body))
        return json_response(200, {api.ANSWER_FIELD: fake_shapes.tokens(said)})
    if api is bedrock_invoke_api and "messages" not in body:  # another family than Claude's
        if not isinstance(body.get("inputText"), str):
            problem = "the fake provider answers InvokeModel for Claude and Titan embeddings"
            return json_response(400, _error_body(400, problem, "invalid_request_error"))
        return json_response(200, fake_shapes.titan_embedding(body))
    return None


class FakeProvider:
    """The scripted provider without HTTP: `respond` maps one request to a response.

    Thread-safe: the HTTP server calls `respond` from one thread per connection, and a rule's
    `times` must count each matching request exactly once.
    """

    def __init__(self, script: Script, *, log: Callable[[str], None] | None = None) -> None:
        self.script = script
        self.requests: list[ReceivedRequest] = []
        self._used: dict[int, int] = {}
        self._lock = threading.Lock()
        self._log = log

    def respond(self, method: str, path: str, headers: Mapping[str, str], raw: bytes) -> Response:
        lowered = {k.lower(): v for k, v in headers.items()}
        body: Any = None
        bad_json = False
        if raw:
            try:
                body = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
                bad_json = True
        with self._lock:
            self.requests.append(ReceivedRequest(method, path, lowered, body))
        status, out_headers, data = self._answer(method, path, lowered, body, bad_json)
        if self._log is not None:
            self._log(f"{method} {path} -> {status}")
        return status, out_headers, data

    def _answer(
        self,
        method: str,
        path: str,
        headers: Mapping[str, str],
        body: Any,
        bad_json: bool,
    ) -> Response:
        route = path.split("?", 1)[0]
        if route == "/v1/models" and method == "GET":
            return self._models()
        found = _api_of(route)
        if found is None or method != "POST":
            return _unknown_route(method, route)
        api, from_path = found
        if from_path is not None and isinstance(body, dict):
            body = {**body, "model": from_path[0], "stream": from_path[1]}
        refused = self._refusal(api, headers, body, bad_json)
        if refused is not None:
            return refused
        computed = _computed(api, body, self.script.model)
        return computed if computed is not None else self._scripted(api, body)

    def _models(self) -> Response:
        model = {
            "id": self.script.model,
            "object": "model",
            "created": self.script.created,
            "owned_by": "cachelint-fake-provider",
        }
        return json_response(200, {"object": "list", "data": [model]})

    def _scripted(self, api: Any, body: Any) -> Response:
        """The answer of the script's first rule that matches the request, in `api`'s shape."""
        asked = body if api is None else _as_chat(body, api)
        rule = self._pick(asked)
        if rule is None:
            return json_response(
                400,
                _error_body(
                    400,
                    f"no rule in {self.script.source} matched and it has no default",
                    "no_rule_matched",
                ),
            )
        if rule.delay_ms:
            time.sleep(rule.delay_ms / 1000)
        if rule.reply.status != 200:
            return _scripted_error(rule)
        completion = self._completion(rule, asked)
        if api is responses_api:
            return json_response(200, fake_shapes.as_response(completion, body))
        if api in _CLAUDE:
            return json_response(200, fake_shapes.as_message(completion))
        if api is gemini_api:
            return json_response(200, fake_shapes.as_gemini(completion))
        if api is converse_api:
            return json_response(200, fake_shapes.as_converse(completion))
        return json_response(200, completion)

    def _refusal(
        self, api: Any, headers: Mapping[str, str], body: Any, bad_json: bool
    ) -> Response | None:
        """The error a provider answers a request with that it does not take, or None."""
        anthropic = api in (messages_api, count_tokens_api)
        if anthropic and not headers.get("anthropic-version"):
            missing = "anthropic-version: header is required"
            return json_response(400, _error_body(400, missing, "invalid_request_error"))
        expected_key = self.script.api_key
        sent_key = headers.get("authorization")
        wanted_key: str | None = f"Bearer {expected_key}"
        if api is not None and api.KEY_HEADER:
            sent_key, wanted_key = headers.get(api.KEY_HEADER), expected_key
        if expected_key is not None and sent_key != wanted_key:
            return json_response(
                401,
                _error_body(
                    401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key"
                ),
            )
        if bad_json or not isinstance(body, Mapping):
            return json_response(
                400, _error_body(400, "the body must be a JSON object", "invalid_request_error")
            )
        problem = _chat_problem(body) if api is None else api.conversation_problem(body)
        if problem is not None:
            return json_response(400, _error_body(400, problem, "invalid_request_error", None))
        if body.get("stream"):
            return json_response(
                400,
                _error_body(
                    400,
                    "the fake provider does not stream; send stream=false",
                    "invalid_request_error",
                ),
            )
        return None

    def _pick(self, body: Mapping[str, Any]) -> Rule | None:
        with self._lock:
            for index, rule in enumerate(self.script.rules):
                if not _matches(rule.match, body):
                    continue
                used = self._used.get(index, 0)
                if rule.times is not None and used >= rule.times:
                    continue
                self._used[index] = used + 1
                return rule
        return self.script.default

    def _completion(self, rule: Rule, body: Mapping[str, Any]) -> dict[str, Any]:
        """The chat.completion the rule's reply makes for `body`."""
        reply = rule.reply
        try:
            request_hash = _hash(canonical_bytes(body))
        except ValueError:
            request_hash = _hash(json.dumps(body, sort_keys=True).encode("utf-8"))
        response_id = f"chatcmpl-{request_hash[:24]}"
        if reply.has_json:
            content: str | None = json.dumps(
                reply.json_value, sort_keys=True, ensure_ascii=False, separators=(",", ":")
            )
        elif reply.echo:
            content = _last_user_text(body)
        else:
            content = reply.content
        message: dict[str, Any] = {"role": "assistant", "content": content}
        completion_text = content or ""
        if reply.tool_calls:
            calls = []
            for i, spec in enumerate(reply.tool_calls):
                call_id = spec.id or f"call_{_hash(f'{response_id}:{i}'.encode())[:24]}"
                calls.append(
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": spec.name, "arguments": spec.arguments},
                    }
                )
                completion_text += spec.name + spec.arguments
            message["tool_calls"] = calls
        finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
        prompt_text = "".join(_text(m.get("content")) for m in _messages(body))
        usage = {
            "prompt_tokens": fake_shapes.tokens(prompt_text),
            "completion_tokens": fake_shapes.tokens(completion_text),
        }
        usage.update({k: v for k, v in (rule.usage or {}).items() if k != "total_tokens"})
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        if rule.usage and "total_tokens" in rule.usage:
            usage["total_tokens"] = rule.usage["total_tokens"]
        model = body.get("model")
        completion = {
            "id": response_id,
            "object": "chat.completion",
            "created": self.script.created,
            "model": model if isinstance(model, str) and model else self.script.model,
            "system_fingerprint": "fp_cachelint_fake",
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
            ],
            "usage": usage,
        }
        return completion


# The routes served, with the module that knows each API's shapes (None: chat completions);
# Gemini's, /v1beta/models/MODEL:generateContent, name the model.
_APIS: dict[str, Any] = {
    "/v1/chat/completions": None,
    f"/v1/{responses_api.ROUTE}": responses_api,
    f"/v1/{embeddings_api.ROUTE}": embeddings_api,
    f"/v1/{messages_api.ROUTE}": messages_api,
    f"/v1/{messages_api.ROUTE}/{count_tokens_api.ROUTE}": count_tokens_api,
}


# The Messages API, on Anthropic's own platform and on Vertex AI and Bedrock: one answer shape.
_CLAUDE = (messages_api, vertex_messages_api, bedrock_invoke_api)


def _api_of(route: str) -> tuple[Any, tuple[str, bool] | None] | None:
    """The API a path calls (its module, None for chat completions) and, when the path names
    it, the model and whether it asks for a stream; None for a path not served."""
    if route in _APIS:
        return _APIS[route], None
    for api in providers.MODEL_IN_PATH:
        named = api.route_model(route)
        if named is not None:
            return api, named
    return None


def _chat_problem(body: Mapping[str, Any]) -> str | None:
    if not isinstance(body.get("messages"), list) or not body["messages"]:
        return "'messages' must be a non-empty list"
    return None


def _scripted_error(rule: Rule) -> Response:
    reply = rule.reply
    headers = {"Retry-After": reply.retry_after} if reply.retry_after is not None else {}
    if isinstance(reply.body, str):
        data = reply.body.encode("utf-8")
        return reply.status, {"Content-Type": "text/plain; charset=utf-8", **headers}, data
    error = reply.body or _error_body(
        reply.status,
        f"scripted HTTP {reply.status}",
        "rate_limit_error" if reply.status == 429 else "server_error",
    )
    return json_response(reply.status, error, headers)


def _as_chat(body: Mapping[str, Any], api: Any) -> dict[str, Any]:
    """A request to another API than chat completions as the chat request the script's rules
    match."""
    chat = {"model": body.get("model"), "messages": api.as_messages(body)}
    config = body.get("toolConfig")  # Bedrock's Converse API holds its tools there
    tools = body.get("tools") or (config.get("tools") if isinstance(config, Mapping) else None)
    if tools:
        chat["tools"] = tools
    return chat


# ---- HTTP ------------------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 keeps connections open, as real providers do, so clients reuse them.
    protocol_version = "HTTP/1.1"
    server_version = "cachelint-fake-provider"
    sys_version = ""
    # An idle keep-alive connection must not hold its thread forever.
    timeout = 60
    server: _Server

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        status, headers, data = self.server.provider.respond(
            self.command, self.path, dict(self.headers.items()), raw
        )
        reply(self, status, headers, data)  # a client that gave up during a delay is fine

    do_GET = _serve
    do_POST = _serve

    def log_message(self, format: str, *args: Any) -> None:
        # The provider reports requests through its own `log` callback; stderr stays quiet.
        return


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], provider: FakeProvider) -> None:
        self.provider = provider
        super().__init__(address, _Handler)


def make_server(provider: FakeProvider, *, host: str = LOOPBACK, port: int = 0) -> _Server:
    """Bind the fake to `host:port` (port 0 picks a free one); only 127.0.0.1 is allowed."""
    if host != LOOPBACK:
        raise CachelintError(
            f"the fake provider binds {LOOPBACK} only, not {host!r}: it must not be reachable "
            "from other machines"
        )
    if not 0 <= port <= 65535:
        raise CachelintError(f"--port {port} is not a TCP port; use 0..65535 (0 picks a free one)")
    try:
        return _Server((host, port), provider)
    except OSError as exc:
        raise CachelintError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}; "
            "pick another --port or 0 for a free one"
        ) from None


def server_url(server: ThreadingHTTPServer) -> str:
    host, port = server.server_address[:2]
    return f"http://{host!s}:{port}/v1"


@dataclass(frozen=True)
class FakeServer:
    """A running fake provider: its base URL (ending in /v1) and what it received."""

    url: str
    provider: FakeProvider

    @property
    def requests(self) -> list[ReceivedRequest]:
        return self.provider.requests

    @property
    def bodies(self) -> list[Any]:
        return [r.body for r in self.provider.requests]


@contextmanager
def running(script: Script, *, port: int = 0) -> Iterator[FakeServer]:
    """Serve `script` from a background thread until the block ends."""
    provider = FakeProvider(script)
    server = make_server(provider, port=port)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield FakeServer(url=server_url(server), provider=provider)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
