"""uv.lock (TOML): every `[[package]]` has the exact `version` uv resolved."""

from __future__ import annotations

from pathlib import Path

from cachelint.pins import Pin
from cachelint.pins._common import load_toml, lock_packages


def parse(path: Path, relative: str) -> list[Pin]:
    return lock_packages(load_toml(path, relative), relative)
