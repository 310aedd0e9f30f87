"""The parts every import shares: which scenario a recorded file belongs to (`--scenario`, or a
map file), which target keys its calls, writing the planned entries through `Store.put`, and the
report.

A map file (TOML, or JSON of the same shape) names scenarios by pattern, first match wins::

    [scenarios]
    "tests/cassettes/test_refund*.yaml" = "support/acme/refund"
    "tests/cassettes/orders/*" = "orders/acme/lookup"

A pattern is an fnmatch glob over the file's path relative to the repository (vcrpy), or over a
promptfoo test's description (promptfoo; `#N` names the N-th test, from 1).
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from cachelint.config import Config, TargetConfig
from cachelint.errors import CachelintError, CorruptEntry
from cachelint.importers import Skipped
from cachelint.importers.keying import Planned

_MAP_BYTES = 1024 * 1024


@dataclass(frozen=True)
class ScenarioMap:
    """`--scenario` (every file to one scenario) or a map file's patterns, in file order."""

    fixed: str | None
    patterns: tuple[tuple[str, str], ...] = ()
    source: str = "--scenario"

    def scenario_of(self, name: str) -> str | None:
        if self.fixed is not None:
            return self.fixed
        for pattern, scenario in self.patterns:
            if fnmatch.fnmatchcase(name, pattern):
                return scenario
        return None


def scenario_map(scenario: str | None, map_file: Path | None) -> ScenarioMap:
    """The mapping the options give; exactly one of them is required."""
    from cachelint.runner.identities import validate_identity

    if (scenario is None) == (map_file is None):
        raise CachelintError(
            "cachelint import: say which scenario the recorded calls belong to: --scenario "
            "AGENT/TENANT/NAME, or --map FILE (see docs/import.md)"
        )
    if scenario is not None:
        validate_identity(scenario, "--scenario")
        return ScenarioMap(scenario)
    assert map_file is not None
    table = _read_map(map_file).get("scenarios")
    if not isinstance(table, dict) or not table:
        raise CachelintError(
            f'{map_file}: expected a [scenarios] table of "pattern" = "agent/tenant/name"'
        )
    for pattern, identity in table.items():
        if not isinstance(identity, str):
            raise CachelintError(f"{map_file}: [scenarios] {pattern!r}: expected a scenario name")
        validate_identity(identity, f"{map_file} [scenarios] {pattern!r}")
    return ScenarioMap(None, tuple(table.items()), str(map_file))


def _read_map(path: Path) -> dict[str, Any]:
    from cachelint.fsutil import read_regular

    try:
        raw = read_regular(path, _MAP_BYTES)
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CachelintError(f"{path}: cannot read the map file ({exc})") from None
    try:
        if path.suffix == ".json":
            value = json.loads(text)
        else:
            from cachelint.config import tomllib

            value = tomllib.loads(text)
    except ValueError as exc:
        raise CachelintError(f"{path}: not a valid map file ({exc})") from None
    if not isinstance(value, dict):
        raise CachelintError(f"{path}: expected a [scenarios] table")
    return value


def target_resolver(config: Config, chosen: str | None) -> Callable[[str], TargetConfig]:
    """Scenario -> the target whose provider, model and params key its calls: `--target`, else
    the dataset's `"target"` field (when the dataset exists), else its agent's, else the default:
    the target `cachelint run` will replay it with."""
    from cachelint.targets import target_name

    def resolve(scenario: str) -> TargetConfig:
        agent = scenario.split("/", 1)[0]
        name = target_name(
            config,
            agent=agent,
            chosen=chosen or _dataset_target(config, scenario),
            where=chosen and "--target" or scenario,
        )
        return config.named_target(name)

    return resolve


def _dataset_target(config: Config, scenario: str) -> str | None:
    from cachelint.confine import TEXT_BYTES, read_inside

    rel = f"{config.datasets}/{scenario}.json"
    try:
        value = json.loads(read_inside(config.repo, rel, "dataset", TEXT_BYTES))
    except (OSError, ValueError):
        return None  # no dataset yet: the report says to write one
    chosen = value.get("target") if isinstance(value, dict) else None
    return chosen if isinstance(chosen, str) else None


@dataclass
class Written:
    written: list[Planned] = field(default_factory=list)
    unchanged: list[Planned] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def write_plan(
    config: Config, planned: Sequence[Planned], *, now: datetime, overwrite: bool, dry_run: bool
) -> Written:
    """Each planned entry written through `Store.put` (atomic: contents, then entry.json), unless
    the same answer is recorded already (nothing is rewritten) or another answer is and
    `overwrite` is off. `dry_run` writes nothing and reports what would be written."""
    from cachelint.store import Store

    store = Store.configured(config, now)
    out = Written()
    for entry in planned:
        try:
            hit = store.get(entry.scenario, entry.key)
        except CorruptEntry as exc:
            hit = None
            if not overwrite:
                where = f"{config.cache[0]}/{store.entry_relpath(entry.scenario, entry.key)}"
                out.skipped.append(
                    Skipped(entry.source, f"{where} is corrupt ({exc}); --overwrite replaces it")
                )
                continue
        if hit is not None and _same(hit.response, entry.response):
            out.unchanged.append(entry)
            continue
        if hit is not None and not overwrite:
            where = f"{config.cache[0]}/{store.entry_relpath(entry.scenario, entry.key)}"
            out.skipped.append(
                Skipped(
                    entry.source,
                    f"{where} holds another answer to the same request; kept (--overwrite "
                    "replaces it)",
                )
            )
            continue
        if not dry_run:
            store.put(
                entry.scenario,
                entry.key,
                entry.request,
                entry.response,
                provider=entry.provider,
                model=entry.model,
            )
        out.written.append(entry)
    return out


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def render(
    *,
    what: str,
    written: Written,
    skipped: Sequence[Skipped],
    warnings: Sequence[str],
    config: Config,
    dry_run: bool,
) -> str:
    """The import's report: what was written, what was not and why, warnings, the next step."""
    verb = "would import" if dry_run else "imported"
    scenarios = sorted({e.scenario for e in [*written.written, *written.unchanged]})
    lines = [
        f"{verb} {_count(len(written.written), 'entry', 'entries')} from {what} into "
        f"{config.cache[0]} ({_count(len(scenarios), 'scenario', 'scenarios')})"
        + (f", {len(written.unchanged)} already there" if written.unchanged else "")
    ]
    missing = [s for s in scenarios if not (config.repo / config.datasets / f"{s}.json").exists()]
    not_imported = [*skipped, *written.skipped]
    if not_imported:
        lines.append(f"not imported ({len(not_imported)}):")
        lines += [f"  {s.source}: {s.reason}" for s in not_imported]
    if warnings:
        lines.append(f"warnings ({len(warnings)}):")
        lines += [f"  {w}" for w in warnings]
    for scenario in missing:
        lines.append(
            f"note: no dataset {config.datasets}/{scenario}.json yet: write one whose target "
            "makes these calls, or `cachelint run` will not replay them"
        )
    if written.written and not dry_run:
        lines.append(
            "next: `cachelint stamp` (seal the imported entries), then `cachelint run` (an "
            "offline replay: every imported call should be a hit), then commit "
            f"{config.cache[0]}/ and the stamp"
        )
    return "\n".join(lines) + "\n"


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"
