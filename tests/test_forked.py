"""`Forked`: work done by a forked child, or here when forking is not safe, with the same
outcome."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

from cachelint.errors import CachelintError
from cachelint.forked import Forked

linux_only = pytest.mark.skipif(sys.platform != "linux", reason="forks only on Linux")


@pytest.fixture
def forced(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fork even inside a pytest worker, which runs threads of its own (CPython 3.12+ warns about
    that; the tests silence it). cachelint itself forks only when no other thread runs."""
    monkeypatch.setattr("cachelint.forked._can_fork", lambda: True)


def _writes_its_pid(path: Path) -> None:
    path.write_text(str(os.getpid()))


@linux_only
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded")
@pytest.mark.usefixtures("forced")
def test_the_work_runs_in_a_child_and_is_done_once_joined(tmp_path: Path) -> None:
    done = tmp_path / "pid"
    job = Forked(lambda: _writes_its_pid(done))
    job.join()
    assert int(done.read_text()) != os.getpid()


@linux_only
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded")
@pytest.mark.usefixtures("forced")
def test_a_one_line_error_in_the_child_is_the_same_error_here() -> None:
    def fails() -> None:
        raise CachelintError("report.html: cannot write report: No space left on device")

    job = Forked(fails)
    with pytest.raises(CachelintError, match="^report.html: cannot write report: No space"):
        job.join()


@linux_only
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded")
@pytest.mark.usefixtures("forced")
def test_an_internal_error_in_the_child_is_raised_here_by_doing_the_work_again() -> None:
    pids: list[int] = []

    def breaks() -> None:
        pids.append(os.getpid())  # recorded here only when it runs here
        raise KeyError("a bug")

    job = Forked(breaks)
    assert pids == []
    with pytest.raises(KeyError, match="a bug"):
        job.join()
    assert pids == [os.getpid()]


def test_with_another_thread_running_the_work_is_done_here_at_once(tmp_path: Path) -> None:
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        done = tmp_path / "pid"
        job = Forked(lambda: _writes_its_pid(done))
        assert int(done.read_text()) == os.getpid()  # before join: it ran here
        job.join()
    finally:
        release.set()
        other.join()
