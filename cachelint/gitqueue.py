"""Bulk git calls run one after another on a single worker thread: queued before a long Python
step (check's walk of the tree), they keep git busy on the other core meanwhile."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from cachelint.gitutil import GitResult, start_git

_T = TypeVar("_T")


class GitQueue:
    """The bulk git calls, run in order on one worker thread."""

    def __init__(self, repo: Path) -> None:
        self._repo = repo
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cachelint-git")

    def submit(self, args: list[str], stdin: bytes | None = None) -> Future[GitResult]:
        return self._pool.submit(self._run, args, stdin)

    def submit_parsed(
        self, args: list[str], stdin: bytes | None, parse: Callable[[bytes], _T]
    ) -> Future[_T]:
        """`parse` of the output, made on the worker thread: the raw output (tens of MB on a
        large tree) is not kept while the check goes on."""
        return self._pool.submit(lambda: parse(self._run(args, stdin).out))

    def call(self, work: Callable[[], _T]) -> Future[_T]:
        """`work` run on the worker thread, after the git calls queued before it."""
        return self._pool.submit(work)

    def _run(self, args: list[str], stdin: bytes | None) -> GitResult:
        return start_git(args, cwd=self._repo, stdin=stdin).result()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
