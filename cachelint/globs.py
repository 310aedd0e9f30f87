"""cachelint's own gitignore-style globs (`exclude`, `watch`, `secret-allow`), matched in linear
time.

pathspec translates each glob into a regular expression; its default engine is Python's `re`,
which backtracks: `*a*a*a*...*b` becomes `[^/]*a[^/]*a...b`, and one long file name (committed in
a pull request) kept check and the hook busy for minutes. RE2 matches in time linear in the name
whatever the pattern, and pathspec uses it as a backend with the same gitignore semantics, so every
glob cachelint compiles goes through `compile_globs` and RE2. `google-re2` is a dependency: a
missing engine is an install error, never a silent fall back to backtracking.

RE2 takes UTF-8 only. A file name that is not valid UTF-8 reaches cachelint as a `str` holding
lone surrogates (Python's `surrogateescape`), which RE2 cannot encode: such a path is matched
as its UTF-8 rendering with each undecodable byte replaced by U+FFFD, so `*` and `**` still
match it (an excluded directory stays excluded) while a literal glob never names the bytes.
The name itself is a finding of its own (`eval-cache-windows-name`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

BACKEND = "re2"
MAX_GLOB_LENGTH = 1024  # RE2 bounds its programs' memory; a glob this long is no path pattern

Matcher = Callable[[str], bool]


class Globs:
    """Compiled globs: `match_file(path)` as pathspec's, for any path `os.fsdecode` can give."""

    __slots__ = ("_match", "spec")

    def __init__(self, spec: Any) -> None:
        self.spec = spec
        self._match = spec.match_file

    def match_file(self, path: str) -> bool:
        try:
            return bool(self._match(path))
        except UnicodeEncodeError:  # lone surrogates: a name that is not valid UTF-8
            return bool(self._match(printable(path)))


def printable(path: str) -> str:
    """`path` with every byte that is not valid UTF-8 (a surrogate escape) as U+FFFD."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def compile_globs(lines: Sequence[str]) -> Globs:
    """`lines` as a `pathspec.GitIgnoreSpec` on the RE2 backend; ValueError for a line that is no
    valid glob (it names the line)."""
    import pathspec

    for line in lines:
        if len(line) > MAX_GLOB_LENGTH:
            raise ValueError(f"a glob of at most {MAX_GLOB_LENGTH} characters")
    try:
        return Globs(pathspec.GitIgnoreSpec.from_lines(lines, backend=BACKEND))
    except ImportError:  # pragma: no cover - google-re2 is a dependency
        raise
    except Exception as exc:  # pathspec raises several types for a malformed pattern
        raise ValueError(f"a gitignore-style glob ({exc})") from None


def glob_matcher(lines: Sequence[str]) -> Matcher:
    """`path -> bool` for the globs `lines` (validated already, see `compile_globs`)."""
    return compile_globs(lines).match_file
