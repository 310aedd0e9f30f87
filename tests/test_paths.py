"""`is_inside`: the one "is this path inside that root" test, strict by whole components; and the
components confine's link walk looks at."""

from __future__ import annotations

import itertools
from pathlib import Path, PurePosixPath

import pytest

from cachelint.confine import _parts
from cachelint.paths import is_inside


@pytest.mark.parametrize(
    ("path", "root", "inside"),
    [
        ("eval-cache/cache/a.json", "eval-cache", True),
        ("eval-cache", "eval-cache", True),  # a root overlaps itself
        ("eval-cache", "eval-cache/", True),
        ("eval-cache/", "eval-cache", True),
        ("eval-cache2/a.json", "eval-cache", False),  # a prefix is not a parent
        ("eval-cach", "eval-cache", False),
        ("eval-cache/../x", "eval-cache", False),  # lexically normalised
        ("eval-cache/./a", "eval-cache", True),
        ("eval-cache//a", "eval-cache", True),
        ("x/../eval-cache/a", "eval-cache", True),
        ("eval-cache", "eval-cache/cache", False),  # a parent is not inside its child
        ("a", ".", True),
        (".", ".", True),
        ("../a", ".", False),
        ("..", ".", False),
        ("/repo/eval-cache/a", "/repo/eval-cache", True),
        ("/repo/eval-cache2", "/repo/eval-cache", False),
        ("/anything", "/", True),
        ("eval-cache/a", "/repo/eval-cache", False),  # relative against absolute: never
        ("/repo/eval-cache/a", "eval-cache", False),
    ],
)
def test_is_inside(path: str, root: str, inside: bool) -> None:
    assert is_inside(path, root) is inside


def test_is_inside_takes_path_objects(tmp_path: Path) -> None:
    assert is_inside(tmp_path / "a" / "b", tmp_path / "a")
    assert not is_inside(tmp_path / "ab", tmp_path / "a")
    assert is_inside(PurePosixPath("eval-cache/x"), "eval-cache")


def test_config_refuses_results_equal_to_a_cache_root(git_repo: Path) -> None:
    from cachelint.config import load
    from cachelint.errors import ConfigError

    (git_repo / "pyproject.toml").write_text(
        '[tool.cachelint]\ncache = "eval-cache"\nresults = "eval-cache/"\n', encoding="utf-8"
    )
    with pytest.raises(ConfigError, match="lies inside cache root"):
        load(git_repo, None)


def test_the_link_walk_splits_a_path_into_the_components_pathlib_gives() -> None:
    # confine splits clean paths with str.split (it runs per model call); every spelling of up
    # to five pieces must give PurePosixPath's components, backslashes read as slashes.
    pieces = ["a", "/", ".", "..", "\\", "b"]
    for size in range(1, 6):
        for combo in itertools.product(pieces, repeat=size):
            text = "".join(combo)
            assert tuple(_parts(text)) == PurePosixPath(text.replace("\\", "/")).parts, text
