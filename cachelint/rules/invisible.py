"""eval-cache-invisible: a file git cannot see at all, so no command will ever commit it.

Git skips any directory named `.git` without a word (`git add` exits 0) and treats a nested
repository as one gitlink (mode 160000), never tracking the files inside. Such files are on disk
but in none of the index, the untracked list and the ignored list. One finding per nested
repository and per `.git` directory (not per file inside), so a stray clone does not print
thousands of lines.
"""

from __future__ import annotations

from collections.abc import Iterator

from cachelint.display import shell_command
from cachelint.findings import Finding
from cachelint.paths import is_inside
from cachelint.rules import Rule
from cachelint.tree import TreeFacts

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


def check(facts: TreeFacts) -> Iterator[Finding]:
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
