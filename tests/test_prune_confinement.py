"""Issue 37: `prune --yes` deleted outside the repository when a scenario directory was swapped
for a symbolic link. Deletion re-checks confinement at the moment of the operation: through the
real CLI, a scenario directory is replaced by a link to a directory outside the repository,
once before `prune --yes` starts (after the usage record was written) and once between prune's
listing of the tree and its first deletion; nothing outside is deleted and prune says so in one
line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PROJECT
from tests.helpers import RUN_NOW as NOW
from tests.helpers import SCRIPT
from tests.test_interrupted_recording import cachelint, entries, ok, provider, recorded_and_replayed

SCENARIO = "eval-cache/cache/support/acme/refund"

# `python -m cachelint prune --yes`, with the scenario directory swapped for the link once prune
# has listed the tree and judged it, just before its first deletion: the window of a real race.
RACE = """
import os, sys
from cachelint.commands import prune

remove = prune._remove


def swapped(repo, directory, keep):
    scenario = os.path.join(str(repo), sys.argv[1])
    if not os.path.islink(scenario):
        os.rename(scenario, sys.argv[2])
        os.symlink(sys.argv[3], scenario, target_is_directory=True)
    return remove(repo, directory, keep)


prune._remove = swapped
from cachelint.cli import main

sys.exit(main(["prune", "--yes"]))
"""


def unused_after_a_rerecord(repo: Path) -> set[str]:
    """Both prompts changed and re-recorded by a full run: the two old entries are unused."""
    old = recorded_and_replayed(repo)
    with provider(repo, SCRIPT):
        ok(cachelint(repo, "run", "--cache", "auto"))
    listed = ok(cachelint(repo, "prune")).stdout.splitlines()[:-1]
    assert sorted(line.split()[-1] for line in listed) == sorted(old)
    return old


def outside_copy(repo: Path, outside: Path) -> dict[Path, bytes]:
    """The scenario directory's look-alike outside the repository: every file and its bytes."""
    shutil.copytree(repo / SCENARIO, outside)
    for entry in outside.iterdir():
        (entry / "precious.txt").write_text("not the repository's to delete\n", encoding="utf-8")
    return {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()}


def untouched(files: dict[Path, bytes], outside: Path) -> None:
    now = {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()}
    assert now == files


def refused_in_one_line(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(f"cachelint: error: {SCENARIO}/"), proc.stderr
    assert f"{SCENARIO} is not a directory of the repository" in proc.stderr, proc.stderr
    assert "prune never deletes through a link, nothing more was deleted" in proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr


@pytest.mark.skipif(not hasattr(os, "O_NOFOLLOW"), reason="deletion by descriptor needs O_NOFOLLOW")
def test_prune_deletes_nothing_through_a_scenario_swapped_for_a_link_midway(
    git_repo: Path, tmp_path: Path
) -> None:
    old = unused_after_a_rerecord(git_repo)
    outside = tmp_path / "outside/refund"
    files = outside_copy(git_repo, outside)
    aside = tmp_path / "aside"
    proc = subprocess.run(
        [sys.executable, "-c", RACE, SCENARIO, str(aside), str(outside)],
        cwd=git_repo,
        env={**os.environ, "PYTHONPATH": str(PROJECT), "CACHELINT_NOW": NOW},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (git_repo / SCENARIO).is_symlink()  # the swap happened after the listing
    refused_in_one_line(proc)
    assert proc.stdout == ""  # the first deletion was refused: nothing reported deleted
    untouched(files, outside)
    # Nothing after the refusal was deleted either: globex's unused entry is still there.
    assert {e for e in old if "/globex/" in e} <= entries(git_repo)


def test_prune_deletes_nothing_through_a_scenario_swapped_for_a_link_before_it_runs(
    git_repo: Path, tmp_path: Path
) -> None:
    unused_after_a_rerecord(git_repo)
    outside = tmp_path / "outside/refund"
    files = outside_copy(git_repo, outside)
    (git_repo / SCENARIO).rename(tmp_path / "aside")
    (git_repo / SCENARIO).symlink_to(outside, target_is_directory=True)
    before = entries(git_repo)
    for args in (("prune", "--yes"), ("prune",)):
        proc = cachelint(git_repo, *args)
        untouched(files, outside)
        assert entries(git_repo) == before  # globex's unused entry too: nothing is deleted
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert proc.stdout == "" and proc.stderr == (
            f"cachelint: error: {SCENARIO}: a symbolic link in the cache tree; prune never "
            "deletes through a link and deletes nothing while the tree holds one: restore what "
            f"it replaced (`git checkout -- {SCENARIO}`) and run `cachelint prune` again\n"
        )
