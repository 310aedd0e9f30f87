"""A progress bar for a person at a terminal, during work long enough to leave them wondering.

Drawn on a stream only when it is a terminal: a CI log, a pipe or the output pre-commit captures
gets nothing from here (`cachelint run` writes its own lines there, see `runner.progress`). rich
is imported only when a bar is drawn, and the bar is erased when the work ends, so the terminal
keeps only the command's own output.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TextIO


def is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Bar:
    """A transient bar counting to `total`. `advance` may be called from any thread."""

    def __init__(self, stream: TextIO, label: str, total: int) -> None:
        from rich.console import Console
        from rich.progress import Progress

        self._progress = Progress(console=Console(file=stream), transient=True)
        self._task = self._progress.add_task(label, total=total)
        self._progress.start()

    def advance(self, done: int = 1) -> None:
        self._progress.advance(self._task, done)

    def close(self) -> None:
        self._progress.stop()


# Given how much work there is, a bar to count it on (the caller closes it), or None.
BarFactory = Callable[[int], Bar | None]


def bars_on(stream: TextIO, label: str, *, at_least: int) -> BarFactory | None:
    """Bars labelled `label` on `stream` for work of `at_least` steps or more; None when the
    stream is no terminal."""
    if not is_terminal(stream):
        return None

    def bar(total: int) -> Bar | None:
        return Bar(stream, label, total) if total >= at_least else None

    return bar
