"""pyproject.toml: PEP 621 dependencies, optional-dependencies and PEP 735 dependency-groups,
Poetry's [tool.poetry.*dependencies], and the project's own name and version.

The project's own `[project]` name + static version counts as an exact pin of itself: that is how
a package (cachelint included) pins the version its own cache was recorded under.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from cachelint.pins import Ecosystem, Pin
from cachelint.pins._common import load_toml, pep508_pin, table

# Poetry reads a bare version ("1.2.3") as exact; "^", "~", "*", ">=" and "1.2.*" are ranges.
_POETRY_EXACT = re.compile(r"^(?:==\s*)?(\d+(?:\.\d+)*(?:[-._+]?[0-9A-Za-z.+-]*)?)$")


def _requirements(values: Any, relative: str) -> list[Pin]:
    pins: list[Pin] = []
    for value in values if isinstance(values, list) else []:
        if isinstance(value, str):
            pin = pep508_pin(value, relative)
            if pin is not None:
                pins.append(pin)
    return pins


def _poetry_pin(name: str, value: Any, relative: str) -> Pin | None:
    if isinstance(value, dict):
        value = value.get("version")
    if isinstance(value, list):  # multiple-constraint dependencies are ranges by construction
        specs = [v.get("version", "") for v in value if isinstance(v, dict)]
        return Pin(name, " | ".join(map(str, specs)), None, relative, Ecosystem.PYPI)
    if not isinstance(value, str):
        return Pin(
            name, "(no version: path, git or url dependency)", None, relative, Ecosystem.PYPI
        )
    match = _POETRY_EXACT.match(value.strip())
    version = match.group(1) if match and "*" not in value else None
    return Pin(name, value, version, relative, Ecosystem.PYPI)


def parse(path: Path, relative: str) -> list[Pin]:
    data = load_toml(path, relative)
    project = table(data, "project")
    pins: list[Pin] = []
    name, version = project.get("name"), project.get("version")
    if isinstance(name, str) and isinstance(version, str):
        pins.append(Pin(name, version, version, relative, Ecosystem.PYPI))
    pins += _requirements(project.get("dependencies"), relative)
    for extra in table(project, "optional-dependencies").values():
        pins += _requirements(extra, relative)
    for group in table(data, "dependency-groups").values():
        pins += _requirements(group, relative)
    poetry = table(table(data, "tool"), "poetry")
    name, version = poetry.get("name"), poetry.get("version")
    if isinstance(name, str) and isinstance(version, str) and not project.get("name"):
        pins.append(Pin(name, version, version, relative, Ecosystem.PYPI))
    sections = [table(poetry, "dependencies"), table(poetry, "dev-dependencies")]
    sections += [table(g, "dependencies") for g in table(poetry, "group").values()]
    for section in sections:
        for dep, value in section.items():
            if dep.lower() == "python":
                continue
            pin = _poetry_pin(dep, value, relative)
            if pin is not None:
                pins.append(pin)
    return pins
