"""Entries read by worker processes (`cachelint check --jobs N`, and by default on large trees)
give exactly the facts and findings of entries read in the linter's own process: valid entries,
every kind of corrupt entry, and an entry whose name JSON cannot carry back from a worker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cachelint.collect import collect
from cachelint.config import load
from tests.conftest import PROJECT, commit_all, run_cachelint
from tests.helpers import NOW
from tests.trees import copy_bundled, entry_dirs


@pytest.fixture
def broken(git_repo: Path) -> Path:
    """The bundled cache with entries broken in every way a read can detect, committed."""
    copy_bundled(git_repo)
    first, second = entry_dirs(git_repo)[:2]
    third = entry_dirs(git_repo, "eval-cache/cache/support/globex/refund")[0]
    contents = first / "contents.data"
    contents.write_bytes(contents.read_bytes()[:10])  # torn
    (second / "entry.json").write_text("{not json")
    entry_json = third / "entry.json"
    data = json.loads(entry_json.read_text())
    data["scenario"] = "x/y/z"
    entry_json.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    if sys.platform == "linux":  # file names of arbitrary bytes
        track = git_repo / "eval-cache/cache/orders/acme/track"
        odd = Path(os.fsdecode(os.fsencode(track) + b"\xff"))
        track.rename(odd)
        for entry_json in odd.glob("*/entry.json"):
            data = json.loads(entry_json.read_text())
            data["scenario"] = "orders/acme/track\udcff"  # what the new name decodes to
            entry_json.write_text(json.dumps(data, indent=2))  # the surrogate as an escape
    commit_all(git_repo, "broken")
    return git_repo


def test_workers_read_what_the_linter_reads(broken: Path) -> None:
    alone = collect(load(broken), now=NOW, entry_cache=False, jobs=1)
    assert len(alone.corrupt) >= 3
    # Without the entry cache, then with it: first written from what workers read, then taken
    # from (the corrupt entries, never cached, read by workers again).
    for entry_cache in (False, True, True):
        shared = collect(load(broken), now=NOW, entry_cache=entry_cache, jobs=3)
        assert shared.corrupt == alone.corrupt
        assert shared.entries == alone.entries
    if sys.platform == "linux":
        assert any("\udcff" in entry.directory for entry in shared.entries)


def test_check_with_jobs_reports_the_same_findings(broken: Path) -> None:
    alone = run_cachelint(broken, "check", "--no-cache", "--jobs", "1")
    shared = run_cachelint(broken, "check", "--no-cache", "--jobs", "4")
    assert alone.returncode == shared.returncode == 1
    assert "eval-cache-corrupt" in alone.stdout
    assert shared.stdout == alone.stdout


def test_a_check_of_a_few_entries_starts_no_worker_machinery(broken: Path) -> None:
    """Below `MIN_PARALLEL` entries (a hook's usual check) nothing of multiprocessing is even
    imported, which a small check paid for on every run (benchmarks/README). With `--jobs 2` the
    same check reads with a worker."""
    probe = (
        "import sys; from cachelint.cli import main; rc = main(sys.argv[1:]); "
        "print(rc, [m for m in ('multiprocessing', 'concurrent.futures.process') "
        "if m in sys.modules])"
    )
    for jobs, imported in (
        ((), "[]"),
        (("--jobs", "2"), "['multiprocessing', 'concurrent.futures.process']"),
    ):
        out = subprocess.run(
            [sys.executable, "-c", probe, "check", "--no-cache", *jobs],
            cwd=broken,
            env={**os.environ, "PYTHONPATH": str(PROJECT)},
            capture_output=True,
            text=True,
            timeout=120,
        ).stdout
        assert out.splitlines()[-1] == f"1 {imported}", out


@pytest.mark.parametrize("value", ["0", "-2", "many"])
def test_jobs_must_be_a_positive_whole_number(git_repo: Path, value: str) -> None:
    result = run_cachelint(git_repo, "check", "--jobs", value)
    assert result.returncode == 2
    assert "--jobs: expected a whole number of processes >= 1" in result.stderr
    assert "Traceback" not in result.stderr
