"""MSBuild XML shared by Directory.Packages.props and project files.

SDK-style projects have no namespace, legacy ones use
http://schemas.microsoft.com/developer/msbuild/2003: match on local names so both read the same.
`$(Property)` references are resolved from the file's own <PropertyGroup>s, the common way to keep
one version for a family of packages.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

from cachelint.pins import Ecosystem, Pin, PinFileError, nuget_version
from cachelint.pins._common import read_text

_PROPERTY = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def local(tag: str) -> str:
    return tag.rpartition("}")[2]


def load(path: Path, relative: str) -> ET.Element:
    try:
        return ET.fromstring(read_text(path, relative))
    except ET.ParseError as exc:
        raise PinFileError(f"{relative}: invalid XML: {exc}; fix the file and retry") from None


def properties(root: ET.Element) -> dict[str, str]:
    """The file's properties by lower-cased name: MSBuild property names are case-insensitive
    (`$(meaiversion)` is `<MeaiVersion>`), and the last definition wins whatever its case."""
    props: dict[str, str] = {}
    for group in root.iter():
        if local(group.tag) != "PropertyGroup":
            continue
        for prop in group:
            props[local(prop.tag).lower()] = (prop.text or "").strip()
    return props


def items(root: ET.Element, name: str) -> Iterator[ET.Element]:
    """Items of type `name`; item types are case-insensitive to MSBuild."""
    wanted = name.lower()
    for element in root.iter():
        if local(element.tag).lower() == wanted:
            yield element


def value(element: ET.Element, name: str) -> str | None:
    """An item's metadata, from the attribute or from a child element of that name (metadata
    names are case-insensitive to MSBuild)."""
    wanted = name.lower()
    for attribute, text in element.attrib.items():
        if attribute.lower() == wanted:
            return text
    for child in element:
        if local(child.tag).lower() == wanted:
            return (child.text or "").strip()
    return None


def nuget_pin(name: str, spec: str, props: dict[str, str], source: str) -> Pin:
    """One package's `Version` with `props` (any case) expanded, as NuGet reads it: exact
    versions normalised (`10.9` is `10.9.0`), ranges and floating versions without one."""
    lowered = {k.lower(): v for k, v in props.items()}
    resolved = _PROPERTY.sub(lambda m: lowered.get(m.group(1).lower(), m.group(0)), spec).strip()
    if _PROPERTY.search(resolved):
        return Pin(name, f"{spec} (unresolved MSBuild property)", None, source, Ecosystem.NUGET)
    # A floating version (`10.*`) is exact only through packages.lock.json (`exact` says None).
    return Pin(name, resolved, nuget_version.exact(resolved), source, Ecosystem.NUGET)
