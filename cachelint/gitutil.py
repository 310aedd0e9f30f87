"""The one way cachelint talks to git: plain subprocesses, NUL-separated lists.

GitPython is deliberately not used here: importing it costs more than the whole plumbing a
pre-commit run needs on a small tree.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, TypeVar

from cachelint.display import shell_command
from cachelint.errors import CachelintError, GitError

if TYPE_CHECKING:  # concurrent.futures costs a replay's start-up and only a check needs it
    from concurrent.futures import Future

# Git must answer the same way for every user: no pager, no localized messages, no prompts, and
# quoted paths never (we always read with -z, this only keeps error messages readable).
_GIT_ENV = {"LC_ALL": "C", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"}


@dataclass(frozen=True)
class GitResult:
    rc: int
    out: bytes
    err: bytes


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(_GIT_ENV)
    return env


def run_git(
    args: Sequence[str],
    *,
    cwd: Path,
    stdin: bytes | None = None,
    check: bool = True,
    ok_codes: Sequence[int] = (0,),
) -> GitResult:
    """Run `git ARGS` in `cwd`; raise `GitError` naming the command unless its rc is acceptable."""
    cmd = ["git", *args]
    try:
        proc = subprocess.run(cmd, cwd=cwd, input=stdin, capture_output=True, env=_env())
    except FileNotFoundError as exc:
        raise CachelintError("git is not installed or not on PATH; install git and retry") from exc
    result = GitResult(proc.returncode, proc.stdout, proc.stderr)
    if check and result.rc not in ok_codes:
        raise GitError(describe_failure(cmd, result))
    return result


def start_git(args: Sequence[str], *, cwd: Path, stdin: bytes | None = None) -> GitProcess:
    """Start `git ARGS` without waiting, so several plumbing calls can run beside Python work."""
    return GitProcess(["git", *args], cwd=cwd, stdin=stdin)


class GitProcess:
    """A git subprocess running in the background; `result()` waits and checks it.

    Input, output and errors go through unnamed temporary files, not pipes. Through a pipe,
    every 32 KiB chunk of a large listing needs the GIL back in the waiting thread while the main
    thread is busy, so git stalls on a full pipe (benchmarks/README.md has the figures). With
    files, git runs at full speed and the thread waits in one `waitpid`, which releases the GIL.
    """

    def __init__(self, cmd: list[str], *, cwd: Path, stdin: bytes | None) -> None:
        self.cmd = cmd
        source: IO[bytes] | int = subprocess.DEVNULL
        opened: list[IO[bytes]] = []
        try:
            self._out = _temp_file(opened)
            self._err = _temp_file(opened)
            if stdin is not None:
                source = _temp_file(opened)
                source.write(stdin)
                source.seek(0)
        except OSError as exc:
            for fh in opened:
                fh.close()
            raise CachelintError(
                f"cannot write a temporary file for `{' '.join(cmd)}` in "
                f"{tempfile.gettempdir()} ({exc.strerror}); free space there or point TMPDIR "
                "at a writable directory"
            ) from None
        try:
            self._proc = subprocess.Popen(
                cmd, cwd=cwd, env=_env(), stdin=source, stdout=self._out, stderr=self._err
            )
        except BaseException:
            self._close()
            raise
        finally:
            if not isinstance(source, int):
                source.close()

    def result(self) -> GitResult:
        try:
            rc = self._proc.wait()
            self._out.seek(0)
            self._err.seek(0)
            result = GitResult(rc, self._out.read(), self._err.read())
        finally:
            self._close()
        if result.rc != 0:
            raise GitError(describe_failure(self.cmd, result))
        return result

    def kill(self) -> None:
        """End git if it still runs; `result()` then reports it killed."""
        if self._proc.poll() is None:
            self._proc.kill()

    def discard(self) -> None:
        """The result is no longer wanted: end git (if it still runs), reap it, free its files."""
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        self._close()

    def _close(self) -> None:
        self._out.close()
        self._err.close()


def _temp_file(opened: list[IO[bytes]]) -> IO[bytes]:
    fh = tempfile.TemporaryFile()
    opened.append(fh)
    return fh


def describe_failure(cmd: Sequence[str], result: GitResult) -> str:
    stderr = result.err.decode("utf-8", "replace").strip().replace("\n", " | ")
    # Quoted, so the command shown can be pasted to reproduce the failure whatever a path holds.
    return f"`{shell_command(*cmd)}` failed with exit code {result.rc}: {stderr or '(no stderr)'}"


def split_z(out: bytes) -> list[str]:
    """Split git's -z output into paths (git paths are bytes; we decode with surrogateescape)."""
    if not out:
        return []
    return [p.decode("utf-8", "surrogateescape") for p in out.rstrip(b"\0").split(b"\0")]


def iter_z(out: bytes) -> Iterator[str]:
    """`split_z(out)` one path at a time: a large listing is never held as strings."""
    start, end = 0, out.find(b"\0")
    while end != -1:
        yield out[start:end].decode("utf-8", "surrogateescape")
        start, end = end + 1, out.find(b"\0", end + 1)
    if start < len(out):
        yield out[start:].decode("utf-8", "surrogateescape")


def stage_record(record: bytes) -> tuple[bytes, bytes, bytes, bytes] | None:
    """(mode, object id, stage, path) of one record of `git ls-files -z --stage`, "<mode>
    <object> <stage>\t<path>" (with -v, a tag and a space in front); None if it is not one."""
    meta, tab, path = record.partition(b"\t")
    fields = meta.split(b" ")
    if not tab or len(fields) < 3:
        return None
    return fields[-3], fields[-2], fields[-1], path


def repo_root(start: Path) -> Path:
    """The top of the work tree containing `start`, or a one-line error outside any repository."""
    result = run_git(["rev-parse", "--show-toplevel"], cwd=start, check=False)
    if result.rc != 0:
        raise CachelintError(
            f"{start}: not inside a git repository; cachelint checks what git will commit, "
            "so run it inside a clone (or `git init` first)"
        )
    return Path(result.out.decode("utf-8", "surrogateescape").strip())


# Bulk git calls run one after another on a single worker thread: queued before a long Python
# step (check's walk of the tree), they keep git busy on the other core meanwhile.
_T = TypeVar("_T")


class GitQueue:
    """The bulk git calls, run in order on one worker thread. Used as a context manager: on
    leaving, the queue waits for its work, unless an error is leaving too; then the work not
    started is cancelled and the git call running is ended, since it may never finish by itself
    (git waits forever for a writer when it reads attributes from a FIFO named .gitattributes)."""

    def __init__(self, repo: Path) -> None:
        import threading
        from concurrent.futures import ThreadPoolExecutor

        self._repo = repo
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cachelint-git")
        self._lock = threading.Lock()
        self._running: GitProcess | None = None
        self._abandoned = False

    def __enter__(self) -> GitQueue:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is not None:
            with self._lock:
                self._abandoned = True
                if self._running is not None:
                    self._running.kill()
        self._pool.shutdown(wait=True, cancel_futures=True)

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
        with self._lock:
            if self._abandoned:  # its result is never read
                raise CachelintError(f"git {args[0]}: not started, the check stopped")
            self._running = process = start_git(args, cwd=self._repo, stdin=stdin)
        try:
            return process.result()
        finally:
            with self._lock:
                self._running = None


def blob_id(data: bytes, width: int = 40) -> str:
    """The object id git gives `data` as a blob: SHA-1 of 'blob <size>\\0' and the bytes, or
    SHA-256 in a repository whose ids are `width` 64 digits long."""
    import hashlib  # not at the top: the hooks' fast path imports this module

    digest = hashlib.sha256() if width == 64 else hashlib.sha1()  # git's own ids
    digest.update(b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()


def cat_blobs(repo: Path, blobs: Sequence[str]) -> dict[str, bytes]:
    """The contents of many blobs, read with one `git cat-file --batch` (one process, not one
    per file)."""
    if not blobs:
        return {}
    result = run_git(
        ["cat-file", "--batch"], cwd=repo, stdin="".join(b + "\n" for b in blobs).encode()
    )
    data, out, pos = result.out, {}, 0
    for blob in blobs:
        end = data.index(b"\n", pos)
        header = data[pos:end].split(b" ")
        if len(header) != 3:
            raise CachelintError(
                f"git cat-file: object {blob} is missing from the repository; run `git fsck`"
            )
        size = int(header[2])
        out[blob] = data[end + 1 : end + 1 + size]
        pos = end + 1 + size + 1  # content is followed by one LF
    return out
