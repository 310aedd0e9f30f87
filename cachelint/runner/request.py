"""The canonical request: exactly what identifies an answer, and nothing that does not.

In the key: provider name, model id, messages, options, tools, scenario identity, trial index
(from trial 1 on) and the cache format version. Never in the key: URL, API key, headers, timeouts,
retries -- moving to another endpoint or rotating a key must not invalidate a committed cache
(MEAI once had the provider URI in its key, dotnet/extensions#6468). Unset optional fields are
omitted rather than written as null/empty, so adding an optional field later keeps old keys valid,
and trial 0 keeps the key a single-trial run always had.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from cachelint.store import FORMAT

__all__ = [
    "build_request",
    "build_sdk_request",
    "closeness",
    "normalise_text",
    "request_diff",
]


def normalise_text(text: str) -> str:
    """CRLF and lone CR to LF: a prompt checked out with CRLF on Windows hashes as on Linux."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


# Most of a request's values: kept as they are, found before the slower checks against the ABCs.
_SCALARS = frozenset({str, int, float, bool, type(None)})


def _plain(value: Any, *, drop_none: bool = False) -> Any:
    """A deep copy as plain JSON types (dict/list), so tuples and read-only mappings hash the same
    as lists and dicts."""
    if type(value) in _SCALARS:
        return value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items() if not (drop_none and v is None)}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _message(message: Mapping[str, Any]) -> dict[str, Any]:
    out = _plain(message, drop_none=True)
    content = out.get("content")
    if isinstance(content, str):
        out["content"] = normalise_text(content)
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                part["text"] = normalise_text(part["text"])
    return out


def build_request(
    *,
    provider: str,
    model: str,
    scenario: str,
    messages: Sequence[Mapping[str, Any]],
    options: Mapping[str, Any] | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    trial: int = 0,
) -> dict[str, Any]:
    """The canonical request for one call; `canonical.cache_key(request)` is its key."""
    if isinstance(trial, bool) or not isinstance(trial, int) or trial < 0:
        raise ValueError(f"trial must be an integer >= 0, got {trial!r}")
    try:
        request: dict[str, Any] = {
            "format": FORMAT,
            "provider": provider,
            "model": model,
            "scenario": scenario,
            "messages": [_message(m) for m in messages],
        }
        # An option set to None means "not set": omit it like an absent one.
        opts = _plain(options, drop_none=True) if options else {}
        if opts:
            request["options"] = opts
        if tools:
            request["tools"] = _plain(tools)
    except RecursionError:  # bad input (a few hundred levels of nesting), not a crash
        raise ValueError("the request is nested too deeply to be part of a cache key") from None
    if trial:
        request["trial"] = trial
    return request


# Option fields that hold prompt text, normalised like a message's: the Responses API's
# `instructions`, the Messages API's `system` (a string or a list of text blocks).
_PROMPT_OPTIONS = ("instructions", "system")


def build_sdk_request(
    *, api: str, provider: str, model: str, scenario: str, body: Mapping[str, Any], trial: int = 0
) -> dict[str, Any]:
    """The canonical request of one call an SDK sent to `api` (see `runner.providers`), keyed
    like a chat call's but marked `"api": api`, so a chat call's key is what it always was: the
    conversation (`input` for the Responses and Embeddings APIs, `contents` for Gemini's), the
    tools, and every other field of `body` but `model` as options, with prompt texts normalised
    as in messages."""
    from cachelint.runner import providers  # a chat run never loads the other APIs' modules

    field = providers.BY_NAME[api].CONVERSATION
    options = {k: v for k, v in body.items() if k not in ("model", field, "tools")}
    for name in _PROMPT_OPTIONS:
        if name in options:
            options[name] = _prompt(options[name])
    tools = body.get("tools")
    request = build_request(
        provider=provider,
        model=model,
        scenario=scenario,
        messages=(),
        options=options,
        tools=tools if isinstance(tools, list) else None,
        trial=trial,
    )
    del request["messages"]
    if field not in body:  # a body another way (InvokeModel's other model families)
        return {"api": api, **request}
    try:
        request[field] = _conversation(body[field])
    except RecursionError:  # bad input, not a crash
        raise ValueError("the request is nested too deeply to be part of a cache key") from None
    return {"api": api, **request}


def _conversation(given: Any) -> Any:
    """A conversation as keyed: a text normalised, a list's messages and texts normalised (the
    Embeddings API's input is a list of texts), anything else as plain JSON."""
    if isinstance(given, str):
        return normalise_text(given)
    if not isinstance(given, list):
        return _plain(given)
    return [
        _message(item)
        if isinstance(item, Mapping)
        else normalise_text(item)
        if isinstance(item, str)
        else _plain(item)
        for item in given
    ]


def _prompt(value: Any) -> Any:
    if isinstance(value, str):
        return normalise_text(value)
    if isinstance(value, list):  # text blocks
        return _message({"content": value})["content"]
    return value


# ---- explaining a miss --------------------------------------------------------------------------

_TOP_ORDER = (
    "format",
    "api",
    "provider",
    "model",
    "scenario",
    "trial",
    "messages",
    "input",
    "contents",
    "options",
    "tools",
)
_CONVERSATIONS = ("messages", "input", "contents")  # lists whose items are labelled by role
_MAX_REPR = 80
_MAX_TEXT_LINES = 8  # per changed text; a rewritten prompt should not flood the miss message


def _short(value: Any) -> str:
    text = repr(value)
    if len(text) > _MAX_REPR:
        text = text[: _MAX_REPR - 3] + "..."
    return text


def _is_long_text(a: Any, b: Any) -> bool:
    return (
        isinstance(a, str)
        and isinstance(b, str)
        and ("\n" in a or "\n" in b or len(a) > _MAX_REPR or len(b) > _MAX_REPR)
    )


def _text_diff(label: str, old: str, new: str) -> list[str]:
    old_lines, new_lines = old.split("\n"), new.split("\n")
    if len(old_lines) == 1 and len(new_lines) == 1:
        # One long line: name the first differing character rather than print both in full.
        pos = next(
            (i for i, (x, y) in enumerate(zip(old, new, strict=False)) if x != y),
            min(len(old), len(new)),
        )
        start = max(0, pos - 20)
        return [
            f"{label}: differs at character {pos + 1}: "
            f"{_short(old[start : pos + 40])} -> {_short(new[start : pos + 40])}"
        ]
    import difflib  # like closeness, only for a miss: a replay that hits never loads it

    lines: list[str] = []
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        paired = min(i2 - i1, j2 - j1) if tag == "replace" else 0
        for k in range(paired):
            lines.append(
                f"{label}: line {j1 + k + 1}: "
                f"{_short('- ' + old_lines[i1 + k])} -> {_short('+ ' + new_lines[j1 + k])}"
            )
        for k in range(i1 + paired, i2):
            lines.append(f"{label}: line {k + 1} removed: {_short('- ' + old_lines[k])}")
        for k in range(j1 + paired, j2):
            lines.append(f"{label}: line {k + 1} added: {_short('+ ' + new_lines[k])}")
    if len(lines) > _MAX_TEXT_LINES:
        more = len(lines) - _MAX_TEXT_LINES
        lines = [*lines[:_MAX_TEXT_LINES], f"{label}: ... and {more} more changed line(s)"]
    return lines


def _message_label(path: str, index: int, message: Any) -> str:
    role = message.get("role") if isinstance(message, Mapping) else None
    return f"{path}[{index}] ({role})" if isinstance(role, str) else f"{path}[{index}]"


def _same(a: Any, b: Any) -> bool:
    # JSON equality: 1 == True in Python but not in the canonical request.
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _diff(path: str, old: Any, new: Any, out: list[str]) -> None:
    if _same(old, new):
        return
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        # The top level reads best in request order (model before messages); below, sorted.
        keys = [k for k in _TOP_ORDER if k in old or k in new] if path == "" else []
        keys += sorted((set(old) | set(new)) - set(keys), key=str)
        for key in keys:
            sub = f"{path}.{key}" if path else str(key)
            if key not in new:
                out.append(f"{sub}: removed (was {_short(old[key])})")
            elif key not in old:
                out.append(f"{sub}: added {_short(new[key])}")
            else:
                _diff(sub, old[key], new[key], out)
        return
    if isinstance(old, list) and isinstance(new, list):
        is_messages = path in _CONVERSATIONS
        for i in range(max(len(old), len(new))):
            if i >= len(new):
                label = _message_label(path, i, old[i]) if is_messages else f"{path}[{i}]"
                out.append(f"{label}: removed (was {_short(old[i])})")
            elif i >= len(old):
                label = _message_label(path, i, new[i]) if is_messages else f"{path}[{i}]"
                out.append(f"{label}: added {_short(new[i])}")
            elif not _same(old[i], new[i]):
                label = _message_label(path, i, new[i]) if is_messages else f"{path}[{i}]"
                if is_messages and _content_only_change(old[i], new[i]):
                    _diff_content(label, old[i]["content"], new[i]["content"], out)
                else:
                    _diff(label, old[i], new[i], out)
        return
    if _is_long_text(old, new):
        out.extend(_text_diff(path, old, new))
        return
    out.append(f"{path}: {_short(old)} -> {_short(new)}")


def _content_only_change(old: Any, new: Any) -> bool:
    if not (isinstance(old, Mapping) and isinstance(new, Mapping)):
        return False
    if "content" not in old or "content" not in new:
        return False
    rest_old = {k: v for k, v in old.items() if k != "content"}
    rest_new = {k: v for k, v in new.items() if k != "content"}
    return _same(rest_old, rest_new)


def _diff_content(label: str, old: Any, new: Any, out: list[str]) -> None:
    # The content is what changes most; label it by the message, not by ".content".
    if isinstance(old, str) and isinstance(new, str):
        if _is_long_text(old, new):
            out.extend(_text_diff(label, old, new))
        else:
            out.append(f"{label}: {_short(old)} -> {_short(new)}")
    else:
        _diff(f"{label}.content", old, new, out)


def request_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """Human lines saying what changed from the recorded request `old` to the wanted `new`, e.g.
    "model: 'a' -> 'b'", "options.temperature: 0 -> 0.2",
    "messages[0] (system): line 3: '- Be brief.' -> '+ Be concise.'". Empty when equal."""
    out: list[str] = []
    _diff("", old, new, out)
    return out


# ---- picking the closest recorded request -------------------------------------------------------


def _leaves(value: Any, path: str, out: dict[str, Any]) -> None:
    if isinstance(value, Mapping) and value:
        for k, v in value.items():
            _leaves(v, f"{path}.{k}", out)
    elif isinstance(value, list) and value:
        for i, v in enumerate(value):
            _leaves(v, f"{path}[{i}]", out)
    else:
        out[path] = value


def _leaf_similarity(a: Any, b: Any) -> float:
    if _same(a, b):
        return 1.0
    if isinstance(a, str) and isinstance(b, str):
        import difflib  # a miss message's closest entry: a replay that hits never loads it

        if "\n" in a or "\n" in b:
            # Line granularity keeps this linear-ish on long prompts.
            return difflib.SequenceMatcher(None, a.split("\n"), b.split("\n")).ratio()
        return difflib.SequenceMatcher(None, a, b).ratio()
    return 0.0


def closeness(a: Mapping[str, Any], b: Mapping[str, Any]) -> float:
    """Similarity of two requests in [0, 1]: 1.0 only when equal. Leaves (e.g. `options.seed`,
    `messages[0].content`) are compared pairwise; texts count by how much of them matches."""
    if _same(a, b):
        return 1.0
    left: dict[str, Any] = {}
    right: dict[str, Any] = {}
    _leaves(a, "", left)
    _leaves(b, "", right)
    paths = set(left) | set(right)
    if not paths:
        return 1.0
    total = sum(_leaf_similarity(left[p], right[p]) for p in paths if p in left and p in right)
    # Never 1.0 for different requests, even when every leaf is nearly equal.
    return min(total / len(paths), 0.999)
