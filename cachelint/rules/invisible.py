"""eval-cache-invisible: a file git cannot see at all, so no command will ever commit it.

Git skips any directory named `.git` without a word (`git add` exits 0) and treats a nested
repository as one gitlink (mode 160000), never tracking the files inside. Such files are on disk
but in none of the index, the untracked list and the ignored list. A directory spelled `.GIT`,
`.Git.` or `git~1` is listed as untracked, but `git add` refuses every path through it ("invalid
path": Windows and macOS read it as `.git`), so it is reported here with a rename, never with
`git add` advice. One finding per nested repository and per such directory (not per file
inside), so a stray clone does not print thousands of lines.
"""

from __future__ import annotations

from collections.abc import Iterator

from cachelint.confine import is_dotgit
from cachelint.display import shell_command
from cachelint.facts import TreeFacts
from cachelint.findings import Finding
from cachelint.paths import is_inside
from cachelint.rules import Rule

CODE = "eval-cache-invisible"


def _files(count: int) -> str:
    return f"{count} file" if count == 1 else f"{count} files"


def _owner(path: str, containers: set[str]) -> str | None:
    parent = path.rpartition("/")[0]
    while parent:
        if parent in containers:
            return parent
        parent = parent.rpartition("/")[0]
    return None


def dotgit_variant(path: str) -> str | None:
    """The leading part of `path` up to its first component that reads as `.git` on Windows or
    macOS but is not `.git` itself (`.GIT`, `.git.`, `git~1`), or None."""
    if "g" not in path and "G" not in path:
        return None  # every spelling holds a g
    parts = path.split("/")
    for i, part in enumerate(parts):
        if part != ".git" and is_dotgit(part):
            return "/".join(parts[: i + 1])
    return None


def _variants(facts: TreeFacts) -> Iterator[Finding]:
    grouped: dict[str, int] = {}
    for path in facts.untracked | facts.ignored:
        if (owner := dotgit_variant(path)) is not None:
            grouped[owner] = grouped.get(owner, 0) + 1
    for owner, count in sorted(grouped.items()):
        name = owner.rpartition("/")[2]
        renamed = f"{owner.rpartition('/')[0]}/{''.join(filter(str.isalnum, name)).lower()}-data"
        yield Finding(
            owner,
            CODE,
            f'git refuses every path through {name!r} (`git add` fails with "invalid path": '
            f"Windows and macOS read it as `.git`), so its {_files(count)} can never be "
            f"committed; rename it, e.g. `{shell_command('mv', '--', owner, renamed)}`, then "
            f"`{shell_command('git', 'add', '--', renamed)}`",
        )


def check(facts: TreeFacts) -> Iterator[Finding]:
    yield from _variants(facts)
    unseen = facts.unindexed - facts.untracked - facts.ignored
    nested = facts.nested_repos
    git_dirs = set(facts.git_dirs)
    grouped: dict[str, int] = {}
    for path in sorted(unseen):
        if path in facts.nested_repos:
            continue  # the gitlink itself, reported with its contents below
        owner = _owner(path, nested) or _owner(path, git_dirs)
        if owner is None and path.rpartition("/")[2] == ".git":
            owner = path  # a .git file (a worktree or submodule pointer)
        if owner is not None:
            # A nested repository's own .git internals are not files anyone meant to commit.
            inner = owner in nested and path.startswith(f"{owner}/.git/")
            grouped[owner] = grouped.get(owner, 0) + (0 if inner else 1)
            continue
        yield Finding(
            path,
            CODE,
            "on disk but git lists it nowhere (not tracked, untracked or ignored), so it is "
            "never committed; check `git status --ignored` and move the file into the tree",
        )
    for repo in sorted(nested):
        if not any(is_inside(repo, r) for r in facts.config.cache):
            continue
        count = grouped.pop(repo, 0)
        gitlink = facts.index.get(repo)
        kind = "a gitlink (mode 160000) in the index" if gitlink else "a nested git repository"
        yield Finding(
            repo,
            CODE,
            f"{kind}: git records only a commit id for it, never its {_files(count)}; remove its "
            f"`.git` (and `{shell_command('git', 'rm', '--cached', '--', repo)}` if it is a "
            f"gitlink), then `{shell_command('git', 'add', '--', repo)}`",
        )
    for owner, count in sorted(grouped.items()):
        yield Finding(
            owner,
            CODE,
            f"git silently skips anything named `.git` (`git add` exits 0 and adds nothing), so "
            f"its {_files(count)} {'is' if count == 1 else 'are'} never committed; rename it (no "
            "path part may be `.git`)",
        )


RULE = Rule(CODE, "a file git cannot see: under a `.git` directory or a nested repository", check)
