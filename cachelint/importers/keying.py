"""Keying recorded calls exactly as a replay will look for them.

A recorded request is handed to the cache endpoint's own `answer` (the function that answers an
SDK's request during `cachelint run`), for a caching client in record mode whose upstream is the
recorded answer and whose store only notes what it would write. So an imported entry has the key
the endpoint computes for the same request: the route decides the API (chat completions,
Responses, embeddings, Anthropic's Messages, Gemini's generateContent, Bedrock, Azure
deployments), the transport fields (`stream`, `user`, `metadata`) are left out, the model in a
path is the model keyed, Anthropic's beta header is part of the key, and the target's `params`
are merged as the endpoint merges them. Nothing here writes: `write_plan` does, through
`Store.put`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from cachelint.config import Config, TargetConfig
from cachelint.errors import CachelintError
from cachelint.importers import Recorded, Skipped
from cachelint.masks import redact_url
from cachelint.secretscan import Allowlist, describe, secrets_in
from cachelint.store import Store

_MODEL_CALL_APIS = (
    "OpenAI-compatible chat completions, Responses or embeddings, Anthropic Messages, Gemini "
    "generateContent, Bedrock Converse/InvokeModel, Claude on Vertex AI"
)


@dataclass(frozen=True)
class Planned:
    """One entry to write: `Store.put`'s arguments, and where the call came from."""

    source: str
    scenario: str
    key: str
    request: Mapping[str, Any]
    response: Any
    provider: str
    model: str


class _Noting(Store):
    """A store that notes the entry a recording would write instead of writing it."""

    def __init__(self, root: Path, key_prefix: int) -> None:
        super().__init__(root, key_prefix=key_prefix)
        self.noted: list[tuple[str, str, Mapping[str, Any], Any, str, str]] = []

    def put(
        self,
        scenario: str,
        key: str,
        request: Mapping[str, Any],
        response: Any,
        *,
        provider: str,
        model: str,
    ) -> Path:
        self.noted.append((scenario, key, request, response, provider, model))
        return self.entry_dir(scenario, key)


@dataclass(frozen=True)
class _Completion:
    response: Any
    latency_s: float = 0.0


class _Recorded:
    """The upstream of an import: answers with what was recorded, after checking it is an
    answer of the API the request called (an error body saved with status 200 is not)."""

    api_key = None

    def __init__(self, answer: Any) -> None:
        self.answer = answer

    def complete(
        self,
        body: Mapping[str, Any],
        route: str = "chat/completions",
        headers: Mapping[str, str] | None = None,
    ) -> _Completion:
        from cachelint.runner.providers.transport import answer_shape

        field, kind, wanted = answer_shape(route)
        answer = self.answer
        if not isinstance(answer, dict) or (
            field is not None and not isinstance(answer.get(field), kind)
        ):
            raise CachelintError(f"the recorded answer is not {wanted}")
        return _Completion(answer)


def _error_message(data: bytes) -> str:
    try:
        value = json.loads(data)
    except ValueError:
        return data.decode("utf-8", "replace")[:200]
    error = value.get("error", value) if isinstance(value, dict) else value
    message = error.get("message") if isinstance(error, dict) else None
    return str(message if message is not None else value)


def key_call(
    call: Recorded, target: TargetConfig, store_root: Path, config: Config, trial: int
) -> Planned | Skipped:
    """The entry `call` becomes in its scenario, keyed through the cache endpoint, or why not."""
    from cachelint.runner.client import CachingClient, Mode, Recorder
    from cachelint.runner.endpoint import answer

    store = _Noting(store_root, config.key_prefix)
    client = CachingClient(
        store=store,
        scenario=call.scenario,
        trial=trial,
        mode=Mode.LIVE,
        transport=_Recorded(call.answer),
        provider=target.provider,
        model=target.model,
        recorder=Recorder("cachelint import", redact_url(call.url), target.api_key_env, None),
        repo_prefix=config.cache[0],
        params=dict(target.params),
    )
    route = urlsplit(call.url).path
    status, _, data = answer(client, call.method.upper(), route, call.body, call.headers)
    where = f"{call.method.upper()} {redact_url(call.url)}"
    if store.noted:
        scenario, key, request, response, provider, model = store.noted[0]
        return Planned(call.source, scenario, key, request, response, provider, model)
    if status == 404:
        return Skipped(call.source, f"unknown API: {where} is none of {_MODEL_CALL_APIS}")
    if status == 200:
        return Skipped(call.source, f"not a model call: {where}")
    if status == 400:
        return Skipped(
            call.source, f"{where}: not a request cachelint can key: {_error_message(data)}"
        )
    return Skipped(call.source, f"{where}: {_error_message(data)}")


def plan(
    calls: Sequence[Recorded],
    *,
    config: Config,
    target_of: Callable[[str], TargetConfig],
    trial: int,
) -> tuple[list[Planned], list[Skipped]]:
    """Every call keyed (`key_call`), then refused when what would be written holds a secret,
    and folded when two calls are the same request: the same answer twice is one entry, another
    answer to the same request is not imported (cachelint answers a request with one response)."""
    root = config.cache_roots()[0]
    allow = Allowlist(config.secret_allow)
    planned: dict[tuple[str, str], Planned] = {}
    skipped: list[Skipped] = []
    for call in calls:
        keyed = key_call(call, target_of(call.scenario), root, config, trial)
        if isinstance(keyed, Skipped):
            skipped.append(keyed)
            continue
        refusal = _secret_refusal(keyed, call.credentials, allow)
        if refusal is not None:
            skipped.append(Skipped(call.source, refusal))
            continue
        first = planned.get((keyed.scenario, keyed.key))
        if first is None:
            planned[(keyed.scenario, keyed.key)] = keyed
        elif _json(first.response) != _json(keyed.response):
            skipped.append(
                Skipped(
                    call.source,
                    f"the same request as {first.source} with another answer: cachelint answers "
                    "a request with one response, the first one recorded is imported",
                )
            )
    return list(planned.values()), skipped


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _secret_refusal(entry: Planned, credentials: Sequence[str], allow: Allowlist) -> str | None:
    """Why the entry is refused (a secret in its request or answer, masked), or None."""
    for part, value in (("request", entry.request), ("answer", entry.response)):
        found = secrets_in(
            f"{entry.scenario}/{entry.key}", _json(value), allow=allow, extra=credentials
        )
        if found:
            return (
                f"refused: the {part} holds a secret ({describe(found[0])}); it would be "
                "committed with the entry. Remove it from the cassette or re-record the call, "
                "and rotate the key"
            )
    return None
