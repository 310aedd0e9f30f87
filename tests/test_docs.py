"""The README is the user's map: it must name every hook, subcommand, rule and config key."""

from __future__ import annotations

import re

import yaml  # PyYAML comes with pre-commit, a test dependency

from cachelint.cli import COMMANDS
from cachelint.config import _KEYS, _TARGET_KEYS
from cachelint.rules import all_rules
from tests.conftest import PROJECT

README = (PROJECT / "README.md").read_text(encoding="utf-8")


def test_readme_names_every_hook() -> None:
    hooks = yaml.safe_load((PROJECT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    ids = [hook["id"] for hook in hooks]
    assert ids == ["cachelint-check", "cachelint-watch"]
    for hook_id in ids:
        assert f"id: {hook_id}" in README, hook_id


def test_readme_documents_every_subcommand() -> None:
    for command in COMMANDS:
        assert f"`cachelint {command}" in README, command


def test_readme_documents_every_rule_code() -> None:
    documented = set(re.findall(r"^\| `(eval-cache-[a-z-]+)` \|", README, re.MULTILINE))
    codes = {rule.code for rule in all_rules()} | {"eval-cache-mutated"}
    assert documented == codes


def test_readme_documents_every_config_key() -> None:
    for key in _KEYS:
        if key != "target":
            assert f"| `{key}` |" in README, key
    for key in _TARGET_KEYS:
        assert f"`{key}`" in README, key


def test_readme_quick_start_is_two_commands() -> None:
    quick = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", quick, re.DOTALL)
    assert len(blocks) == 2
    assert all(len(block.strip().splitlines()) == 1 for block in blocks)
    assert "cachelint run" in blocks[0] and "pytest" in blocks[1]


def test_dataset_reference_documents_every_field_assertion_type_and_metric() -> None:
    from cachelint.runner import checks
    from cachelint.runner.dataset import FIELDS
    from cachelint.runner.judges import METRICS

    reference = (PROJECT / "docs/datasets.md").read_text(encoding="utf-8")
    assertions = (PROJECT / "docs/assertions.md").read_text(encoding="utf-8")
    assert "(docs/datasets.md)" in README and "(assertions.md)" in reference
    for name in sorted(FIELDS | METRICS):
        assert f"| `{name}` |" in reference, name
    for kind in sorted(set(checks.TYPES) | set(checks.base.DETERMINISTIC)):
        assert f"`{kind}`" in reference, kind
        assert f"`{kind}`" in assertions, kind
