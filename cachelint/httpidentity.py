"""The `http` target's identity rules, as EvalCore's `http` target keys its cassette
(crates/evalcore-core/src/http_target.rs): what goes into the cache key and what never does.

In the key: the url and the body as templates, before any substitution; the method, uppercased;
the static headers, names lowercased and sorted; `response-path`. Unset ones are left out, so a
new optional key never changes the keys already recorded. Never in the key: the API key (read
only from `api-key-env` / `env-file`), the header it rides in (`auth-header`, `auth-prefix`),
timeouts and retries. Because the headers are in the key, and so in every committed entry, a
header that looks like a credential is a configuration error.

Templates take `{{name}}` placeholders (spaces inside the braces allowed): `{{input}}` is the
scenario's last user message, `{{system}}` its system prompt ("" without one), `{{scenario}}`
its identity (`agent/tenant/name`), `{{agent}}`, `{{tenant}}` and `{{name}}` its parts. In the
url a value is percent-encoded (every byte but letters, digits and `-._~`); in the body it is
substituted into every string value (never into a key), as text. Headers take no placeholder.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import quote

from cachelint.errors import ConfigError

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
VARIABLES = ("input", "system", "scenario", "agent", "tenant", "name")
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an RFC 9110 token
# Header names that carry credentials by name, and values that carry them by shape.
_CREDENTIAL_NAME = re.compile(
    r"auth|token|secret|key|passw|cookie|session|signature|credential", re.IGNORECASE
)
_CREDENTIAL_VALUE = re.compile(r"^\s*(bearer|basic|token|digest)\s+\S", re.IGNORECASE)
_ENV_REFERENCE = re.compile(r"\$\{?[A-Za-z_]|%[A-Za-z_]+%")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _check_placeholders(text: str, where: str) -> None:
    for name in PLACEHOLDER.findall(text):
        if name not in VARIABLES:
            raise ConfigError(
                f"{where}: unknown placeholder {{{{{name}}}}}; known: "
                + ", ".join(f"{{{{{v}}}}}" for v in VARIABLES)
            )


def check_http(values: dict[str, Any], where: str) -> dict[str, Any]:
    """Validate an `http` target's keys (read by `config._target`) and normalise them: method
    uppercased, header names lowercased. ConfigError names the key and the fix."""
    if "url" not in values:
        raise ConfigError(f"{where}: type 'http' needs url = \"https://host/path?q={{{{input}}}}\"")
    _check_placeholders(values["url"], f"{where}: key 'url'")
    method = str(values.get("method", "POST")).upper()
    if method not in METHODS:
        raise ConfigError(f"{where}: key 'method' = {method!r}: expected one of {METHODS}")
    values["method"] = method
    if "body" in values:
        if method == "GET":
            raise ConfigError(f"{where}: key 'body' with method GET; use POST, PUT or PATCH")
        for text in _strings(values["body"]):
            _check_placeholders(text, f"{where}: key 'body'")
    values["headers"] = _headers(values.get("headers", {}), where)
    auth = str(values.get("auth_header", "authorization")).lower()
    if not _HEADER_NAME.fullmatch(auth):
        raise ConfigError(f"{where}: key 'auth-header' = {auth!r} is not a header name")
    if auth in values["headers"]:
        raise ConfigError(
            f"{where}: header {auth!r} is also the auth-header the API key is sent in; remove it "
            "from headers (the key comes from api-key-env and never enters the cache)"
        )
    values["auth_header"] = auth
    path = values.get("response_path")
    if path is not None and path != "" and not path.startswith("/"):
        raise ConfigError(
            f"{where}: key 'response-path' = {path!r}: expected a JSON Pointer such as "
            '"/answer" or "/choices/0/message/content"'
        )
    values.setdefault("api_key_env", "")  # no key unless one is named: never OPENAI_API_KEY's
    values.setdefault("provider", "http")  # what entry.json names, not part of the key
    values.setdefault("model", "http")
    return values


def _headers(table: Any, where: str) -> dict[str, str]:
    if not isinstance(table, Mapping):
        raise ConfigError(f"{where}: key 'headers' must be a table of name = \"value\"")
    headers: dict[str, str] = {}
    for name, value in table.items():
        at = f"{where}: header {name!r}"
        if not isinstance(value, str) or not _HEADER_NAME.fullmatch(name):
            raise ConfigError(f"{at}: expected a header name and a string value")
        lowered = name.lower()
        if lowered in headers:
            raise ConfigError(f"{at}: set twice (header names are case-insensitive)")
        if PLACEHOLDER.search(value):
            raise ConfigError(f"{at}: headers take no placeholder; put the value in url or body")
        _refuse_credential(at, lowered, value)
        headers[lowered] = value
    return dict(sorted(headers.items()))


def _refuse_credential(at: str, name: str, value: str) -> None:
    from cachelint.secretscan import scan

    why = None
    if _CREDENTIAL_NAME.search(name):
        why = "its name is a credential's"
    elif _CREDENTIAL_VALUE.search(value) or scan(f"{name}: {value}"):
        why = "its value looks like a credential"
    elif _ENV_REFERENCE.search(value):
        why = "it names an environment variable, which is never expanded here"
    if why is not None:
        raise ConfigError(
            f"{at}: refused, {why}: headers are part of the cache key, so they are committed "
            'with every entry; send a secret with api-key-env = "VAR" (and auth-header / '
            "auth-prefix, default `authorization: Bearer <key>`), which never enters the cache"
        )


def identity(
    *,
    url: str,
    method: str,
    headers: Mapping[str, str],
    body: Any,
    response_path: str | None,
) -> dict[str, Any]:
    """The target's part of the key: set fields only (see the module docs)."""
    http: dict[str, Any] = {"url": url, "method": method}
    if headers:
        http["headers"] = dict(sorted(headers.items()))
    if body is not None:
        http["body"] = body
    if response_path is not None:
        http["response_path"] = response_path
    return {"http": http}


def used(url: str, body: Any) -> list[str]:
    """The variables the templates use, in VARIABLES order: the input part of the key."""
    names = set(PLACEHOLDER.findall(url))
    for text in _strings(body):
        names.update(PLACEHOLDER.findall(text))
    return [v for v in VARIABLES if v in names]


def render_url(template: str, variables: Mapping[str, str]) -> str:
    return PLACEHOLDER.sub(lambda m: quote(variables[m.group(1)], safe=""), template)


def render_body(template: Any, variables: Mapping[str, str]) -> Any:
    """The body template with every placeholder in a string value replaced (keys untouched)."""
    if isinstance(template, str):
        return PLACEHOLDER.sub(lambda m: variables[m.group(1)], template)
    if isinstance(template, Mapping):
        return {k: render_body(v, variables) for k, v in template.items()}
    if isinstance(template, list):
        return [render_body(v, variables) for v in template]
    return template


def follow(document: Any, pointer: str) -> Any:
    """RFC 6901: the value at `pointer` in `document`; LookupError when there is none."""
    if pointer == "":
        return document
    current = document
    for raw in pointer[1:].split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(current, Mapping) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            raise LookupError(part)
    return current
