"""Directory.Packages.props (Central Package Management): `<PackageVersion Include Version>`."""

from __future__ import annotations

from pathlib import Path

from cachelint.pins import Pin
from cachelint.pins._msbuild import items, load, nuget_pin, properties, value


def parse(path: Path, relative: str) -> list[Pin]:
    root = load(path, relative)
    props = properties(root)
    pins: list[Pin] = []
    for tag in ("PackageVersion", "GlobalPackageReference"):
        for item in items(root, tag):
            name, spec = item.attrib.get("Include"), value(item, "Version")
            if name and spec is not None:
                pins.append(nuget_pin(name, spec, props, relative))
    return pins
