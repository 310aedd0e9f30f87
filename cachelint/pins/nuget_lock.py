"""NuGet packages.lock.json: `dependencies.<target framework>.<name>.resolved` is exact, for the
transitive packages too (`"type": "Transitive"`, `"CentralTransitive"`): the only place that pins
Microsoft.Extensions.AI and .Abstractions, whose code computes MEAI's cache keys."""

from __future__ import annotations

from pathlib import Path

from cachelint.pins import Ecosystem, Pin, nuget_version
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
                version = nuget_version.normalise(resolved) or resolved
                pins.append(Pin(name, resolved, version, relative, Ecosystem.NUGET))
    return pins
