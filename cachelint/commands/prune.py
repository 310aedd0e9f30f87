"""`cachelint prune`: delete the cache entries no scenario reached in the last full run.

A dry run by default: it lists what it would delete. `--yes` deletes, each entry directory renamed
aside first (one atomic step, so an interrupted prune never leaves half an entry that replay would
read) and then removed, with the scenario directories it leaves empty. It refuses when the last
run cannot vouch for the whole suite (filtered, failed, or no run at all). Afterwards the stamp
and the green record describe a tree that changed: re-stamp, re-run and commit.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from cachelint.display import sanitize, shell_command
from cachelint.errors import CachelintError, ExitCode
from cachelint.fsutil import TEMP_PREFIX

if TYPE_CHECKING:
    from cachelint.config import Config
    from cachelint.usage import Usage

UNUSED_CODE = "eval-cache-unused"


def add_parser(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    parents: list[argparse.ArgumentParser],
) -> None:
    parser = subparsers.add_parser(
        "prune",
        parents=parents,
        help="delete the cache entries no scenario reached in the last full run",
        description=(
            "List (default) or delete (--yes) the entries of the cache root that the last full, "
            "passing `cachelint run` did not reach. Exit 0, or 2 when there is no such run."
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


def _last_full_run(repo: Path, config_path: Path | None) -> tuple[Config, Usage]:
    from cachelint.config import load
    from cachelint.usage import FILE, read_usage

    config = load(repo, config_path)
    usage = read_usage(config)
    if usage is None:
        raise CachelintError(
            f"{config.results}/{FILE} not found: no `cachelint run` has recorded which entries "
            "it reached; run `cachelint run` (every scenario) first"
        )
    refusal = usage.refusal(config.results)
    if refusal is not None:
        raise CachelintError(refusal)
    return config, usage


def unused_options(start: Path, config_path: Path | None) -> tuple[frozenset[str], bool]:
    """`check --unused`: only the unused rule, failing on its findings; a usage error when the
    last run cannot tell which entries are unused."""
    from cachelint.gitutil import repo_root

    _last_full_run(repo_root(start), config_path)
    return frozenset({UNUSED_CODE}), True


def _remove(directory: Path, stop: Path) -> None:
    aside = directory.with_name(f"{TEMP_PREFIX}prune-{directory.name}")
    os.replace(directory, aside)
    shutil.rmtree(aside)
    parent = directory.parent
    while parent != stop and parent.is_dir() and not any(parent.iterdir()):
        parent.rmdir()
        parent = parent.parent


def prune(
    start: Path, *, config_path: Path | None, yes: bool, out: TextIO, err: TextIO | None = None
) -> int:
    from cachelint import clock
    from cachelint.collect import collect, entry_bars
    from cachelint.gitutil import repo_root
    from cachelint.store import CACHE_DIR
    from cachelint.usage import unused_entries

    repo = repo_root(start)
    config, usage = _last_full_run(repo, config_path)
    facts = collect(config, now=clock.now(), progress=entry_bars(err))
    unused = unused_entries(facts.entries, usage)
    run = f"execution {usage.execution}"
    if not unused:
        out.write(
            sanitize(f"cachelint prune: every entry was reached by the last full run ({run})")
            + "\n"
        )
        return int(ExitCode.OK)
    verb = "deleted" if yes else "would delete"
    for entry in unused:
        if yes:
            try:
                _remove(repo / entry.directory, repo / usage.root / CACHE_DIR)
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
                f"cachelint prune: {count} not reached by the last full run ({run}); "
                "run `cachelint prune --yes` to delete them"
            )
            + "\n"
        )
        return int(ExitCode.OK)
    add = shell_command("git", "add", "-A", "--", usage.root, config.green_record)
    out.write(
        sanitize(
            f"cachelint prune: {verb} {count}; now re-stamp and commit: `cachelint stamp && "
            f"cachelint run && {add}` then `git commit`"
        )
        + "\n"
    )
    return int(ExitCode.OK)
