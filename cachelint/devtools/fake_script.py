"""A scripted, deterministic OpenAI-compatible chat-completions server on 127.0.0.1.

Tests and demos record against it instead of a real model: the same script and the same requests
give byte-identical responses (ids come from a hash of the request, `created` is fixed, token
usage is counted from text length), so a recorded cache reproduces exactly.

It serves `POST /v1/chat/completions`, `POST /v1/responses` (OpenAI's Responses API),
`POST /v1/messages` (Anthropic's Messages API), `POST /v1beta/models/MODEL:generateContent`
(Google's Gemini API), `POST /v1/embeddings` and `GET /v1/models`. The Responses, Messages and
Gemini APIs answer by the same rules, matched against the request's conversation as chat
messages, with the reply in their own shape (`cachelint.devtools.fake_shapes`); embeddings are
derived from the texts, with no rule. It binds 127.0.0.1 only: it has no authentication worth
the name and must never be reachable from another machine.

Script format (a JSON object; every key is optional, an unknown key is an error)::

    {
      "model": "scripted-v1",          # listed by GET /v1/models; used when a request has no model
      "created": 1700000000,           # the fixed `created` of every response
      "api_key": "sk-test",            # if set, requests without `Authorization: Bearer sk-test`
                                       # (`x-api-key: sk-test` on /v1/messages) get a 401
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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
        return _parse_error_reply(raw, where, fail)
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
    specs = _parse_tool_calls(raw["tool_calls"], f"{where}.tool_calls", fail)
    return Reply(content=content, tool_calls=tuple(specs), finish_reason=finish)


def _parse_error_reply(raw: Mapping[str, Any], where: str, fail: _Fail) -> Reply:
    """A reply with an HTTP error status, its Retry-After and its body."""
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


def _parse_tool_calls(calls: Any, where: str, fail: _Fail) -> list[ToolCallSpec]:
    if not isinstance(calls, list) or not calls:
        raise fail(where, "must be a non-empty list of {name, arguments}")
    specs = []
    for i, call in enumerate(calls):
        at = f"{where}[{i}]"
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
    return specs
