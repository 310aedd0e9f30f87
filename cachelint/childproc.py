"""Starting cachelint's own helper processes (`python -m cachelint.<module>`), and how many
cores they may use."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def module_command(module: str) -> tuple[list[str], dict[str, str]]:
    """The command line and environment that run `module` of this same cachelint, wherever it
    was imported from (an install, or a checkout put on sys.path)."""
    env = dict(os.environ)
    here = os.fspath(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH")) if p)
    return [sys.executable, "-m", module], env


def usable_cores() -> int:
    """The cores this process may run on (its affinity where the platform tells it)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1
