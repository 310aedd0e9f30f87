"""Progress bars on a terminal: `cachelint check` counts the entries it reads, `cachelint run` its
scenarios. Drawn on a real pseudo-terminal, never on a stream that is not one, and erased when the
work ends."""

from __future__ import annotations

import io
import os
import shutil
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import pytest

from cachelint import collect as collect_module
from cachelint.collect import collect
from cachelint.commands.check import check
from cachelint.commands.stamp import stamp
from cachelint.config import load
from cachelint.runner import pipeline
from cachelint.runner.options import RunOptions
from cachelint.runner.pipeline import run
from tests.example import EXAMPLE_ENTRIES, EXAMPLE_SCENARIOS, make_example_repo
from tests.helpers import NOW
from tests.trees import copy_bundled

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")

LABEL = "verifying entries"


@dataclass
class Terminal:
    stream: TextIO
    text: str = ""  # what reached the terminal, once it is closed


@contextmanager
def terminal(monkeypatch: pytest.MonkeyPatch) -> Iterator[Terminal]:
    """A text stream on a pseudo-terminal (its isatty() is true), drained by a thread so a long
    bar never blocks on a full buffer."""
    monkeypatch.setenv("TERM", "xterm")  # not "dumb", whatever runs the suite
    primary, secondary = os.openpty()
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(primary, 65536)
            except OSError:  # EIO: the last writer closed its side
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    opened = Terminal(open(secondary, "w", encoding="utf-8"))  # noqa: SIM115
    try:
        yield opened
    finally:
        opened.stream.close()
        reader.join(timeout=10)
        os.close(primary)
        opened.text = b"".join(chunks).decode("utf-8", "replace")


def _check(repo: Path, err: TextIO, *, entry_cache: bool = False) -> tuple[int, str]:
    out = io.StringIO()
    rc = check(
        repo,
        config_path=None,
        fmt="text",
        select=None,
        ignore=(),
        strict=False,
        now=NOW,
        entry_cache=entry_cache,
        out=out,
        err=err,
    )
    return rc, out.getvalue()


@pytest.fixture
def bundled(git_repo: Path) -> Path:
    return copy_bundled(git_repo)


def test_check_draws_a_bar_counting_the_entries_it_reads(
    bundled: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(collect_module, "BAR_MIN", 1)
    with terminal(monkeypatch) as tty:
        rc, out = _check(bundled, tty.stream)
    assert rc == 0
    assert out.startswith("cachelint: 0 findings")
    assert LABEL in tty.text
    assert "100%" in tty.text
    # Transient: once full, the bar's line is erased (ESC [2K, erase line).
    assert "\x1b[2K" in tty.text[tty.text.rindex("100%") :]


def test_check_draws_no_bar_for_few_entries_or_nothing_to_read(
    bundled: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with terminal(monkeypatch) as tty:
        assert _check(bundled, tty.stream)[0] == 0  # a few entries, under BAR_MIN
    assert tty.text == ""
    monkeypatch.setattr(collect_module, "BAR_MIN", 1)
    assert _check(bundled, io.StringIO(), entry_cache=True)[0] == 0  # writes the entry cache
    with terminal(monkeypatch) as tty:
        # Every entry comes from the entry cache: nothing is read, so there is nothing to count.
        assert _check(bundled, tty.stream, entry_cache=True)[0] == 0
    assert tty.text == ""


def test_check_draws_nothing_on_a_stream_that_is_no_terminal(
    bundled: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(collect_module, "BAR_MIN", 1)
    err = io.StringIO()
    rc, out = _check(bundled, err)
    assert (rc, err.getvalue()) == (0, "")
    assert out.startswith("cachelint: 0 findings")


def test_stamp_draws_the_bar_too_when_it_reads_the_entries(
    bundled: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(collect_module, "BAR_MIN", 1)
    shutil.rmtree(bundled / ".git" / "cachelint", ignore_errors=True)  # every entry is read
    out = io.StringIO()
    with terminal(monkeypatch) as tty:
        assert stamp(bundled, config_path=None, now=NOW, out=out, err=tty.stream) == 0
    assert f"eval-cache/.eval-cache-stamp.json: {EXAMPLE_ENTRIES} entries" in out.getvalue()
    assert LABEL in tty.text
    assert "100%" in tty.text


@dataclass
class Counted:
    """Stands in for a `Bar`: what it was asked to count, and what it was told of."""

    totals: list[int] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)
    closed: int = 0

    def __call__(self, total: int) -> Counted:
        self.totals.append(total)
        return self

    def advance(self, done: int = 1) -> None:
        self.steps.append(done)

    def close(self) -> None:
        self.closed += 1


@pytest.mark.parametrize("jobs", [1, 3])
def test_every_entry_read_is_counted_once_by_this_process_or_a_worker(
    bundled: Path, jobs: int
) -> None:
    counted = Counted()
    facts = collect(load(bundled), now=NOW, entry_cache=False, jobs=jobs, progress=counted)
    assert len(facts.entries) == EXAMPLE_ENTRIES
    assert counted.totals == [EXAMPLE_ENTRIES]
    assert sum(counted.steps) == EXAMPLE_ENTRIES
    assert counted.closed == 1


def test_run_draws_a_bar_counting_its_scenarios(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_example_repo(tmp_path / "example")
    monkeypatch.setattr(pipeline, "_PROGRESS_MIN", 1)
    out = io.StringIO()
    with terminal(monkeypatch) as tty:
        assert run(repo, RunOptions(execution="bar"), out=out, err=tty.stream) == 0
    assert "cachelint run" in tty.text
    assert "100%" in tty.text
    assert all(f"  {s}" in out.getvalue() for s in EXAMPLE_SCENARIOS)
