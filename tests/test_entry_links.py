"""A link among the cache's directories is refused on every call of a run, also after another
scenario of the same tenant was replayed (the tenant directory is walked once per run)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import commit_all
from tests.helpers import DEAD, do_run, record, refund, write_repo
from tests.helpers import RUN_NOW as NOW

SCENARIOS = {f"support/acme/{name}": refund(prompt="p.md") for name in ("a-first", "b-linked")}


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CACHELINT_EXECUTION", raising=False)
    monkeypatch.setenv("CACHELINT_NOW", NOW)


def _recorded(repo: Path) -> Path:
    write_repo(repo, DEAD, SCENARIOS, files={"p.md": "You are the Acme Support assistant.\n"})
    assert record(repo)[0].rc == 0
    commit_all(repo)
    return repo


def _move_and_link(directory: Path, elsewhere: Path) -> None:
    os.rename(directory, elsewhere)
    directory.symlink_to(elsewhere, target_is_directory=True)


def test_a_scenario_link_after_a_replayed_sibling_is_refused(
    git_repo: Path, tmp_path: Path
) -> None:
    repo = _recorded(git_repo)
    assert do_run(repo).rc == 0
    _move_and_link(repo / "eval-cache/cache/support/acme/b-linked", tmp_path / "moved")
    outcome = do_run(repo, execution="linked")
    assert outcome.rc == 1
    assert "PASS" in outcome.out and "a-first" in outcome.out  # the sibling still replays
    assert "eval-cache/cache/support/acme/b-linked is a symbolic link" in outcome.out


def test_a_tenant_link_is_refused_for_every_scenario(git_repo: Path, tmp_path: Path) -> None:
    repo = _recorded(git_repo)
    _move_and_link(repo / "eval-cache/cache/support/acme", tmp_path / "moved")
    outcome = do_run(repo)
    assert outcome.rc == 1
    assert outcome.out.count("eval-cache/cache/support/acme is a symbolic link") == 2
