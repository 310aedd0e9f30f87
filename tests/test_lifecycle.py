"""The cache's lifecycle: a tree recorded with the defaults outlives every branch, expiry advice
names the fix that works, and entries no scenario reaches any more are found and pruned."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import commit_all, run_cachelint
from tests.test_run import BASIC, DEAD, NOW, record, write_repo

PINS = "[project]\nname = 'x'\nversion = '0'\ndependencies = ['cachelint==0.1.0']\n"


@pytest.fixture(autouse=True)
def _clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CACHELINT_EXECUTION", raising=False)
    monkeypatch.setenv("CACHELINT_NOW", NOW)


def recorded_with_defaults(repo: Path) -> None:
    """BASIC recorded through the fake provider with no ttl-days anywhere, stamped, committed."""
    write_repo(repo, DEAD, BASIC)
    pyproject = repo / "pyproject.toml"
    pyproject.write_text(PINS + pyproject.read_text(encoding="utf-8"), encoding="utf-8")
    (repo / ".gitattributes").write_text("eval-cache/** -text\n", encoding="utf-8")
    (repo / ".gitignore").write_text("/eval-results/\n", encoding="utf-8")
    outcome, _ = record(repo)
    assert outcome.rc == 0, outcome.out
    commit_all(repo, "record")
    stamped = run_cachelint(repo, "stamp")
    assert stamped.returncode == 0, stamped.stdout + stamped.stderr
    commit_all(repo, "stamp")


def test_a_tree_recorded_with_the_defaults_is_green_nine_years_later(git_repo: Path) -> None:
    recorded_with_defaults(git_repo)
    later = run_cachelint(git_repo, "check", env={"CACHELINT_NOW": "2035-01-15T10:00:00Z"})
    assert later.returncode == 0, later.stdout + later.stderr
    assert "0 findings" in later.stdout
    expiry = run_cachelint(
        git_repo, "check", "--strict", env={"CACHELINT_NOW": "2035-12-20T10:00:00Z"}
    )
    # Ten years after recording, the warning names the fix: the TTL was already the default.
    assert expiry.returncode == 1
    assert "raise ttl-days (now 3650; the default 3650 outlives every branch)" in expiry.stdout
    assert "re-record them with `cachelint run --refresh-cache`" in expiry.stdout
