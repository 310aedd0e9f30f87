"""package-lock.json (lockfileVersion 2/3): `packages."node_modules/<name>".version`.

Only top-level installs count: a nested `node_modules/a/node_modules/b` is a second copy npm keeps
for one dependant, not the version the project pins.
"""

from __future__ import annotations

from pathlib import Path

from cachelint.pins import Ecosystem, Pin
from cachelint.pins._common import load_json, table

_PREFIX = "node_modules/"


def parse(path: Path, relative: str) -> list[Pin]:
    data = load_json(path, relative)
    pins: list[Pin] = []
    for key, info in table(data, "packages").items():
        if not key.startswith(_PREFIX) or "/node_modules/" in key or not isinstance(info, dict):
            continue
        version = info.get("version")
        if isinstance(version, str):
            pins.append(Pin(key[len(_PREFIX) :], version, version, relative, Ecosystem.NPM))
    if "packages" not in data:  # lockfileVersion 1 has only the nested `dependencies` tree
        for name, info in table(data, "dependencies").items():
            version = info.get("version") if isinstance(info, dict) else None
            if isinstance(version, str):
                pins.append(Pin(name, version, version, relative, Ecosystem.NPM))
    return pins
