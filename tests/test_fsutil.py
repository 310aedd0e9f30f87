from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from cachelint.fsutil import TEMP_PREFIX, atomic_write


def test_atomic_write_replaces_and_leaves_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "a" / "entry.json"
    atomic_write(target, b"one\n")
    atomic_write(target, b"two\n")
    assert target.read_bytes() == b"two\n"
    assert os.listdir(target.parent) == ["entry.json"]


def test_atomic_write_honours_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        atomic_write(tmp_path / "f", b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "f").stat().st_mode) == 0o644


def test_a_failed_write_keeps_the_old_file_and_removes_its_temp(tmp_path: Path) -> None:
    target = tmp_path / "entry.json"
    target.write_bytes(b"old\n")

    with pytest.raises(TypeError):
        atomic_write(target, "not bytes")  # type: ignore[arg-type]
    assert target.read_bytes() == b"old\n"
    assert not [n for n in os.listdir(tmp_path) if n.startswith(TEMP_PREFIX)]
