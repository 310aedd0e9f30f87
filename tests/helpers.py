"""Helpers shared by several test modules: repositories built for one purpose, and the values
they are built with. Tests import from here (or use conftest fixtures), never from each other."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

from cachelint.canonical import cache_key
from cachelint.config import load
from cachelint.green import record_green_run
from cachelint.rules import all_rules
from cachelint.store import Store
from tests.conftest import commit_all, git

# The moment tree checks run at: entries recorded at it are fresh, stamps a year old are not.
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
TREE_CODES = [r.code for r in all_rules() if r.group == "tree"]

# ---- a cache entry --------------------------------------------------------------------------


def put(repo: Path, scenario: str = "agent/tenant/hello", text: str = "hi") -> Path:
    store = Store(repo / "eval-cache", clock=lambda: NOW)
    request = {"messages": [{"role": "user", "content": text}]}
    return store.put(
        scenario, cache_key(request), request, {"text": text}, provider="openai", model="m"
    )


MEAI_KEY = "0123456789ABCDEF" * 6  # 96 uppercase hex characters, like a SHA-384 key


def write_meai(repo: Path, *, key: str = MEAI_KEY, scenario: str = "Scenario") -> Path:
    directory = repo / "eval-cache" / "cache" / scenario / "1" / key
    directory.mkdir(parents=True)
    entry = {
        "scenarioName": scenario,
        "iterationName": "1",
        "creation": "2026-01-01T00:00:00.0000000Z",
        "expiration": "2027-01-01T00:00:00.0000000Z",
    }
    (directory / "entry.json").write_text(json.dumps(entry, indent=2))
    (directory / "contents.data").write_text('{\n  "messages": []\n}')
    return directory


# ---- a repository gated by `cachelint watch` ---------------------------------------------------

GREEN_NOW = datetime(2026, 1, 31, 12, 0, tzinfo=timezone.utc)
CONFIG = '[tool.cachelint]\nwatch = ["prompts/**", "models.json"]\n'


def make_gated_repo(repo: Path, config: str = CONFIG) -> Path:
    """A repository with watched prompts, a dataset, a cache entry and a committed green record."""
    (repo / "pyproject.toml").write_text(config)
    (repo / "prompts").mkdir()
    (repo / "prompts" / "system.txt").write_text("You are terse.\n")
    (repo / "models.json").write_text('{"model": "gpt-4o-mini"}\n')
    (repo / "README.md").write_text("docs\n")
    dataset = repo / "eval-datasets" / "agent" / "tenant"
    dataset.mkdir(parents=True)
    (dataset / "s1.json").write_text('{"input": "hi"}\n')
    entry = repo / "eval-cache" / "cache" / "agent" / "tenant" / "s1" / "0123456789abcdef"
    entry.mkdir(parents=True)
    (entry / "entry.json").write_text("{}\n")
    (entry / "contents.data").write_text('"hello"\n')
    (repo / ".gitattributes").write_text("eval-cache/** -text\n")
    commit_all(repo, "evals")
    record_green(repo)
    commit_all(repo, "green")
    return repo


def record_green(repo: Path) -> Path:
    return record_green_run(
        load(repo), execution="e1", mode="replay", scenarios=["agent/tenant/s1"], now=GREEN_NOW
    )


# ---- a repository the commit hooks accept ------------------------------------------------------


def make_checked_repo(repo: Path, *, attributes: bool) -> Path:
    """A valid recorded cache with a stamp and a pin, optionally missing `-text`."""
    store = Store(repo / "eval-cache")
    request: dict[str, list[str]] = {"messages": []}
    store.put("agent/t/s1", cache_key(request), request, {"text": "hi"}, provider="p", model="m")
    (repo / "requirements.txt").write_text("cachelint==0.1.0\n")
    if attributes:
        (repo / ".gitattributes").write_text("eval-cache/** -text\n")
    subprocess.run(
        [sys.executable, "-m", "cachelint", "stamp"], cwd=repo, check=True, capture_output=True
    )
    git(repo, "add", "-A")
    return repo
