"""The codebase stays small enough to read: no package module over 600 lines, no function over 60.

Measured with `ast` (a function's span from its `def` or first decorator to its last line). The
test lists every offender, so one run says all that must be split.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import PROJECT

PACKAGE = PROJECT / "cachelint"
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 60


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _long_functions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            length = (node.end_lineno or node.lineno) - start + 1
            if length > MAX_FUNCTION_LINES:
                rel = path.relative_to(PROJECT).as_posix()
                found.append(f"{rel}:{node.lineno} {node.name}() is {length} lines")
    return found


def test_the_package_is_found() -> None:
    assert len(_modules()) > 20


def test_no_module_over_600_lines() -> None:
    offenders = []
    for path in _modules():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_MODULE_LINES:
            offenders.append(f"{path.relative_to(PROJECT).as_posix()} is {lines} lines")
    assert offenders == [], "split these modules:\n" + "\n".join(offenders)


def test_no_function_over_60_lines() -> None:
    offenders = [line for path in _modules() for line in _long_functions(path)]
    assert offenders == [], "split these functions:\n" + "\n".join(offenders)
