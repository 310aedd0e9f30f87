"""Pinned package versions, read with a real parser per pin format.

`read_pins(config)` finds the pin files (config `pins`, or auto-detected at the repository root),
parses each with its format's module and returns every package it saw, exact or not. `resolve`
then picks the configured family (`packages`: names or fnmatch globs) and decides, per package,
whether it has exactly one exact version. Names are compared the way each ecosystem does: NuGet
ignores case, PyPI normalises with PEP 503, npm names are case-sensitive.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from importlib import import_module
from pathlib import Path
from typing import cast

from cachelint.config import Config
from cachelint.errors import CachelintError, ConfigError


class Ecosystem(str, Enum):
    PYPI = "pypi"
    NUGET = "nuget"
    NPM = "npm"


@dataclass(frozen=True)
class Pin:
    """One package as a pin file names it; `version` is None when `spec` is not exact."""

    name: str
    spec: str  # as written: "10.9.0", "==1.2.3", ">=1.0", "[1.0,2.0)", "^1.2.0"
    version: str | None
    source: str  # repo-relative pin file, forward slashes
    ecosystem: Ecosystem
    project: str | None = None  # the .NET project whose evaluation gave it (pins.msbuild_eval)


class PinFileError(CachelintError):
    """A pin file cannot be parsed; the message names the file and what is wrong."""


def normalise(name: str, ecosystem: Ecosystem) -> str:
    if ecosystem is Ecosystem.PYPI:
        return re.sub(r"[-_.]+", "-", name).lower()
    if ecosystem is Ecosystem.NUGET:
        return name.casefold()
    return name


def stamp_key(name: str) -> str:
    """How a stamp's package names are matched to pins: the stamp does not record ecosystems, so
    use the loosest of the three rules (PEP 503 + case-insensitive)."""
    return re.sub(r"[-_.]+", "-", name).casefold()


# ---- which files, which parser ------------------------------------------------------------------

Parser = Callable[[Path, str], list[Pin]]


# Each format's parser module, imported only for a file of that format: the .NET ones bring in
# an XML parser, and a check reads pins on every run.
_PARSERS = {
    "pyproject.toml": "pyproject",
    "uv.lock": "uv_lock",
    "poetry.lock": "poetry_lock",
    "pipfile.lock": "pipfile_lock",
    "directory.packages.props": "directory_packages",
    "packages.lock.json": "nuget_lock",
    "package.json": "package_json",
    "package-lock.json": "package_lock",
}


def _parser_for(name: str) -> Parser | None:
    lower = name.lower()
    module = _PARSERS.get(lower)
    if module is None and lower.endswith((".csproj", ".fsproj", ".vbproj", ".props", ".targets")):
        module = "csproj"
    if module is None and lower.endswith((".txt", ".in")):
        module = "requirements"
    if module is None:
        return None
    return cast(Parser, import_module(f"cachelint.pins.{module}").parse)


_ROOT_NAMES = (
    "pyproject.toml",
    "uv.lock",
    "poetry.lock",
    "Pipfile.lock",
    "Directory.Packages.props",
    "packages.lock.json",
    "package.json",
    "package-lock.json",
)
_SLN_PROJECT = re.compile(
    r'^Project\("[^"]*"\)\s*=\s*"[^"]*"\s*,\s*"([^"]+\.(?:cs|fs|vb)proj)"', re.M
)


def _solution_projects(repo: Path) -> list[str]:
    """Projects listed by the .sln/.slnx files at the root: a .NET solution keeps its csproj (and
    their packages.lock.json) in subdirectories, and the solution file is the list of them."""
    from cachelint.pins._common import read_text  # through confine.read_inside

    found: list[str] = []
    for sln in sorted(repo.glob("*.sln")):
        text = read_text(sln, sln.name, errors="replace")
        found.extend(m.group(1).replace("\\", "/") for m in _SLN_PROJECT.finditer(text))
    for slnx in sorted(repo.glob("*.slnx")):
        text = read_text(slnx, slnx.name, errors="replace")
        found.extend(
            m.group(1).replace("\\", "/") for m in re.finditer(r'<Project\s+Path="([^"]+)"', text)
        )
    return found


def detect_pin_files(repo: Path) -> list[str]:
    """Pin files at the repository root, plus the projects of a root solution and their locks."""
    found: list[str] = [n for n in _ROOT_NAMES if (repo / n).is_file()]
    found += sorted(p.name for p in repo.glob("requirements*.txt") if p.is_file())
    found += sorted(
        p.name for p in repo.iterdir() if p.suffix in (".csproj", ".fsproj") and p.is_file()
    )
    for project in _solution_projects(repo):
        if (repo / project).is_file() and project not in found:
            found.append(project)
            lock = f"{project.rpartition('/')[0]}/packages.lock.json".lstrip("/")
            if (repo / lock).is_file() and lock not in found:
                found.append(lock)
    return found


@dataclass(frozen=True)
class PinSet:
    files: tuple[str, ...]  # every pin file read (includes followed), in reading order
    pins: tuple[Pin, ...]
    # The files each .NET project's evaluation read: they count only for projects that use a
    # family package (an unrelated project's props must not date the stamp's pins).
    project_files: dict[str, tuple[str, ...]] = field(default_factory=dict)


_DOTNET_NAMES = ("directory.packages.props", "packages.lock.json", "directory.build.props")


def read_pins(config: Config, indexed_projects: Sequence[str] | None = None) -> PinSet:
    """The pins of `config`'s pin files. `indexed_projects`: the .NET project files in git's
    index, when the caller has listed them already (`TreeFacts.projects`)."""
    from cachelint.listing import PROJECT_SUFFIXES

    repo = config.repo
    if config.pins:
        names = list(config.pins)
        for name in names:
            if not (repo / name).is_file():
                raise ConfigError(
                    f"{config.source}: key 'pins' names {name!r}, which does not exist; "
                    "fix the path or remove it"
                )
        projects = [n for n in names if n.lower().endswith(PROJECT_SUFFIXES)]
    else:
        names = detect_pin_files(repo)
        if indexed_projects is None:
            from cachelint.pins.msbuild_eval import find_projects

            indexed_projects = find_projects(repo, skip=config.cache)
        projects = list(indexed_projects)
        # A solution's projects count even before `git add`.
        projects += [n for n in names if n.endswith(PROJECT_SUFFIXES) and n not in projects]
    pins: list[Pin] = []
    files: list[str] = []
    # Each project as MSBuild evaluates it; the .NET files its evaluation read are not read again
    # on their own (a VersionOverride is that project's version, not a second opinion).
    consumed: set[str] = set()
    project_files: dict[str, tuple[str, ...]] = {}
    if projects:
        from cachelint.pins.msbuild_eval import evaluate
    for project in projects:
        evaluated = evaluate(repo, project)
        pins.extend(evaluated.pins)
        project_files[project] = evaluated.files
        consumed.update(evaluated.files)
    for name in names:
        last = name.rpartition("/")[2].lower()
        if name in consumed or (
            projects
            and not config.pins
            and (last in _DOTNET_NAMES or last.endswith(PROJECT_SUFFIXES))
        ):
            continue
        parser = _parser_for(name.rpartition("/")[2])
        if parser is None:
            raise ConfigError(
                f"{config.source}: key 'pins' names {name!r}, a format cachelint cannot read; "
                "use pyproject.toml, requirements*.txt, uv.lock, poetry.lock, Pipfile.lock, "
                "Directory.Packages.props, *.csproj, packages.lock.json, package.json or "
                "package-lock.json"
            )
        found = parser(repo / name, name)
        for source in dict.fromkeys([name, *(p.source for p in found)]):
            if source not in files:
                files.append(source)
        pins.extend(found)
    return PinSet(tuple(files), tuple(pins), project_files)


# ---- the family and its versions ----------------------------------------------------------------


@dataclass(frozen=True)
class Resolved:
    name: str
    version: str
    source: str
    project: str | None = None
    ecosystem: Ecosystem | None = None  # how `same_version` compares it with a stamp's


@dataclass(frozen=True)
class PinProblem:
    name: str  # the package name or the family pattern
    source: str | None  # the pin file to point a finding at, if any
    message: str  # "<name>: ..." one line, with the fix


@dataclass(frozen=True)
class Resolution:
    files: tuple[str, ...]
    pinned: dict[str, Resolved] = field(default_factory=dict)  # stamp_key -> exact pin
    problems: tuple[PinProblem, ...] = ()
    # Packages whose .NET projects build with different versions: project -> stamp_key -> pin.
    by_project: dict[str, dict[str, Resolved]] = field(default_factory=dict)

    @property
    def troubled(self) -> set[str]:
        return {stamp_key(p.name) for p in self.problems}


def _matches(pattern: str, pin: Pin) -> bool:
    return fnmatch.fnmatchcase(
        normalise(pin.name, pin.ecosystem), normalise(pattern, pin.ecosystem)
    )


def same_version(recorded: str, pin: Resolved) -> bool:
    """Whether a stamp's `recorded` version is the version `pin` resolves to, compared as its
    ecosystem compares versions (NuGet: `10.9` is `10.9.0`)."""
    if pin.ecosystem is None:
        return recorded == pin.version
    return _same_version(recorded, pin.version, pin.ecosystem)


def _same_version(a: str, b: str, ecosystem: Ecosystem) -> bool:
    if ecosystem is Ecosystem.NUGET:
        from cachelint.pins import nuget_version

        return nuget_version.same(a, b)
    if ecosystem is Ecosystem.PYPI:
        from packaging.version import InvalidVersion, Version

        try:
            return Version(a) == Version(b)
        except InvalidVersion:
            pass
    return a.casefold() == b.casefold()


def _not_found(pattern: str, files: Sequence[str]) -> str:
    if not files:
        return (
            f"{pattern}: not pinned, and no pin file was detected at the repository root; pin "
            "it exactly in pyproject.toml or a requirements*.txt there (or name the files in "
            "`pins`, or fix `packages` in the config)"
        )
    return (
        f"{pattern}: not found in {', '.join(files)}; pin it there (or fix `packages` in the "
        "config)"
    )


_REGENERATE = {
    "packages.lock.json": "`dotnet restore --force-evaluate`",
    "uv.lock": "`uv lock`",
    "poetry.lock": "`poetry lock`",
    "pipfile.lock": "`pipenv lock`",
    "package-lock.json": "`npm install`",
}


def _agree_hint(disagreeing: Sequence[Pin]) -> str:
    """A lock file that disagrees with its manifest is out of date, not a second opinion."""
    for pin in disagreeing:
        command = _REGENERATE.get(pin.source.rpartition("/")[2].lower())
        if command:
            return f"{pin.source} is out of date: regenerate it with {command}"
    return "make the pin files agree on one version"


def _every_file(pin_set: PinSet) -> list[str]:
    every = list(pin_set.files)
    for files in pin_set.project_files.values():
        every += [f for f in files if f not in every]
    return every


def resolve(pin_set: PinSet, patterns: Iterable[str]) -> Resolution:
    """Exact versions of every family package, and a problem per package without exactly one."""
    groups: dict[tuple[Ecosystem, str], list[Pin]] = {}
    unmatched: list[str] = []
    for pattern in patterns:
        hits = [p for p in pin_set.pins if _matches(pattern, p)]
        if not hits:
            unmatched.append(pattern)
        for pin in hits:
            groups.setdefault((pin.ecosystem, normalise(pin.name, pin.ecosystem)), []).append(pin)
    pinned: dict[str, Resolved] = {}
    problems: list[PinProblem] = []
    for pattern in unmatched:
        problems.append(
            PinProblem(
                pattern,
                None,
                _not_found(pattern, _every_file(pin_set)),
            )
        )
    by_project: dict[str, dict[str, Resolved]] = {}
    for (ecosystem, _key), group in sorted(groups.items(), key=lambda kv: kv[0][1]):
        parts: dict[str | None, list[Pin]] = {}
        for pin in group:
            parts.setdefault(pin.project, []).append(pin)
        decided: dict[str, Resolved] = {}
        for project, part in sorted(parts.items(), key=lambda kv: kv[0] or ""):
            outcome = _decide(part, ecosystem, project)
            if isinstance(outcome, PinProblem):
                problems.append(outcome)
            else:
                decided[project or outcome.source] = outcome
        if len(decided) < len(parts):
            continue  # a project without one exact version: the package is unpinned
        first = next(iter(decided.values()))
        if all(_same_version(r.version, first.version, ecosystem) for r in decided.values()):
            pinned[stamp_key(first.name)] = first
            continue
        for label, resolved in decided.items():
            by_project.setdefault(label, {})[stamp_key(resolved.name)] = resolved
    used = {p.project for group in groups.values() for p in group if p.project is not None}
    files = list(pin_set.files)
    for project in sorted(used):
        files += [f for f in pin_set.project_files.get(project, ()) if f not in files]
    return Resolution(tuple(files), pinned, tuple(problems), by_project)


def _decide(group: list[Pin], ecosystem: Ecosystem, project: str | None) -> Resolved | PinProblem:
    """One package's pins within one project (or outside any): its exact version or a problem."""
    exact = [p for p in group if p.version is not None]
    name = (exact or group)[0].name
    label = f"{name} ({project})" if project else name
    if not exact:
        ranges = "; ".join(f"{p.spec!r} in {p.source}" for p in group)
        fix = (
            "pin one exact version (==X.Y.Z, NuGet X.Y.Z or [X.Y.Z], npm X.Y.Z) or commit a "
            "lock file"
        )
        if ecosystem is Ecosystem.NUGET:
            floating = any("*" in p.spec for p in group)
            fix = (
                (
                    "a floating version is resolved only by restore, and only packages.lock.json "
                    "records which one it took: "
                    if floating
                    else ""
                )
                + "pin one exact version (X.Y.Z or [X.Y.Z]), or commit the lock file restore "
                "resolves it through: set <RestorePackagesWithLockFile>true"
                "</RestorePackagesWithLockFile> in Directory.Build.props, run `dotnet restore` "
                "and commit each project's packages.lock.json"
            )
        message = f"{label}: not pinned to an exact version: found {ranges}; {fix}"
        return PinProblem(name, group[0].source, message)
    first = exact[0]
    assert first.version is not None
    others = [p for p in exact if not _same_version(p.version or "", first.version, ecosystem)]
    if others:
        seen = "; ".join(
            f"{v} in {s}" for v, s in dict.fromkeys((p.version, p.source) for p in [first, *others])
        )
        return PinProblem(
            name,
            others[0].source,
            f"{label}: pinned differently: {seen}; {_agree_hint([first, *others])}",
        )
    return Resolved(name, first.version, first.source, project, ecosystem)


def current(
    config: Config,
    indexed_projects: Sequence[str] | None = None,
    meai_roots: Sequence[str] | None = None,
) -> Resolution:
    """The pins (`read_pins`) resolved for the package family the stamp records (`meai_roots`:
    the MEAI roots when a check already knows them, see `meai.family`)."""
    from cachelint.meai import family

    return resolve(read_pins(config, indexed_projects), family(config, meai_roots))
