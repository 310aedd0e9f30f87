"""Live progress without a terminal: one line per scenario, in dataset order, flushed.

A CI log is not a terminal, so the rich progress bar is never drawn there and a long re-record
would print nothing until it ends. `OrderedLines` writes each scenario's lines as soon as it and
every scenario before it are known (a finished scenario waits only for the ones before it), so the
log reads in dataset order whatever `--jobs` is, and flushes after each write so the lines reach
the log as they happen.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, TextIO


class OrderedLines:
    """Thread-safe: `on_done` may be called from the engine's worker threads in any order."""

    def __init__(
        self,
        stream: TextIO,
        order: Sequence[str],
        render: Callable[[Any], str],
        head: str = "",
    ) -> None:
        self._stream = stream
        self._index = {identity: i for i, identity in enumerate(order)}
        self._render = render
        self._pending: dict[int, Any] = {}
        self._next = 0
        self._lock = threading.Lock()
        if head:
            stream.write(head)
            stream.flush()

    def __call__(self, scenario: Any) -> None:
        """`scenario` done: its report (`reports.model.ScenarioReport`)."""
        with self._lock:
            self._pending[self._index[scenario.identity]] = scenario
            chunks: list[str] = []
            while self._next in self._pending:
                chunks.append(self._render(self._pending.pop(self._next)))
                self._next += 1
            if chunks:
                self._stream.write("".join(chunks))
                self._stream.flush()


def live_progress(
    *, out: TextIO, err: TextIO, text_format: bool, head: str, selected: Sequence[Any]
) -> tuple[OrderedLines | None, bool]:
    """The line writer for this run, if any, and whether it streams the text report itself.

    With the text format on a non-terminal stdout, the report's own per-scenario blocks are the
    progress: stdout ends up byte-identical to the report printed at the end. With another format
    stdout is machine-readable, so a one-line verdict per scenario goes to a non-terminal stderr.
    """
    from cachelint.display import sanitize
    from cachelint.progressbar import is_terminal
    from cachelint.runner.reports.text import text_scenario

    order = [s.identity for s in selected]
    if text_format and not is_terminal(out):
        return OrderedLines(out, order, text_scenario, head=head), True
    if not is_terminal(err):

        def line(scenario: Any) -> str:
            verdict = "PASS" if scenario.passed else "FAIL"
            return f"cachelint: {verdict}  {sanitize(scenario.identity)}\n"

        return OrderedLines(err, order, line), False
    return None, False
