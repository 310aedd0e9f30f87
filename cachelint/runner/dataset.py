"""Eval datasets: one JSON file per scenario at `<datasets root>/<agent>/<tenant>/<scenario>.json`.

The path without `.json` is the scenario's identity and part of the cache key, so two tenants'
scenarios of the same name never share an answer. Every field is validated when the dataset loads:
an unknown field is an error (a typo such as "asert" must not silently disable a check), and every
error names the file and the field.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Collection, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

import orjson

from cachelint.canonical import canonical_bytes
from cachelint.confine import TEXT_BYTES, close_opened, read_inside
from cachelint.errors import CachelintError
from cachelint.fastjson import loads, utf8_sig_text
from cachelint.fsutil import DEFAULT_MAX_BYTES
from cachelint.green import content_hash
from cachelint.jsontext import lone_surrogate, may_hold_surrogate
from cachelint.passpolicy import ALL, PassPolicy, parse_policy
from cachelint.runner.assertions import validate_assertion
from cachelint.runner.assertions.jsonpath import json_kind
from cachelint.runner.identities import dataset_files, scenario_identity
from cachelint.runner.judges import METRICS
from cachelint.runner.request import normalise_text
from cachelint.runner.scenario import InputSpool, Scenario

FIELDS = frozenset(
    {
        "messages",
        "input",
        "system",
        "system-file",
        "options",
        "tools",
        "assert",
        "judge",
        "trials",
        "tags",
        "description",
        "target",
        "targets",
        "model-calls",
        "pass",
    }
)
MAX_TRIALS = 100
_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
_MESSAGE_KEYS = frozenset({"role", "content", "name", "tool_calls", "tool_call_id"})
# These shape the request itself; letting options override them would make the key lie.
_RESERVED_OPTIONS = {
    "model": "the model comes from [tool.cachelint.target] model",
    "messages": "use the scenario's 'messages' field",
    "tools": "use the scenario's 'tools' field",
    "stream": "the cache stores whole responses; streaming is not replayable",
}
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")

# ---- field checks -------------------------------------------------------------------------------


class _Fields:
    """Error construction bound to one dataset file, so every message names it."""

    def __init__(self, path: str) -> None:
        self.path = path

    def error(self, field: str, message: str) -> CachelintError:
        return CachelintError(f"{self.path}: field {field!r}: {message}")

    def string(self, value: Any, field: str) -> str:
        if not isinstance(value, str):
            raise self.error(field, f"expected a string, got {json_kind(value, exact=True)}")
        return value

    def obj(self, value: Any, field: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.error(field, f"expected an object, got {json_kind(value, exact=True)}")
        return value

    def array(self, value: Any, field: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.error(field, f"expected a list, got {json_kind(value, exact=True)}")
        return value


def _content(value: Any, field: str, f: _Fields) -> Any:
    if isinstance(value, str):
        return normalise_text(value)
    if isinstance(value, list):
        parts = []
        for i, part in enumerate(value):
            part = dict(f.obj(part, f"{field}[{i}]"))
            if isinstance(part.get("text"), str):
                part["text"] = normalise_text(part["text"])
            parts.append(part)
        return parts
    raise f.error(
        field, f"expected a string or a list of content parts, got {json_kind(value, exact=True)}"
    )


def _messages(value: Any, f: _Fields) -> list[dict[str, Any]]:
    items = f.array(value, "messages")
    if not items:
        raise f.error("messages", "is empty; give at least one user message")
    out = []
    for i, item in enumerate(items):
        field = f"messages[{i}]"
        message = f.obj(item, field)
        for key in sorted(set(message) - _MESSAGE_KEYS):
            raise f.error(
                f"{field}.{key}",
                f"unknown message field; allowed: {', '.join(sorted(_MESSAGE_KEYS))}",
            )
        role = message.get("role")
        if role not in _ROLES:
            raise f.error(
                f"{field}.role", f"expected one of {', '.join(sorted(_ROLES))}, got {role!r}"
            )
        clean = dict(message)
        if message.get("content") is None:
            # An assistant turn that only calls tools has null content (OpenAI's own shape).
            if not (role == "assistant" and message.get("tool_calls")):
                raise f.error(f"{field}.content", "missing; every message needs content")
        else:
            clean["content"] = _content(message["content"], f"{field}.content", f)
        out.append(clean)
    return out


def _read_system_file(
    repo: Path,
    value: Any,
    f: _Fields,
    prompts: dict[str, str] | None = None,
    private: Collection[str] = (),
) -> tuple[str, str]:
    raw = f.string(value, "system-file").replace("\\", "/")
    if prompts is not None and raw in prompts:
        # Spelled exactly as a path validated and read earlier in this load: the same answer.
        return raw, prompts[raw]
    parts = PurePosixPath(raw).parts
    if not raw or raw.startswith("/") or re.match(r"[A-Za-z]:", raw) or ".." in parts:
        raise f.error(
            "system-file", f"{value!r} must be a path relative to the repository root, without '..'"
        )
    relative = str(PurePosixPath(*parts))
    if prompts is not None and relative in prompts:
        return relative, prompts[relative]
    try:
        # Confined: never .git/ (its config holds CI's token), the env-file or through a link;
        # the text would reach the miss explanation and the uploaded results.
        data = read_inside(
            repo, relative, f"{f.path}: field 'system-file':", TEXT_BYTES, private=private
        )
    except FileNotFoundError:
        raise f.error(
            "system-file",
            f"{relative!r} not found (paths are relative to the repository root {repo}); "
            "fix the path or add the prompt file",
        ) from None
    except OSError as exc:
        raise f.error("system-file", f"cannot read {relative!r}: {exc.strerror}") from None
    try:
        text = data.decode("utf-8-sig")  # editors on Windows may add a BOM
    except UnicodeDecodeError as exc:
        raise f.error("system-file", f"{relative!r} is not UTF-8 ({exc.reason})") from None
    text = normalise_text(text)
    if prompts is not None:
        prompts[relative] = text
    return relative, text


def _tools(value: Any, f: _Fields) -> list[dict[str, Any]]:
    out = []
    seen: set[str] = set()
    for i, item in enumerate(f.array(value, "tools")):
        field = f"tools[{i}]"
        tool = f.obj(item, field)
        if tool.get("type") != "function":
            raise f.error(f"{field}.type", f'expected "function", got {tool.get("type")!r}')
        for key in sorted(set(tool) - {"type", "function"}):
            raise f.error(f"{field}.{key}", "unknown tool field; allowed: type, function")
        function = f.obj(tool.get("function"), f"{field}.function")
        for key in sorted(set(function) - {"name", "description", "parameters", "strict"}):
            raise f.error(
                f"{field}.function.{key}",
                "unknown function field; allowed: name, description, parameters, strict",
            )
        name = function.get("name")
        if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
            raise f.error(f"{field}.function.name", f"expected 1-64 of [A-Za-z0-9_-], got {name!r}")
        if name in seen:
            raise f.error(f"{field}.function.name", f"duplicate tool name {name!r}")
        seen.add(name)
        if "description" in function:
            f.string(function["description"], f"{field}.function.description")
        if "parameters" in function:
            f.obj(function["parameters"], f"{field}.function.parameters")
        out.append(tool)
    return out


def _strings(value: Any, field: str, f: _Fields) -> list[str]:
    items = f.array(value, field)
    for i, item in enumerate(items):
        if not isinstance(item, str) or not item:
            raise f.error(
                f"{field}[{i}]", f"expected a non-empty string, got {json_kind(item, exact=True)}"
            )
    return items


def _judges(value: Any, f: _Fields, metrics: Collection[str]) -> list[str]:
    judges = _strings(value, "judge", f)
    for i, metric in enumerate(judges):
        if metric not in metrics:
            raise f.error(
                f"judge[{i}]",
                f"unknown metric {metric!r}; allowed: {', '.join(sorted(metrics))} (custom "
                "metrics go in [tool.cachelint.judge.metrics])",
            )
    return judges


def _require_canonical(f: _Fields, **fields: Any) -> None:
    """Each field can be part of a cache key; checked together (one encoding in the usual case),
    then field by field to name the one that cannot."""
    values = list(fields.values())
    try:
        # What canonical_bytes refuses orjson refuses too (a lone surrogate, an integer beyond
        # 2**53, nesting 255 deep), but for a non-finite float, which it writes as null: without
        # a null, canonical_bytes would succeed, and its walk and sorted copy are not needed.
        if b"null" not in orjson.dumps(values, option=orjson.OPT_STRICT_INTEGER):
            return
    except orjson.JSONEncodeError:
        pass  # canonical_bytes decides
    try:
        canonical_bytes(values)
        return
    except ValueError:
        pass
    for field, value in fields.items():
        try:
            canonical_bytes(value)
        except ValueError as exc:  # e.g. an integer beyond 2**53, which RFC 8785 cannot encode
            raise f.error(field, f"cannot be part of a cache key: {exc}") from None


def _known_fields(data: Any, f: _Fields) -> None:
    """A scenario is a JSON object of the known fields; a misspelt one is named with its likely
    spelling."""
    if not isinstance(data, dict):
        raise CachelintError(
            f"{f.path}: a scenario must be a JSON object, got {json_kind(data, exact=True)}"
        )
    for key in sorted(set(data) - FIELDS):
        import difflib  # a typo's hint only

        hint = difflib.get_close_matches(key, sorted(FIELDS), n=1)
        did_you_mean = f" (did you mean {hint[0]!r}?)" if hint else ""
        raise f.error(key, f"unknown field{did_you_mean}; allowed: {', '.join(sorted(FIELDS))}")


def _trials(trials: Any, f: _Fields) -> int:
    if isinstance(trials, bool) or not isinstance(trials, int) or not 1 <= trials <= MAX_TRIALS:
        raise f.error(
            "trials",
            f"expected an integer from 1 to {MAX_TRIALS}, got {json_kind(trials, exact=True)}",
        )
    return trials


def _targets(data: dict[str, Any], f: _Fields) -> tuple[str | None, list[str]]:
    """The scenario's one target, or its matrix of targets (never both)."""
    target = data.get("target")
    if target is not None:
        f.string(target, "target")
    targets = _strings(data.get("targets", []), "targets", f)
    if targets and target is not None:
        raise f.error("targets", "give 'target' (one target) or 'targets' (a matrix), not both")
    return target, targets


def parse_scenario(
    repo: Path,
    identity: str,
    path: str,
    data: Any,
    *,
    prompts: dict[str, str] | None = None,
    metrics: Collection[str] = METRICS,
    file_digest: str = "",
    private: Collection[str] = (),
    default_pass: PassPolicy = ALL,
    shared: dict[Any, Any] | None = None,
    spool: InputSpool | None = None,
) -> Scenario:
    """Validate one parsed dataset file (`path`: repo-relative, in messages); `private`: the
    files a `system-file` may not name; `shared`: values held once across a load (`_once`),
    `prompts` its system files; `spool`: where its inputs wait until it runs, not shared."""
    f = _Fields(path)
    _known_fields(data, f)
    once = shared if spool is None else None
    messages, system_source = _conversation(repo, data, f, prompts, private)
    if messages[0].get("role") == "system":  # a suite's scenarios share a few system prompts
        messages[0] = _once(messages[0], shared if system_source is not None else once)
    options = _once(_options(data, f), once)
    tools = _tools(data.get("tools", []), f)
    _require_canonical(f, messages=messages, options=options, tools=tools)
    assertions = _assertions(data, f, once)
    judges = _judges(data.get("judge", []), f, metrics)
    trials = _trials(data.get("trials", 1), f)
    field_pass = f"{path}: field 'pass'"
    policy = parse_policy(data["pass"], trials, field_pass) if "pass" in data else default_pass
    tags = _strings(data.get("tags", []), "tags", f)
    description = _description(data, f)
    target, targets = _targets(data, f)
    model_calls = _model_calls(data.get("model-calls", True), f)
    agent, tenant = _identity_parts(identity, shared)
    scenario = Scenario(
        identity=identity,
        path=path,
        agent=agent,
        tenant=tenant,
        messages=tuple(messages),
        system_source=system_source,
        options=options,
        tools=tuple(tools),
        assertions=tuple(assertions),
        judges=tuple(judges),
        trials=trials,
        tags=tuple(tags),
        description=description,
        target=target,
        file_digest=file_digest,
        model_calls=model_calls,
        pass_policy=policy,
        targets=tuple(targets),
    )
    if spool is not None:
        scenario.spool_inputs(spool)
    return scenario


def _assertions(data: Any, f: _Fields, shared: dict[Any, Any] | None) -> list[Any]:
    return [
        _once(validate_assertion(spec, f"{f.path}: assert[{i}]"), shared)
        for i, spec in enumerate(f.array(data.get("assert", []), "assert"))
    ]


def _identity_parts(identity: str, shared: dict[Any, Any] | None) -> tuple[str, str]:
    """(agent, tenant); a suite's scenarios share a few agents and tenants, held once."""
    agent, tenant, _ = identity.split("/")
    if shared is not None:
        agent, tenant = shared.setdefault(agent, agent), shared.setdefault(tenant, tenant)
    return agent, tenant


# The values `_once` holds once: equal values of these types are the same JSON.
_FLAT = frozenset({str, int, bool, type(None)})


def _once(value: Mapping[str, Any], shared: dict[Any, Any] | None) -> Any:
    """`value`, or an equal object an earlier scenario of this load holds: a suite of many
    thousand scenarios repeats the same options and assertions. Only objects of strings,
    integers, booleans and nulls, compared with their types (0 and false, 1 and 1.0 differ)."""
    if shared is None:
        return value
    values = tuple(value.values())
    types = tuple(map(type, values))  # built-ins all the way: this runs a few times per scenario
    if not _FLAT.issuperset(types):
        return value
    key = (*value, *types, *values)  # a dict of n entries: 3n items, compared place by place
    held = shared.get(key)
    if held is None:
        # Its keys and its short strings ("type", "contains") are a suite's few: one of each,
        # where every dataset file decodes its own.
        held = shared[key] = {shared.setdefault(k, k): _held(v, shared) for k, v in value.items()}
    return held


def _held(value: Any, shared: dict[Any, Any]) -> Any:
    return shared.setdefault(value, value) if type(value) is str and len(value) <= 32 else value


def _options(data: dict[str, Any], f: _Fields) -> dict[str, Any]:
    """The scenario's request options, none of those the runner sets itself."""
    options = f.obj(data.get("options", {}), "options")
    for key in sorted(set(options) & set(_RESERVED_OPTIONS)):
        raise f.error(f"options.{key}", f"not allowed here: {_RESERVED_OPTIONS[key]}")
    return options


def _description(data: dict[str, Any], f: _Fields) -> str | None:
    description = data.get("description")
    if description is not None:
        f.string(description, "description")
    return description


def _conversation(
    repo: Path,
    data: dict[str, Any],
    f: _Fields,
    prompts: dict[str, str] | None,
    private: Collection[str] = (),
) -> tuple[list[dict[str, Any]], str | None]:
    """The scenario's messages (from `messages` or `input`) with its system prompt first (from
    `system` or `system-file`), and the system file's path if it came from one."""
    if ("messages" in data) == ("input" in data):
        raise f.error(
            "messages",
            "give exactly one of 'messages' (a list of {role, content}) or 'input' (a string)",
        )
    if "input" in data:
        messages = [{"role": "user", "content": normalise_text(f.string(data["input"], "input"))}]
    else:
        messages = _messages(data["messages"], f)
    if "system" in data and "system-file" in data:
        raise f.error("system-file", "give either 'system' or 'system-file', not both")
    system_source: str | None = None
    system: str | None = None
    if "system" in data:
        system = normalise_text(f.string(data["system"], "system"))
    elif "system-file" in data:
        system_source, system = _read_system_file(repo, data["system-file"], f, prompts, private)
        system_source = sys.intern(system_source)  # a suite names a few: each held once
    if system is not None:
        if messages[0].get("role") == "system":
            field = "system" if system_source is None else "system-file"
            raise f.error(field, "messages[0] is already a system message; keep one of the two")
        messages.insert(0, {"role": "system", "content": system})
    return messages, system_source


# ---- loading ------------------------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _read_json(
    repo: Path, path: str, private: Collection[str], opened: dict[str, int] | None = None
) -> tuple[bytes, Any]:
    """A dataset file's bytes and its JSON, strictly: UTF-8, no NaN, no lone surrogate.
    `opened`: the directory read last, kept open for the next file in it (`read_inside`)."""
    try:
        raw = read_inside(repo, path, f"{path}:", DEFAULT_MAX_BYTES, private=private, opened=opened)
        text = utf8_sig_text(raw)
        data = loads(text, parse_constant=_reject_constant, raw=raw)
    except UnicodeDecodeError as exc:
        raise CachelintError(f"{path}: not UTF-8 ({exc.reason}); save it as UTF-8") from None
    except json.JSONDecodeError as exc:
        raise CachelintError(
            f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except ValueError as exc:  # NaN/Infinity: valid for Python's json, not for JSON
        raise CachelintError(f"{path}: invalid JSON: {exc}") from None
    except RecursionError:
        raise CachelintError(f"{path}: invalid JSON: nested too deeply") from None
    except OSError as exc:
        raise CachelintError(f"{path}: cannot read: {exc.strerror}") from None
    bad = lone_surrogate(data) if may_hold_surrogate(text) else None
    if bad is not None:
        raise CachelintError(f"{path}: holds a lone surrogate {bad}, which is not text")
    return raw, data


def _model_calls(value: Any, f: _Fields) -> bool:
    if not isinstance(value, bool):
        raise f.error("model-calls", f"expected true or false, got {json_kind(value, exact=True)}")
    return value


def _datasets_base(repo: Path, datasets_root: str) -> Path:
    base = repo / datasets_root
    if not base.is_dir():
        raise CachelintError(
            f"datasets root {datasets_root!r} not found (looked in {base}); create "
            f'{datasets_root}/<agent>/<tenant>/<scenario>.json or set datasets = "<dir>" '
            "under [tool.cachelint] in pyproject.toml"
        )
    return base


def load_scenarios(
    repo: Path,
    datasets_root: str,
    *,
    metrics: Collection[str] = METRICS,
    listed: Callable[[int], None] | None = None,
    private: Collection[str] = (),
    default_pass: PassPolicy = ALL,
    spool_above: int | None = None,
) -> list[Scenario]:
    """Every scenario under `<repo>/<datasets_root>`, sorted by identity. `listed(n)` is told how
    many dataset files there are before any is read; `private`: the configured credential files
    (`confine.private_files(config)`), which no `system-file` may name; `default_pass`: the
    config's `trials-pass`, the policy of a dataset without its own `pass`; `spool_above`: from
    how many files on the scenarios' inputs wait in a spool until they run (None: held)."""
    base = _datasets_base(repo, datasets_root)
    root = datasets_root.replace("\\", "/").rstrip("/")
    scenarios: list[Scenario] = []
    seen: dict[str, str] = {}
    prompts: dict[str, str] = {}
    shared: dict[Any, Any] = {}  # parse_scenario's values held once across the suite
    files = dataset_files(base, root)
    if listed is not None:
        listed(len(files))
    spool = InputSpool() if spool_above is not None and len(files) > spool_above else None
    opened: dict[str, int] = {}  # a tenant's directory, walked to once for all of its files
    try:
        for relative in files:
            path = f"{root}/{relative}"
            identity = scenario_identity(relative, path, seen)
            raw, data = _read_json(repo, path, private, opened)
            try:
                scenarios.append(
                    parse_scenario(
                        repo,
                        identity,
                        path,
                        data,
                        prompts=prompts,
                        shared=shared,
                        private=private,
                        metrics=metrics,
                        file_digest=content_hash(raw),
                        default_pass=default_pass,
                        spool=spool,
                    )
                )
            except RecursionError:  # e.g. `options` nested a few hundred levels deep
                raise CachelintError(
                    f"{path}: nested too deeply to be part of a cache key; flatten the options"
                ) from None
    finally:
        close_opened(opened)
    scenarios.sort(key=lambda s: s.identity)
    return scenarios
