"""Named targets: `[tool.cachelint.targets.NAME]`, per-agent defaults and the judges' target.

A config can hold several agents on several models: each named target has the keys of
`[tool.cachelint.target]` (which stays the target named "default"). A scenario picks its target by
its dataset field `"target"`, else by `[tool.cachelint.agents.AGENT] target = "NAME"`, else the
default. `[tool.cachelint.judge]` names the target judges call and adds custom metrics with their
own rubric text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from cachelint.config import DEFAULT_TARGET, Config, JudgeConfig, TargetConfig
from cachelint.errors import CachelintError, ConfigError

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_METRIC = re.compile(r"[a-z][a-z0-9_-]{0,63}")


def parse_named(
    values: dict[str, Any],
    source: str,
    parse_target: Callable[[Mapping[str, Any], str], TargetConfig],
) -> dict[str, Any]:
    """Validate the `targets`, `agents` and `judge` tables already read from `values` (by
    `config._apply`) and return them as `Config` fields."""
    out: dict[str, Any] = {}
    targets: dict[str, TargetConfig] = {}
    for name, table in values.pop("targets", {}).items():
        where = f"{source} [targets.{name}]"
        if name == DEFAULT_TARGET or not _NAME.fullmatch(name):
            raise ConfigError(
                f"{where}: target name {name!r} is reserved or not a plain name; use letters, "
                f"digits, '.', '_' and '-' ({DEFAULT_TARGET!r} is [tool.cachelint.target])"
            )
        if not isinstance(table, dict):
            raise ConfigError(f"{where}: expected a table of target keys")
        targets[name] = parse_target(table, where)
    out["targets"] = targets
    known = [DEFAULT_TARGET, *sorted(targets)]

    def check_name(value: Any, where: str) -> str:
        if not isinstance(value, str) or (value != DEFAULT_TARGET and value not in targets):
            raise ConfigError(
                f"{where}: target = {value!r} names no target; defined: {', '.join(known)} "
                "(add [tool.cachelint.targets.NAME])"
            )
        return value

    agents: dict[str, str] = {}
    for agent, table in values.pop("agents", {}).items():
        where = f"{source} [agents.{agent}]"
        if not isinstance(table, dict) or set(table) != {"target"}:
            raise ConfigError(f'{where}: expected exactly one key, target = "NAME"')
        agents[agent] = check_name(table["target"], where)
    out["agents"] = agents
    compare = [check_name(n, f"{source} compare") for n in values.pop("compare", ())]
    if len(set(compare)) != len(compare):
        raise ConfigError(f"{source} compare: a target is listed twice; list each once")
    out["compare"] = tuple(compare)
    judge = values.pop("judge", None)
    if judge is not None:
        out["judge"] = _judge(judge, f"{source} [judge]", check_name)
    return out


def _judge(table: Mapping[str, Any], where: str, check_name: Callable[[Any, str], str]) -> Any:
    from cachelint.settings import METRICS

    unknown = set(table) - {"target", "metrics"}
    if unknown:
        raise ConfigError(
            f"{where}: unknown key {sorted(unknown)[0]!r}; allowed keys: metrics, target"
        )
    target = check_name(table["target"], where) if "target" in table else None
    metrics = table.get("metrics", {})
    if not isinstance(metrics, dict):
        raise ConfigError(f'{where}: metrics must be a table of name = "rubric text"')
    for name, rubric in metrics.items():
        if not _METRIC.fullmatch(name) or name in METRICS:
            raise ConfigError(
                f"{where}: metric {name!r} is a built-in or not a lowercase name; built-ins: "
                f"{', '.join(sorted(METRICS))}"
            )
        if not isinstance(rubric, str) or not rubric.strip():
            raise ConfigError(f"{where}: metric {name!r}: expected its rubric text, a string")
    return JudgeConfig(target=target, metrics=dict(metrics))


def target_name(config: Config, *, agent: str, chosen: str | None, where: str) -> str:
    """The target a scenario runs: its own `"target"` field, else its agent's, else the default."""
    name = chosen or config.agents.get(agent) or DEFAULT_TARGET
    if name != DEFAULT_TARGET and name not in config.targets:
        defined = ", ".join([DEFAULT_TARGET, *sorted(config.targets)])
        raise CachelintError(
            f"{where}: field 'target' = {name!r} names no target in {config.source}; defined: "
            f"{defined} (add [tool.cachelint.targets.{name}])"
        )
    return name
