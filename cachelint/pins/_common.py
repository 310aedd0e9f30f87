"""Helpers shared by the pin parsers: loading files with one-line errors, PEP 508 exactness."""

from __future__ import annotations

import json
import sys
from pathlib import Path, PurePosixPath
from typing import Any

from cachelint.pins import Ecosystem, Pin, PinFileError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on the 3.10 CI leg
    import tomli as tomllib


PIN_BYTES = 64 * 1024 * 1024  # a large monorepo's package-lock.json stays well below


def read_text(path: Path, relative: str, errors: str = "strict") -> str:
    """The pin file `relative` (`path` is the repository joined with it), read through
    `confine.read_inside`: no link, no `.git`, no credential file, regular and bounded."""
    from cachelint.confine import read_inside

    repo = path
    for _ in PurePosixPath(relative).parts:
        repo = repo.parent
    try:
        data = read_inside(repo, relative, "pin file", PIN_BYTES, error=PinFileError)
        return data.decode("utf-8-sig", errors)
    except FileNotFoundError:
        raise PinFileError(f"{relative}: pin file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PinFileError(f"{relative}: cannot read pin file: {exc}") from None


def load_toml(path: Path, relative: str) -> dict[str, Any]:
    try:
        return tomllib.loads(read_text(path, relative))
    except tomllib.TOMLDecodeError as exc:
        raise PinFileError(f"{relative}: invalid TOML: {exc}; fix the file and retry") from None


def load_json(path: Path, relative: str) -> Any:
    try:
        return json.loads(read_text(path, relative))
    except (json.JSONDecodeError, RecursionError) as exc:  # RecursionError: absurdly deep nesting
        raise PinFileError(f"{relative}: invalid JSON: {exc}; fix the file and retry") from None


def table(data: Any, key: str) -> dict[str, Any]:
    value = data.get(key) if isinstance(data, dict) else None
    return value if isinstance(value, dict) else {}


def pep508_pin(text: str, source: str) -> Pin | None:
    """A PEP 508 requirement string as a Pin: exact only for a single `==X` (no wildcard) or
    `===X`. Returns None for strings that are not requirements (paths, URLs without a name)."""
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        req = Requirement(text)
    except InvalidRequirement:
        return None
    specs = list(req.specifier)
    version: str | None = None
    if len(specs) == 1 and specs[0].operator in ("==", "===") and "*" not in specs[0].version:
        version = specs[0].version
    spec = str(req.specifier) or (f"@ {req.url}" if req.url else "(any version)")
    return Pin(req.name, spec, version, source, Ecosystem.PYPI)


def lock_packages(data: Any, source: str) -> list[Pin]:
    """`[[package]]` name/version tables, as uv.lock and poetry.lock both write them."""
    pins: list[Pin] = []
    packages = data.get("package", []) if isinstance(data, dict) else []
    for package in packages if isinstance(packages, list) else []:
        if not isinstance(package, dict):
            continue
        name, version = package.get("name"), package.get("version")
        if isinstance(name, str) and isinstance(version, str):
            pins.append(Pin(name, version, version, source, Ecosystem.PYPI))
    return pins
