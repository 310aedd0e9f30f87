"""Configuration: `[tool.cachelint]` in pyproject.toml, a top-level cachelint.toml, or --config.

Every key has a default, so a repository with an `eval-cache/` directory needs no configuration.
Each key is declared once in `_KEYS` with its type and check; an unknown key, a wrong type or a bad
value is a `ConfigError` naming the file, the key and what is allowed.
"""

from __future__ import annotations

import math
import reprlib
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from cachelint.errors import ConfigError
from cachelint.paths import is_inside

if TYPE_CHECKING:  # parsed, and their defaults built, only when a run or the config asks
    from cachelint.passpolicy import PassPolicy
    from cachelint.settings import ReportSettings

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on the 3.10 CI leg
    import tomli as tomllib


class Layout(str, Enum):
    AUTO = "auto"
    CACHELINT = "cachelint"
    MEAI = "meai"
    EVALCORE = "evalcore"  # EvalCore's SQLite cassette, <root>/cache.db (cachelint.sqlite_cache)


MIN_TTL_DAYS = 365
# Ten years: a committed cache must outlive every branch that replays it (README, "Lifecycle").
DEFAULT_TTL_DAYS = 3650
DEFAULT_STAMP = ".eval-cache-stamp.json"


@dataclass(frozen=True)
class TargetConfig:
    """`[tool.cachelint.target]`: what `cachelint run` calls when it records."""

    type: str = "openai-compatible"
    url: str = "http://127.0.0.1:8765/v1"
    provider: str = "openai"
    model: str = "gpt-4o-mini"
    api_key_env: str = "OPENAI_API_KEY"
    env_file: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    timeout: float = 60.0
    max_retries: int = 5
    function: str | None = None
    command: tuple[str, ...] = ()  # type "command": the program run once per scenario
    # type "http" (cachelint.httpidentity): templates, headers and where the answer is.
    method: str = "POST"
    headers: Mapping[str, str] = field(default_factory=dict)
    body: Any = None
    response_path: str | None = None
    auth_header: str = "authorization"
    auth_prefix: str = "Bearer "


DEFAULT_TARGET = "default"  # the name of [tool.cachelint.target] among the named targets


@dataclass(frozen=True)
class JudgeConfig:
    """`[tool.cachelint.judge]`: the target judges call, and custom metrics with their rubric."""

    target: str | None = None  # None: the scenario's own target
    metrics: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Config:
    repo: Path
    source: str  # where the settings came from, for messages ("pyproject.toml", "defaults", ...)
    cache: tuple[str, ...] = ("eval-cache",)
    layout: Layout = Layout.AUTO
    max_path: int = 160
    key_prefix: int = 16
    exclude: tuple[str, ...] = ()
    stamp: str = DEFAULT_STAMP
    packages: tuple[str, ...] = ()  # none set: by layout, see `cachelint.meai.family`
    pins: tuple[str, ...] = ()
    min_ttl_days: int = MIN_TTL_DAYS
    expiry_warning_days: int = 30
    ttl_days: int = DEFAULT_TTL_DAYS
    datasets: str = "eval-datasets"
    # The `pass` policy of a dataset without its own (`cachelint.passpolicy`), and of the pytest
    # plugin's `eval(trials=n)` tests without `pass_`.
    # `trials-pass` as configured; None: the default, "all" (see `trials_pass`).
    trials_pass_set: PassPolicy | None = None
    results: str = "eval-results"
    watch: tuple[str, ...] = ()
    green_record: str = ".eval-green.json"
    max_entry_bytes: int = 64 * 1024 * 1024
    secret_allow: tuple[str, ...] = ()
    normalise: tuple[Any, ...] = ()  # key normalisers (cachelint.rewrites), applied before hashing
    redact: tuple[Any, ...] = ()  # redaction rules (cachelint.redact), applied before writing
    # (host, port) a replay lets through for the agent's own services (cachelint.netguard).
    allow_hosts: tuple[tuple[str, int], ...] = ()
    sqlite: tuple[str, ...] = ()  # single-file SQLite caches under a root (cachelint.sqlite_cache)
    db_warn_bytes: int = 50 * 1024 * 1024  # GitHub warns above 50 MiB
    db_max_bytes: int = 100 * 1024 * 1024  # and refuses a file above 100 MiB
    target: TargetConfig = field(default_factory=TargetConfig)
    targets: Mapping[str, TargetConfig] = field(default_factory=dict)  # [tool.cachelint.targets]
    agents: Mapping[str, str] = field(default_factory=dict)  # agent -> target name
    compare: tuple[str, ...] = ()  # a target matrix for every scenario (runner.matrix)
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    interpretations: Mapping[str, Any] = field(default_factory=dict)  # metric name -> ranges
    prices: Mapping[str, Any] = field(default_factory=dict)  # model -> $/Mtok in and out
    # [tool.cachelint.reports] as configured; None: every default (see `reports`).
    reports_set: ReportSettings | None = None

    # The run's defaults load on first read, so `check`, which never reads them, never imports
    # cachelint.passpolicy or cachelint.settings (tests/test_startup_imports.py).
    @property
    def trials_pass(self) -> PassPolicy:
        if self.trials_pass_set is not None:
            return self.trials_pass_set
        from cachelint.passpolicy import ALL

        return ALL

    @property
    def reports(self) -> ReportSettings:
        if self.reports_set is not None:
            return self.reports_set
        from cachelint.settings import ReportSettings

        return ReportSettings()

    def named_target(self, name: str) -> TargetConfig:
        return self.target if name == DEFAULT_TARGET else self.targets[name]

    def cache_roots(self) -> list[Path]:
        return [self.repo / c for c in self.cache]

    def stamp_path(self, cache_root: str) -> str:
        return f"{cache_root}/{self.stamp}"


# ---- validation helpers -------------------------------------------------------------------------

Check = Callable[[Any], Any]


def _str(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError("a non-empty string")
    return value


MAX_COMPONENT_BYTES = 255  # NAME_MAX of ext4, APFS and NTFS (in bytes or UTF-16 units)
MAX_PATH_CHARS = 1024


def _relpath(value: Any) -> str:
    text = _str(value).replace("\\", "/").rstrip("/")
    if "\0" in text:
        raise ValueError("a path without NUL characters (no file system takes one)")
    if len(text) > MAX_PATH_CHARS:
        raise ValueError(f"a path of at most {MAX_PATH_CHARS} characters")
    parts = PurePosixPath(text).parts
    if text.startswith("/") or (len(text) > 1 and text[1] == ":") or ".." in parts or not parts:
        raise ValueError("a relative path inside the repository, without '..'")
    for part in parts:
        if len(part.encode("utf-8", "surrogatepass")) > MAX_COMPONENT_BYTES:
            raise ValueError(
                f"a path whose every component is at most {MAX_COMPONENT_BYTES} bytes "
                "(no file system holds a longer name)"
            )
    return str(PurePosixPath(*parts))


def _str_list(item: Check, *, nonempty: bool = False) -> Check:
    def check(value: Any) -> tuple[Any, ...]:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            raise ValueError("a string or a list of strings")
        if nonempty and not value:
            raise ValueError("at least one entry: an empty list would check nothing")
        return tuple(item(v) for v in value)

    return check


def _int(lo: int, hi: int, why_lo: str = "") -> Check:
    def check(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"an integer from {lo} to {hi}")
        if value < lo:
            raise ValueError(f"an integer of at least {lo}{why_lo}")
        if value > hi:
            raise ValueError(f"an integer of at most {hi}")
        return value

    return check


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError("a positive number of seconds")
    if not math.isfinite(value):
        raise ValueError("a finite positive number of seconds")
    return float(value)


def _layout(value: Any) -> Layout:
    try:
        return Layout(value)
    except ValueError:
        raise ValueError("one of " + ", ".join(repr(m.value) for m in Layout)) from None


def _glob(value: Any) -> str:
    from cachelint.globs import compile_globs  # only needed when globs are configured

    text = _str(value)
    compile_globs([text])  # ValueError saying what is wrong
    return text


def _allow_item(value: Any) -> str:
    """A `secret-allow` item: a finding's `blake3:<16 hex>` fingerprint, or a path glob."""
    text = _str(value)
    if text.startswith("blake3:"):
        if len(text) != 23 or any(c not in "0123456789abcdef" for c in text[7:]):
            raise ValueError("a fingerprint as a finding prints it (blake3: and 16 hex digits)")
        return text
    return _glob(text)


def _rewrites(value: Any) -> tuple[Any, ...]:
    from cachelint.rewrites import parse_rules

    return parse_rules(value)


def _redactions(value: Any) -> tuple[Any, ...]:
    from cachelint.redact import parse

    return parse(value)


# The run's tables and `trials-pass` (cachelint.settings, cachelint.passpolicy) load when a key
# names them; a value equal to the default is kept as None, as an unset key is.
def _trials_pass(value: Any) -> PassPolicy | None:
    from cachelint.passpolicy import ALL, config_policy

    policy = config_policy(value)
    return None if policy == ALL else policy


def _interpretations(value: Any) -> Mapping[str, Any]:
    from cachelint.settings import parse_interpretations

    return parse_interpretations(value)


def _prices(value: Any) -> Mapping[str, Any]:
    from cachelint.settings import parse_prices

    return parse_prices(value)


def _reports(value: Any) -> ReportSettings | None:
    from cachelint.settings import ReportSettings, parse_settings

    settings = parse_settings(value)
    return None if settings == ReportSettings() else settings


def _allow_host(value: Any) -> tuple[str, int]:
    from cachelint.netguard import parse_allow_host

    return parse_allow_host(_str(value))


def _table(value: Any) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise ValueError("a table")
    return value


_TTL_WHY = (
    ": a committed cache must outlive the release cycle; shorter TTLs expire entries in CI "
    "(MEAI's 14-day default deletes them on read)"
)

_KEYS: dict[str, tuple[str, Check]] = {
    "cache": ("cache", _str_list(_relpath, nonempty=True)),
    "layout": ("layout", _layout),
    "max-path": ("max_path", _int(20, 259)),
    "key-prefix": ("key_prefix", _int(8, 128)),
    "exclude": ("exclude", _str_list(_glob)),
    "stamp": ("stamp", _relpath),
    "packages": ("packages", _str_list(_str)),
    "pins": ("pins", _str_list(_relpath)),
    "min-ttl-days": ("min_ttl_days", _int(MIN_TTL_DAYS, 100_000, _TTL_WHY)),
    "expiry-warning-days": ("expiry_warning_days", _int(0, 100_000)),
    "ttl-days": ("ttl_days", _int(MIN_TTL_DAYS, 100_000, _TTL_WHY)),
    "datasets": ("datasets", _relpath),
    "trials-pass": ("trials_pass_set", _trials_pass),
    "results": ("results", _relpath),
    "watch": ("watch", _str_list(_glob)),
    "green-record": ("green_record", _relpath),
    "max-entry-bytes": ("max_entry_bytes", _int(1024, 1 << 40)),
    "secret-allow": ("secret_allow", _str_list(_allow_item)),
    "normalise": ("normalise", _rewrites),
    "redact": ("redact", _redactions),
    "allow-hosts": ("allow_hosts", _str_list(_allow_host)),
    "sqlite": ("sqlite", _str_list(_relpath)),
    "db-warn-bytes": ("db_warn_bytes", _int(1, 1 << 40)),
    "db-max-bytes": ("db_max_bytes", _int(1, 1 << 40)),
    "target": ("target", _table),
    "targets": ("targets", _table),
    "agents": ("agents", _table),
    "compare": ("compare", _str_list(_str)),
    "judge": ("judge", _table),
    "interpretations": ("interpretations", _interpretations),
    "prices": ("prices", _prices),
    "reports": ("reports_set", _reports),
}

_TARGET_TYPES = ("openai-compatible", "python", "command", "http")


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("a string")
    return value


def _json_value(value: Any) -> Any:
    import json

    try:
        json.dumps(value)
    except (TypeError, ValueError):
        raise ValueError("a JSON value (a table, array, string, number or boolean)") from None
    return value


_TARGET_KEYS: dict[str, tuple[str, Check]] = {
    "type": ("type", _str),
    "url": ("url", _str),
    "provider": ("provider", _str),
    "model": ("model", _str),
    "api-key-env": ("api_key_env", _str),
    "env-file": ("env_file", _relpath),
    "params": ("params", _table),
    "timeout": ("timeout", _number),
    "max-retries": ("max_retries", _int(0, 20)),
    "function": ("function", _str),
    "command": ("command", _str_list(_str, nonempty=True)),
    "method": ("method", _str),
    "headers": ("headers", _table),
    "body": ("body", _json_value),
    "response-path": ("response_path", _text),
    "auth-header": ("auth_header", _str),
    "auth-prefix": ("auth_prefix", _text),
}


# `repr` bounded in depth and length: a value nested 500 levels deep is bad input to name, not a
# RecursionError.
_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 120


def _apply(
    table: Mapping[str, Any], keys: dict[str, tuple[str, Check]], where: str
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in table.items():
        if key not in keys:
            allowed = ", ".join(sorted(keys))
            raise ConfigError(f"{where}: unknown key {key!r}; allowed keys: {allowed}")
        attr, check = keys[key]
        try:
            out[attr] = check(value)
        except ValueError as exc:
            raise ConfigError(
                f"{where}: key {key!r} = {_REPR.repr(value)}: expected {exc}"
            ) from None
    return out


def _read_toml(path: Path, repo: Path | None = None) -> dict[str, Any] | None:
    """The TOML table in `path`: the repository's own file (`repo` given; read confined, None
    when absent) or one named by --config. Every number in it must be finite."""
    from cachelint.confine import CONFIG_BYTES, read_inside
    from cachelint.fsutil import read_regular

    try:
        if repo is None:
            raw = read_regular(path, CONFIG_BYTES)
        else:
            raw = read_inside(repo, path.name, "config", CONFIG_BYTES, error=ConfigError)
        data = tomllib.loads(raw.decode("utf-8"))
    except FileNotFoundError:
        if repo is not None:
            return None
        raise ConfigError(f"{path}: cannot read config: No such file or directory") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}; fix the syntax and retry") from None
    except RecursionError:  # tomllib parses nested arrays and inline tables recursively
        raise ConfigError(
            f"{path}: invalid TOML: nested too deeply; flatten the arrays or tables"
        ) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: invalid TOML: not UTF-8 (byte {exc.start}); save the file as UTF-8"
        ) from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config: {exc.strerror}") from None
    _require_finite(data, str(path))
    return data


def _require_finite(table: dict[str, Any], where: str) -> None:
    """TOML has `nan` and `inf`; no setting of cachelint means either (an infinite timeout never
    fires, a nan budget compares false both ways): a config error naming the key."""
    stack: list[tuple[str, Any]] = [("", table)]
    while stack:
        key, value = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(
                f"{where}: key {key!r} = {value}: expected a finite number (nan and inf are not "
                "settings), write the number itself"
            )
        if isinstance(value, dict):
            stack.extend((f"{key}.{k}" if key else str(k), v) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((f"{key}[{i}]", v) for i, v in enumerate(value))


def from_table(repo: Path, table: Mapping[str, Any], source: str) -> Config:
    """Build a validated `Config` from a `[tool.cachelint]`-shaped table."""
    values = _apply(table, _KEYS, source)
    target_table = values.pop("target", None)
    if target_table is not None:
        values["target"] = _target(target_table, f"{source} [target]")
    from cachelint.targets import parse_named

    values.update(parse_named(values, source, _target))
    config = Config(repo=repo, source=source, **values)
    _check_consistency(config)
    return config


def _target(table: Mapping[str, Any], where: str) -> TargetConfig:
    values = _apply(table, _TARGET_KEYS, where)
    kind = values.get("type", "openai-compatible")
    if kind not in _TARGET_TYPES:
        raise ConfigError(
            f"{where}: key 'type' = {kind!r}: expected one of "
            + ", ".join(repr(t) for t in _TARGET_TYPES)
        )
    function = values.get("function")
    if kind == "python" and (function is None or function.count(":") != 1):
        raise ConfigError(
            f"{where}: type 'python' needs function = \"module:function\""
            + ("" if function is None else f", got {function!r}")
        )
    if kind == "command" and not values.get("command"):
        raise ConfigError(
            f'{where}: type \'command\' needs command = ["program", "arg", ...], run once per '
            "scenario from the repository root"
        )
    if kind == "http":
        from cachelint.httpidentity import check_http

        values = check_http(values, where)
    return TargetConfig(**values)


def _check_consistency(config: Config) -> None:
    for db in config.sqlite:  # guard and run's canary hash only what lies under a root
        if not any(is_inside(db, cache) and db != cache for cache in config.cache):
            raise ConfigError(
                f"{config.source}: key 'sqlite' = {db!r} lies outside every cache root; add its "
                "directory to `cache` so check, guard and run's canary cover it"
            )
    for cache in config.cache:
        for name, value in (("results", config.results), ("green-record", config.green_record)):
            if is_inside(value, cache):
                raise ConfigError(
                    f"{config.source}: key {name!r} = {value!r} lies inside cache root {cache!r}; "
                    "an offline run must write no byte into the committed cache, move it outside"
                )
        if is_inside(cache, config.results):
            raise ConfigError(
                f"{config.source}: key 'cache' = {cache!r} lies inside results directory "
                f"{config.results!r}; cleaning results would delete the cache, move one of them"
            )
    if config.watch:
        from cachelint.globs import compile_globs

        spec = compile_globs(config.watch)
        protected = [
            *(config.stamp_path(c) for c in config.cache),
            *(
                f"{c}/cache/x/{name}"
                for c in config.cache
                for name in ("entry.json", "contents.data")
            ),
            f"{config.results}/x.json",
            config.green_record,
        ]
        for path in protected:
            if spec.match_file(path):
                raise ConfigError(
                    f"{config.source}: key 'watch' matches {path!r}; watch globs must name prompt "
                    "and model files only, or re-recording would trigger the gate itself"
                )


def load(repo: Path, config_path: Path | None = None) -> Config:
    """Load the configuration for `repo` (an explicit file wins, then cachelint.toml, then
    pyproject.toml's [tool.cachelint], then the defaults), its paths confined to the repository."""
    from cachelint.confine import check_config

    config = _load(repo, config_path)
    check_config(config)
    return config


def _load(repo: Path, config_path: Path | None) -> Config:
    if config_path is not None:
        data = _read_toml(config_path) or {}
        if config_path.name != "pyproject.toml":
            return from_table(repo, data, str(config_path))
        # An explicit pyproject.toml holds the project's metadata too: read only its table.
        tool = data.get("tool")
        table = tool.get("cachelint") if isinstance(tool, dict) else None
        if not isinstance(table, dict):
            raise ConfigError(
                f"{config_path}: no [tool.cachelint] table; add one or pass a cachelint.toml"
            )
        return from_table(repo, table, f"{config_path} [tool.cachelint]")
    own = _read_toml(repo / "cachelint.toml", repo)
    pyproject = _read_toml(repo / "pyproject.toml", repo)
    tool = pyproject.get("tool", {}) if pyproject is not None else {}
    in_pyproject = isinstance(tool, dict) and "cachelint" in tool
    if own is not None:
        if in_pyproject:
            raise ConfigError(
                "cachelint.toml and pyproject.toml [tool.cachelint] both configure cachelint "
                "and only one would be read; move the settings into one of them and delete the "
                "other"
            )
        return from_table(repo, own, "cachelint.toml")
    if in_pyproject:
        if not isinstance(tool["cachelint"], dict):
            raise ConfigError("pyproject.toml: [tool.cachelint] must be a table")
        return from_table(repo, tool["cachelint"], "pyproject.toml [tool.cachelint]")
    if not (repo / "eval-cache").exists() and (repo / ".evalcore/cache.db").is_file():
        # EvalCore's cassette and no cachelint tree: check what the repository has.
        return Config(repo=repo, source="defaults", cache=(".evalcore",), layout=Layout.EVALCORE)
    return Config(repo=repo, source="defaults")
