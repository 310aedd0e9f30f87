"""Imports go down, never up: commands (and the other front doors) -> runner -> core ->
utilities. Every import of every module counts, those inside functions too (read with ast, not
run), so a lazy import cannot hide a dependency that runs the wrong way."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "cachelint"

# The package's root (`__version__`, and the public names it loads lazily) stands outside the
# layers: Python runs it for every import of a cachelint module anyway.
ROOT = "cachelint"
# The top: the command line, the subcommands and the other front doors (the pre-commit hooks, the
# pytest plugin, the importers, the developer tools).
TOP = ("cachelint.__main__", "cachelint.cli", "cachelint.hook", "cachelint.pytest_plugin")
TOP_PACKAGES = ("cachelint.commands", "cachelint.importers", "cachelint.devtools")
RUNNER = "cachelint.runner"
# The ground: helpers that know nothing of caches, configuration or runs.
UTILITIES = frozenset(
    f"cachelint.{name}"
    for name in (
        "canonical",
        "childproc",
        "display",
        "errors",
        "fsutil",
        "gcpolicy",
        "gitutil",
        "globs",
        "jsontext",
        "paths",
        "progressbar",
        "spool",
        "winpath",
    )
)
LAYERS = ("top", "runner", "core", "utility")  # each imports only its own and those after it

# Imports that still run up, each with a comment naming why and who fixes it; none today, and
# nothing may be added here without that.
KNOWN: set[tuple[str, str]] = set()


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layer(module: str) -> str:
    if module in TOP or ".".join(module.split(".")[:2]) in TOP_PACKAGES:
        return "top"
    if module == RUNNER or module.startswith(f"{RUNNER}."):
        return "runner"
    return "utility" if module in UTILITIES else "core"


def _imports(path: Path, module: str) -> set[str]:
    """The cachelint modules `path` imports anywhere in it (`from x import y` is x.y when y is a
    module), the package's root left out."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == ROOT)
        elif isinstance(node, ast.ImportFrom):
            source = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*parts, source] if source else parts)
            if source.split(".")[0] != ROOT:
                continue
            found.add(source)
            found.update(f"{source}.{a.name}" for a in node.names if _is_module(source, a.name))
    return found - {ROOT}


def _is_module(package: str, name: str) -> bool:
    where = PACKAGE.joinpath(*package.split(".")[1:], name)
    return where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()


def _upward() -> set[tuple[str, str]]:
    upward = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module(path)
        if module == ROOT:
            continue
        rank = LAYERS.index(_layer(module))
        for imported in _imports(path, module):
            if LAYERS.index(_layer(imported)) < rank:
                upward.add((module, imported))
    return upward


def test_imports_point_down_the_layers() -> None:
    upward = _upward() - KNOWN
    listed = "\n".join(f"  {a} imports {b}" for a, b in sorted(upward))
    assert not upward, f"imports that run up the layers (top, runner, core, utility):\n{listed}"


def test_every_known_exception_is_still_there() -> None:
    """An exception fixed comes off the list, so it cannot come back unnoticed."""
    assert KNOWN <= _upward()


def test_function_level_and_relative_imports_count(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from . import store\n"
        "def f():\n"
        "    from cachelint.runner import client\n"
        "    import cachelint.commands.run\n"
    )
    found = _imports(probe, "cachelint.probe")
    assert found == {
        "cachelint.store",
        "cachelint.runner",
        "cachelint.runner.client",
        "cachelint.commands.run",
    }
    assert [_layer(m) for m in ("cachelint.commands.run", "cachelint.runner.client")] == [
        "top",
        "runner",
    ]
    assert [_layer(m) for m in ("cachelint.config", "cachelint.gitutil")] == ["core", "utility"]


def _private_imports() -> list[str]:
    """`from cachelint.x import _name` anywhere in the package: one module reaching into another's
    private helpers (the helper should be made public in its home, or moved)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            source = node.module or ""
            if not node.level and source.split(".")[0] != ROOT:
                continue  # another package's names
            private = [a.name for a in node.names if a.name.startswith("_") and a.name[-2:] != "__"]
            found += [f"{_module(path)} imports {source}.{name}" for name in private]
    return found


def test_no_module_imports_another_modules_private_names() -> None:
    found = _private_imports()
    assert not found, "private names imported across modules:\n" + "\n".join(found)
