"""The results root: execution directories that never collide, and a root git ignores by itself.

Each run claims `<results>/<execution>/` with `mkdir`, which fails when the directory exists, so
two runs started in the same second (or a CI job re-run with the same `--execution`) get distinct
directories (`NAME`, `NAME-2`, `NAME-3`, ...) instead of overwriting each other's `run.json`. The
root holds its own `.gitignore` with `*`, as pytest does for `.pytest_cache`, so `git status` stays
clean in a repository that never listed the results directory in its own ignore file.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

from cachelint.errors import CachelintError
from cachelint.fsutil import atomic_write

GITIGNORE = "# Created by cachelint: run results are not committed.\n*\n"
_MAX_SUFFIX = 10_000
# An execution is a directory right under the results root, named on the command line: a name
# holding a separator or `..` would put results (or read them) anywhere, the cache tree included.
_EXECUTION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def execution_name(name: str) -> str:
    """`name`, when it is a plain directory name for `<results>/<name>/`; else a usage error."""
    if not _EXECUTION.fullmatch(name):
        raise CachelintError(
            f"execution name {name!r} is not a plain directory name; use letters, digits, '.', "
            "'_' and '-' (it becomes <results>/<execution>/)"
        )
    return name


def ensure_root(root: Path) -> None:
    """Create the results root and its `.gitignore` when missing; an existing one is kept."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        ignore = root / ".gitignore"
        if not ignore.exists():
            atomic_write(ignore, GITIGNORE.encode("utf-8"))
    except OSError as exc:
        raise CachelintError(
            f"{root}: cannot create the results directory ({exc.strerror}); check that it is "
            "writable or set `results` in [tool.cachelint]"
        ) from None


def claim_execution(root: Path, name: str) -> str:
    """Create `root/<name>` (or `<name>-2`, `-3`, ...) and return the name that was free."""
    ensure_root(root)
    for n in range(1, _MAX_SUFFIX):
        candidate = name if n == 1 else f"{name}-{n}"
        try:
            os.mkdir(root / candidate)
        except FileExistsError:
            continue
        except OSError as exc:
            raise CachelintError(
                f"{root / candidate}: cannot create the execution directory ({exc.strerror})"
            ) from None
        return candidate
    raise CachelintError(
        f"{root}: {_MAX_SUFFIX} executions named {name!r} already exist; remove old results or "
        "pass another --execution"
    )


def release_execution(root: Path, name: str) -> None:
    """Remove a claimed execution directory that stayed empty (the run stopped before results)."""
    with contextlib.suppress(OSError):
        os.rmdir(root / name)
