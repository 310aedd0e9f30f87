"""What a run's end holds: the green record compared with the one on disk without decoding it
(`green._written_alike`), its datasets part taken from the run's own hashes, the entry list
written in pieces (`usage._write_json`), a file read as the one object it is."""

from __future__ import annotations

import json
import random
import tracemalloc
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from cachelint import green, usage
from cachelint.canonical import dump_pretty
from cachelint.config import load
from cachelint.display import json_dumps
from cachelint.fsutil import read_regular
from cachelint.green import _proof, _written_alike, worktree_state
from tests.conftest import commit_all
from tests.helpers import make_gated_repo


def _record(n: int = 3, **changes: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "format": 1,
        "cachelint": "0.1.0",
        "recorded": "2026-12-03T14:45:04Z",
        "run": {
            "execution": "e1",
            "mode": "replay",
            "scenarios": [f"a/t/s{i}" for i in range(n)],
            "count": n,
        },
        "watch": ["prompts/**"],
        "watched": {"prompts/system.txt": "ab" * 32},
        "datasets": {f"eval-datasets/a/t/s{i}.json": f"{i:064x}" for i in range(n)},
        "cache": {"eval-cache": "cd" * 32},
    }
    record.update(changes)
    return record


def _alike(on_disk: dict[str, Any], record: dict[str, Any]) -> bool:
    data = dump_pretty(on_disk)
    found = _written_alike(data, record)
    # It may say no where the proofs agree (a form it does not know), never yes where they differ.
    existing = json.loads(data)
    if green.PYTEST_PART in existing:
        record = {**record, green.PYTEST_PART: existing[green.PYTEST_PART]}
    assert not found or _proof(existing) == _proof(record)
    return found


def test_a_record_proven_at_another_time_run_and_mode_is_alike() -> None:
    later = _record(recorded="2026-12-04T00:00:00Z")
    later["run"] = {**later["run"], "execution": "e2", "mode": "live"}
    assert _alike(_record(), later)
    assert _alike(_record(2000), _record(2000))  # longer than a chunk of pieces


def test_a_record_with_the_pytest_part_is_alike_whatever_that_part_holds() -> None:
    part = {"recorded": "x", "session": {"tests": [f"t{i}" for i in range(200)]}, "watched": {}}
    assert _alike(_record(pytest=part), _record())  # a part of 1,000 bytes and more
    assert not _alike(_record(pytest="not an object"), _record())


def test_a_pytest_part_that_is_no_object_is_not_alike_wherever_its_key_appears() -> None:
    # The record then holds no pytest part, the one on disk does: they prove different things.
    data = dump_pretty(_record(pytest="x")).replace(
        b'"recorded": "2026-12-03T14:45:04Z"', b'"recorded": {\n  "pytest": {}}'
    )
    assert b'\n  "pytest": {' in data
    assert not _written_alike(data, _record())


@pytest.mark.parametrize(
    "change",
    [
        {"cachelint": "0.2.0"},
        {"watch": []},
        {"cache": {"eval-cache": "ef" * 32}},
        {"watched": {}},
        {"datasets": {"eval-datasets/a/t/s0.json": "0" * 64}},
    ],
)
def test_a_record_proving_another_state_is_not_alike(change: dict[str, Any]) -> None:
    assert not _alike(_record(**change), _record())


def test_other_scenarios_are_not_alike_and_neither_is_a_record_holding_the_stand_in() -> None:
    fewer = _record()
    fewer["run"] = {**fewer["run"], "scenarios": ["a/t/s0"]}
    assert not _alike(fewer, _record())
    stand_in = _record(watch=[green._ANY])
    assert not _alike(stand_in, stand_in)


def test_random_changes_to_a_written_record_are_never_taken_for_its_proof() -> None:
    rnd = random.Random(44)
    record = _record(5, pytest={"recorded": "r", "session": {"tests": ["t"]}})
    data = dump_pretty(record)
    for _ in range(400):
        at = rnd.randrange(len(data))
        changed = data[:at] + bytes([rnd.randrange(32, 127)]) + data[at + 1 :]
        try:
            existing = json.loads(changed)
        except ValueError:
            assert not _written_alike(changed, record)
            continue
        if _written_alike(changed, record):
            assert isinstance(existing, dict)
            with_part = {**record, "pytest": existing.get("pytest")}
            assert _proof(existing) == _proof(with_part)


def test_the_datasets_part_is_what_reading_every_file_gives(git_repo: Path) -> None:
    repo = make_gated_repo(git_repo, '[tool.cachelint]\nwatch = ["prompts/**"]\n')
    (repo / "eval-datasets" / "README.md").write_text("not a scenario\n")
    (repo / ".gitignore").write_text("ignored.json\n")
    (repo / "eval-datasets" / "agent" / "tenant" / "ignored.json").write_text("{}\n")
    commit_all(repo, "more")
    config = load(repo)
    read = worktree_state(config)
    assert set(read.datasets) == {"eval-datasets/README.md", "eval-datasets/agent/tenant/s1.json"}
    known = {
        "eval-datasets/agent/tenant/s1.json": read.datasets["eval-datasets/agent/tenant/s1.json"]
    }
    assert worktree_state(config, known=known) == read
    # A file the run read that git does not list (ignored) is not pinned.
    ignored = {**known, "eval-datasets/agent/tenant/ignored.json": "0" * 64}
    assert worktree_state(config, known=ignored) == read
    # Every file it read listed and nothing else: the run's own map is the record's part.
    (repo / "eval-datasets" / "README.md").unlink()
    assert worktree_state(config, known=known).datasets is known


def test_an_unchanged_record_is_left_as_it_is_and_a_changed_one_written(git_repo: Path) -> None:
    repo = make_gated_repo(git_repo)
    config = load(repo)
    path = repo / config.green_record
    before = path.read_bytes()
    now = datetime(2030, 1, 1, tzinfo=timezone.utc)
    green.record_green_run(
        config, execution="e9", mode="live", scenarios=["agent/tenant/s1"], now=now
    )
    assert path.read_bytes() == before
    (repo / "eval-datasets" / "agent" / "tenant" / "s1.json").write_text('{"input": "ho"}\n')
    green.record_green_run(
        config, execution="e9", mode="live", scenarios=["agent/tenant/s1"], now=now
    )
    assert path.read_bytes() != before and b'"e9"' in path.read_bytes()


def test_a_record_above_16_mib_is_still_one_a_green_run_may_overwrite(git_repo: Path) -> None:
    """The record's bound is its own (a 100,000-scenario suite's is 15 MB), not a text file's."""
    repo = make_gated_repo(git_repo)
    config = load(repo)
    path = repo / config.green_record
    record = json.loads(path.read_bytes())
    record["datasets"].update({f"eval-datasets/a/t/s{i}.json": "ab" * 32 for i in range(200_000)})
    path.write_text(json.dumps(record))
    assert path.stat().st_size > 16 * 1024 * 1024
    now = datetime(2030, 1, 1, tzinfo=timezone.utc)
    green.record_green_run(
        config, execution="e9", mode="live", scenarios=["agent/tenant/s1"], now=now
    )
    assert json.loads(path.read_bytes())["run"]["execution"] == "e9"


@pytest.mark.parametrize(
    "entries",
    [
        [],
        ["b", "a", "b", "a"],
        [f"eval-cache/cache/a/t/s{i % 7}/{i % 5:016x}" for i in range(40)],
        [f"eval-cache/cache/a/t/s{i}/{i:016x}" for i in range(6000)],  # several pieces
        ["x\u202ey", "del\x7f", "lone\udc80", "é", "tab\t", 'quote"'],
    ],
)
def test_the_entry_list_is_json_dumps_of_its_sorted_set(entries: list[str], tmp_path: Path) -> None:
    record = {"format": 1, "execution": "e", "passed": True}
    target = tmp_path / "entries-used.json"
    usage._write_json(
        str(target), {**record, "entries": usage.sorted_unique(entries)}, "entries", "run"
    )
    whole = {**record, "entries": sorted(set(entries))}
    assert target.read_bytes() == (json_dumps(whole) + "\n").encode("utf-8")


def test_a_file_is_read_as_the_one_object_it_is(tmp_path: Path) -> None:
    path = tmp_path / "large"
    path.write_bytes(b"x" * (4 << 20))
    tracemalloc.start()
    try:
        data = read_regular(path, None)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert data == path.read_bytes()
    assert peak < 1.5 * len(data)  # joined from chunks, it was twice its size
