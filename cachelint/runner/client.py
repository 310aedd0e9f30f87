"""The caching chat client: every model call of a scenario goes through the committed cache.

A target (the plain chat call, or a team's own agent code) receives a `CachingClient` and calls
`chat(messages, options=..., tools=...)` as it would call a provider SDK. Each call becomes one
canonical request (`build_request`), one key (`cache_key`) and one entry directory
`<cache root>/cache/<scenario identity>/<key prefix>/`. The mode decides what a miss does:

- replay (default): the transport is an `OfflineRefuser`, so no socket can be opened; a miss raises
  `CacheMiss` whose message names the scenario, the key, the entry path looked for, the closest
  recorded request and what differs, the re-record command and the credentials it will read
  (modelled on vcrpy's closest-match listing, the one miss message users call helpful).
- auto: hits replay, misses are called live and recorded.
- live: every call is made live and recorded (re-record).
- off: every call is made live and nothing is recorded.
"""

from __future__ import annotations

import os
import stat
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, NoReturn, Protocol

from cachelint.canonical import cache_key
from cachelint.confine import check_entry_dir
from cachelint.errors import CachelintError, parse_choice
from cachelint.jsontext import lone_surrogate
from cachelint.runner.request import (
    build_request,
    build_sdk_request,
    closeness,
    request_diff,
)
from cachelint.store import (
    ENTRY_FILE,
    Store,
    format_time,
)


class Mode(str, Enum):
    REPLAY = "replay"
    AUTO = "auto"
    LIVE = "live"
    OFF = "off"

    @property
    def records(self) -> bool:
        return self in (Mode.AUTO, Mode.LIVE)

    @property
    def calls_live(self) -> bool:
        return self is not Mode.REPLAY


def parse_mode(value: str) -> Mode:
    """The mode named on the command line; a typo is a usage error, never another mode."""
    return parse_choice(Mode, value, option="--cache", what="a cache mode")


class CompletionLike(Protocol):
    @property
    def response(self) -> Any: ...

    @property
    def latency_s(self) -> float: ...


class Transport(Protocol):
    def complete(
        self, body: Mapping[str, Any], route: str = ..., headers: Mapping[str, str] | None = ...
    ) -> CompletionLike:
        """One call: `body` POSTed to `route` under the target's url (by default
        "chat/completions"), with these request `headers` besides the transport's own."""


class LiveCallRefused(CachelintError):
    """Raised by the offline refuser: a replay run tried to reach a provider."""


class OfflineRefuser:
    """Stands in for the real transport in replay mode, so a bug can never open a socket."""

    def complete(self, *call: object, **options: object) -> NoReturn:
        """Refuses any call, whatever its route and headers."""
        raise LiveCallRefused(
            "replay mode refuses live model calls; rerun with --cache auto or --refresh-cache "
            "to record"
        )


class CacheMiss(CachelintError):
    """A request with no recorded answer in replay mode: the scenario fails, it is never skipped."""


@dataclass(frozen=True)
class Recorder:
    """What a re-record will use, so a miss message can tell the person exactly what to run."""

    command: str  # e.g. "cachelint run --scenario support/acme/refund --refresh-cache"
    url: str
    api_key_env: str
    env_file: str | None


@dataclass(frozen=True)
class CallRecord:
    purpose: str  # "target" or "judge:<metric>"
    key: str
    entry: str  # repo-relative entry directory
    hit: bool
    latency_s: float  # recorded provider latency for a live call, lookup time for a hit
    usage: Mapping[str, Any] | None
    messages: tuple[Mapping[str, Any], ...]
    response: Any
    model: str | None = None  # the model the call asked for: what its usage is priced at
    # The tools the call declared (the canonical request's): what tool-call-schema checks against.
    tools: tuple[Mapping[str, Any], ...] = ()


@dataclass
class CachingClient:
    store: Store
    scenario: str  # identity, e.g. "support/acme/refund"
    trial: int
    mode: Mode
    transport: Transport
    provider: str
    model: str
    recorder: Recorder
    repo_prefix: str = ""  # the cache root relative to the repo, for messages ("eval-cache")
    purpose: str = "target"
    # The target's `params`: sent with every call and part of its key, under the call's options.
    params: Mapping[str, Any] = field(default_factory=dict)
    # The cache endpoint serving this client over HTTP (`base_url`), when the target needs one.
    endpoint: Any = field(default=None, repr=False)
    # Key normalisers (cachelint.rewrites): applied to each canonical request before it is keyed.
    normalise: tuple[Any, ...] = ()
    # Redaction rules (cachelint.redact): applied after the normalisers, before the key, and to
    # the answer before it is stored or returned, so no entry holds what they remove.
    redact: tuple[Any, ...] = ()
    # Judges: the client of [tool.cachelint.judge] target (None: this one) and custom rubrics.
    judge_client: CachingClient | None = field(default=None, repr=False)
    rubrics: Mapping[str, str] = field(default_factory=dict)
    calls: list[CallRecord] = field(default_factory=list)
    misses: list[str] = field(default_factory=list)
    # One client serves one scenario trial; the lock only matters if a target fans out threads.
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        options: Mapping[str, Any] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        model: str | None = None,
    ) -> dict[str, Any]:
        """One chat completion (an OpenAI `chat.completion` object), from the cache or live.

        `model` defaults to the target's model; the model asked for is the one in the key, the
        one called when recording and the one a replay answers for."""
        sent: list[dict[str, Any]] = [dict(m) for m in messages]
        merged = {**self.params, **(options or {})}
        return self._call(model or self.model, sent, merged, tools)

    def complete_body(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """One call as an SDK sent it (a chat-completions body without its transport fields):
        its model, messages and tools, every other field as options over the target's params."""
        options = {k: v for k, v in body.items() if k not in ("model", "messages", "tools")}
        tools = body.get("tools")
        return self._call(
            str(body["model"]),
            [dict(m) for m in body["messages"]],
            {**self.params, **options},
            tools if isinstance(tools, list) else None,
        )

    def sdk_body(
        self, api: str, body: Mapping[str, Any], headers: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """One call an SDK sent to another API than chat completions, without its transport
        fields: "responses" (OpenAI's Responses API), "embeddings" (OpenAI's), "messages"
        (Anthropic's Messages API), or one whose path names the model, which is in `body`:
        "generateContent" (Google's Gemini API), "converse" (Amazon Bedrock's), "invoke" and
        "rawPredict" (the Messages API on Bedrock and on Vertex AI).
        It is keyed by the body (`request.build_sdk_request`) and the request `headers` that
        change the answer (Anthropic's beta flags), and sent upstream as it is; the target's
        `params` are chat-completions options and are not added."""
        model = str(body["model"])
        keyed = dict(body)
        if headers:
            keyed["headers"] = dict(headers)
        request = build_sdk_request(
            api=api,
            provider=self.provider,
            model=model,
            scenario=self.scenario,
            body=keyed,
            trial=self.trial,
        )
        from cachelint.runner import providers  # a chat run never loads the other APIs' modules

        module = providers.BY_NAME[api]
        route, upstream = module.upstream(body)
        return self._answer(
            request,
            model,
            module.as_messages(body),
            lambda: self.transport.complete(upstream, route, headers),
        )

    def keyed_call(
        self,
        request: Mapping[str, Any],
        *,
        model: str,
        sent: Sequence[Mapping[str, Any]],
        call_live: Callable[[], CompletionLike],
    ) -> dict[str, Any]:
        """One call keyed by a canonical `request` its target built (the http target's,
        `runner.httptarget`): from the cache, or `call_live()` recorded, as the mode decides."""
        return self._answer(request, model, [dict(m) for m in sent], call_live)

    def _call(
        self,
        model: str,
        sent: list[dict[str, Any]],
        options: Mapping[str, Any],
        tools: Sequence[Mapping[str, Any]] | None,
    ) -> dict[str, Any]:
        request = build_request(
            provider=self.provider,
            model=model,
            scenario=self.scenario,
            messages=sent,
            options=options or None,
            tools=tools or None,
            trial=self.trial,
        )
        body = _body(model, sent, options, tools)
        return self._answer(request, model, sent, lambda: self.transport.complete(body))

    def _answer(
        self,
        request: Mapping[str, Any],
        model: str,
        sent: list[dict[str, Any]],
        call_live: Callable[[], CompletionLike],
    ) -> dict[str, Any]:
        """The response to `request`: from the cache, or from `call_live()` (recorded when the
        mode records), as the mode decides. `sent` is the conversation, for the run's records."""
        request, sent = self._rewritten(request, sent)
        key = cache_key(request)
        inside = self.store.entry_relpath(self.scenario, key)
        entry = f"{self.repo_prefix}/{inside}" if self.repo_prefix else inside
        _check_entry_dir(self.store, inside, entry)
        if self.mode in (Mode.REPLAY, Mode.AUTO):
            started = time.perf_counter()
            hit = self.store.get(self.scenario, key)
            if hit is not None:
                response = hit.response
                if not isinstance(response, dict):
                    raise CachelintError(
                        f"{entry}/contents.data: recorded response is not a JSON object; "
                        f"re-record with `{self.recorder.command}`"
                    )
                if hit.may_hold_surrogate:
                    where = f"{entry}/contents.data"
                    _refuse_lone_surrogate(response, where, self.recorder.command)
                if self.redact:  # an entry recorded before a rule: `check` reports it
                    response = _redacted_answer(self.redact, response)
                latency = time.perf_counter() - started
                self._record(key, entry, True, latency, sent, response, model, request)
                return response
            if self.mode is Mode.REPLAY:
                message = self.miss_message(key, request, model=model)
                with self._lock:
                    self.misses.append(message)
                raise CacheMiss(message)
        completion = call_live()
        response = completion.response
        if not isinstance(response, dict):
            raise CachelintError(f"{self.recorder.url}: response is not a JSON object")
        _refuse_lone_surrogate(response, f"{self.recorder.url} response", "")
        if self.redact:  # stored and returned redacted: the target sees what a replay gives
            response = _redacted_answer(self.redact, response)
        if self.mode.records:
            from cachelint.secretscan import refuse_key_in_recording

            refuse_key_in_recording(
                getattr(self.transport, "api_key", None),
                f"scenario {self.scenario}: {entry}",
                request,
                response,
                source=f"${self.recorder.api_key_env}",
            )
            self.store.put(
                self.scenario, key, request, response, provider=self.provider, model=model
            )
        self._record(key, entry, False, completion.latency_s, sent, response, model, request)
        return response

    def _rewritten(
        self, request: Mapping[str, Any], sent: list[dict[str, Any]]
    ) -> tuple[Mapping[str, Any], list[dict[str, Any]]]:
        """The request as keyed and stored, and the conversation as reported: normalised
        (`normalise`), then redacted (`redact`), the same at record and at replay. Their modules
        load only here: a config with rules has loaded them already (`config._rewrites`)."""
        if self.normalise:
            from cachelint.rewrites import apply as apply_rewrites

            request = apply_rewrites(self.normalise, request)
        if self.redact:
            from cachelint.redact import messages as redact_messages
            from cachelint.redact import request as redact_request

            request = redact_request(self.redact, request)
            sent = redact_messages(self.redact, sent)
        return request, sent

    # ---- for code written against a provider SDK (the cache endpoint) ----------------------

    @property
    def base_url(self) -> str:
        """This scenario trial's OpenAI-compatible base URL on the cache endpoint (127.0.0.1):
        `OpenAI(base_url=client.base_url, api_key=client.api_key)`."""
        return self._endpoint().base_url(self)

    @property
    def anthropic_base_url(self) -> str:
        """The same base URL without its `/v1`, where Anthropic's SDKs append `/v1/messages`:
        `Anthropic(base_url=client.anthropic_base_url, api_key=client.api_key)`."""
        return self.base_url.removesuffix("/v1")

    @property
    def gemini_base_url(self) -> str:
        """The same base URL without its `/v1`, where Google's SDK appends
        `/<version>/models/<model>:generateContent`: `genai.Client(api_key=client.api_key,
        http_options={"base_url": client.gemini_base_url})`."""
        return self.base_url.removesuffix("/v1")

    @property
    def bedrock_endpoint_url(self) -> str:
        """The same base URL without its `/v1`, where boto3 appends `/model/<model id>/converse`
        (and the anthropic SDK's `AnthropicBedrock` `/model/<model id>/invoke`):
        `boto3.client("bedrock-runtime", endpoint_url=client.bedrock_endpoint_url,
        aws_access_key_id=client.api_key, aws_secret_access_key="unused", region_name=...)`."""
        return self.base_url.removesuffix("/v1")

    @property
    def azure_endpoint(self) -> str:
        """The same base URL without its `/v1`, where Azure OpenAI's clients append
        `/openai/deployments/<deployment>/...`: `AzureOpenAI(azure_endpoint=client.azure_endpoint,
        api_key=client.api_key, api_version=...)`."""
        return self.base_url.removesuffix("/v1")

    @property
    def api_key(self) -> str:
        """The key to give the SDK: a per-run placeholder the endpoint checks, never the real key
        (which stays with cachelint and is read only when recording)."""
        from cachelint.runner.endpoint import PLACEHOLDER_KEY

        return self.endpoint.token if self.endpoint is not None else PLACEHOLDER_KEY

    def http_client(self, library: str | None = None, *, asynchronous: bool = False) -> Any:
        """An httpx2 or httpx client (`library`; by default the one the installed `openai` SDK
        is built on) whose transport answers from this client in-process, with no socket:
        `OpenAI(base_url=client.base_url, api_key=client.api_key, http_client=...)`."""
        from cachelint.runner.endpoint import http_client

        return http_client(self, library=library, asynchronous=asynchronous)

    def expect(self, *specs: Mapping[str, Any], answer: Any = None) -> None:
        """In a pytest test, assert dataset assertions (docs/assertions.md) over the calls made
        so far: `cachelint.expect({"type": "trajectory:tool-called", "name": "lookup_order"})`.
        Output checks see `answer` (a string or a provider's response), else the last call's."""
        from cachelint.runner.assertions.expect import expect

        expect(specs, list(self.calls), answer)

    def _endpoint(self) -> Any:
        if self.endpoint is None:
            raise CachelintError(
                "this client is not served by a cache endpoint; the base_url of a python "
                "target's client exists while `cachelint run` runs it"
            )
        return self.endpoint

    def _record(
        self,
        key: str,
        entry: str,
        hit: bool,
        latency: float,
        messages: list[dict[str, Any]],
        response: dict[str, Any],
        model: str | None = None,
        request: Mapping[str, Any] | None = None,
    ) -> None:
        usage = response.get("usage", response.get("usageMetadata"))  # Gemini's name
        tools = (request or {}).get("tools")
        record = CallRecord(
            purpose=self.purpose,
            key=key,
            entry=entry,
            hit=hit,
            latency_s=latency,
            usage=usage if isinstance(usage, dict) else None,
            messages=tuple(messages),
            response=response,
            model=model,
            tools=tuple(t for t in tools if isinstance(t, Mapping))
            if isinstance(tools, list)
            else (),
        )
        with self._lock:
            self.calls.append(record)

    def _rel(self, directory: Any) -> str:
        inside = directory.relative_to(self.store.root).as_posix()
        return f"{self.repo_prefix}/{inside}" if self.repo_prefix else inside

    def miss_message(
        self, key: str, request: Mapping[str, Any], *, model: str | None = None
    ) -> str:
        """The replay miss, in the words a person needs to fix it (tests check it word by word)."""
        looked = f"{self._rel(self.store.entry_dir(self.scenario, key))}/{ENTRY_FILE}"
        lines = [
            f"cache miss in replay mode: scenario {self.scenario} has no recorded answer for "
            f"key {key}",
            f"  looked for: {looked}",
        ]
        recorded = [e for e in self.store.entries(self.scenario) if e.request is not None]
        if recorded:
            best = max(recorded, key=lambda e: closeness(e.request or {}, request))
            when = f", recorded {format_time(best.created)}" if best.created else ""
            where = f"{self.repo_prefix}/{best.directory}" if self.repo_prefix else best.directory
            lines.append(
                f"  closest recorded request ({len(recorded)} recorded for this scenario): "
                f"{where}/{ENTRY_FILE}{when}"
            )
            changes = request_diff(best.request or {}, request)
            lines.append("  what changed (recorded -> now):")
            lines.extend(f"    {change}" for change in changes or [_same_request(best, key)])
        else:
            lines.append("  closest recorded request: none, nothing is recorded for this scenario")
        credentials = f"${self.recorder.api_key_env}"
        if self.recorder.env_file:
            credentials += f" (else the credential file {self.recorder.env_file})"
        lines.append(f"  to re-record: {self.recorder.command}")
        lines.append(
            f"  it calls {self.recorder.url} as provider {self.provider!r}, model "
            f"{model or self.model!r}, reading the API key from {credentials}"
        )
        return "\n".join(lines)


def _body(
    model: str,
    messages: list[dict[str, Any]],
    options: Mapping[str, Any] | None,
    tools: Sequence[Mapping[str, Any]] | None,
) -> dict[str, Any]:
    """The chat-completions request body; options sit beside model/messages as the API wants."""
    body: dict[str, Any] = dict(options or {})
    body["model"] = model
    body["messages"] = messages
    if tools:
        body["tools"] = [dict(t) for t in tools]
    return body


# Per store (one per run): tenant directories `cache/<agent>/<tenant>` found to be real
# directories, with no link on the way, earlier in this run. The links refused are committed
# ones, present before the run starts; the scenario and entry directories below are still looked
# at on every call.
_LINK_FREE: weakref.WeakKeyDictionary[Store, set[str]] = weakref.WeakKeyDictionary()


def _check_entry_dir(store: Store, inside: str, entry: str) -> None:
    """`confine.check_entry_dir` for `cache/<agent>/<tenant>/<name>/<prefix>`, walking the
    components above the scenario directory once per tenant instead of once per call."""
    tenant_dir = inside.rsplit("/", 2)[0]
    verified = _LINK_FREE.setdefault(store, set())
    below = f"{os.fspath(store.root)}/{tenant_dir}"
    if tenant_dir in verified:
        check_entry_dir(below, inside[len(tenant_dir) + 1 :], entry)
        return
    check_entry_dir(store.root, inside, entry)
    try:
        if stat.S_ISDIR(os.lstat(below).st_mode):
            verified.add(tenant_dir)
    except OSError:
        pass  # not there yet (a miss, or recording creates it): looked at again next call


def _redacted_answer(rules: Sequence[Any], response: Any) -> Any:
    from cachelint.redact import answer  # loaded by the config that has redaction rules

    return answer(rules, response)


def _refuse_lone_surrogate(response: Any, where: str, command: str) -> None:
    bad = lone_surrogate(response)
    if bad is not None:
        fix = f"; re-record with `{command}`" if command else "; the provider sent invalid text"
        raise CachelintError(f"{where}: holds a lone surrogate {bad}, which is not text{fix}")


def _same_request(best: Any, key: str) -> str:
    """What differs when the closest recorded request reads the same as the wanted one: then
    the keys differ for a reason the request's text does not show."""
    stored = cache_key(best.request)
    if best.key != stored:
        return (
            f"(the request is the same; the entry's key {best.key} is not its request's hash "
            f"{stored}: entry.json was edited or is corrupt, and a key that shares the "
            "directory's prefix is never answered from it; re-record the scenario)"
        )
    if stored == key:
        return (
            f"(the request and its key {key} are the ones recorded, but the entry sits in "
            f"{best.directory}, not where this key is looked for: was `key-prefix` changed "
            "since it was recorded? re-record the scenario)"
        )
    return (
        f"(the request reads the same, but its canonical bytes hash to {stored}, not {key}: a "
        "value's JSON type differs, e.g. 1 and 1.0, which the lines above would not show)"
    )
