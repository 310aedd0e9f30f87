"""Issue 37's catalogue (tests/hostile_cases.py) stays true: every case names a test, every named
test exists (read with ast from the test files, no collection of the suite), and a case that is
not fixed names only tests marked `xfail(strict=True)` (so fixing it turns them into failures
until the catalogue says fixed), while a fixed case names no xfail test at all."""

from __future__ import annotations

import ast
from functools import cache

import pytest

from tests.conftest import PROJECT
from tests.hostile_cases import CASES, Case


@cache
def defined_tests(rel: str) -> dict[str, ast.FunctionDef]:
    """`name` or `Class::name` -> the test function defined in the file at `rel`."""
    tree = ast.parse((PROJECT / rel).read_text(encoding="utf-8"), rel)
    found: dict[str, ast.FunctionDef] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            found[node.name] = node
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name.startswith("test_"):
                    found[f"{node.name}::{item.name}"] = item
    return found


def function_of(node_id: str) -> ast.FunctionDef | None:
    rel, _, name = node_id.partition("::")
    if not rel.startswith("tests/test_") or not rel.endswith(".py"):
        return None
    if not (PROJECT / rel).is_file():
        return None
    return defined_tests(rel).get(name.split("[", 1)[0])


def marks(function: ast.FunctionDef, mark: str) -> list[ast.expr]:
    """The decorators `pytest.mark.<mark>` / `pytest.mark.<mark>(...)` of `function`."""
    found = []
    for decorator in function.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if ast.unparse(target) == f"pytest.mark.{mark}":
            found.append(decorator)
    return found


def strict_xfail(function: ast.FunctionDef) -> bool:
    return any(
        isinstance(d, ast.Call)
        and any(
            k.arg == "strict" and isinstance(k.value, ast.Constant) and k.value.value is True
            for k in d.keywords
        )
        for d in marks(function, "xfail")
    )


def test_the_catalogue_lists_each_case_once() -> None:
    ids = [case.id for case in CASES]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    assert len(CASES) >= 46  # the count; some of its cases are two inputs here
    assert all(case.description and "\n" not in case.description for case in CASES)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_each_case_names_existing_tests(case: Case) -> None:
    assert case.tests, f"{case.id} names no test"
    missing = [node for node in case.tests if function_of(node) is None]
    assert not missing, f"{case.id} names tests that do not exist: {missing}"
    for node in case.tests:
        if "[" in node:  # a parametrisation: the function must be parametrised
            function = function_of(node)
            assert function is not None and marks(function, "parametrize"), node


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_a_case_not_fixed_is_xfail_strict_and_a_fixed_one_is_not(case: Case) -> None:
    for node in case.tests:
        function = function_of(node)
        assert function is not None, node
        if case.fixed:
            assert not marks(function, "xfail"), f"{case.id} is fixed but {node} is xfail"
        else:
            assert strict_xfail(function), f"{case.id} is not fixed: mark {node} xfail(strict)"


def test_a_renamed_or_missing_test_is_caught() -> None:
    assert function_of(
        "tests/test_hostile_gaps.py::test_a_linked_baselines_file_is_not_read_through"
    )
    assert function_of("tests/test_hostile_gaps.py::test_no_such_test") is None
    assert function_of("tests/test_no_such_file.py::test_x") is None
    assert function_of("tests/hostile_cases.py::CASES") is None
