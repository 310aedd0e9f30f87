"""Which scenarios a run takes: every scenario of the datasets, those the --agent, --tenant and
--scenario options choose, the --shard's slice of them, and one per target of a matrix."""

from __future__ import annotations

import fnmatch
import shlex
from collections.abc import Sequence
from typing import Any

from cachelint.config import Config
from cachelint.confine import private_files
from cachelint.errors import CachelintError
from cachelint.runner import engine
from cachelint.runner.dataset import load_scenarios
from cachelint.runner.matrix import expand
from cachelint.runner.shards import in_shard
from cachelint.settings import METRICS


def every_scenario(config: Config) -> list[Any]:
    """Every scenario of the datasets, with the judge metrics the config adds; a suite too large
    for a run to hold its results documents (`engine.HOLD_MAX_SCENARIOS`) is too large to hold
    its inputs from load to run: they wait in a spool (`Scenario.spool_inputs`)."""
    metrics = METRICS | set(config.judge.metrics)
    return load_scenarios(
        config.repo,
        config.datasets,
        metrics=metrics,
        private=private_files(config),
        default_pass=config.trials_pass,
        spool_above=engine.HOLD_MAX_SCENARIOS,
    )


def choose(
    config: Config,
    every: Sequence[Any],
    by: tuple[Sequence[str], Sequence[str], Sequence[str]],
    shard: tuple[int, int] | None,
    targets: Sequence[str],
) -> list[Any]:
    """The scenarios of the run: those `by` (agents, tenants, scenario globs) chooses, then the
    shard's slice of them, then one per target of a matrix."""
    agents, tenants, globs = by
    selected = _select(every, agents=agents, tenants=tenants, globs=globs, datasets=config.datasets)
    if shard is not None:
        # An empty shard is a valid slice of a small suite: it runs nothing and passes.
        selected = in_shard(selected, shard)
    return expand(config, selected, targets)  # a target matrix: one per pair


def _select(
    all_scenarios: Sequence[Any],
    *,
    agents: Sequence[str],
    tenants: Sequence[str],
    globs: Sequence[str],
    datasets: str,
) -> list[Any]:
    chosen = [
        s
        for s in all_scenarios
        if (not agents or s.agent in agents)
        and (not tenants or s.tenant in tenants)
        and (not globs or any(fnmatch.fnmatchcase(s.identity, g) for g in globs))
    ]
    if not chosen:
        wanted = " ".join(
            [*(f"--agent {a}" for a in agents), *(f"--tenant {t}" for t in tenants)]
            + [f"--scenario {shlex.quote(g)}" for g in globs]
        )
        if not all_scenarios:
            raise CachelintError(
                f"no scenarios selected: {datasets}/ holds no <agent>/<tenant>/<scenario>.json "
                "file; add one or point `datasets` in [tool.cachelint] at your datasets"
            )
        count = len(all_scenarios)
        which = (
            f"the one scenario in {datasets}/ does not"
            if count == 1
            else f"none of the {count} scenarios in {datasets}/"
        )
        raise CachelintError(
            f"no scenarios selected: {which} match {wanted}; identities look like "
            f"{all_scenarios[0].identity}"
        )
    return chosen
