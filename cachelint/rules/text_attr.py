"""eval-cache-text-attr: a cache file whose effective `text` attribute is not unset.

Only an unset `text` (`-text`, or the `binary` macro) keeps the bytes exact: with text unspecified
`eol=` or core.autocrlf converts line endings, `-diff` alone changes nothing about that, and a
closer `.gitattributes` with `* text` overrides a root `-text`. The value comes from one
`git check-attr --stdin`; when it is set, the overriding line is found by reading the attributes
files from the file's directory up (closest file wins, last matching line wins).

Findings are grouped, one per cache root and cause, not one per file: a missing `-text` line
affects every file, and the fix is one line. A finding names how many files share the cause and
one of them; an override is reported at the `.gitattributes` file and line that sets it.

The attributes that rewrite bytes whatever `text` says (`ident`, `filter`, `working-tree-encoding`,
and `eol`, which converts as soon as `text` is not unset) are findings too, one per cache root and
attribute value, from the same `git check-attr --all` (`cachelint.attrcheck`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from cachelint.facts import ATTRIBUTES, INFO_ATTRIBUTES, TreeFacts
from cachelint.findings import Finding
from cachelint.paths import is_inside
from cachelint.rules import Rule

if TYPE_CHECKING:
    import pathspec

CODE = "eval-cache-text-attr"


@dataclass(frozen=True, order=True)
class Cause:
    file: str
    line: int
    text: str


def _turns_on(attrs: list[str]) -> bool:
    return any(a == "text" or a.startswith("text=") for a in attrs)


def _sets_text(attrs: list[str]) -> bool:
    return any(a in ("binary", "text", "-text", "!text") or a.startswith("text=") for a in attrs)


def _setter(name: str) -> Callable[[list[str]], bool]:
    return lambda attrs: any(a.lstrip("-!") == name or a.startswith(f"{name}=") for a in attrs)


@cache
def _matcher(pattern: str) -> pathspec.GitIgnoreSpec:
    # Imported here: only a finding needs it, and importing pathspec would slow every check.
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines([pattern])


def _matches(pattern: str, relative: str) -> bool:
    # Attribute patterns follow gitignore matching, except that a pattern naming a directory
    # (`dir/`) never applies to the files inside; quoted patterns are left to git (ambiguous).
    if pattern.endswith("/") or pattern.startswith('"'):
        return False
    return bool(_matcher(pattern).match_file(relative))


def _candidates(path: str, attributes: dict[str, list[str]]) -> list[tuple[str, str]]:
    """(attributes file, its directory) that apply to `path`, highest priority first."""
    out: list[tuple[str, str]] = []
    if INFO_ATTRIBUTES in attributes:
        out.append((INFO_ATTRIBUTES, ""))
    parent = path
    while parent:
        parent = parent.rpartition("/")[0]
        file = f"{parent}/{ATTRIBUTES}" if parent else ATTRIBUTES
        if file in attributes:
            out.append((file, parent))
    return out


def find_cause(
    path: str, attributes: dict[str, list[str]], sets: Callable[[list[str]], bool] = _sets_text
) -> Cause | None:
    """The line that decides `text` (or what `sets` looks for) for `path`, or None when it
    cannot be told for sure."""
    for file, directory in _candidates(path, attributes):
        relative = path[len(directory) + 1 :] if directory else path
        lines = attributes[file]
        for number in range(len(lines), 0, -1):
            words = lines[number - 1].split()
            if not words or words[0].startswith(("#", "[attr]")) or not sets(words[1:]):
                continue
            if _matches(words[0], relative):
                return Cause(file, number, lines[number - 1].strip())
    return None


def _root_of(path: str, roots: tuple[str, ...]) -> str:
    return next((r for r in roots if is_inside(path, r)), path.partition("/")[0])


_WHY = {
    "ident": "every checkout writes `$Id: <blob id> $` into each `$Id$` of a cached answer",
    "filter": "git stores what the filter makes (git-lfs: a pointer), not the bytes on disk, "
    "and a clone without the filter checks out other bytes",
    "working-tree-encoding": "git re-encodes the file between that encoding and UTF-8 on every "
    "add and checkout",
    "eol": "git converts line endings on checkout as soon as `text` is not unset",
}


def _rewrites(facts: TreeFacts) -> Iterator[Finding]:
    groups: dict[tuple[str, str], list[str]] = {}
    for path, found in facts.rewrite_attr.items():
        for attr in found:
            groups.setdefault((_root_of(path, facts.config.cache), attr), []).append(path)
    for (root, attr), paths in sorted(groups.items()):
        example = min(paths)
        name = attr.partition("=")[0]
        cause = find_cause(example, facts.attributes, _setter(name))
        files = "file" if len(paths) == 1 else "files"
        fix = (
            f"remove it from line {cause.line} `{cause.text}`"
            if cause is not None
            else "remove it from the attributes line that sets it (`git check-attr -a -- "
            "<path>` shows it)"
        )
        yield Finding(
            cause.file if cause is not None else example,
            CODE,
            f"{attr} applies to {len(paths)} {files} under {root}/ (e.g. {example}): "
            f"{_WHY[name]}; {fix}, or unset it for the cache with `{root}/** -{name}`",
            line=cause.line if cause is not None else None,
        )


def check(facts: TreeFacts) -> Iterator[Finding]:
    yield from _rewrites(facts)
    groups: dict[tuple[str, str, Cause | None], list[str]] = {}
    for path, value in facts.text_attr.items():
        if value == "unset":
            continue
        cause = None if value == "unspecified" else find_cause(path, facts.attributes)
        key = (_root_of(path, facts.config.cache), value, cause)
        groups.setdefault(key, []).append(path)
    for (root, value, cause), paths in sorted(groups.items(), key=lambda kv: str(kv[0])):
        # Name a cache file as the example rather than a .gitattributes file inside the tree.
        example = min(paths, key=lambda p: (p.endswith(f"/{ATTRIBUTES}"), p))
        files = "file" if len(paths) == 1 else "files"
        count = f"{len(paths)} {files} under {root}/ (e.g. {example})"
        on_path = ", ".join(f for f, _ in reversed(_candidates(example, facts.attributes)))
        if value == "unspecified":
            yield Finding(
                root,
                CODE,
                f"text attribute is unspecified for {count}, so core.autocrlf or eol= can rewrite "
                f"line endings; add the line `{root}/** -text` to the repository's top "
                ".gitattributes",
            )
        elif cause is not None and _turns_on(cause.text.split()[1:]):
            yield Finding(
                cause.file,
                CODE,
                f"line {cause.line} `{cause.text}` sets text={value} for {count}, overriding any "
                f"-text above it (attributes files on the path: {on_path}); make it `-text` or "
                "remove `text` from it",
                line=cause.line,
            )
        else:
            yield Finding(
                example,
                CODE,
                f"text attribute is {value} for {count}: some .gitattributes line sets text "
                f"(attributes files on the path: {on_path or 'none'}); make it `-text` "
                "(`git check-attr -a -- <path>` shows the effective attributes)",
            )


RULE = Rule(
    CODE,
    "a cache file whose effective `text` attribute is not unset, or with `ident`, `filter`, "
    "`working-tree-encoding` or `eol` set",
    check,
)
