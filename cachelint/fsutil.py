"""Atomic file writes: a temp file in the same directory, fsync, then os.replace.

vcrpy's plain open("w") leaves half-written cassettes after a crash; here a reader sees either the
old file or the new one. Temp files carry a fixed prefix so the linter can flag leftovers.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable
from pathlib import Path

TEMP_PREFIX = ".cachelint-tmp-"


def _create_temp(directory: Path) -> tuple[int, Path]:
    # Not tempfile.mkstemp: it creates files 0600, so recorded entries would be unreadable to the
    # rest of a team sharing a checkout. os.open with 0o666 lets the umask decide, like open("w").
    while True:
        tmp = directory / f"{TEMP_PREFIX}{secrets.token_hex(8)}"
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
        except FileExistsError:
            continue


def atomic_write(path: Path, data: bytes) -> None:
    atomic_write_chunks(path, (data,))


def atomic_write_chunks(path: Path, chunks: Iterable[bytes], *, durable: bool = True) -> None:
    """`atomic_write` of bytes produced piece by piece, so a large file is never whole in memory.
    `durable=False` skips the fsync: for a file that is only a cache, where a torn write after a
    power loss is detected and rebuilt, not lost data."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _create_temp(path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.writelines(chunks)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
