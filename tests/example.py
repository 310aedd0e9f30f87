"""The bundled example (datasets, cache, prompts and config) as a fresh git repository."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import PROJECT, commit_all, git

EXAMPLE_PARTS = (
    "eval-datasets",
    "eval-cache",
    "prompts",
    "evals.py",
    "examples",
    ".gitattributes",
    ".eval-green.json",
)


def _identities(path: Path) -> list[str]:
    """A dataset's scenario identities: its own, then one per further target of its matrix
    (docs/matrix.md: the first target listed is the primary and keeps the plain identity)."""
    scenario = path.relative_to(PROJECT / "eval-datasets").with_suffix("").as_posix()
    targets = json.loads(path.read_bytes()).get("targets") or [None]
    return [scenario, *(f"{scenario}@{target}" for target in targets[1:])]


# Every scenario identity of the bundled example, in dataset order.
EXAMPLE_SCENARIOS = [
    identity
    for path in sorted((PROJECT / "eval-datasets").rglob("*.json"))
    for identity in _identities(path)
]


# How many entries the bundled example's cache holds.
EXAMPLE_ENTRIES = len(list((PROJECT / "eval-cache").rglob("entry.json")))


def example_config() -> str:
    """The project's own `[tool.cachelint]` tables, as a cachelint.toml (the keys are the same)."""
    text = (PROJECT / "pyproject.toml").read_text(encoding="utf-8")
    start = text.index("[tool.cachelint]")
    body = text[start:].replace("[tool.cachelint.", "[").replace("[tool.cachelint]\n", "")
    return body


def make_example_repo(dest: Path, *, extra_config: str = "") -> Path:
    """Clone-equivalent of the bundled example in `dest`: committed, no results, no ignore file."""
    dest.mkdir(parents=True)
    git(dest, "init", "-q", "-b", "main")
    git(dest, "config", "core.autocrlf", "false")
    for part in EXAMPLE_PARTS:
        source = PROJECT / part
        if source.is_dir():
            shutil.copytree(source, dest / part)
        else:
            shutil.copy2(source, dest / part)
    (dest / "cachelint.toml").write_text(example_config() + extra_config, encoding="utf-8")
    # As any Python project has it: importing the example's evaluators and agent writes bytecode.
    (dest / ".gitignore").write_text("__pycache__/\n", encoding="utf-8")
    commit_all(dest, "the bundled example")
    return dest
