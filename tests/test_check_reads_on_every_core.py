"""Entries read by helper processes (`cachelint check --jobs N`, and by default on large trees)
give exactly the facts and findings of entries read in the linter's own process: valid entries,
every kind of corrupt entry, and an entry whose name JSON cannot carry back from a helper."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from cachelint import entrycache, pooled
from cachelint.collect import collect
from cachelint.config import load
from tests.conftest import commit_all, run_cachelint
from tests.helpers import NOW, outside_site_packages, plant_shadows
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


def test_helpers_start_for_many_entries_or_when_asked(
    broken: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Below `MIN_PARALLEL` entries (a hook's usual check) no helper starts; `--jobs 2` starts
    one, for every entry when the check keeps no entry cache, and for what is left to read when
    the cache holds the rest."""
    started: list[int] = []
    start = pooled.Helpers.start

    def counted(self: pooled.Helpers, *args: Any) -> None:
        started.append(args[3])
        start(self, *args)

    monkeypatch.setattr(pooled.Helpers, "start", counted)
    collect(load(broken), now=NOW, entry_cache=False)
    assert started == []
    collect(load(broken), now=NOW, entry_cache=False, jobs=2)
    assert started == [1]
    shutil.rmtree(broken / ".git" / "cachelint")  # as on a fresh clone
    collect(load(broken), now=NOW, entry_cache=True, jobs=3)  # writes the cache
    collect(load(broken), now=NOW, entry_cache=True, jobs=3)  # reads the corrupt entries only
    assert started[1:] == [2, 2]


def _items(repo: Path) -> list[tuple[str, str]]:
    """Every entry directory of the tree, as the walk hands them to `read_all`."""
    found = (repo / PREFIX).rglob("entry.json")
    return sorted((p.parent.relative_to(repo).as_posix(), PREFIX) for p in found)


PREFIX = "eval-cache/cache/"


def _handed_back(helpers: pooled.Helpers, expected: set[str]) -> dict[str, Any]:
    """What the helpers hand back, once it covers `expected` (or half a minute has passed)."""
    taken: dict[str, Any] = {}
    deadline = time.monotonic() + 30
    while not expected <= taken.keys() and time.monotonic() < deadline:
        taken.update(helpers.take())
        time.sleep(0.05)
    helpers.stop()
    return taken


def test_helpers_hand_back_every_valid_entry_as_the_linter_reads_it(
    broken: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In the repository's top directory, as a check runs: its modules (a pull request's
    json.py) are never imported in place of the real ones."""
    marker = broken.parent / "imported"
    plant_shadows(broken, marker)
    monkeypatch.chdir(broken)
    items = _items(broken)
    config = load(broken)
    here = pooled.read_slice(str(broken), items, config.layout, config.max_entry_bytes)
    valid = {d: e for d, e in here.items() if not isinstance(e, str)}
    assert 0 < len(valid) < len(here)  # corrupt entries too, which helpers leave to the linter
    # As are those whose name JSON cannot carry (a directory of undecodable bytes).
    carried = {d: e for d, e in valid.items() if not entrycache.pack([e])[1]}
    assert len(carried) < len(valid) or sys.platform != "linux"
    helpers = pooled.Helpers()
    listed = helpers.list_items(items)
    assert listed is not None
    helpers.start(str(broken), config.layout, config.max_entry_bytes, 2, listed)
    assert _handed_back(helpers, set(carried)) == carried
    assert not marker.exists(), marker.read_text()


class _Handed:
    """Helpers that have already handed back `entries` (and nothing more will come)."""

    def __init__(self, entries: dict[str, Any]) -> None:
        self.entries = entries
        self.stopped = False

    def __bool__(self) -> bool:
        return True

    def list_items(self, items: list[tuple[str, str]]) -> str:
        return "listed"

    def start(self, *args: Any) -> None:
        return None

    def take(self) -> dict[str, Any]:
        entries, self.entries = self.entries, {}
        return entries

    def stop(self) -> None:
        self.stopped = True


def test_the_linter_reads_only_what_helpers_did_not_hand_back(
    broken: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    items = _items(broken)
    config = load(broken)
    base, layout, limit = str(broken), config.layout, config.max_entry_bytes
    everything = pooled.read_slice(base, items, layout, limit)
    valid = {d: e for d, e in everything.items() if not isinstance(e, str)}
    read_here: list[str] = []
    read_slice = pooled.read_slice

    def counted(base: str, part: list[tuple[str, str]], *args: Any) -> dict[str, Any]:
        read_here.extend(d for d, _ in part)
        return read_slice(base, part, *args)

    monkeypatch.setattr(pooled, "read_slice", counted)
    handed = _Handed(dict(valid))
    monkeypatch.setattr(pooled, "Helpers", lambda: handed)
    advanced: list[int] = []
    found = pooled.read_all(base, items, layout, limit, jobs=2, advance=advanced.append)
    assert {d: found[d] for d, _ in items} == everything
    assert sorted(read_here) == sorted(d for d in everything if d not in valid)
    assert sum(advanced) == len(items)
    assert handed.stopped


@pytest.mark.parametrize("value", ["0", "-2", "many"])
def test_jobs_must_be_a_positive_whole_number(git_repo: Path, value: str) -> None:
    result = run_cachelint(git_repo, "check", "--jobs", value)
    assert result.returncode == 2
    assert "--jobs: expected a whole number of processes >= 1" in result.stderr
    assert "Traceback" not in result.stderr


# Starts helpers over a long list, as a linter does, and exits at once without stopping them;
# with "gone", it first removes the list, as the first helper to see its linter dead does
# (the others may not have read the list yet).
DYING_LINTER = """
import os, sys, tempfile
from cachelint import pooled
from cachelint.config import Layout
base, directory, prefix, gone = sys.argv[1:]
helpers = pooled.Helpers()
listed = helpers.list_items([(directory, prefix)] * 200_000)
helpers.start(base, Layout.AUTO, 1 << 20, 2, listed)
print(len(os.listdir(tempfile.gettempdir())))
if gone == "gone":
    os.unlink(listed)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="a Windows process keeps its parent's id")
@pytest.mark.parametrize("gone", ["kept", "gone"], ids=["list-kept", "list-gone-before-read"])
def test_a_helper_whose_linter_died_stops_and_removes_its_files(
    git_repo: Path, tmp_path: Path, gone: str
) -> None:
    copy_bundled(git_repo)
    directory, prefix = _items(git_repo)[0]
    temp = tmp_path / "temp"  # where the linter puts the helpers' list and output files
    temp.mkdir()
    died = subprocess.run(
        [sys.executable, "-c", DYING_LINTER, str(git_repo), directory, prefix, gone],
        env={**os.environ, "TMPDIR": str(temp)},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert died.stdout.split() == ["3"]  # two helpers' output and the list
    deadline = time.monotonic() + 30  # the list takes each helper far longer to read
    while list(temp.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(temp.iterdir()) == []


# A list that cannot be written whole (the file size limit stands in for a full disk).
NO_ROOM = """
import os, resource, signal, sys, tempfile
from cachelint import pooled
from cachelint.config import Layout
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit then fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
items = [(f"eval-cache/cache/s/{n:04d}", "eval-cache/cache/") for n in range(pooled.MIN_PARALLEL)]
listed = pooled.Helpers().list_items(items)
print(listed, os.listdir(tempfile.gettempdir()))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE and SIGXFSZ as on Linux")
def test_a_list_that_cannot_be_written_is_removed_and_no_helper_starts(tmp_path: Path) -> None:
    temp = tmp_path / "temp"
    temp.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", NO_ROOM],
        env={**os.environ, "TMPDIR": str(temp)},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert done.stdout.split() == ["None", "[]"]


# Helpers over the entries named after the base directory and prefix, waited for, then what
# they handed back counted.
HANDING_BACK = """
import sys
from cachelint import pooled
from cachelint.config import Layout
base, prefix, *directories = sys.argv[1:]
helpers = pooled.Helpers()
source = helpers.list_items([(directory, prefix) for directory in directories])
helpers.start(base, Layout.AUTO, 1 << 20, 1, source)
for process, _, _ in helpers._running:
    process.wait(timeout=60)
print(len(helpers.take()))
helpers.stop()
"""


def test_helpers_read_with_a_cachelint_installed_outside_the_interpreters_site_packages(
    git_repo: Path, tmp_path: Path
) -> None:
    """A helper runs with the linter's PYTHONPATH and user site-packages, where cachelint and
    its dependencies may be installed: only the working directory is kept off its sys.path."""
    copy_bundled(git_repo)
    directories = [directory for directory, _ in _items(git_repo)]
    python, pythonpath = outside_site_packages(tmp_path)
    done = subprocess.run(
        [str(python), "-c", HANDING_BACK, str(git_repo), PREFIX, *directories],
        env={**os.environ, "PYTHONPATH": pythonpath},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert done.stdout.split() == [str(len(directories))]
