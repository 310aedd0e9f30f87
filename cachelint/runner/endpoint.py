"""The cache endpoint: a server of OpenAI's chat-completions, Responses and embeddings APIs,
Anthropic's Messages API (also on Bedrock and Vertex AI), Google's Gemini API and Amazon
Bedrock's Converse API, backed by the committed cache.

Code written against a provider SDK (`openai`, LiteLLM, LangChain, a .NET or Node program) runs
unchanged under record and replay: it is pointed at this endpoint's base URL instead of the
provider's. Each scenario trial has its own base URL,
`http://127.0.0.1:<port>/scenario/<quoted identity>/trial/<n>/v1`, so concurrent scenarios never
share an answer. OpenAI's SDKs append `/chat/completions`, `/responses` (`client.responses`, and
the OpenAI Agents SDK: `providers.responses_api`) or `/embeddings` (an agent that
retrieves: `providers.embeddings_api`) as they do for any provider. Anthropic's SDK
appends `/v1/messages` to the same URL less its `/v1` (`providers.messages_api`) and sends
the key as `x-api-key`; Google's appends `/<version>/models/<model>:generateContent`
(`providers.gemini_api`) and sends it as `x-goog-api-key`. boto3's `bedrock-runtime` client
appends `/model/<model id>/converse` to the same URL less its `/v1`
(`providers.converse_api`) and signs with SigV4, the key as its access key id. The
anthropic SDK's Bedrock and Vertex AI clients append `/model/<model id>/invoke` (as boto3's
`invoke_model` does for any model family) and
`/projects/.../publishers/anthropic/models/<model>:rawPredict` (`bedrock_invoke_api`,
`vertex_messages_api`) and send the key as a bearer token. Azure OpenAI's client
(`AzureOpenAI`, and .NET's `AzureOpenAIClient`) appends
`/openai/deployments/<deployment>/chat/completions?api-version=...` (or `/embeddings`) to the URL
less its `/v1` and sends the key as `api-key`; the deployment is the model keyed, since it is what
answers there whatever model the body names.

A request is answered by the scenario's `CachingClient` (`complete_body`; `sdk_body` for the other
APIs), so the run's mode decides as for any other call: replay answers from the cache only (a miss
is an HTTP 404 whose error message is the usual miss explanation, which the SDK raises as its own
error), auto records misses, live re-records. The key is built from the body as the SDK sent it,
less the transport fields in `TRANSPORT_FIELDS`; the model the code asked for is the model recorded
and replayed.

Streaming: the cache holds one whole answer per key (whether the code streamed is a transport
detail, not part of the key), and a streamed request gets it back as a deterministic
server-sent-event stream in its API's events (`chat.completion.chunk` objects for a chat
completion), the same bytes at record and replay.
Upstream is always called without streaming, so the whole answer is what gets recorded.

Python code can skip the socket: `http_client()` returns an httpx2 or httpx client whose transport
calls the same handler in-process.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import re
import secrets
import sys
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

from cachelint.display import sanitize
from cachelint.errors import CachelintError
from cachelint.httpreply import Response, json_response, reply
from cachelint.runner import providers, requestbody
from cachelint.runner.childguard import is_proxy_request, refuse_proxied

if TYPE_CHECKING:
    from cachelint.runner.client import CachingClient

LOOPBACK = "127.0.0.1"
# What the SDK sends as its API key (with a per-run suffix over the socket): the real key never
# leaves cachelint (it is read only when recording, by the upstream transport).
PLACEHOLDER_KEY = "cachelint-endpoint"
# Request fields that say how to deliver the answer or who asked, not what to answer: not in the
# key, and never sent upstream (upstream is always called without streaming).
TRANSPORT_FIELDS = frozenset({"stream", "stream_options", "user", "metadata", "requestMetadata"})

_PATH = re.compile(r"/scenario/(?P<scenario>[^/]+)/trial/(?P<trial>\d{1,4})(?P<rest>/.*)?")
# Azure OpenAI's routes that name a deployment (the openai SDK's `_deployments_endpoints` that
# the endpoint serves), and the header its clients send the key in.
_DEPLOYMENT = re.compile(r".*/openai/deployments/(?P<name>[^/]+)/(?:chat/completions|embeddings)")
AZURE_KEY_HEADER = "api-key"
# The SDKs retry 5xx and 429; a cache miss or a failed recording is not fixed by asking again.
_NO_RETRY = {"x-should-retry": "false"}
_MAX_LOGGED = 20  # lines about refused requests per run


def _error(
    status: int, message: str, kind: str, code: str | None = None, *, api: Any = None
) -> Response:
    """An error answer in the shape of the API asked (`api`: its module, None for OpenAI's),
    `kind` and `code` as OpenAI words them."""
    shape = api.ERROR_SHAPE if api is not None else "openai"
    if shape == "anthropic":
        kind = {"cache_miss": "not_found_error", "cachelint_error": "api_error"}.get(kind, kind)
        error = {"type": "error", "error": {"type": kind, "message": message}}
    elif shape == "google":
        word = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND"}.get(status, "INTERNAL")
        error = {"error": {"code": status, "message": message, "status": word}}
    elif shape == "aws":
        return _aws_error(status, message)
    else:
        error = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return json_response(status, error, _NO_RETRY)


def _aws_error(status: int, message: str) -> Response:
    """An error as Bedrock words it: its type in `x-amzn-ErrorType`, the message in the body. A
    failed recording is the model's error (424), which boto3 does not retry."""
    if status >= 500:
        status = 424
    kind = {
        400: "ValidationException",
        404: "ResourceNotFoundException",
        424: "ModelErrorException",
    }.get(status, "InternalServerException")
    return json_response(status, {"message": message}, {"x-amzn-ErrorType": kind})


# The APIs served besides chat completions whose route is the same for every call, by its last
# segment. (The paths of `providers.MODEL_IN_PATH` name the model: their `route_model` finds it.)
_SDK_APIS: dict[str, Any] = {api.ROUTE: api for api in providers.FIXED_ROUTE}


def answer(
    client: CachingClient,
    method: str,
    route: str,
    raw: bytes,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """Answer one HTTP request for `client`'s scenario trial (`_answer`). A bug of cachelint's
    on the way is one 500 naming it, which the SDK raises, never a traceback on the run's stderr
    or a dropped connection the SDK would retry."""
    try:
        return _answer(client, method, route, raw, headers)
    except Exception as exc:  # the one boundary where any failure becomes an answer
        message = (
            f"internal error in the cachelint cache endpoint ({type(exc).__name__}: {exc}); "
            "please report it"
        )
        return _error(500, message, "cachelint_error", "cachelint_internal")


def _answer(
    client: CachingClient,
    method: str,
    route: str,
    raw: bytes,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """Answer one HTTP request for `client`'s scenario trial; `route` is the path after the
    trial's base URL prefix: `/v1/chat/completions`, or another API's (`/v1/responses`,
    `/v1/embeddings`, `/v1/messages`, `/v1beta/models/<model>:generateContent`: the modules in
    `_SDK_APIS` and `providers.MODEL_IN_PATH`); `headers` are the request's (names in any case)."""
    from cachelint.runner.client import CacheMiss

    route = route.split("?", 1)[0].rstrip("/")
    if method == "GET" and route.endswith("/models"):
        model = {"id": client.model, "object": "model", "created": 0, "owned_by": "cachelint"}
        return json_response(200, {"object": "list", "data": [model]})
    found = _api_of(route)
    if method != "POST" or found is None:
        return _unknown_route(method, route)
    api, from_path = found
    try:
        body = json.loads(raw.decode("utf-8")) if raw else None
    except (UnicodeDecodeError, ValueError, RecursionError):
        body = None
    named = from_path[0] if from_path is not None else _deployment(route)
    if isinstance(body, dict) and named is not None:  # the model the path names
        body = {**body, "model": named}
    problem = _body_problem(body, api)
    if problem is not None:
        return _error(400, problem, "invalid_request_error", api=api)
    assert isinstance(body, dict)
    call = {k: v for k, v in body.items() if k not in TRANSPORT_FIELDS}
    try:
        if api is None:
            answered = client.complete_body(call)
        else:
            answered = client.sdk_body(api.ROUTE, call, _keyed_headers(headers, api))
    except CacheMiss as exc:
        return _error(404, str(exc), "cache_miss", "cachelint_cache_miss", api=api)
    except CachelintError as exc:
        return _error(502, str(exc), "cachelint_error", "cachelint_upstream", api=api)
    except ValueError as exc:  # e.g. an integer beyond 2**53, which no canonical key can hold
        message = f"the request cannot be part of a cache key: {exc}"
        return _error(400, message, "invalid_request_error", api=api)
    streamed = from_path[1] if from_path is not None else body.get("stream") is True
    return _reply(answered, api, body, streamed)


def _unknown_route(method: str, route: str) -> Response:
    return _error(
        404,
        "the cachelint cache endpoint serves POST .../chat/completions, .../responses, "
        ".../embeddings, .../messages, .../models/MODEL:generateContent, "
        ".../model/MODEL/converse, .../model/MODEL/invoke and "
        ".../publishers/anthropic/models/MODEL:rawPredict, "
        f"not {method} {route}",
        "invalid_request_error",
        "unknown_url",
    )


def _reply(answered: Any, api: Any, body: dict[str, Any], streamed: bool) -> Response:
    """The answer as the request asked for it: one JSON body, or the API's event stream."""
    if not streamed or (api is not None and api.event_stream is None):
        return json_response(200, answered)
    stream_headers = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
    if api is not None:
        stream_headers["Content-Type"] = api.STREAM_TYPE
        return 200, stream_headers, api.event_stream(answered)
    options = body.get("stream_options")
    include_usage = isinstance(options, dict) and options.get("include_usage") is True
    return 200, stream_headers, sse_stream(answered, include_usage=include_usage)


def _api_of(route: str) -> tuple[Any, tuple[str, bool] | None] | None:
    """The API a route calls (None for chat completions, else its module) and, for Gemini's,
    the model its path names and whether it asks for a stream; None for no API served."""
    if route.endswith("/chat/completions"):
        return None, None
    api = _SDK_APIS.get(route.rpartition("/")[2])
    if api is not None:
        return api, None
    for api in providers.MODEL_IN_PATH:
        from_path = api.route_model(route)
        if from_path is not None:
            return api, from_path
    return None


def _deployment(route: str) -> str | None:
    """The Azure OpenAI deployment a route names, or None."""
    match = _DEPLOYMENT.fullmatch(route)
    return unquote(match["name"]) if match is not None else None


def _keyed_headers(headers: Mapping[str, str] | None, api: Any) -> dict[str, str]:
    """The request headers that change the answer, and so are part of the key (the API's
    `KEYED_HEADERS`: Anthropic's beta flags). Everything else a request's headers say is
    transport."""
    if not api.KEYED_HEADERS or not headers:
        return {}
    lowered = {name.lower(): value for name, value in headers.items()}
    return {name: lowered[name] for name in api.KEYED_HEADERS if lowered.get(name)}


def _body_problem(body: Any, api: Any) -> str | None:
    """Why `body` is no request of its API (`api`: None for chat completions, else the module of
    the API) that the endpoint can key, or None."""
    if not isinstance(body, dict):
        return "the request body must be a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "'model' must be a non-empty string: the model asked for is part of the key"
    tools = body.get("tools")
    if tools is not None and not _objects(tools):
        return "'tools' must be a list of tool objects"
    if api is not None:
        return api.conversation_problem(body)
    if not _objects(body.get("messages")):
        return "'messages' must be a list of message objects"
    return None


def _objects(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, dict) for item in value)


def sse_stream(completion: Mapping[str, Any], *, include_usage: bool) -> bytes:
    """The `chat.completion` as the server-sent events a streaming provider sends: per choice one
    chunk with the whole message as its delta and one with the finish reason, then (when asked
    for with `stream_options.include_usage`) a usage chunk, then `[DONE]`."""
    base: dict[str, Any] = {
        "id": completion.get("id"),
        "object": "chat.completion.chunk",
        "created": completion.get("created"),
        "model": completion.get("model"),
    }
    for name in ("service_tier", "system_fingerprint"):  # every chunk carries them
        if name in completion:
            base[name] = completion[name]
    chunks: list[dict[str, Any]] = []
    choices = completion.get("choices")
    for position, choice in enumerate(choices if isinstance(choices, list) else []):
        if not isinstance(choice, dict):
            continue
        index = choice.get("index", position)
        message = choice.get("message")
        delta = _delta(message if isinstance(message, dict) else {})
        first = {"index": index, "delta": delta, "logprobs": None, "finish_reason": None}
        last = {
            "index": index,
            "delta": {},
            "logprobs": choice.get("logprobs"),
            "finish_reason": choice.get("finish_reason") or "stop",
        }
        chunks.append({**base, "choices": [first]})
        chunks.append({**base, "choices": [last]})
    if include_usage and isinstance(completion.get("usage"), dict):
        chunks.append({**base, "choices": [], "usage": completion["usage"]})
    lines = [
        "data: " + json.dumps(c, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        for c in chunks
    ]
    lines.append("data: [DONE]")
    return ("\n\n".join(lines) + "\n\n").encode("utf-8")


def _delta(message: Mapping[str, Any]) -> dict[str, Any]:
    delta: dict[str, Any] = {"role": message.get("role") or "assistant"}
    for name in ("content", "refusal", "annotations"):  # annotations: a search's citations
        if message.get(name) is not None:
            delta[name] = message[name]
    if "content" not in delta and not message.get("tool_calls"):
        delta["content"] = ""
    calls = message.get("tool_calls")
    if isinstance(calls, list) and calls:
        delta["tool_calls"] = [
            {"index": i, **call} if isinstance(call, dict) else call for i, call in enumerate(calls)
        ]
    return delta


# ---- the loopback server ------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 keeps connections open, so an SDK reuses one connection for a scenario's calls.
    protocol_version = "HTTP/1.1"
    server_version = "cachelint-endpoint"
    sys_version = ""
    timeout = 60  # an idle keep-alive connection must not hold its thread forever
    # Headers and body go out as two writes; with Nagle's algorithm the body waits for the
    # client's delayed ACK (40 ms a call on Linux).
    disable_nagle_algorithm = True
    server: _Server

    def _serve(self) -> None:
        endpoint = self.server.endpoint
        if is_proxy_request(self.command, self.path):
            # A replayed command's children have this endpoint as their proxy, which refuses.
            status, headers, data = refuse_proxied(
                self.command, self.path, self.headers, endpoint.token
            )
            self.close_connection = True
        elif not _authorised(self.headers, endpoint.token):
            # Refused before the body is read: a process without the run's key cannot make the
            # run hold its bytes. The body stays unread, so the connection ends here.
            status, headers, data = _error(
                401,
                "the cachelint cache endpoint needs the API key cachelint gave this run "
                "(OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY, AZURE_OPENAI_API_KEY or "
                "AWS_BEARER_TOKEN_BEDROCK, or client.api_key)",
                "invalid_request_error",
                "invalid_api_key",
            )
            self.close_connection = True
        else:
            raw = self._body()
            if isinstance(raw, tuple):
                status, headers, data = raw
                self.close_connection = True
            else:
                sent = dict(self.headers.items())
                status, headers, data = endpoint.dispatch(self.command, self.path, raw, sent)
        reply(self, status, headers, data)

    def _body(self) -> bytes | Response:
        """The request's body (`requestbody.read`); the answer refusing it, logged once, when
        its length is malformed or too large or it ends early."""
        found = requestbody.read(self.headers, self.rfile)
        if isinstance(found, bytes):
            return found
        status, problem = found
        self.server.endpoint.log(f"refused a request from {self._peer()}: {problem}")
        return _error(status, f"the cachelint cache endpoint refuses {problem}", "bad_request")

    def _peer(self) -> str:
        host, port = self.client_address[:2]
        return f"{host}:{port}"

    do_GET = _serve
    do_POST = _serve
    do_CONNECT = do_PUT = do_PATCH = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:
        return  # results and miss messages report what happened; stderr stays quiet


_SIGV4 = "AWS4-HMAC-SHA256 "
# The headers besides Authorization that an SDK may send the key in.
_KEY_HEADERS = (*(api.KEY_HEADER for api in providers.SDK_APIS if api.KEY_HEADER), AZURE_KEY_HEADER)


def _authorised(headers: Any, token: str) -> bool:
    """Whether the request carries this run's key: as a bearer token (OpenAI's SDKs), as
    `x-api-key` (Anthropic's), as `x-goog-api-key` (Google's), as `api-key` (Azure's) or as the
    access key id of a SigV4 signature (AWS's, whose secret the endpoint has no use for)."""
    given = headers.get("Authorization") or ""
    if given == f"Bearer {token}" or given.startswith(f"{_SIGV4}Credential={token}/"):
        return True
    return any(headers.get(name) == token for name in _KEY_HEADERS)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        super().__init__((LOOPBACK, 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection that failed on the way (a client gone mid-request, say) is one line on
        the run's stderr, never socketserver's traceback."""
        kind, exc = sys.exc_info()[:2]
        name = kind.__name__ if kind is not None else "error"
        host, port = client_address[:2] if isinstance(client_address, tuple) else ("?", "?")
        self.endpoint.log(f"dropped a connection from {host}:{port} ({name}: {exc})")


class Endpoint:
    """The loopback server of one run: started on first use, one base URL per scenario trial.

    A client is served from the moment its `base_url` is asked for until `release(client)`, so a
    request for a scenario that is not running is refused instead of answered from another's
    cache."""

    def __init__(self) -> None:
        # The "API key" SDKs send: not the provider's key, but a per-run secret, so another local
        # process cannot have a recording run spend the real key through this port.
        self.token = f"{PLACEHOLDER_KEY}-{secrets.token_hex(12)}"
        self._clients: dict[tuple[str, int], CachingClient] = {}
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._logged = 0

    def log(self, line: str) -> None:
        """One line on stderr about a request the endpoint refused or dropped; after
        `_MAX_LOGGED` of them, one more saying the rest are not logged (a hostile local process
        cannot flood the run's output)."""
        with self._lock:
            self._logged += 1
            count = self._logged
        if count <= _MAX_LOGGED:
            text = sanitize(line)
        elif count == _MAX_LOGGED + 1:
            text = "further refused requests are not logged"
        else:
            return
        print(f"cachelint: cache endpoint: {text}", file=sys.stderr, flush=True)

    def __enter__(self) -> Endpoint:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def port(self) -> int:
        return int(self._start().server_address[1])

    def base_url(self, client: CachingClient) -> str:
        """The scenario trial's base URL (ending in /v1, where the SDK appends the route)."""
        with self._lock:
            self._clients[(client.scenario, client.trial)] = client
        return f"http://{LOOPBACK}:{self.port}{prefix(client.scenario, client.trial)}/v1"

    def release(self, client: CachingClient) -> None:
        with self._lock:
            if self._clients.get((client.scenario, client.trial)) is client:
                del self._clients[(client.scenario, client.trial)]

    def dispatch(
        self, method: str, path: str, raw: bytes, headers: Mapping[str, str] | None = None
    ) -> Response:
        match = _PATH.fullmatch(path.split("?", 1)[0])
        if match is None:
            return _error(
                404,
                f"{path}: not a scenario URL of the cachelint cache endpoint; use the base URL "
                "cachelint gives the scenario (OPENAI_BASE_URL, or client.base_url)",
                "invalid_request_error",
                "unknown_url",
            )
        scenario, trial = unquote(match["scenario"]), int(match["trial"])
        with self._lock:
            client = self._clients.get((scenario, trial))
        if client is None:
            return _error(
                404,
                f"scenario {scenario} trial {trial} is not running in this cachelint run; "
                "each scenario's base URL serves only while that scenario runs",
                "invalid_request_error",
                "unknown_scenario",
            )
        return answer(client, method, match["rest"] or "/", raw, headers)

    def _start(self) -> _Server:
        with self._lock:
            if self._server is None:
                server = _Server(self)
                self._thread = threading.Thread(
                    target=server.serve_forever,
                    kwargs={"poll_interval": 0.05},
                    name="cachelint-endpoint",
                    daemon=True,
                )
                self._thread.start()
                self._server = server
                _allow_in_replay(int(server.server_address[1]))
            return self._server

    def close(self) -> None:
        with self._lock:
            server, thread = self._server, self._thread
            self._server = self._thread = None
        if server is not None:
            _allow_in_replay(int(server.server_address[1]), allow=False)
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join(timeout=5)


def prefix(scenario: str, trial: int) -> str:
    """The path prefix of a scenario trial: the identity as one percent-encoded segment."""
    return f"/scenario/{quote(scenario, safe='')}/trial/{trial}"


def _allow_in_replay(port: int, *, allow: bool = True) -> None:
    """Tell replay's network guard (`cachelint.netguard`: replay fails closed, no connection
    leaves the machine) that this loopback port is cachelint's own endpoint, or no longer is.
    This is the endpoint's one call site of the guard."""
    try:
        netguard = importlib.import_module("cachelint.netguard")
    except ImportError:  # a build without the guard: nothing to tell
        return
    name = "allow_loopback_port" if allow else "disallow_loopback_port"
    call = getattr(netguard, name, None)
    if callable(call):
        call(port)


# ---- in-process transports ----------------------------------------------------------------------


def default_library() -> str:
    """The HTTP library the installed `openai` SDK is built on: httpx2 from 3.x on, httpx before;
    without the SDK, httpx2 when installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        major = version("openai").split(".", 1)[0]
    except PackageNotFoundError:
        major = ""
    if major.isdigit() and int(major) < 3:
        return "httpx"
    return "httpx2" if importlib.util.find_spec("httpx2") is not None else "httpx"


def http_client(
    client: CachingClient, *, library: str | None = None, asynchronous: bool = False
) -> Any:
    """An `httpx2.Client`/`httpx.Client` (or the Async one) that answers every request from
    `client` without opening a socket; give it to the SDK together with `client.base_url`."""
    name = library or default_library()
    if name not in ("httpx", "httpx2"):
        raise CachelintError(f"http_client(library={name!r}): expected 'httpx2' or 'httpx'")
    try:
        module = importlib.import_module(name)
    except ImportError:
        raise CachelintError(
            f"http_client(library={name!r}): {name} is not installed; pip install {name}"
        ) from None
    base = prefix(client.scenario, client.trial)

    def handle(request: Any) -> Any:
        path = request.url.path
        route = path[len(base) :] if path.startswith(base) else path
        status, headers, data = answer(
            client, request.method, route, request.content, request.headers
        )
        return module.Response(status, headers=headers, content=data, request=request)

    transport = module.MockTransport(handle)
    kind = module.AsyncClient if asynchronous else module.Client
    return kind(transport=transport)
