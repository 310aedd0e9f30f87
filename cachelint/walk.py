"""One scandir pass over the cache roots: every file, link and special file under them, the
directories holding entry files, and the directories that could not be listed."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from cachelint.config import Config
from cachelint.fsutil import TEMP_PREFIX
from cachelint.store import ENTRY_FILES

_Matcher = Callable[[str], bool]


@dataclass
class Walk:
    """What one scandir pass over the roots found."""

    files: list[str] = field(default_factory=list)  # files, symlinks and special files
    symlinks: set[str] = field(default_factory=set)
    special: set[str] = field(default_factory=set)
    git_dirs: list[str] = field(default_factory=list)
    names: set[str] = field(default_factory=set)
    # Each directory holding entry or temp files, with their names (links left out).
    holders: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    walked: list[str] = field(default_factory=list)  # every path, before `exclude`
    unreadable: dict[str, str] = field(default_factory=dict)  # directory -> why not listed
    drop: _Matcher | None = None  # what `exclude` leaves out
    excluded: int = 0


def opening_base(repo: Path) -> str:
    """`repo` as the path to open the files under it by: relative to the working directory when
    that has fewer parts (usually "."), since the kernel resolves a path part by part."""
    absolute = str(repo)
    try:
        relative = os.path.relpath(absolute)
    except (OSError, ValueError):  # no working directory any more; another drive on Windows
        return absolute
    return relative if relative.count(os.sep) < absolute.count(os.sep) else absolute


def walk_roots(config: Config, base: str, roots: list[str]) -> Walk:
    """Walk every root, then leave out what `exclude` names (`walk.walked` keeps all paths)."""
    from cachelint.meai import skip_matcher  # `exclude`, and the results in a MEAI root

    walk = Walk()
    for root in config.cache:
        walk.names.update(root.split("/"))
        if os.path.islink(config.repo / root):
            walk.symlinks.add(root)
            walk.files.append(root)
    for root in roots:
        _walk(base, root, walk)
    walk.walked = walk.files
    walk.drop = drop = skip_matcher(config)
    if drop is not None:
        walk.files = [p for p in walk.walked if not drop(p)]
        walk.excluded = len(walk.walked) - len(walk.files)
        walk.symlinks = {p for p in walk.symlinks if not drop(p)}
        walk.special = {p for p in walk.special if not drop(p)}
        walk.holders = [(d, tuple(n for n in ns if not drop(f"{d}/{n}"))) for d, ns in walk.holders]
    return walk


def _walk(base: str, root: str, walk: Walk) -> None:
    """One scandir pass: symlinks are recorded, never followed (a link can point out of the tree
    or loop); `.git` directories are noted because git silently skips them; special files are
    noted and never opened."""
    held_alike: dict[tuple[str, ...], tuple[str, ...]] = {}  # one tuple for the usual pair
    stack = [root]
    # Bound once: the loop body runs for every file of a large tree.
    add_file, add_name, add_holder = walk.files.append, walk.names.add, walk.holders.append
    while stack:
        rel = stack.pop()
        try:
            it = os.scandir(f"{base}/{rel}")
        except FileNotFoundError:  # removed since its parent was listed
            continue
        except OSError as exc:  # its files exist for git: never reported as deleted
            walk.unreadable[rel] = exc.strerror or type(exc).__name__
            continue
        with it:
            prefix = rel + "/"
            held: list[str] = []
            for de in it:
                name = de.name
                # DirEntry answers from d_type without a stat, and nothing follows a link.
                if de.is_file(follow_symlinks=False):
                    add_file(prefix + name)
                    if name in _HELD or name.startswith(TEMP_PREFIX):
                        held.append(name)  # into `names` with its directory's names, below
                    else:
                        add_name(name)
                    continue
                path = prefix + name
                add_name(name)
                if de.is_dir(follow_symlinks=False):
                    stack.append(path)
                    if name == ".git":
                        walk.git_dirs.append(path)
                    continue
                add_file(path)
                if de.is_symlink():
                    walk.symlinks.add(path)
                    continue
                walk.special.add(path)
                if name in _HELD:  # read_entry opens it without blocking and reports it
                    held.append(name)
            if held:
                names = tuple(held)
                add_holder((rel, held_alike.setdefault(names, names)))
    for names in held_alike:
        walk.names.update(names)


_HELD = frozenset(ENTRY_FILES)
