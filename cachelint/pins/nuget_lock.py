"""NuGet packages.lock.json: `dependencies.<target framework>.<name>.resolved` is exact."""

from __future__ import annotations

from pathlib import Path

from cachelint.pins import Ecosystem, Pin
from cachelint.pins._common import load_json, table


def parse(path: Path, relative: str) -> list[Pin]:
    data = load_json(path, relative)
    pins: list[Pin] = []
    for framework in table(data, "dependencies").values():
        if not isinstance(framework, dict):
            continue
        for name, info in framework.items():
            resolved = info.get("resolved") if isinstance(info, dict) else None
            if isinstance(resolved, str) and info.get("type") != "Project":
                pins.append(Pin(name, resolved, resolved, relative, Ecosystem.NUGET))
    return pins
