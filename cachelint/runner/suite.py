"""The configured suite: every scenario as `cachelint run` reads it, for the commands that judge a
run's results without running it (`report --merge`, `green --from-results`).

A dataset may name a custom judge metric (`[tool.cachelint.judge.metrics]`) and a named target
(its own `"target"`, or its agent's); reading the datasets without the config would refuse
what `run` accepted, so every reader goes through here.
"""

from __future__ import annotations

from collections.abc import Callable

from cachelint.config import Config
from cachelint.confine import private_files
from cachelint.runner.dataset import Scenario, load_scenarios
from cachelint.runner.judges import METRICS
from cachelint.targets import target_name


def load_suite(config: Config, *, listed: Callable[[int], None] | None = None) -> list[Scenario]:
    """Every scenario of the datasets, validated against the config as a run validates it: the
    judge metrics it may name, the target each scenario resolves to, and the credential files a
    `system-file` may not name."""
    scenarios = load_scenarios(
        config.repo,
        config.datasets,
        metrics=METRICS | set(config.judge.metrics),
        listed=listed,
        private=private_files(config),
        default_pass=config.trials_pass,
    )
    for s in scenarios:
        target_name(config, agent=s.agent, chosen=s.target, where=s.path)
    return scenarios


def suite_pairs(config: Config) -> list[Scenario]:
    """`load_suite` as `cachelint run` with no --target runs it: a matrix scenario once per
    (scenario, target) pair, in the run's order (docs/matrix.md)."""
    from cachelint.runner.matrix import expand

    return expand(config, load_suite(config), [])
