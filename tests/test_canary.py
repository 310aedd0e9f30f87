"""`run`'s first canary snapshot taken by a child process: the same snapshot as one taken here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cachelint.canary import CHILD_MIN_SCENARIOS, FirstSnapshot
from cachelint.childproc import usable_cores
from cachelint.hashing import snapshot
from cachelint.meai import make_skip

ROOTS = ["eval-cache", "meai-storage"]
TOPS = ["meai-storage/results"]
EXCLUDE = ["eval-cache/scratch/**"]


def _tree(repo: Path) -> None:
    entry = repo / "eval-cache/cache/agent/tenant/s1/0123456789abcdef"
    entry.mkdir(parents=True)
    (entry / "entry.json").write_bytes(b'{"key": "x"}\r\n')
    (entry / "contents.data").write_bytes(os.urandom(70_000))  # more than one read
    (repo / "eval-cache/scratch").mkdir()
    (repo / "eval-cache/scratch/log.txt").write_text("left out by exclude")
    os.symlink("../../elsewhere", repo / "eval-cache/cache/agent/tenant/link")
    os.mkfifo(repo / "eval-cache/cache/agent/tenant/fifo")
    (repo / os.fsdecode(b"eval-cache/cache/agent/tenant/caf\xe9")).write_text("undecodable name")
    (repo / "meai-storage/cache/S/1/KEY").mkdir(parents=True)
    (repo / "meai-storage/cache/S/1/KEY/contents.data").write_text("{}")
    (repo / "meai-storage/results/Default").mkdir(parents=True)
    (repo / "meai-storage/results/Default/1.json").write_text("left out as MEAI results")


@pytest.mark.skipif(usable_cores() < 2, reason="the child only runs with a second core")
def test_the_child_takes_the_snapshot_this_process_would_take(tmp_path: Path) -> None:
    _tree(tmp_path)
    here = snapshot(tmp_path, ROOTS, make_skip(TOPS, EXCLUDE))
    first = FirstSnapshot(tmp_path, ROOTS, TOPS, EXCLUDE)
    first.start(CHILD_MIN_SCENARIOS)
    assert first._child is not None  # the child path was taken
    assert first.result() == here
    assert "eval-cache/scratch/log.txt" not in here
    assert "meai-storage/results/Default/1.json" not in here
    assert here["eval-cache/cache/agent/tenant/fifo"] == "special"


def test_a_small_suite_takes_its_snapshot_here(tmp_path: Path) -> None:
    _tree(tmp_path)
    first = FirstSnapshot(tmp_path, ROOTS, TOPS, EXCLUDE)
    first.start(CHILD_MIN_SCENARIOS - 1)
    assert first._child is None
    assert first.result() == snapshot(tmp_path, ROOTS, make_skip(TOPS, EXCLUDE))


def test_a_child_that_cannot_answer_leaves_the_snapshot_to_this_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(tmp_path)
    monkeypatch.setattr("cachelint.canary.sys.executable", str(tmp_path / "no-such-python"))
    first = FirstSnapshot(tmp_path, ROOTS, TOPS, EXCLUDE)
    first.start(CHILD_MIN_SCENARIOS)
    assert first.result() == snapshot(tmp_path, ROOTS, make_skip(TOPS, EXCLUDE))


def test_a_discarded_child_is_ended(tmp_path: Path) -> None:
    _tree(tmp_path)
    first = FirstSnapshot(tmp_path, ROOTS, TOPS, EXCLUDE)
    first.start(CHILD_MIN_SCENARIOS)
    child = first._child
    first.discard()
    assert first._child is None
    assert child is None or child.returncode is not None  # ended and reaped
