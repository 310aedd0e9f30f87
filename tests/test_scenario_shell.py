"""What a `Scenario` makes when asked instead of holding (`runner/scenario.py`): its `name` is
the last part of its dataset identity, also for each pair of a target matrix, whose identity
names the target too."""

from __future__ import annotations

import textwrap
from pathlib import Path

from cachelint import config as configuration
from cachelint.runner import matrix
from cachelint.runner.dataset import load_scenarios
from cachelint.runner.httptarget import variables
from tests.helpers import write_datasets

TARGETS = """
    [tool.cachelint]
    cache = "eval-cache"

    [tool.cachelint.target]
    url = "http://127.0.0.1:9/v1"
    provider = "cachelint-fake"
    model = "big-model"

    [tool.cachelint.targets.small]
    url = "http://127.0.0.1:9/v1"
    provider = "cachelint-fake"
    model = "small-model"
    """


def test_name_is_the_dataset_identitys_last_part(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent(TARGETS), encoding="utf-8")
    plain = {"input": "Do you ship?"}
    pair = {"input": "How do refunds work?", "targets": ["default", "small"]}
    write_datasets(tmp_path, {"support/acme/shipping": plain, "support/acme/refund": pair}, None)
    config = configuration.load(tmp_path)
    loaded = load_scenarios(tmp_path, config.datasets)
    expanded = matrix.expand(config, loaded, ())
    assert [s.identity for s in expanded] == [
        "support/acme/refund",
        f"support/acme/refund{matrix.SEPARATOR}small",
        "support/acme/shipping",
    ]
    assert [s.name for s in expanded] == ["refund", "refund", "shipping"]
    # What an HTTP target's `{name}` placeholder stands for.
    assert [variables(s)["name"] for s in expanded] == ["refund", "refund", "shipping"]
    assert [s.path for s in expanded] == [
        "eval-datasets/support/acme/refund.json",
        "eval-datasets/support/acme/refund.json",
        "eval-datasets/support/acme/shipping.json",
    ]
