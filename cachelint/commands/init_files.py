"""`cachelint init`'s file primitives and the pin: what it writes into files a repository already
has (a line, a table, an array item), never replacing what is there, and where it pins cachelint
(pyproject dependency groups or extras, Poetry's dev group, requirements files)."""

from __future__ import annotations

import difflib
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from cachelint import __version__
from cachelint.display import sanitize
from cachelint.errors import CachelintError
from cachelint.fsutil import atomic_write

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on the 3.10 CI leg
    import tomli as tomllib

_DEV_NAMES = ("dev", "test", "tests", "lint")


@dataclass
class Report:
    """What init did, file by file, and what it could not do, in the order it happened."""

    lines: list[str] = field(default_factory=list)
    advice: list[str] = field(default_factory=list)
    touched: list[str] = field(default_factory=list)  # paths to `git add`

    def did(self, verb: str, path: str, detail: str = "") -> None:
        self.lines.append(f"{verb:<9} {path}{': ' + detail if detail else ''}")
        if verb in ("created", "added", "wrote"):
            self.touched.append(path)


# ---- writing files ------------------------------------------------------------------------------


def _diff(old: str, new: str, path: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), path, f"{path} (init)"
    )
    return "".join(sanitize(line.rstrip("\n")) + "\n" for line in lines)


READ_BYTES = 4 * 1024 * 1024  # a file init edits (config, attributes, hooks): more is no such file


def read_existing(repo: Path, rel: str) -> str | None:
    """The text of the repository's file `rel`, or None when there is none. Read as every file
    of a repository is (`confine.read_inside`): a committed link is never followed (its target's
    text would be printed in a diff) and a FIFO never opened (init waited on it), each one line."""
    from cachelint.confine import read_inside

    try:
        data = read_inside(repo, rel, "init: file", READ_BYTES)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CachelintError(
            f"{rel}: {exc.strerror or exc}; init reads and edits only regular files of the "
            "repository: replace it with one, rerun `cachelint init`"
        ) from None
    return data.decode("utf-8", errors="replace")


def write_whole(repo: Path, rel: str, text: str, report: Report, *, force: bool) -> bool:
    """Create `rel` with `text`; True when it now holds exactly that."""
    path = repo / rel
    old = read_existing(repo, rel) if path.is_file() or path.is_symlink() else None
    if old is not None:
        if old == text:
            report.did("unchanged", rel)
            return True
        if not force:
            report.did("kept", rel, "it differs from what init writes (diff below; --force)")
            report.advice.append(f"{rel}: merge by hand what you want of:\n{_diff(old, text, rel)}")
            return False
        report.did("wrote", rel, "overwritten (--force)")
    elif path.exists() or path.is_symlink():
        report.did("kept", rel, "not a regular file; init writes nothing there")
        return False
    else:
        report.did("created", rel)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, text.encode("utf-8"))
    return True


def append(repo: Path, rel: str, block: str, report: Report, what: str, gap: bool = True) -> None:
    """Add `block` at the end of `rel` (created if absent), after a blank line with `gap`."""
    path = repo / rel
    old = read_existing(repo, rel) or ""
    if old and not old.endswith("\n"):
        old += "\n"
    atomic_write(path, (old + ("\n" if old and gap else "") + block).encode("utf-8"))
    report.did("added" if old else "created", rel, what)


def read_toml(path: Path) -> dict[str, object]:
    try:
        return tomllib.loads(read_existing(path.parent, path.name) or "")
    except tomllib.TOMLDecodeError as exc:
        raise CachelintError(
            f"{path.name}: cannot read it as TOML ({exc}); fix it, rerun"
        ) from None


# ---- the pin ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Install:
    """How CI installs the repository's own dependencies, the pin included: shell lines."""

    lines: tuple[str, ...]

    @classmethod
    def pip(cls, args: str) -> Install:
        return cls((f"python -m pip install {args}",))


# Poetry installs into the runner's Python, where the workflow's cachelint already is.
_POETRY = Install(
    (
        "python -m pip install poetry",
        "poetry config virtualenvs.create false",
        "poetry install --with dev",
    )
)


def ensure_pin(repo: Path, report: Report) -> Install | None:
    """Pin cachelint exactly where the repository pins; return how CI installs that place."""
    from cachelint import pins
    from cachelint.config import load

    found = [
        p
        for p in pins.read_pins(load(repo)).pins
        if pins.normalise(p.name, p.ecosystem) == "cachelint"
    ]
    exact = [p for p in found if p.version == __version__]
    if exact:
        report.did("unchanged", exact[0].source, f"cachelint=={__version__} is pinned")
        return _install_for(repo, exact[0].source)
    if found:
        pin = found[0]
        report.did("kept", pin.source, f"cachelint is pinned as {pin.spec!r}")
        report.advice.append(
            f"{pin.source}: cachelint {pin.spec} is not this cachelint ({__version__}); pin it "
            f"exactly (cachelint=={__version__}) or run the cachelint it pins"
        )
        return _install_for(repo, pin.source)
    return _add_pin(repo, report)


def _requirements_files(repo: Path) -> list[str]:
    names = sorted(p.name for p in repo.glob("requirements*.txt") if p.is_file())
    return sorted(names, key=lambda n: (not any(d in n for d in _DEV_NAMES), n))


def _add_pin(repo: Path, report: Report) -> Install | None:
    line = f"cachelint=={__version__}"
    pyproject = repo / "pyproject.toml"
    data = read_toml(pyproject) if pyproject.is_file() else {}
    place = _pyproject_place(data)
    files = _requirements_files(repo)
    if place is None or (place[0] == "new" and files):
        if files:
            append(repo, files[0], line + "\n", report, line, gap=False)
            return Install.pip(f"-r {files[0]}")
        report.advice.append(
            f"cachelint is not pinned: this repository has no pyproject.toml [project] or "
            f"requirements*.txt; add {line} to the file your team installs its tools from "
            "(`cachelint stamp` records the version it finds pinned)"
        )
        return None
    kind, name = place
    text = read_existing(repo, "pyproject.toml") or ""
    new = _pin_into(text, kind, name, line)
    wanted = '"cachelint": "' + __version__ if kind == "poetry" else f'"{line}"'
    if new is None or wanted not in json.dumps(_toml_text(new)):
        report.advice.append(
            f"pyproject.toml: add {line!r} to your development dependencies by hand (init could "
            "not place it in this file's layout)"
        )
        return None
    atomic_write(pyproject, new.encode("utf-8"))
    where = {"group": "[dependency-groups]", "new": "[dependency-groups]"}.get(kind, kind)
    report.did("added", "pyproject.toml", f"{line} in {where} {name}")
    for lock, tool in (("uv.lock", "uv lock"), ("poetry.lock", "poetry lock")):
        if (repo / lock).is_file():
            report.advice.append(f"{lock}: run `{tool}` to record the new pin")
    if kind == "poetry":
        return _POETRY
    return Install.pip(f'-e ".[{name}]"' if kind == "extra" else f"--group {name} -e .")


def _toml_text(text: str) -> dict[str, object]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {}


def _install_for(repo: Path, source: str) -> Install | None:
    if source.endswith(".txt"):
        return Install.pip(f"-r {source}")
    data = read_toml(repo / source) if source == "pyproject.toml" else {}
    place = _pyproject_place(data)
    if place is not None and place[0] == "poetry":
        return _POETRY
    if place is None or place[0] == "new":
        return Install.pip("-e .") if "project" in data else None
    kind, name = place
    return Install.pip(f'-e ".[{name}]"' if kind == "extra" else f"--group {name} -e .")


def _pyproject_place(data: dict[str, object]) -> tuple[str, str] | None:
    """Where a development pin goes: an existing dev/test dependency group or extra, Poetry's
    dev group, else a new `dev` dependency group; None without a [project] or Poetry table."""

    def table(value: object) -> dict[str, object]:
        return value if isinstance(value, dict) else {}

    project, tool = table(data.get("project")), table(data.get("tool"))
    for kind, names in (
        ("group", table(data.get("dependency-groups"))),
        ("extra", table(project.get("optional-dependencies"))),
    ):
        for name in _DEV_NAMES:
            if isinstance(names.get(name), list):
                return kind, name
    if "poetry" in tool:
        return "poetry", "dev"
    return ("new", "dev") if project else None


def _pin_into(text: str, kind: str, name: str, line: str) -> str | None:
    """`text` with `line` added to the array or table `kind`/`name`; None when the layout is
    not one init can edit without rewriting what is there."""
    header = {
        "group": "[dependency-groups]",
        "new": "[dependency-groups]",
        "extra": "[project.optional-dependencies]",
        "poetry": f"[tool.poetry.group.{name}.dependencies]",
    }[kind]
    lines = text.splitlines(keepends=True)
    at = next((i for i, x in enumerate(lines) if x.strip() == header), None)
    if at is None:
        entry = f'cachelint = "{__version__}"' if kind == "poetry" else f'{name} = ["{line}"]'
        sep = "" if text.endswith("\n") or not text else "\n"
        return f"{text}{sep}\n{header}\n{entry}\n"
    if kind == "poetry":
        lines.insert(at + 1, f'cachelint = "{__version__}"\n')
        return "".join(lines)
    if kind == "new":
        lines.insert(at + 1, f'{name} = ["{line}"]\n')
        return "".join(lines)
    for i in range(at + 1, len(lines)):
        if lines[i].lstrip().startswith("["):
            return None
        opened = re.match(rf"^\s*{re.escape(name)}\s*=\s*\[(.*)$", lines[i].rstrip("\n"))
        if opened is None:
            continue
        rest = opened.group(1)
        if rest.rstrip().endswith("]"):  # one line: name = ["a", "b"]
            inner = rest.rstrip()[:-1].rstrip().rstrip(",")
            items = f'{inner}, "{line}"' if inner.strip() else f'"{line}"'
            lines[i] = lines[i][: lines[i].index("[") + 1] + items + "]\n"
        else:
            following = lines[i + 1] if i + 1 < len(lines) else ""
            indent = re.match(r"^\s*", following).group(0) or "    "  # type: ignore[union-attr]
            lines.insert(i + 1, f'{indent}"{line}",\n')
        return "".join(lines)
    return None
