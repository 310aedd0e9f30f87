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

from cachelint.pins import Ecosystem, Pin, PinFileError
from cachelint.pins._common import read_text

_PROPERTY = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")
# NuGet: "1.2.3" (restore takes the lowest match, i.e. that version) and "[1.2.3]" are exact;
# "*", "1.*", "[1.0,2.0)", "(1.0,)" are ranges.
_NUGET_EXACT = re.compile(
    r"^\[?\s*(\d+(?:\.\d+){0,3}(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?)\s*\]?$"
)


def local(tag: str) -> str:
    return tag.rpartition("}")[2]


def load(path: Path, relative: str) -> ET.Element:
    try:
        return ET.fromstring(read_text(path, relative))
    except ET.ParseError as exc:
        raise PinFileError(f"{relative}: invalid XML: {exc}; fix the file and retry") from None


def properties(root: ET.Element) -> dict[str, str]:
    props: dict[str, str] = {}
    for group in root.iter():
        if local(group.tag) != "PropertyGroup":
            continue
        for prop in group:
            props[local(prop.tag)] = (prop.text or "").strip()
    return props


def items(root: ET.Element, name: str) -> Iterator[ET.Element]:
    for element in root.iter():
        if local(element.tag) == name:
            yield element


def value(element: ET.Element, name: str) -> str | None:
    """An item's metadata, from the attribute or from a child element of that name."""
    if name in element.attrib:
        return element.attrib[name]
    for child in element:
        if local(child.tag) == name:
            return (child.text or "").strip()
    return None


def nuget_pin(name: str, spec: str, props: dict[str, str], source: str) -> Pin:
    resolved = _PROPERTY.sub(lambda m: props.get(m.group(1), m.group(0)), spec).strip()
    if _PROPERTY.search(resolved):
        return Pin(name, f"{spec} (unresolved MSBuild property)", None, source, Ecosystem.NUGET)
    match = _NUGET_EXACT.match(resolved)
    brackets = resolved.startswith("[") == resolved.endswith("]")
    version = match.group(1) if match and brackets else None
    return Pin(name, resolved, version, source, Ecosystem.NUGET)
