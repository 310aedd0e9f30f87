"""`cachelint prune`: delete the cache entries their owner's last full pass did not reach.

A dry run by default: it lists what it would delete. `--yes` deletes, each entry directory renamed
aside first (one atomic step, so an interrupted prune never leaves half an entry that replay would
read) and then removed, with the scenario directories it leaves empty. Every entry belongs to a
front door (`cachelint run` or the pytest plugin, `cachelint.frontdoors`); prune refuses (exit 2,
naming the command to run in full) while a front door that owns entries has no usable last full
pass: none, a filtered or failing one, one its own results do not bear out, one older than an
entry, or an interrupted pytest recording (`cachelint.usage`). Deletion walks from the repository
down without following a link, at the moment it deletes, so a directory swapped for a link never
leads it out of the cache. Afterwards the stamp and the green record describe a tree that
changed: re-stamp, replay through every front door, and commit.
"""

from __future__ import annotations

import argparse
import errno
import os
import shutil
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from cachelint.display import sanitize, shell_command
from cachelint.errors import CachelintError, ExitCode
from cachelint.frontdoors import FrontDoor
from cachelint.fsutil import TEMP_PREFIX

if TYPE_CHECKING:
    from cachelint.config import Config
    from cachelint.usage import Judgement

UNUSED_CODE = "eval-cache-unused"
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_BY_FD = bool(_NOFOLLOW) and os.scandir in os.supports_fd


def add_parser(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    parents: list[argparse.ArgumentParser],
) -> None:
    parser = subparsers.add_parser(
        "prune",
        parents=parents,
        help="delete the cache entries their owner's last full pass did not reach",
        description=(
            "List (default) or delete (--yes) the entries of the cache root that their owner's "
            "last full, passing pass (`cachelint run` for the datasets' entries, `pytest -m "
            "eval` for the pytest plugin's) did not reach. Exit 0, or 2 when a front door that "
            "owns entries has no such pass."
        ),
    )
    parser.add_argument("--yes", action="store_true", help="delete them (default: a dry run)")
    parser.set_defaults(handler=_handle)


def _handle(ns: argparse.Namespace) -> int:
    return prune(
        Path.cwd(),
        config_path=Path(ns.config) if ns.config else None,
        yes=ns.yes,
        out=sys.stdout,
        err=sys.stderr,
    )


def _judged(
    repo: Path, config_path: Path | None, err: TextIO | None, *, refuse_links: bool = False
) -> tuple[Config, Judgement]:
    """The tree's entries judged per owner; a usage error when an owner cannot vouch, or (with
    `refuse_links`, for prune) when the cache root holds a link: a directory swapped for one
    hides the entries the record vouches for, and leads outside."""
    from cachelint import clock
    from cachelint.collect import collect, entry_bars
    from cachelint.config import load
    from cachelint.usage import judge

    config = load(repo, config_path)
    facts = collect(config, now=clock.now(), progress=entry_bars(err))
    links = sorted(p for p in facts.symlinks if p.startswith(f"{config.cache[0]}/"))
    if refuse_links and links:
        restore = shell_command("git", "checkout", "--", links[0])
        raise CachelintError(
            f"{links[0]}: a symbolic link in the cache tree; prune never deletes through a link "
            f"and deletes nothing while the tree holds one: restore what it replaced "
            f"(`{restore}`) and run `cachelint prune` again"
        )
    judgement = judge(config, facts.entries)
    if judgement.refusals:
        raise CachelintError(
            "; ".join(judgement.refusals[d] for d in FrontDoor if d in judgement.refusals)
        )
    return config, judgement


def unused_options(start: Path, config_path: Path | None) -> tuple[frozenset[str], bool]:
    """`check --unused`: only the unused rule, failing on its findings; a usage error when a
    front door that owns entries cannot tell which of them are unused."""
    from cachelint.gitutil import repo_root

    _judged(repo_root(start), config_path, None)
    return frozenset({UNUSED_CODE}), True


def _refuse_link(directory: str, part: str) -> CachelintError:
    return CachelintError(
        f"{directory}: {part} is not a directory of the repository (a symbolic link or other "
        "file in its place); prune never deletes through a link, nothing more was deleted"
    )


def _remove(repo: Path, directory: str, keep: int) -> None:
    """Delete the entry directory `repo/directory` and then its parents that it leaves empty,
    down to the first `keep` components (the `<root>/cache` directory stays). Each directory
    from the repository down is opened without following links, and the entry is renamed aside
    and removed through its open parent, so what is deleted is inside the repository at the
    moment of deletion, whatever was swapped in since the tree was read."""
    parts = directory.split("/")
    if not _BY_FD:  # no O_NOFOLLOW (Windows): refuse links as seen now, then delete by path
        from cachelint.confine import first_link

        link = first_link(repo, directory)
        if link is not None:
            raise _refuse_link(directory, link)
        moved = (repo / directory).with_name(f"{TEMP_PREFIX}prune-{parts[-1]}")
        os.replace(repo / directory, moved)
        shutil.rmtree(moved)
        return
    fds = [os.open(repo, _DIR_FLAGS)]
    try:
        for i, part in enumerate(parts[:-1]):
            try:
                fds.append(os.open(part, _DIR_FLAGS | _NOFOLLOW, dir_fd=fds[-1]))
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise _refuse_link(directory, "/".join(parts[: i + 1])) from None
                raise
        parent, name = fds[-1], parts[-1]
        if not stat.S_ISDIR(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode):
            raise _refuse_link(directory, directory)
        aside = f"{TEMP_PREFIX}prune-{name}"
        os.rename(name, aside, src_dir_fd=parent, dst_dir_fd=parent)
        _remove_at(aside, parent)
        for depth in range(len(parts) - 2, keep - 1, -1):
            try:
                os.rmdir(parts[depth], dir_fd=fds[depth])
            except OSError:
                break  # not empty: its other entries stay, and so do its parents
    finally:
        for fd in fds:
            os.close(fd)


def _remove_at(name: str, dir_fd: int) -> None:
    """Remove the directory `name` of the open directory `dir_fd` and everything in it, by
    descriptor, never following a link (a link inside is removed, not its target)."""
    fd = os.open(name, _DIR_FLAGS | _NOFOLLOW, dir_fd=dir_fd)
    try:
        with os.scandir(fd) as listing:
            children = [(c.name, c.is_dir(follow_symlinks=False)) for c in listing]
        for child, is_dir in children:
            if is_dir:
                _remove_at(child, fd)
            else:
                os.unlink(child, dir_fd=fd)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=dir_fd)


def prune(
    start: Path, *, config_path: Path | None, yes: bool, out: TextIO, err: TextIO | None = None
) -> int:
    from cachelint.gitutil import repo_root

    repo = repo_root(start)
    config, judgement = _judged(repo, config_path, err, refuse_links=True)
    unused = judgement.unused
    passes = judgement.executions() or "no entries"
    if not unused:
        out.write(
            sanitize(f"cachelint prune: every entry was reached by the last full run ({passes})")
            + "\n"
        )
        return int(ExitCode.OK)
    verb = "deleted" if yes else "would delete"
    keep = len(config.cache[0].split("/")) + 1
    for entry in unused:
        if yes:
            try:
                _remove(repo, entry.directory, keep)
            except OSError as exc:
                raise CachelintError(
                    f"{entry.directory}: cannot delete ({exc.strerror or exc}); nothing after it "
                    "was deleted, fix the permissions and run `cachelint prune --yes` again"
                ) from None
        out.write(sanitize(f"{verb} {entry.directory}") + "\n")
    count = f"{len(unused)} unused entr{'y' if len(unused) == 1 else 'ies'}"
    if not yes:
        out.write(
            sanitize(
                f"cachelint prune: {count} not reached by the last full run ({passes}); "
                "run `cachelint prune --yes` to delete them"
            )
            + "\n"
        )
        return int(ExitCode.OK)
    add = shell_command("git", "add", "-A", "--", config.cache[0], config.green_record)
    replays = " && ".join(d.command for d in FrontDoor if d in judgement.present)
    out.write(
        sanitize(
            f"cachelint prune: {verb} {count}; now re-stamp, replay and commit: `cachelint stamp "
            f"&& {replays} && {add}` then `git commit`"
        )
        + "\n"
    )
    return int(ExitCode.OK)
