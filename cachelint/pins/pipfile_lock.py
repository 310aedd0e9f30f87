"""Pipfile.lock (JSON): `default` and `develop` map names to `{"version": "==X.Y.Z", ...}`."""

from __future__ import annotations

from pathlib import Path

from cachelint.pins import Ecosystem, Pin
from cachelint.pins._common import load_json, table


def parse(path: Path, relative: str) -> list[Pin]:
    data = load_json(path, relative)
    pins: list[Pin] = []
    for section in ("default", "develop"):
        for name, info in table(data, section).items():
            spec = info.get("version") if isinstance(info, dict) else None
            if not isinstance(spec, str):
                # VCS and path entries carry no version: they are not pins.
                spec = "(no version: VCS or path dependency)"
                pins.append(Pin(name, spec, None, relative, Ecosystem.PYPI))
                continue
            version = spec[2:] if spec.startswith("==") and "*" not in spec else None
            pins.append(Pin(name, spec, version, relative, Ecosystem.PYPI))
    return pins
