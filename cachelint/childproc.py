"""Starting cachelint's own helper processes (a `cachelint.<module>` run as a program), and how
many cores they may use."""

from __future__ import annotations

import os
import sys
from pathlib import Path

# `python -c` and `-m` put the working directory, which a pull request fills, first on sys.path,
# so a json.py there would run in place of the standard library's: the child drops it (every
# empty entry, which means the working directory) and puts this cachelint's directory first, so
# it runs this code wherever it was imported from (an install, or a checkout put on sys.path).
# Not `-I`: that would also drop PYTHONPATH and the user's site-packages, where cachelint and its
# dependencies may be installed (`pip install --target`, `pip install --user`).
_RUN_MODULE = (
    "import runpy, sys; sys.path = [sys.argv.pop(1), *filter(None, sys.path)]; "
    "runpy.run_module(sys.argv.pop(1), run_name='__main__', alter_sys=True)"
)


def module_command(module: str) -> list[str]:
    """The command line that runs `module` of this same cachelint as a program; arguments for
    it follow."""
    here = os.fspath(Path(__file__).resolve().parent.parent)
    return [sys.executable, "-c", _RUN_MODULE, here, module]


def usable_cores() -> int:
    """The cores this process may run on (its affinity where the platform tells it)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1
