"""Property tests: random JSON (lone surrogates, deep nesting, huge numbers) never crashes the
store's read path, the canonical request or the dataset loader; only their own errors come out."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import blake3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cachelint.canonical import cache_key, canonical_bytes
from cachelint.errors import CachelintError
from cachelint.runner.dataset import load_scenarios, parse_scenario
from cachelint.runner.request import build_request
from cachelint.store import Store

NOW = datetime(2026, 1, 15, tzinfo=timezone.utc)
SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

# Text that includes lone surrogates: valid JSON escapes, not valid UTF-8.
texts = st.text(alphabet=st.characters(codec=None), max_size=20) | st.sampled_from(
    ["\ud83d", "a\udc00b", "\u202e", "\x1b[31m"]
)
numbers = st.integers(min_value=-(10**30), max_value=10**30) | st.floats(allow_nan=False)
scalars = st.none() | st.booleans() | numbers | texts
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=20,
)


def nested(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"a": value}
    return value


deep_values = st.integers(min_value=400, max_value=3000).map(nested)
any_json = json_values | deep_values


def encode(value: Any) -> bytes:
    """JSON bytes as a file would hold them (lone surrogates as \\u escapes)."""
    try:
        return json.dumps(value, ensure_ascii=True).encode("ascii")
    except RecursionError:
        return b"[" * 100_000 + b"]" * 100_000


@SETTINGS
@given(entry=any_json, contents=any_json)
def test_store_read_path_only_raises_its_own_errors(
    tmp_path_factory: Any, entry: Any, contents: Any
) -> None:
    root = tmp_path_factory.mktemp("store")
    store = Store(root, clock=lambda: NOW)
    key = "ab" * 32
    directory = root / store.entry_relpath("a/b/c", key)
    directory.mkdir(parents=True)
    raw = encode(contents)
    (directory / "contents.data").write_bytes(raw)
    if isinstance(entry, dict):
        # Half the time a well-formed envelope, so the contents are really decoded.
        entry = {
            "format": 1,
            "key": key,
            "scenario": "a/b/c",
            "provider": "p",
            "model": "m",
            "created": "2026-01-01T00:00:00Z",
            "expires": "2027-01-01T00:00:00Z",
            "contents": blake3.blake3(raw).hexdigest(),
            "request": entry,
        }
    (directory / "entry.json").write_bytes(encode(entry))
    try:
        store.get("a/b/c", key)
    except CachelintError:
        pass
    try:
        store.entries("a/b/c")
    except CachelintError:
        pass


@SETTINGS
@given(messages=any_json, options=any_json, tools=any_json)
def test_canonical_request_only_raises_value_error(messages: Any, options: Any, tools: Any) -> None:
    try:
        request = build_request(
            provider="p",
            model="m",
            scenario="a/b/c",
            messages=[{"role": "user", "content": m} for m in messages]
            if isinstance(messages, list)
            else [{"role": "user", "content": messages}],
            options=options if isinstance(options, dict) else {"x": options},
            tools=tools if isinstance(tools, list) else None,
        )
        key = cache_key(request)
    except ValueError:
        return
    assert len(key) == 64
    try:
        again = json.loads(canonical_bytes(request))
    except RecursionError:  # deeper than the stdlib decoder goes; the key itself was made
        return
    if not _has_big_number(again):  # 2.0**53 is written as 9007199254740992, read back an int
        assert canonical_bytes(again) == canonical_bytes(request)


def _has_big_number(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, int) and not isinstance(item, bool) and abs(item) > 2**53 - 1:
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


@SETTINGS
@given(data=any_json, extra=any_json)
def test_dataset_parser_only_raises_cachelint_errors(data: Any, extra: Any) -> None:
    candidates = [data, {"input": "hi", "options": extra, "assert": [{"type": "contains"}]}]
    candidates.append({"messages": [{"role": "user", "content": data}], "assert": extra})
    for value in candidates:
        try:
            parse_scenario(Path("/nonexistent"), "a/b/c", "d/a/b/c.json", value)
        except CachelintError:
            pass


@SETTINGS
@given(data=any_json)
def test_dataset_loader_on_files_only_raises_cachelint_errors(
    tmp_path_factory: Any, data: Any
) -> None:
    repo = tmp_path_factory.mktemp("repo")
    path = repo / "eval-datasets/a/b/c.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(encode({"input": "hi", "options": data, "assert": [data]}))
    try:
        load_scenarios(repo, "eval-datasets")
    except CachelintError:
        pass


# Every route the cache endpoint serves, with the field each takes its conversation from.
ROUTES = {
    "/v1/chat/completions": "messages",
    "/openai/deployments/gpt-4o/chat/completions": "messages",
    "/v1/responses": "input",
    "/v1/embeddings": "input",
    "/v1/messages": "messages",
    "/v1beta/models/m:generateContent": "contents",
    "/v1beta/models/m:streamGenerateContent": "contents",
    "/model/m/converse": "messages",
    "/model/m/converse-stream": "messages",
}
requests = st.one_of(
    any_json,
    st.builds(
        lambda route, model, turns, extra: (route, {**extra, "model": model, ROUTES[route]: turns}),
        st.sampled_from(sorted(ROUTES)),
        texts,
        st.lists(st.dictionaries(texts, json_values, max_size=4), max_size=3),
        st.dictionaries(texts, json_values, max_size=3),
    ),
)


@SETTINGS
@given(request=requests, route=st.sampled_from(sorted(ROUTES)))
def test_the_endpoint_answers_any_request_body_with_a_client_error(
    tmp_path: Path, request: Any, route: str
) -> None:
    from cachelint.runner.client import Mode, OfflineRefuser
    from cachelint.runner.endpoint import answer
    from tests.helpers import direct_client

    if isinstance(request, tuple):
        route, body = request
    else:
        body = request
    client = direct_client(tmp_path, Mode.REPLAY, OfflineRefuser())
    status, _, data = answer(client, "POST", route, encode(body))
    # A body the API does not take is a 400, a well-formed one a miss: never the 500 that an
    # unexpected failure inside the endpoint turns into.
    assert status in (400, 404), (status, data[:300])
    json.loads(data)


# What a recording can hold: JSON whose text is text (a provider's answer with a lone surrogate is
# refused when recording, and `check` reports one in a committed entry).
recordable_texts = st.text(alphabet=st.characters(codec="utf-8"), max_size=20)
recordable = st.recursive(
    st.none() | st.booleans() | numbers | recordable_texts,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(recordable_texts, inner, max_size=4)
    ),
    max_leaves=20,
)
answers = st.dictionaries(recordable_texts, recordable, max_size=4)


@SETTINGS
@given(answer=answers, inner=st.lists(recordable, max_size=4), outer=recordable)
def test_any_recorded_answer_streams_and_reads_as_an_output(
    answer: dict[str, Any], inner: list[Any], outer: Any
) -> None:
    from cachelint.runner import providers
    from cachelint.runner.endpoint import sse_stream
    from cachelint.runner.output import output_from_value

    # What the transport lets into the cache: the answer field of its API, of the right type.
    chat = {**answer, "choices": inner}
    assert sse_stream(chat, include_usage=True).endswith(b"data: [DONE]\n\n")
    candidates = [chat]
    for api in providers.SDK_APIS:
        value = inner if api.ANSWER_TYPE is list else {"message": {"content": inner}, "x": outer}
        recorded = {**answer, api.ANSWER_FIELD: value} if api.ANSWER_FIELD else answer
        candidates.append(recorded)
        if api.event_stream is not None:
            assert isinstance(api.event_stream(recorded), bytes)
    for value in candidates:  # what a target returns: read, or refused with a CachelintError
        try:
            output_from_value(value)
        except CachelintError:
            pass
