"""Each .NET project's package versions as MSBuild and NuGet resolve them.

A project's effective version of a package is not what one file says:
- MSBuild imports the nearest `Directory.Build.props` above the project, then (NuGet's central
  package management) the nearest `Directory.Packages.props`, then the project body; each of
  those may import others, usually the next file of the same name further up with
  `$([MSBuild]::GetPathOfFileAbove('Directory.Packages.props', '$(MSBuildThisFileDirectory)../'))`.
  Later definitions win, properties first (so `$(MeaiVersion)` may come from any of them), items
  after all properties.
- Under central management (`ManagePackageVersionsCentrally` true) a `<PackageReference>` takes
  its version from the `<PackageVersion>` items, unless it has a `VersionOverride`; without it,
  from its own `Version`. A `<GlobalPackageReference>` applies to every project.
- `packages.lock.json` beside the project is what restore resolved (transitive packages too).

Conditions are honoured when they are string comparisons (`'$(X)' == ''`, the default-value
idiom) or `Exists(...)`; any other condition is taken as true. Nothing above the repository is
read: a file there is not committed, so no clone would see it.
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from cachelint import listing
from cachelint.listing import PROJECT_SUFFIXES
from cachelint.paths import is_inside
from cachelint.pins import Pin
from cachelint.pins._msbuild import load, local, nuget_pin, value
from cachelint.pins.nuget_lock import parse as parse_lock

_PLAIN = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")
_FUNCTION = re.compile(
    r"\$\(\[MSBuild\]::(GetPathOfFileAbove|GetDirectoryNameOfFileAbove)\(([^()]*)\)\)", re.I
)
_COMPARE = re.compile(r"^\s*'([^']*)'\s*(==|!=)\s*'([^']*)'\s*$")
_EXISTS = re.compile(r"^\s*!?\s*Exists\(\s*'([^']*)'\s*\)\s*$", re.I)


_ITEM_TYPES = {
    t.lower(): t for t in ("PackageVersion", "PackageReference", "GlobalPackageReference")
}


@dataclass
class _Item:
    kind: str  # PackageVersion, PackageReference, GlobalPackageReference
    name: str
    update: bool
    version: str | None
    override: str | None
    source: str  # repo-relative file the item is written in
    condition: str | None


@dataclass
class _Evaluation:
    repo: Path
    props: dict[str, str] = field(default_factory=dict)
    items: list[_Item] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # every file read, in reading order


def _rel(repo: Path, path: Path) -> str:
    return path.relative_to(repo).as_posix()


def _above(repo: Path, start: Path, name: str) -> Path | None:
    """The nearest `name` in `start` or a directory above it, inside the repository."""
    directory = start
    while is_inside(directory, repo):
        candidate = directory / name
        if candidate.is_file():
            return candidate
        if directory == repo:
            return None
        directory = directory.parent
    return None


def _normal(base: Path, text: str) -> Path:
    path = text.replace("\\", "/")
    joined = path if os.path.isabs(path) else os.path.join(base, path)
    return Path(os.path.normpath(joined))


def _expand(
    text: str, props: dict[str, str], this_file: Path, repo: Path, undefined: str | None = None
) -> str:
    """`text` with properties and the two path functions expanded. An undefined property is ""
    to MSBuild; `undefined` None keeps it visible instead, so a version that depends on one is
    reported as unresolved rather than read as empty."""
    here = str(this_file.parent) + "/"
    reserved = {
        "msbuildthisfiledirectory": here,
        "msbuildthisfile": this_file.name,
        "msbuildthisfilefullpath": str(this_file),
    }
    lowered = props  # keyed by lower-cased name already (`_walk`)

    def plain(match: re.Match[str]) -> str:
        key = match.group(1).lower()
        if key in reserved:
            return reserved[key]
        return lowered.get(key, match.group(0) if undefined is None else undefined)

    text = _PLAIN.sub(plain, text)

    def function(match: re.Match[str]) -> str:
        args = [a.strip().strip("'\"").strip() for a in match.group(2).split(",")]
        if match.group(1).lower() == "getpathoffileabove":
            name, start = args[0], args[1] if len(args) > 1 else here
        else:
            start, name = args[0], args[1] if len(args) > 1 else ""
        found = _above(repo, _normal(this_file.parent, start), name) if name else None
        if found is None:
            return ""
        return str(found) if match.group(1).lower() == "getpathoffileabove" else str(found.parent)

    return _FUNCTION.sub(function, text)


def _condition_holds(
    condition: str | None, props: dict[str, str], this_file: Path, repo: Path
) -> bool:
    if not condition:
        return True
    text = _expand(condition, props, this_file, repo, undefined="")
    compare = _COMPARE.match(text)
    if compare:
        equal = compare.group(1).casefold() == compare.group(3).casefold()
        return equal if compare.group(2) == "==" else not equal
    exists = _EXISTS.match(text)
    if exists:
        found = _normal(this_file.parent, exists.group(1)).exists()
        return not found if text.lstrip().startswith("!") else found
    return True


def _read(path: Path, ev: _Evaluation, stack: tuple[Path, ...]) -> None:
    """Evaluate one file in document order: properties as they come, imports where they stand,
    items kept for the second pass."""
    if path in stack or not is_inside(path, ev.repo):
        return
    relative = _rel(ev.repo, path)
    root = load(path, relative)
    if relative not in ev.files:
        ev.files.append(relative)
    _walk(root, path, relative, ev, (*stack, path))


def _walk(
    element: ET.Element, path: Path, relative: str, ev: _Evaluation, stack: tuple[Path, ...]
) -> None:
    for child in element:
        tag = local(child.tag)
        if not _condition_holds(child.attrib.get("Condition"), ev.props, path, ev.repo):
            continue
        if tag in ("ImportGroup", "Choose", "When", "Otherwise"):
            _walk(child, path, relative, ev, stack)
        elif tag == "Import":
            target = _expand(child.attrib.get("Project", ""), ev.props, path, ev.repo).strip()
            if target and "$(" not in target and "*" not in target:
                imported = _normal(path.parent, target)
                if imported.is_file():
                    _read(imported, ev, stack)
        elif tag == "PropertyGroup":
            for prop in child:
                condition = prop.attrib.get("Condition")
                if _condition_holds(condition, ev.props, path, ev.repo):
                    text = (prop.text or "").strip()
                    # By lower-cased name: MSBuild property names are case-insensitive.
                    ev.props[local(prop.tag).lower()] = _expand(text, ev.props, path, ev.repo)
        elif tag == "ItemGroup":
            _collect_items(child, relative, ev)


def _collect_items(group: ET.Element, relative: str, ev: _Evaluation) -> None:
    condition = group.attrib.get("Condition")
    for item in group:
        kind = _ITEM_TYPES.get(local(item.tag).lower())  # item types are case-insensitive
        if kind is None:
            continue
        name = item.attrib.get("Include") or item.attrib.get("Update")
        if not name:
            continue
        ev.items.append(
            _Item(
                kind,
                name,
                "Include" not in item.attrib,
                value(item, "Version"),
                value(item, "VersionOverride"),
                relative,
                item.attrib.get("Condition") or condition,
            )
        )


@dataclass(frozen=True)
class ProjectPins:
    project: str  # repo-relative project file
    pins: tuple[Pin, ...]
    files: tuple[str, ...]  # every file the evaluation read, the project's lock file included


def evaluate(repo: Path, project: str) -> ProjectPins:
    """The package versions `project` (repo-relative) builds with; PinFileError when one of the
    files MSBuild would read is not valid XML or JSON."""
    repo = Path(os.path.normpath(repo.resolve()))
    path = repo / project
    ev = _Evaluation(repo)
    for name in ("Directory.Build.props", "Directory.Packages.props"):
        found = _above(repo, path.parent, name)
        if found is not None:
            _read(found, ev, ())
    _read(path, ev, ())
    central = (ev.props.get("managepackageversionscentrally") or "").strip().lower() == "true"
    versions: dict[str, _Item] = {}  # PackageVersion by lower-cased name, the last one wins
    references: dict[str, _Item] = {}
    for item in ev.items:
        if not _condition_holds(item.condition, ev.props, repo / item.source, repo):
            continue
        key = item.name.casefold()
        if item.kind == "PackageVersion":
            if not item.update or key in versions:
                versions[key] = item
        elif not item.update or key in references:
            references[key] = item
    pins: list[Pin] = []
    for key, ref in references.items():
        spec_item, spec = ref, ref.override or ref.version
        if ref.override is None and central and ref.kind == "PackageReference":
            central_item = versions.get(key)
            spec_item, spec = (central_item, central_item.version) if central_item else (ref, None)
        if spec is None:
            continue
        pin = nuget_pin(ref.name, spec, ev.props, spec_item.source)
        pins.append(replace(pin, project=project))
    files = list(ev.files)
    lock = PurePosixPath(project).parent / "packages.lock.json"
    if (repo / lock).is_file():
        pins.extend(replace(p, project=project) for p in parse_lock(repo / lock, lock.as_posix()))
        files.append(lock.as_posix())
    return ProjectPins(project, tuple(pins), tuple(files))


def find_projects(repo: Path, skip: tuple[str, ...] = ()) -> list[str]:
    """Every project file in git's index, repo-relative and sorted (`listing.PROJECTS`); without
    git, a walk that skips hidden directories, bin, obj and `skip`."""
    from cachelint.gitutil import run_git

    indexed = listing.projects(run_git(listing.PROJECTS, cwd=repo, check=False))
    if indexed is not None:
        return list(indexed)
    found: list[str] = []
    for directory, dirs, names in os.walk(repo):
        rel = Path(directory).relative_to(repo).as_posix()
        dirs[:] = [
            d
            for d in dirs
            if not d.startswith(".")
            and d not in ("bin", "obj", "node_modules")
            and (f"{rel}/{d}" if rel != "." else d) not in skip
        ]
        for name in names:
            if name.endswith(PROJECT_SUFFIXES):
                found.append(f"{rel}/{name}" if rel != "." else name)
    return sorted(found)
