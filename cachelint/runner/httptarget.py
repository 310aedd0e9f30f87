"""The `http` target: any HTTP/JSON endpoint (usually the team's own app), recorded and replayed
through the same cache as a chat call, keyed by EvalCore's identity rules (`httpidentity`).

One call per scenario trial: the url and body templates filled from the scenario, sent with the
static headers and, when `api-key-env` names a key, `<auth-header>: <auth-prefix><key>`. The
recorded answer is `{"status": <code>, "json": <the parsed body>}` (or `"text"` for a body that is
not JSON); the output is the value at `response-path` (a string as it is, anything else as
compact JSON), or the whole body. In replay the transport is the offline refuser, so a miss fails
the scenario and no socket is opened.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from cachelint.config import TargetConfig
from cachelint.errors import CachelintError
from cachelint.httpidentity import follow, identity, render_body, render_url, used
from cachelint.masks import redact_url
from cachelint.runner.client import CachingClient, LiveCallRefused
from cachelint.runner.dataset import Scenario
from cachelint.runner.output import Output
from cachelint.runner.providers.transport import (
    RETRYABLE_STATUS,
    Completion,
    TransportError,
    parse_retry_after,
    retry_delays,
)
from cachelint.runner.pytarget import Target
from cachelint.runner.request import FORMAT

if TYPE_CHECKING:
    import httpx

PROVIDER = "http"
EXCERPT = 200


class HttpTransport:
    """Sends one filled-in request with the target's headers and its key; deterministic retries
    on 408, 429, 5xx and connection errors, as every transport (`runner.transport`)."""

    def __init__(
        self,
        target: TargetConfig,
        api_key: str | None,
        *,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        import httpx

        self.api_key = api_key  # read by the client, which refuses a recording holding it
        self._target = target
        self._sleep = sleep
        self._client = httpx.Client(follow_redirects=False)
        self._headers = dict(target.headers)
        if api_key:
            self._headers[target.auth_header] = f"{target.auth_prefix}{api_key}"

    def send(self, url: str, body: Any) -> Completion:
        import httpx

        headers = dict(self._headers)
        payload = None
        if body is not None:
            payload = json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
            headers.setdefault("content-type", "application/json")
        where = f"{self._target.method} {redact_url(url)}"
        schedule = retry_delays(self._target.max_retries)
        for attempt in range(1, len(schedule) + 2):
            started = time.perf_counter()
            retry_after = None
            try:
                resp = self._client.request(
                    self._target.method,
                    url,
                    content=payload,
                    headers=headers,
                    timeout=self._target.timeout,
                )
            except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
                failure = f"{type(exc).__name__} (check that the server is running)"
            except httpx.HTTPError as exc:
                raise TransportError(f"{where}: {type(exc).__name__}") from None
            else:
                if resp.status_code < 300:
                    latency = time.perf_counter() - started
                    return Completion(_answer(resp), latency)
                failure = f"HTTP {resp.status_code}: {self._excerpt(resp.text)}"
                if resp.status_code not in RETRYABLE_STATUS and resp.status_code < 500:
                    raise TransportError(f"{where} failed with {failure}")
                retry_after = resp.headers.get("Retry-After")
            if attempt > len(schedule):
                break
            delay = parse_retry_after(retry_after)
            self._sleep(schedule[attempt - 1] if delay is None else delay)
        raise TransportError(f"{where} failed after {attempt} attempts: {failure}")

    def _excerpt(self, text: str) -> str:
        # Masked before it is cut: a key across the cut would leave its first part in the excerpt.
        if self.api_key:
            text = text.replace(self.api_key, "***")
        return json.dumps(text[:EXCERPT], ensure_ascii=False)

    def close(self) -> None:
        self._client.close()


def _answer(resp: httpx.Response) -> dict[str, Any]:
    try:
        return {"status": resp.status_code, "json": json.loads(resp.content)}
    except (ValueError, RecursionError):
        return {"status": resp.status_code, "text": resp.text}


def variables(scenario: Scenario) -> dict[str, str]:
    """What a template's placeholders stand for (`httpidentity`'s module docs)."""
    system = next((m for m in scenario.messages if m.get("role") == "system"), None)
    user = [m for m in scenario.messages if m.get("role") == "user"]
    return {
        "input": _text(user[-1].get("content")) if user else "",
        "system": _text(system.get("content")) if system else "",
        "scenario": scenario.identity,
        "agent": scenario.agent,
        "tenant": scenario.tenant,
        "name": scenario.name,
    }


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: their text, joined
        return "".join(p.get("text", "") for p in content if isinstance(p, Mapping))
    return "" if content is None else json.dumps(content, sort_keys=True)


def http_target(target: TargetConfig) -> Target:
    """The target calling `target` once per scenario trial through the client's cache."""
    keyed = identity(
        url=target.url,
        method=target.method,
        headers=target.headers,
        body=target.body,
        response_path=target.response_path,
    )
    names = used(target.url, target.body)

    def call(scenario: Scenario, client: CachingClient) -> Output:
        values = variables(scenario)
        request: dict[str, Any] = {
            "format": FORMAT,
            "api": PROVIDER,
            "scenario": client.scenario,
            "identity": keyed,
            "input": {name: values[name] for name in names},
        }
        if client.trial:
            request["trial"] = client.trial
        url, body = render_url(target.url, values), render_body(target.body, values)

        def live() -> Completion:
            transport = client.transport
            if not isinstance(transport, HttpTransport):
                raise LiveCallRefused(
                    "replay mode refuses live calls; rerun with --cache auto or --refresh-cache "
                    "to record"
                )
            return transport.send(url, body)

        sent = [{"role": "user", "content": values["input"]}]
        response = client.keyed_call(request, model=client.model, sent=sent, call_live=live)
        return Output(_output(response, target.response_path))

    return call


def _output(response: Mapping[str, Any], pointer: str | None) -> str:
    if "json" not in response:
        if pointer is not None:
            raise CachelintError(
                f"the answer is not JSON, so response-path {pointer!r} finds nothing in it: "
                f"{str(response.get('text', ''))[:EXCERPT]!r}"
            )
        return str(response.get("text", ""))
    document = response["json"]
    if pointer is None:
        return json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    try:
        found = follow(document, pointer)
    except LookupError:
        shown = json.dumps(document, ensure_ascii=False)[:EXCERPT]
        raise CachelintError(
            f"the answer has no value at response-path {pointer!r}: {shown}; fix response-path "
            "in the target's config"
        ) from None
    return found if isinstance(found, str) else json.dumps(found, ensure_ascii=False)
