"""The README is the user's map: it must name every hook, subcommand, rule and config key."""

from __future__ import annotations

import re
import sys

import yaml  # PyYAML comes with pre-commit, a test dependency

from cachelint.cli import COMMANDS
from cachelint.config import _KEYS, _TARGET_KEYS
from cachelint.rules import all_rules
from tests.conftest import PROJECT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the 3.10 CI leg
    import tomli as tomllib

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
    from cachelint.runner.assertions import REGISTRY
    from cachelint.runner.dataset import FIELDS
    from cachelint.runner.judges import METRICS

    reference = (PROJECT / "docs/datasets.md").read_text(encoding="utf-8")
    assertions = (PROJECT / "docs/assertions.md").read_text(encoding="utf-8")
    assert "(docs/datasets.md)" in README and "(assertions.md)" in reference
    for name in sorted(FIELDS | METRICS):
        assert f"| `{name}` |" in reference, name
    for kind in sorted(REGISTRY):
        assert f"`{kind}`" in reference, kind
        assert f"`{kind}`" in assertions, kind


def test_readme_stays_a_short_users_path() -> None:
    assert len(README.split()) <= 3000
    for internal in (
        "entries.jsonl",
        "### The entry cache",
        "## Hostile input",
        "### What check verifies",
    ):
        assert internal not in README, internal
    assert (PROJECT / "docs/internals.md").read_text(encoding="utf-8").count("entries.jsonl")


def test_readme_lists_each_rule_once() -> None:
    codes = re.findall(r"^\| `(eval-cache-[a-z-]+)` \|", README, re.MULTILINE)
    assert len(codes) == len(set(codes))


def test_readme_says_why_each_dependency_is_there() -> None:
    from packaging.requirements import Requirement

    table = README.split("### Dependencies and why", 1)[1].split("\n### ", 1)[0]
    project = tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    for requirement in project["dependencies"]:
        assert f"| `{Requirement(requirement).name}` |" in table, requirement
    assert "stdlib's C encoder" not in table  # the canonical encoder is orjson, then rfc8785


def test_every_local_link_and_hook_manifest_file_exists() -> None:
    for doc in [PROJECT / "README.md", *sorted((PROJECT / "docs").glob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
            assert (doc.parent / target).exists(), f"{doc.name}: {target}"
    manifest = (PROJECT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    for named in re.findall(r"\b((?:[\w.-]+/)+[\w.-]+\.\w+)\b", manifest):
        assert (PROJECT / named).exists(), named


def test_every_hook_rev_the_docs_give_exists_and_tags_match_the_version() -> None:
    import subprocess

    import cachelint

    tags = subprocess.run(
        ["git", "tag", "--list"], cwd=PROJECT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert all(tag == f"v{cachelint.__version__}" for tag in tags if tag.startswith("v0."))
    for doc in [PROJECT / "README.md", *sorted((PROJECT / "docs").glob("*.md"))]:
        for rev in re.findall(r"^\s*rev:\s*(\S+)", doc.read_text(encoding="utf-8"), re.MULTILINE):
            # A placeholder the reader fills in (a commit SHA), or a tag that exists.
            assert rev.startswith("<") or rev in tags, f"{doc.name}: rev {rev}"
    version = tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))
    assert version["project"]["version"] == cachelint.__version__
    assert "pip install git+" in README or 'pip install "cachelint @ git+' in README


def test_benchmarks_readme_is_one_reference_table() -> None:
    text = (PROJECT / "benchmarks/README.md").read_text(encoding="utf-8")
    assert "session" not in text.lower()
    headers = re.findall(r"^\| (.+) \|$\n^\| ---", text, re.MULTILINE)
    assert headers == ["mechanism | where | what it buys, measured | how to re-measure"]
