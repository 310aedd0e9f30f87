"""Progress bars on a terminal: `cachelint run` counts its scenarios. Drawn on a real
pseudo-terminal and erased when the work ends."""

from __future__ import annotations

import io
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import pytest

from cachelint.commands import run as run_command
from cachelint.commands.run import run
from tests.example import EXAMPLE_SCENARIOS, make_example_repo

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")


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


def test_run_draws_a_bar_counting_its_scenarios(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_example_repo(tmp_path / "example")
    monkeypatch.setattr(run_command, "_PROGRESS_MIN", 1)
    out = io.StringIO()
    with terminal(monkeypatch) as tty:
        assert run(repo, out=out, err=tty.stream, execution="bar") == 0
    assert "cachelint run" in tty.text
    assert "100%" in tty.text
    assert all(f"  {s}" in out.getvalue() for s in EXAMPLE_SCENARIOS)
