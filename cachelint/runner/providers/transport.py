"""The live side of the runner: one chat-completions call over HTTP, with deterministic retries.

Works with any server that speaks the OpenAI chat-completions API: OpenAI, Azure OpenAI's v1 API
(`https://<resource>.openai.azure.com/openai/v1`, which accepts the OpenAI client's Bearer key and
needs no api-version; we also send Azure's own `api-key` header to *.azure.com hosts), Ollama and
vLLM (`.../v1`), LiteLLM and the scripted fake provider. The request body passes through as the
caller built it and the response comes back as parsed JSON, tool calls included.

Retries are deterministic so a recording session is reproducible and testable: 0.5 s, 1 s, 2 s,
4 s, 8 s, then 10 s, no jitter; a `Retry-After` header (seconds or HTTP-date, capped at 60 s)
replaces the scheduled delay. Only 408, 429, 5xx and connection errors/timeouts are retried; any
other status is a mistake in the request or the credentials that retrying cannot fix.

httpx is imported inside functions: `cachelint check` runs in pre-commit hooks and must not pay
for it (the CLI imports every command module, and `run` imports this one).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cachelint import __version__
from cachelint.display import sanitize
from cachelint.errors import CachelintError
from cachelint.masks import redact_url
from cachelint.runner import providers
from cachelint.runner.providers import awssign, gemini_api

if TYPE_CHECKING:
    import httpx

CHAT_ROUTE = "chat/completions"

FIRST_DELAY = 0.5
MAX_DELAY = 10.0
MAX_RETRY_AFTER = 60.0
EXCERPT_CHARS = 200
RETRYABLE_STATUS = frozenset({408, 429})

_HINTS = {
    400: "the provider rejected the request body; check model, messages and params",
    403: "the key has no access to this model or resource",
    404: "check the url (it should end in /v1) and the model or deployment name",
    408: "the provider timed out; raise timeout or retry later",
    413: "the request is too large for the provider",
    422: "the provider rejected the request body; check model, messages and params",
    429: "the provider is rate-limiting; lower concurrency, raise max-retries or retry later",
}


class TransportError(CachelintError):
    """A live call failed; one line with the URL, status, a body excerpt and what to do."""


@dataclass(frozen=True)
class Completion:
    response: dict[str, Any]  # the parsed chat.completion JSON, as the provider sent it
    latency_s: float  # of the attempt that succeeded (retry waits excluded)


def retry_delays(max_retries: int) -> list[float]:
    """The sleep before each retry when the provider gives no Retry-After."""
    return [min(FIRST_DELAY * 2**i, MAX_DELAY) for i in range(max(0, max_retries))]


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP-date), capped; else None."""
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        # An HTTP-date is rare (a rate-limited live call): email.utils and the socket module
        # it brings cost a replay's start-up about 6 ms.
        from email.utils import parsedate_to_datetime

        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None or when.tzinfo is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if seconds != seconds:  # NaN
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


# The APIs a target's url is called at, by their route (Gemini's by the method after the model
# in its path, `models/<model>:generateContent`): the field a successful answer holds (None: any
# JSON object is one), its type, and what to call the answer when that field is missing.
_ANSWER_SHAPE = {
    CHAT_ROUTE: ("choices", list, "a chat.completion (no choices list)"),
    **{
        api.ROUTE: (
            api.ANSWER_FIELD,
            api.ANSWER_TYPE,
            f"{api.ANSWER_NAME} (no {api.ANSWER_FIELD} {api.ANSWER_TYPE.__name__})"
            if api.ANSWER_FIELD
            else f"{api.ANSWER_NAME} (a JSON object)",
        )
        for api in providers.SDK_APIS
    },
}
_SIGNED_BY_AWS = frozenset(api.ROUTE for api in providers.SIGNED_BY_AWS)
# The routes that are the same for every call (those of `providers.MODEL_IN_PATH` name the model).
_FIXED_ROUTES = (CHAT_ROUTE, *(api.ROUTE for api in providers.FIXED_ROUTE))


def _api(route: str) -> str:
    """The API a route calls: itself, or what follows the model in its path
    (`models/<model>:generateContent`, `model/<model id>/converse`, `...:rawPredict`)."""
    return route if route in _ANSWER_SHAPE else re.split("[:/]", route)[-1]


def answer_shape(route: str) -> tuple[str | None, type, str]:
    """What a successful answer of the API at `route` holds: its field (None: any JSON object is
    one), that field's type, and what to call the answer when the field is missing."""
    return _ANSWER_SHAPE[_api(route)]


def _is_azure(host: str) -> bool:
    host = host.lower().rstrip(".")
    return host == "azure.com" or host.endswith(".azure.com")


def _base_url(url: str) -> httpx.URL:
    """The target's URL, or a TransportError saying why it is not one."""
    import httpx

    try:
        base = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise TransportError(f"target url {redact_url(url)!r} is not a URL: {exc}") from None
    if base.scheme not in ("http", "https") or not base.host:
        raise TransportError(
            f"target url {redact_url(url)!r} must start with http:// or https:// and name a "
            "host, e.g. https://api.openai.com/v1"
        )
    return base


def _headers(
    base: httpx.URL, api_key: str | None
) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """The headers sent with every chat call, and those sent to each API that takes its key in
    a header of its own, by route."""
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "User-Agent": f"cachelint/{__version__}",
    }
    # Anthropic's and Google's APIs take the key in a header of their own (`KEY_HEADER`),
    # but Google's for a Cloud project on Vertex AI, which takes an OAuth access token as the
    # bearer token (only express mode, with no project in the path, takes an API key).
    project_scoped = "/projects/" in base.path
    api_headers = {
        api.ROUTE: {**headers, **api.UPSTREAM_HEADERS}
        for api in providers.SDK_APIS
        if api.KEY_HEADER and not (api.KEY_HEADER == gemini_api.KEY_HEADER and project_scoped)
    }
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
        if _is_azure(base.host):
            headers["api-key"] = api_key
        for route, sent in api_headers.items():
            sent[providers.BY_NAME[route].KEY_HEADER] = api_key
    return headers, api_headers


class OpenAICompatibleTransport:
    """POSTs request bodies to `<url>/chat/completions`, `<url>/responses` (OpenAI's Responses
    API), `<url>/messages` (Anthropic's Messages API, its key sent as `x-api-key`),
    `<url>/models/<model>:generateContent` (Google's Gemini API, its key as `x-goog-api-key`),
    `<url>/model/<model id>/converse` and `/invoke` (Amazon Bedrock's Converse API, and Claude's
    Messages API there: a Bedrock API key as the bearer token, or with no key a SigV4 signature
    with the machine's AWS credentials, `awssign`) or
    `<url>/publishers/anthropic/models/<model>:rawPredict` (Claude on Vertex AI, an access token
    as the bearer token); thread-safe (one httpx.Client)."""

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None,
        params: Mapping[str, Any],
        timeout: float,
        max_retries: int,
        sleep: Callable[[float], None] = time.sleep,
        client: httpx.Client | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        env_file: str | None = None,
    ) -> None:
        import httpx

        base = _base_url(url)
        if api_key is not None and (
            not api_key.isascii() or any(c.isspace() or not c.isprintable() for c in api_key)
        ):
            raise TransportError(
                f"the API key from {self._key_source(api_key_env, env_file)} contains spaces or "
                "non-ASCII characters; copy it again"
            )
        if max_retries < 0:
            raise TransportError(f"max-retries must be >= 0, not {max_retries}")
        self._base = base
        self.endpoint = self._route_url(CHAT_ROUTE)
        self.url = url
        self.params = dict(params)
        self.max_retries = max_retries
        self._api_key = api_key
        self._api_key_env = api_key_env
        self._env_file = env_file
        self._sleep = sleep
        self._headers, self._api_headers = _headers(base, api_key)
        self._owns_client = client is None
        self._client = client if client is not None else httpx.Client(timeout=timeout)
        self._timeout = timeout

    @property
    def api_key(self) -> str | None:
        """The key sent, so recording can refuse an entry that holds it."""
        return self._api_key

    @staticmethod
    def _key_source(api_key_env: str, env_file: str | None) -> str:
        return f"{api_key_env} (environment or env-file {env_file})" if env_file else api_key_env

    def close(self) -> None:
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> OpenAICompatibleTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def complete(
        self,
        body: Mapping[str, Any],
        route: str = CHAT_ROUTE,
        headers: Mapping[str, str] | None = None,
    ) -> Completion:
        """One call to `route` (a chat completion unless told), with these request `headers`
        besides the transport's own; retries per the deterministic schedule, else
        `TransportError`."""
        import httpx

        endpoint = self._route_url(route)
        own = self._api_headers.get(_api(route), self._headers)
        sent = {**(headers or {}), **own}
        merged = {**self.params, **body}
        try:
            payload = json.dumps(merged, ensure_ascii=False, allow_nan=False).encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise TransportError(
                f"the request body for {self._where(endpoint)} is not JSON: {exc}"
            ) from None
        if not self._api_key and _api(route) in _SIGNED_BY_AWS:
            sent = awssign.signed(str(endpoint), self._base.host, payload, sent)
        schedule = retry_delays(self.max_retries)
        attempt = 0
        while True:
            attempt += 1
            started = time.perf_counter()
            retry_after: str | None = None
            try:
                resp = self._client.post(
                    endpoint, content=payload, headers=sent, timeout=self._timeout
                )
                latency = time.perf_counter() - started
            except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
                failure = f"{type(exc).__name__}: {self._redact(str(exc), endpoint) or 'no detail'}"
                hint = "check that the server is running and the url is right"
                if isinstance(exc, httpx.TimeoutException):
                    hint = f"no answer within {self._timeout:g} s; raise timeout or retry later"
            except httpx.HTTPError as exc:
                # Proxy errors, unsupported protocols: retrying cannot help.
                raise TransportError(
                    f"{self._where(endpoint)}: {type(exc).__name__}: "
                    f"{self._redact(str(exc), endpoint)}"
                ) from None
            else:
                if resp.status_code < 300:
                    return Completion(self._parse(resp, endpoint, route), latency)
                failure = f"HTTP {resp.status_code}: {self._excerpt(resp.text, endpoint)}"
                hint = self._hint(resp.status_code)
                if not (resp.status_code in RETRYABLE_STATUS or resp.status_code >= 500):
                    raise TransportError(f"{self._where(endpoint)} failed with {failure} ({hint})")
                retry_after = resp.headers.get("Retry-After")
            if attempt > len(schedule):
                tries = "1 attempt" if attempt == 1 else f"{attempt} attempts"
                where = self._where(endpoint)
                raise TransportError(f"{where} failed after {tries}: {failure} ({hint})")
            delay = parse_retry_after(retry_after)
            self._sleep(schedule[attempt - 1] if delay is None else delay)

    def _route_url(self, route: str) -> httpx.URL:
        # Keep any query (Azure preview features take ?api-version=) and add the path segments.
        return self._base.copy_with(path=f"{self._base.path.rstrip('/')}/{route}")

    def _where(self, endpoint: httpx.URL) -> str:
        return f"POST {self._redact(str(endpoint), endpoint)}"

    def _hint(self, status: int) -> str:
        if status == 401:
            source = self._key_source(self._api_key_env, self._env_file)
            return f"check {source}" if self._api_key else f"no API key was sent; set {source}"
        if status in _HINTS:
            return _HINTS[status]
        if 300 <= status < 400:
            return "the url redirects; use the final url as target url"
        if status >= 500:
            return "the provider failed; retry later"
        return "see the provider's documentation for this status"

    def _redact(self, text: str, endpoint: httpx.URL | None = None) -> str:
        """`text` without the key, nor the credentials of the url or of `endpoint` (the url
        called, which for Gemini names the model)."""
        if self._api_key:
            text = text.replace(self._api_key, "***")
        # userinfo and ?key= in the url are credentials too: never in a message or report.
        called = [str(endpoint)] if endpoint is not None else []
        fixed = (str(self._route_url(route)) for route in _FIXED_ROUTES)
        for raw in (*called, *fixed, self.url):
            text = text.replace(raw, redact_url(raw))
        return text

    def _excerpt(self, text: str, endpoint: httpx.URL) -> str:
        # The body goes into a one-line terminal message: whitespace runs become one space, other
        # controls visible escapes (the one output sanitizer), no key, short.
        flat = sanitize(" ".join(self._redact(text, endpoint).split()))
        if not flat:
            return "(empty body)"
        return flat if len(flat) <= EXCERPT_CHARS else flat[:EXCERPT_CHARS] + "..."

    def _parse(self, resp: httpx.Response, endpoint: httpx.URL, route: str) -> dict[str, Any]:
        try:
            data = resp.json()
        except ValueError:
            excerpt = self._excerpt(resp.text, endpoint)
            raise TransportError(
                f"{self._where(endpoint)} answered HTTP {resp.status_code} with a body that is "
                f"not JSON: {excerpt} (is the url an OpenAI-compatible /v1 endpoint?)"
            ) from None
        field, kind, wanted = answer_shape(route)
        shape = isinstance(data, dict) and (field is None or isinstance(data.get(field), kind))
        if not shape:
            excerpt = self._excerpt(resp.text, endpoint)
            raise TransportError(
                f"{self._where(endpoint)} answered with JSON that is not {wanted}: {excerpt} "
                "(is the url an OpenAI-compatible /v1 endpoint?)"
            )
        return data
