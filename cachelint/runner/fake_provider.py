"""A scripted, deterministic OpenAI-compatible chat-completions server on 127.0.0.1.

Tests and demos record against it instead of a real model: the same script and the same requests
give byte-identical responses (ids come from a hash of the request, `created` is fixed, token
usage is counted from text length), so a recorded cache reproduces exactly.

It serves `POST /v1/chat/completions` and `GET /v1/models`. It binds 127.0.0.1 only: it has no
authentication worth the name and must never be reachable from another machine.

Script format (a JSON object; every key is optional, an unknown key is an error)::

    {
      "model": "scripted-v1",          # listed by GET /v1/models; used when a request has no model
      "created": 1700000000,           # the fixed `created` of every response
      "api_key": "sk-test",            # if set, requests without `Authorization: Bearer sk-test`
                                       # get the OpenAI 401 (invalid_api_key)
      "rules": [                       # tried in order; the first that matches answers
        {
          "match": {                   # every given condition must hold; {} or absent = any request
            "contains": "refund",              # substring of the last user message
            "any_contains": "order",           # substring of any message (any role)
            "system_contains": "support",      # substring of a system or developer message
            "model": "gpt-4o-mini",            # the request's model, exactly
            "has_tools": true,                 # the request sends a non-empty `tools` list
            "has_tool_result": true,           # the conversation holds a role "tool" message
            "tool_result_contains": "shipped"  # substring of a tool message
          },
          "reply": {...},              # see below
          "times": 2,                  # apply only to the first 2 matching requests, then skip
          "delay_ms": 30,              # sleep before answering (simulated latency)
          "usage": {"prompt_tokens": 10, "completion_tokens": 5}   # override counted usage
        }
      ],
      "default": {...}                 # the reply when no rule matches; without one such a
                                       # request gets HTTP 400 (type "no_rule_matched")
    }

A reply is one of::

    {"content": "text"}                                  # finish_reason "stop"
    {"json": {"any": "value"}}                           # content = compact, key-sorted JSON
    {"echo": true}                                       # content = the last user message
    {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A-1"}, "id": "call_1"}]}
                                                         # OpenAI tool-call shape, arguments as a
                                                         # JSON string, finish_reason "tool_calls";
                                                         # "id" is optional (derived otherwise);
                                                         # "content" may accompany tool_calls
    {"status": 429, "retry_after": 2}                    # an HTTP error with a Retry-After header
    {"status": 500, "body": "upstream exploded"}         # "body": text, or a JSON object; default
                                                         # is the OpenAI {"error": {...}} object

and may add "finish_reason" (e.g. "length") to the content kinds. The `default` may also be a
full rule object without "match" (to give it "delay_ms" or "usage").

Usage is counted as ceil(characters / 4): prompt = all message text, completion = content plus
tool-call names and arguments.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import blake3

from cachelint.canonical import canonical_bytes
from cachelint.errors import CachelintError

LOOPBACK = "127.0.0.1"
DEFAULT_MODEL = "scripted-v1"
DEFAULT_CREATED = 1_700_000_000

_MATCH_KEYS = {
    "contains": str,
    "any_contains": str,
    "system_contains": str,
    "model": str,
    "has_tools": bool,
    "has_tool_result": bool,
    "tool_result_contains": str,
}
_REPLY_KEYS = {
    "content",
    "json",
    "echo",
    "tool_calls",
    "status",
    "retry_after",
    "body",
    "finish_reason",
}
_RULE_KEYS = {"match", "reply", "times", "delay_ms", "usage"}
_SCRIPT_KEYS = {"format", "model", "created", "api_key", "rules", "default"}
_USAGE_KEYS = {"prompt_tokens", "completion_tokens", "total_tokens"}


class ScriptError(CachelintError):
    """The fake provider's script is not valid; the message names the file and the field."""


@dataclass(frozen=True)
class ToolCallSpec:
    name: str
    arguments: str  # already a JSON string, as OpenAI sends it
    id: str | None = None


@dataclass(frozen=True)
class Reply:
    content: str | None = None
    json_value: Any = None
    has_json: bool = False
    echo: bool = False
    tool_calls: tuple[ToolCallSpec, ...] = ()
    status: int = 200
    retry_after: str | None = None
    body: Any = None
    finish_reason: str | None = None


@dataclass(frozen=True)
class Rule:
    match: Mapping[str, Any]
    reply: Reply
    times: int | None = None
    delay_ms: int = 0
    usage: Mapping[str, int] | None = None


@dataclass(frozen=True)
class Script:
    source: str
    model: str = DEFAULT_MODEL
    created: int = DEFAULT_CREATED
    api_key: str | None = None
    rules: tuple[Rule, ...] = ()
    default: Rule | None = None


@dataclass(frozen=True)
class ReceivedRequest:
    """One request as the fake saw it, for tests to assert what a client sent."""

    method: str
    path: str  # including any query string
    headers: Mapping[str, str]  # names lower-cased
    body: Any  # parsed JSON, or None when there was no body or it was not JSON

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


# ---- script parsing --------------------------------------------------------------------------


def load_script(path: Path) -> Script:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScriptError(f"{path}: script not found; pass an existing JSON file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ScriptError(f"{path}: cannot read script: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScriptError(
            f"{path}: not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:
        raise ScriptError(f"{path}: not valid JSON: nested too deeply") from None
    return parse_script(data, source=str(path))


def parse_script(data: Any, *, source: str = "<script>") -> Script:
    """Validate a script object; every problem is a `ScriptError` naming `source` and the field."""

    def fail(where: str, problem: str) -> ScriptError:
        return ScriptError(f"{source}: {where} {problem}")

    if not isinstance(data, Mapping):
        raise fail("the script", "must be a JSON object with optional keys model, rules, default")
    _unknown(data, _SCRIPT_KEYS, "the script", fail)
    if "format" in data and data["format"] != 1:
        raise fail("format", f"must be 1, not {data['format']!r}")
    model = data.get("model", DEFAULT_MODEL)
    if not isinstance(model, str) or not model:
        raise fail("model", "must be a non-empty string")
    created = data.get("created", DEFAULT_CREATED)
    if not _is_int(created) or created < 0:
        raise fail("created", "must be a non-negative integer (a Unix time)")
    api_key = data.get("api_key")
    if api_key is not None and (not isinstance(api_key, str) or not api_key):
        raise fail("api_key", "must be a non-empty string")
    raw_rules = data.get("rules", [])
    if not isinstance(raw_rules, list):
        raise fail("rules", "must be a list of rule objects")
    rules = tuple(_parse_rule(r, f"rules[{i}]", fail) for i, r in enumerate(raw_rules))
    default: Rule | None = None
    if "default" in data:
        raw = data["default"]
        if isinstance(raw, Mapping) and "reply" in raw:
            if "match" in raw or "times" in raw:
                raise fail("default", "cannot have match or times; it answers what rules do not")
            default = _parse_rule(raw, "default", fail)
        else:
            default = Rule(match={}, reply=_parse_reply(raw, "default", fail))
    return Script(
        source=source, model=model, created=created, api_key=api_key, rules=rules, default=default
    )


_Fail = Callable[[str, str], ScriptError]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _unknown(obj: Mapping[str, Any], allowed: set[str], where: str, fail: _Fail) -> None:
    extra = sorted(set(obj) - allowed)
    if extra:
        raise fail(where, f"has unknown key {extra[0]!r}; allowed: {', '.join(sorted(allowed))}")


def _parse_rule(raw: Any, where: str, fail: _Fail) -> Rule:
    if not isinstance(raw, Mapping):
        raise fail(where, "must be an object with match and reply")
    _unknown(raw, _RULE_KEYS, where, fail)
    if "reply" not in raw:
        raise fail(where, "has no reply")
    match = raw.get("match", {})
    if not isinstance(match, Mapping):
        raise fail(f"{where}.match", "must be an object")
    _unknown(match, set(_MATCH_KEYS), f"{where}.match", fail)
    for key, kind in _MATCH_KEYS.items():
        if key in match and not isinstance(match[key], kind):
            expected = "true or false" if kind is bool else "a string"
            raise fail(f"{where}.match.{key}", f"must be {expected}")
    times = raw.get("times")
    if times is not None and (not _is_int(times) or times < 1):
        raise fail(f"{where}.times", "must be an integer >= 1")
    delay_ms = raw.get("delay_ms", 0)
    if not _is_int(delay_ms) or not 0 <= delay_ms <= 600_000:
        raise fail(f"{where}.delay_ms", "must be an integer between 0 and 600000")
    usage = raw.get("usage")
    if usage is not None:
        if not isinstance(usage, Mapping):
            raise fail(f"{where}.usage", "must be an object of token counts")
        _unknown(usage, _USAGE_KEYS, f"{where}.usage", fail)
        for key, value in usage.items():
            if not _is_int(value) or value < 0:
                raise fail(f"{where}.usage.{key}", "must be a non-negative integer")
    return Rule(
        match=dict(match),
        reply=_parse_reply(raw["reply"], f"{where}.reply", fail),
        times=times,
        delay_ms=delay_ms,
        usage=dict(usage) if usage is not None else None,
    )


def _parse_reply(raw: Any, where: str, fail: _Fail) -> Reply:
    if not isinstance(raw, Mapping):
        raise fail(where, "must be an object: {content}, {json}, {echo}, {tool_calls} or {status}")
    _unknown(raw, _REPLY_KEYS, where, fail)
    kinds = [k for k in ("content", "json", "echo", "status") if k in raw]
    if "tool_calls" in raw:
        kinds = [k for k in kinds if k != "content"] + ["tool_calls"]
    if len(kinds) != 1:
        found = ", ".join(kinds) if kinds else "none"
        raise fail(
            where, f"needs exactly one of content, json, echo, tool_calls, status (found {found})"
        )
    kind = kinds[0]
    finish = raw.get("finish_reason")
    if finish is not None and (not isinstance(finish, str) or kind == "status"):
        raise fail(f"{where}.finish_reason", "must be a string, and only on a successful reply")
    if kind == "status":
        status = raw["status"]
        if not _is_int(status) or not 400 <= status <= 599:
            raise fail(f"{where}.status", "must be an HTTP error status between 400 and 599")
        retry_after = raw.get("retry_after")
        if retry_after is not None:
            if isinstance(retry_after, bool) or not isinstance(retry_after, (int, float, str)):
                raise fail(f"{where}.retry_after", "must be seconds or an HTTP-date string")
            if not isinstance(retry_after, str):
                retry_after = f"{retry_after:g}"
        body = raw.get("body")
        if body is not None and not isinstance(body, (str, Mapping)):
            raise fail(f"{where}.body", "must be a string or a JSON object")
        return Reply(status=status, retry_after=retry_after, body=body)
    for key in ("retry_after", "body"):
        if key in raw:
            raise fail(f"{where}.{key}", "is only allowed with status")
    content = raw.get("content")
    if content is not None and not isinstance(content, str):
        raise fail(f"{where}.content", "must be a string")
    if kind == "json":
        return Reply(json_value=raw["json"], has_json=True, finish_reason=finish)
    if kind == "echo":
        if raw["echo"] is not True:
            raise fail(f"{where}.echo", "must be true")
        return Reply(echo=True, finish_reason=finish)
    if kind == "content":
        return Reply(content=content, finish_reason=finish)
    calls = raw["tool_calls"]
    if not isinstance(calls, list) or not calls:
        raise fail(f"{where}.tool_calls", "must be a non-empty list of {name, arguments}")
    specs = []
    for i, call in enumerate(calls):
        at = f"{where}.tool_calls[{i}]"
        if not isinstance(call, Mapping):
            raise fail(at, "must be an object with name and arguments")
        _unknown(call, {"name", "arguments", "id"}, at, fail)
        name = call.get("name")
        if not isinstance(name, str) or not name:
            raise fail(f"{at}.name", "must be a non-empty string")
        arguments = call.get("arguments", {})
        if not isinstance(arguments, str):
            try:
                arguments = json.dumps(arguments, sort_keys=True, ensure_ascii=False)
            except (TypeError, ValueError):
                raise fail(f"{at}.arguments", "must be a JSON object or a JSON string") from None
        call_id = call.get("id")
        if call_id is not None and (not isinstance(call_id, str) or not call_id):
            raise fail(f"{at}.id", "must be a non-empty string")
        specs.append(ToolCallSpec(name=name, arguments=arguments, id=call_id))
    return Reply(content=content, tool_calls=tuple(specs), finish_reason=finish)


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


def _tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def _hash(data: bytes) -> str:
    return blake3.blake3(data).hexdigest()


def _error_body(status: int, message: str, kind: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


_Response = tuple[int, dict[str, str], bytes]


def _json_response(status: int, value: Any, headers: Mapping[str, str] | None = None) -> _Response:
    data = json.dumps(value, sort_keys=True, ensure_ascii=False).encode("utf-8")
    return status, {"Content-Type": "application/json", **(headers or {})}, data


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

    def respond(self, method: str, path: str, headers: Mapping[str, str], raw: bytes) -> _Response:
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
    ) -> _Response:
        route = path.split("?", 1)[0]
        if route == "/v1/models" and method == "GET":
            model = {
                "id": self.script.model,
                "object": "model",
                "created": self.script.created,
                "owned_by": "cachelint-fake-provider",
            }
            return _json_response(200, {"object": "list", "data": [model]})
        if route != "/v1/chat/completions" or method != "POST":
            return _json_response(
                404,
                _error_body(
                    404,
                    f"the fake provider serves POST /v1/chat/completions and GET /v1/models, "
                    f"not {method} {route}",
                    "invalid_request_error",
                    "unknown_url",
                ),
            )
        expected_key = self.script.api_key
        if expected_key is not None and headers.get("authorization") != f"Bearer {expected_key}":
            return _json_response(
                401,
                _error_body(
                    401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key"
                ),
            )
        if bad_json or not isinstance(body, Mapping):
            return _json_response(
                400, _error_body(400, "the body must be a JSON object", "invalid_request_error")
            )
        if not isinstance(body.get("messages"), list) or not body["messages"]:
            return _json_response(
                400,
                _error_body(
                    400, "'messages' must be a non-empty list", "invalid_request_error", None
                ),
            )
        if body.get("stream"):
            return _json_response(
                400,
                _error_body(
                    400,
                    "the fake provider does not stream; send stream=false",
                    "invalid_request_error",
                ),
            )
        rule = self._pick(body)
        if rule is None:
            return _json_response(
                400,
                _error_body(
                    400,
                    f"no rule in {self.script.source} matched and it has no default",
                    "no_rule_matched",
                ),
            )
        if rule.delay_ms:
            time.sleep(rule.delay_ms / 1000)
        return self._render(rule, body)

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

    def _render(self, rule: Rule, body: Mapping[str, Any]) -> _Response:
        reply = rule.reply
        if reply.status != 200:
            headers = {"Retry-After": reply.retry_after} if reply.retry_after is not None else {}
            if isinstance(reply.body, str):
                data = reply.body.encode("utf-8")
                return reply.status, {"Content-Type": "text/plain; charset=utf-8", **headers}, data
            error = reply.body or _error_body(
                reply.status,
                f"scripted HTTP {reply.status}",
                "rate_limit_error" if reply.status == 429 else "server_error",
            )
            return _json_response(reply.status, error, headers)

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
            "prompt_tokens": _tokens(prompt_text),
            "completion_tokens": _tokens(completion_text),
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
        return _json_response(200, completion)


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
        try:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up (its timeout fired during a scripted delay): nothing to tell.
            self.close_connection = True

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
