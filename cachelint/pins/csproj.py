"""Project files (*.csproj and other MSBuild XML): `<PackageReference Include>` with a Version
(attribute or child element) or a VersionOverride. Under Central Package Management a reference
without either takes its version from Directory.Packages.props and is not a pin here."""

from __future__ import annotations

from pathlib import Path

from cachelint.pins import Pin
from cachelint.pins._msbuild import items, load, nuget_pin, properties, value


def parse(path: Path, relative: str) -> list[Pin]:
    root = load(path, relative)
    props = properties(root)
    pins: list[Pin] = []
    for item in items(root, "PackageReference"):
        name = item.attrib.get("Include") or item.attrib.get("Update")
        spec = value(item, "VersionOverride") or value(item, "Version")
        if name and spec:
            pins.append(nuget_pin(name, spec, props, relative))
    return pins
