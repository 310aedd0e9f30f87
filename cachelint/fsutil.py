"""Atomic file writes: a temp file in the same directory, fsync, then os.replace.

vcrpy's plain open("w") leaves half-written cassettes after a crash; here a reader sees either the
old file or the new one. Temp files carry a fixed prefix so the linter can flag leftovers.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

TEMP_PREFIX = ".cachelint-tmp-"


def atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
