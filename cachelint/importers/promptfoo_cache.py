"""promptfoo's cache, paired with the eval's output file.

promptfoo (0.121) keeps HTTP answers in `$PROMPTFOO_CACHE_PATH/cache.json` (default
`~/.promptfoo/cache/cache.json`), a keyv-file document::

    {"cache": [["keyv:fetch:v3:<sha256>", {"value": "<JSON text>", "expire": <ms>}], ...],
     "lastExpire": <ms>}

where the value's JSON text is `{"value": "<JSON text of {data, status, statusText, headers,
latencyMs}>", "expires": <ms>}` (older writers store the objects themselves: both are read). The
key is a hash of the request (format, headers, method, options, url), so the cache holds answers,
never the requests: `promptfoo eval -o out.json` says, per test, the provider, the rendered
prompt, the vars and the output, and each result is paired with the cache answer whose text is
that output. The request is rebuilt as promptfoo's OpenAI chat provider builds it (the prompt as
messages, `max_tokens` 1024 unless configured, the sampling options of the provider's config),
keyed through the cache endpoint like any recorded call, and the scenario's dataset is written
(when absent) with the same messages and options, so `cachelint run` asks exactly that request.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from cachelint.errors import CachelintError
from cachelint.importers import Parsed, Recorded, Skipped

_MAX_BYTES = 512 * 1024 * 1024
# The provider config fields promptfoo's OpenAI chat provider sends in the body as they are.
_BODY_FIELDS = (
    "temperature",
    "top_p",
    "presence_penalty",
    "frequency_penalty",
    "seed",
    "stop",
    "response_format",
    "max_completion_tokens",
    "tool_choice",
)
_DEFAULT_MAX_TOKENS = 1024
_CHAT_PROVIDER = re.compile(r"openai:(?:chat:)?(?P<model>[^:]+)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cache",
        dest="cache_file",
        metavar="PATH",
        help="promptfoo's cache.json (default: $PROMPTFOO_CACHE_PATH/cache.json, else "
        "~/.promptfoo/cache/cache.json)",
    )
    parser.add_argument(
        "--output", required=True, metavar="PATH", help="the eval's `promptfoo eval -o` JSON"
    )
    parser.add_argument(
        "--into",
        metavar="AGENT/TENANT",
        help="one scenario per test under AGENT/TENANT, named from its description",
    )
    parser.add_argument(
        "--include-expired",
        action="store_true",
        help="import answers promptfoo's TTL has expired too",
    )


@dataclass(frozen=True)
class _Answer:
    key: str
    data: Any
    status: int
    expire_ms: int | None


def _unwrap(value: Any) -> Any:
    """A keyv record's payload: JSON text decoded and `{"value": ...}` wrappers opened until the
    fetch result (`{"data": ...}`) is reached."""
    for _ in range(4):
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                return None
        if isinstance(value, dict) and "data" not in value and "value" in value:
            value = value["value"]
        else:
            break
    return value


def read_cache(raw: bytes, shown: str) -> list[_Answer]:
    try:
        document = json.loads(raw)
    except (ValueError, RecursionError):
        raise CachelintError(f"{shown}: not promptfoo's cache.json (not JSON)") from None
    rows = document.get("cache") if isinstance(document, dict) else None
    if not isinstance(rows, list):
        raise CachelintError(f'{shown}: not promptfoo\'s cache.json (no "cache" list)')
    answers = []
    for row in rows:
        if not (isinstance(row, list) and len(row) == 2 and isinstance(row[0], str)):
            continue
        record = row[1] if isinstance(row[1], dict) else {}
        payload = _unwrap(record.get("value"))
        if not isinstance(payload, dict) or "data" not in payload:
            continue
        expire = record.get("expire")
        status = payload.get("status", 200)
        answers.append(
            _Answer(
                row[0].removeprefix("keyv:"),
                payload["data"],
                status if isinstance(status, int) else 0,
                expire if isinstance(expire, int) else None,
            )
        )
    return answers


def _output_of(answer: Any) -> str | None:
    choices = answer.get("choices") if isinstance(answer, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    message = choices[0].get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, str) else None


def _messages(raw: str) -> list[dict[str, Any]]:
    """A rendered prompt as messages: a JSON list of chat messages, else one user message."""
    try:
        value = json.loads(raw)
    except ValueError:
        value = None
    if (
        isinstance(value, list)
        and value
        and all(isinstance(m, dict) and "role" in m for m in value)
    ):
        return value
    return [{"role": "user", "content": raw}]


def _body(model: str, prompt: str, config: Mapping[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "messages": _messages(prompt)}
    if "max_completion_tokens" not in config:
        body["max_tokens"] = config.get("max_tokens", _DEFAULT_MAX_TOKENS)
    body.update({k: config[k] for k in _BODY_FIELDS if config.get(k) is not None})
    return body


def _slug(text: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()
    return slug[:60].rstrip("-")


def _provider_configs(document: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    config = document.get("config")
    providers = config.get("providers") if isinstance(config, dict) else None
    out: dict[str, Mapping[str, Any]] = {}
    for item in providers if isinstance(providers, list) else []:
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            given = item.get("config")
            out[item["id"]] = given if isinstance(given, dict) else {}
    return out


def read_results(raw: bytes, shown: str) -> tuple[list[Mapping[str, Any]], dict[str, Any]]:
    try:
        document = json.loads(raw)
    except (ValueError, RecursionError):
        raise CachelintError(f"{shown}: not a `promptfoo eval -o` output file (not JSON)") from None
    results = document.get("results") if isinstance(document, dict) else None
    rows = results.get("results") if isinstance(results, dict) else None
    if not isinstance(rows, list):
        raise CachelintError(
            f"{shown}: not a `promptfoo eval -o out.json` file (no results.results list)"
        )
    return [r for r in rows if isinstance(r, dict)], _provider_configs(document)


@dataclass(frozen=True)
class Paired:
    call: Recorded
    dataset: dict[str, Any]


def pair(
    results: list[Mapping[str, Any]],
    configs: Mapping[str, Mapping[str, Any]],
    answers: list[_Answer],
    *,
    scenario_of: Any,
    now_ms: int,
    include_expired: bool,
    shown: str,
) -> tuple[list[Paired], Parsed]:
    """Each result of the eval with the cache answer whose text is its output."""
    by_text: dict[str, list[_Answer]] = {}
    for answer in answers:
        text = _output_of(answer.data)
        if text is not None and 200 <= answer.status < 300:
            by_text.setdefault(text, []).append(answer)
    used: set[str] = set()
    paired: list[Paired] = []
    parsed = Parsed()
    for number, result in enumerate(results, start=1):
        source = f"{shown} result {number}"
        found = _pair_one(result, configs, by_text, scenario_of, source)
        if isinstance(found, Skipped):
            parsed.skipped.append(found)
            continue
        answer, item = found
        if answer.expire_ms is not None and answer.expire_ms < now_ms and not include_expired:
            parsed.skipped.append(
                Skipped(source, "expired in promptfoo's cache (--include-expired imports it)")
            )
            continue
        used.add(answer.key)
        paired.append(item)
    for answer in answers:
        if answer.key not in used:
            why = "paired with no result of the output file (another eval's, or no chat answer)"
            parsed.skipped.append(Skipped(f"cache {answer.key}", why))
    return paired, parsed


def _pair_one(
    result: Mapping[str, Any],
    configs: Mapping[str, Mapping[str, Any]],
    by_text: Mapping[str, list[_Answer]],
    scenario_of: Any,
    source: str,
) -> tuple[_Answer, Paired] | Skipped:
    provider = result.get("provider")
    provider_id = provider.get("id") if isinstance(provider, dict) else provider
    match = _CHAT_PROVIDER.fullmatch(provider_id) if isinstance(provider_id, str) else None
    if match is None:
        return Skipped(
            source,
            f"provider {provider_id!r}: only promptfoo's OpenAI chat provider is imported "
            "(its request can be rebuilt from the prompt)",
        )
    response = result.get("response")
    output = response.get("output") if isinstance(response, dict) else None
    candidates = by_text.get(output) if isinstance(output, str) else None
    if not candidates:
        return Skipped(source, "no answer in the cache has this result's output")
    prompt = result.get("prompt")
    raw = prompt.get("raw") if isinstance(prompt, dict) else None
    if not isinstance(raw, str):
        return Skipped(source, "the result has no rendered prompt")
    given = result.get("testCase")
    test: Mapping[str, Any] = given if isinstance(given, dict) else {}
    scenario = scenario_of(test.get("description"), result.get("testIdx"))
    if isinstance(scenario, Skipped):
        return Skipped(source, scenario.reason)
    config = configs.get(str(provider_id), {})
    body = _body(match["model"], raw, config)
    base = str(config.get("apiBaseUrl") or config.get("apiHost") or "https://api.openai.com/v1")
    call = Recorded(
        source=source,
        scenario=scenario,
        method="POST",
        url=base.rstrip("/") + "/chat/completions",
        headers={"content-type": "application/json"},
        body=json.dumps(body).encode(),
        answer=candidates[0].data,
    )
    dataset: dict[str, Any] = {"messages": body["messages"]}
    options = {k: v for k, v in body.items() if k not in ("model", "messages")}
    if options:
        dataset["options"] = options
    if test.get("description"):
        dataset["description"] = test["description"]
    dataset["assert"] = _assertions(test.get("assert"))
    return candidates[0], Paired(call, dataset)


# promptfoo's assertion types cachelint evaluates alike, and the field its value goes into.
_SAME_ASSERTIONS = {
    "contains": "value",
    "icontains": "value",
    "equals": "value",
    "not-icontains": "value",
    "not-equals": "value",
    "regex": "pattern",
    "not-regex": "pattern",
}


def _assertions(given: Any) -> list[dict[str, Any]]:
    """The test's assertions cachelint evaluates the same way (others are left out: the
    dataset note says to add their equivalents)."""
    from cachelint.runner.assertions import validate_assertion

    out = []
    for item in given if isinstance(given, list) else []:
        kind = item.get("type") if isinstance(item, dict) else None
        field = _SAME_ASSERTIONS.get(kind) if isinstance(kind, str) else None
        if field is None or not isinstance(item.get("value"), str):
            continue
        spec = {"type": kind, field: item["value"]}
        try:
            validate_assertion(spec, "promptfoo assertion")
        except CachelintError:
            continue
        out.append(spec)
    return out


def _scenario_namer(ns: argparse.Namespace) -> Any:
    from cachelint.importers.apply import scenario_map
    from cachelint.runner.identities import validate_identity

    if ns.into is not None:
        if ns.scenario is not None or ns.map is not None:
            raise CachelintError("--into, --scenario and --map exclude each other; give one")
        validate_identity(f"{ns.into}/x", "--into")

        def into(description: Any, index: Any) -> str:
            name = _slug(description) if isinstance(description, str) else ""
            return f"{ns.into}/{name or f'test-{int(index or 0) + 1}'}"

        return into
    mapping = scenario_map(ns.scenario, Path(ns.map) if ns.map else None)

    def mapped(description: Any, index: Any) -> str | Skipped:
        number = f"#{int(index or 0) + 1}"
        found = mapping.scenario_of(number)
        if found is None and isinstance(description, str):
            found = mapping.scenario_of(description)
        return found or Skipped(
            "", f"no scenario for test {description or number!r} in {mapping.source}"
        )

    return mapped


def default_cache() -> Path:
    base = os.environ.get("PROMPTFOO_CACHE_PATH")
    return Path(base) / "cache.json" if base else Path.home() / ".promptfoo/cache/cache.json"


def import_promptfoo(ns: argparse.Namespace, *, out: TextIO) -> int:
    """`cachelint import promptfoo`: pair, key, write entries and absent datasets, report."""
    from cachelint import clock
    from cachelint.config import load
    from cachelint.display import sanitize_block
    from cachelint.fsutil import read_regular
    from cachelint.gitutil import repo_root
    from cachelint.importers.apply import render, target_resolver, write_plan
    from cachelint.importers.keying import plan

    repo = repo_root(Path.cwd())
    config = load(repo, Path(ns.config) if ns.config else None)
    namer = _scenario_namer(ns)
    cache_path = Path(ns.cache_file) if ns.cache_file else default_cache()
    raws = {}
    for path in (cache_path, Path(ns.output)):
        try:
            raws[path] = read_regular(path, _MAX_BYTES)
        except OSError as exc:
            raise CachelintError(f"{path}: cannot read it ({exc})") from None
    now = clock.now()
    results, configs = read_results(raws[Path(ns.output)], str(ns.output))
    paired, parsed = pair(
        results,
        configs,
        read_cache(raws[cache_path], str(cache_path)),
        scenario_of=namer,
        now_ms=int(now.timestamp() * 1000),
        include_expired=ns.include_expired,
        shown=str(ns.output),
    )
    planned, refused = plan(
        [p.call for p in paired],
        config=config,
        target_of=target_resolver(config, ns.target),
        trial=ns.trial,
    )
    written = write_plan(config, planned, now=now, overwrite=ns.overwrite, dry_run=ns.dry_run)
    kept = {p.scenario for p in written.written} | {p.scenario for p in written.unchanged}
    notes = [] if ns.dry_run else write_datasets(config, paired, kept)
    skipped = [*parsed.skipped, *refused]
    report = render(
        what=f"{len(results)} promptfoo results",
        written=written,
        skipped=skipped,
        warnings=notes,
        config=config,
        dry_run=ns.dry_run,
    )
    out.write(sanitize_block(report))
    return 1 if skipped or written.skipped else 0


def write_datasets(config: Any, paired: list[Paired], scenarios: set[str]) -> list[str]:
    """Each imported scenario's dataset, when it has none yet: the messages and options its
    entry was keyed with. An existing dataset is never touched."""
    from cachelint.fsutil import atomic_write

    notes = []
    for item in paired:
        scenario = item.call.scenario
        path = config.repo / config.datasets / f"{scenario}.json"
        if scenario not in scenarios or path.exists():
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(item.dataset, indent=2, ensure_ascii=False) + "\n"
        atomic_write(path, text.encode("utf-8"))
        scenarios.discard(scenario)
        kept = len(item.dataset["assert"])
        notes.append(
            f"wrote {config.datasets}/{scenario}.json (the prompt and options the answer was "
            f"keyed with, {kept} of the test's assertions): check its assertions, promptfoo's "
            "that cachelint does not evaluate alike are left out"
        )
    return notes
