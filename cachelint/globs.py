"""cachelint's own gitignore-style globs (`exclude`, `watch`, `secret-allow`), matched in linear
time.

pathspec translates each glob into a regular expression; its default engine is Python's `re`,
which backtracks: `*a*a*a*...*b` becomes `[^/]*a[^/]*a...b`, and one long file name (committed in
a pull request) kept check and the hook busy for minutes. RE2 matches in time linear in the name
whatever the pattern, and pathspec uses it as a backend with the same gitignore semantics, so every
glob cachelint compiles goes through `compile_globs` and RE2. `google-re2` is a dependency: a
missing engine is an install error, never a silent fall back to backtracking.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

BACKEND = "re2"
MAX_GLOB_LENGTH = 1024  # RE2 bounds its programs' memory; a glob this long is no path pattern

Matcher = Callable[[str], bool]


def compile_globs(lines: Sequence[str]) -> Any:
    """A `pathspec.GitIgnoreSpec` of `lines` on the RE2 backend; ValueError for a line that is no
    valid glob (it names the line)."""
    import pathspec

    for line in lines:
        if len(line) > MAX_GLOB_LENGTH:
            raise ValueError(f"a glob of at most {MAX_GLOB_LENGTH} characters")
    try:
        return pathspec.GitIgnoreSpec.from_lines(lines, backend=BACKEND)
    except ImportError:  # pragma: no cover - google-re2 is a dependency
        raise
    except Exception as exc:  # pathspec raises several types for a malformed pattern
        raise ValueError(f"a gitignore-style glob ({exc})") from None


def glob_matcher(lines: Sequence[str]) -> Matcher:
    """`path -> bool` for the globs `lines` (validated already, see `compile_globs`)."""
    spec = compile_globs(lines)
    match = spec.match_file
    return lambda path: bool(match(path))
