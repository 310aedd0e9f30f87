"""`cachelint stamp`: record, at each cache root, the package versions the tree was recorded under.

Run it right after a re-record, then replay through every front door (it prints which) and
commit: the order of docs/workflow.md. It refuses (exit 2) on an empty tree, because a stamp over no
entries would vouch for nothing, and when a family package has no single exact pin, because then
there is no version to record. `cachelint stamp --check` runs only the stamp rules, like
`cachelint check` restricted to them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from cachelint.display import sanitize
from cachelint.formats import FindingsFormat, choices

if TYPE_CHECKING:
    from cachelint.config import Config
    from cachelint.stamp import Stamp
    from cachelint.store import Entry

STAMP_GROUP = frozenset({"stamp"})


def add_parser(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    parents: list[argparse.ArgumentParser],
) -> None:
    parser = subparsers.add_parser(
        "stamp",
        parents=parents,
        help="write the version stamp at each cache root (after a re-record)",
        description=(
            "Write <cache root>/<stamp> recording the cache format, the exact versions of the "
            "configured package family (from the pin files), the date of those pins and the TTL. "
            "With --check, run only the stamp and TTL rules instead (exit codes as `cachelint "
            "check`)."
        ),
    )
    parser.add_argument(
        "--check", action="store_true", help="check the stamps and TTLs instead of writing"
    )
    parser.add_argument(
        "--format",
        dest="fmt",
        choices=choices(FindingsFormat),
        default="text",
        help="with --check: the findings format, as check",
    )
    parser.add_argument(
        "--strict", action="store_true", help="with --check: warnings fail too (exit 1)"
    )
    parser.set_defaults(handler=_handle)


def _handle(ns: argparse.Namespace) -> int:
    from cachelint import clock

    config_path = Path(ns.config) if ns.config else None
    if ns.check:
        from cachelint.commands.check import check

        return check(
            Path.cwd(),
            config_path=config_path,
            fmt=ns.fmt,
            select=None,
            ignore=(),
            strict=ns.strict,
            groups=STAMP_GROUP,
            now=clock.now(),
            out=sys.stdout,
            err=sys.stderr,
        )
    return stamp(
        Path.cwd(), config_path=config_path, now=clock.now(), out=sys.stdout, err=sys.stderr
    )


def stamp(
    start: Path, *, config_path: Path | None, now: datetime, out: TextIO, err: TextIO | None = None
) -> int:
    """Write the stamp at every cache root that has entries; return the exit code. On an `err`
    that is a terminal, a bar counts the entries read when there are many (after a re-record)."""
    from cachelint.collect import collect, entry_bars
    from cachelint.config import load
    from cachelint.errors import CachelintError
    from cachelint.gitutil import repo_root
    from cachelint.stamp import entries_by_root, entry_count, seal, ttl_days, write_stamp

    repo = repo_root(start)
    config = load(repo, config_path)
    facts = collect(config, now=now, progress=entry_bars(err))
    by_root = entries_by_root(facts.roots, facts.entries)
    from cachelint.sqlite_cache import stamp_seals

    databases = stamp_seals(facts)  # CachelintError for a cassette that cannot be sealed
    filled = [root for root, entries in by_root.items() if entries or databases.get(root)]
    if not filled:
        raise CachelintError(_nothing_to_stamp(config))
    _refuse_corrupt(facts.corrupt)
    base, versions = _shared(config, now)
    for root in filled:
        rel = config.stamp_path(root)
        found = by_root[root]
        shortest, longest = ttl_days(found, config.ttl_days)
        new = replace(
            base,
            ttl_days=shortest,
            ttl_days_longest=longest,
            entries=len(found),
            seal=seal(root, found),
            databases=databases.get(root, {}),
        )
        changed = write_stamp(repo / rel, new)
        verb = "wrote" if changed else "unchanged"
        line = (
            f"{verb} {rel}: {entry_count(len(found))}, pinnedAt "
            f"{new.pinned_at.isoformat()}, ttlDays {new.ttl_days}, {versions}"
        )
        out.write(sanitize(line) + "\n")
    skipped = facts.missing_roots + tuple(r for r in by_root if r not in filled)
    out.write("".join(sanitize(f"skipped {r}: no entries") + "\n" for r in skipped))
    out.write(sanitize(next_step(config, facts.entries)) + "\n")
    return 0


def _refuse_corrupt(corrupt: list[tuple[str, str]]) -> None:
    """A tree with corrupt entry files is not sealed: the seal would bless them."""
    from cachelint.errors import CachelintError

    if corrupt:
        path, reason = sorted(corrupt)[0]
        raise CachelintError(
            f"{path}: {reason}; cannot seal a tree with {len(corrupt)} corrupt entry "
            f"{'file' if len(corrupt) == 1 else 'files'}: run `cachelint check`, fix or "
            "re-record them, then run `cachelint stamp`"
        )


def _shared(config: Config, now: datetime) -> tuple[Stamp, str]:
    """What every root's stamp holds alike (the pins, the TTL, the normalisers' and redactions'
    digests), and the pinned versions as the report names them."""
    from cachelint import pins, redact, rewrites
    from cachelint.errors import CachelintError
    from cachelint.stamp import Stamp, pinned_at

    repo = config.repo
    resolution = pins.current(config)
    if resolution.problems:
        raise CachelintError("cannot stamp: " + "; ".join(p.message for p in resolution.problems))
    chosen = sorted(resolution.pinned.values(), key=lambda r: r.name.casefold())
    base = Stamp(
        pinned_at=pinned_at(repo, list(resolution.files), now),
        ttl_days=config.ttl_days,
        packages={r.name: r.version for r in chosen},
        pin_files={r.name: r.source for r in chosen},
        projects={
            project: {r.name: r.version for r in found.values()}
            for project, found in resolution.by_project.items()
        },
        normalisers=rewrites.digest(config.normalise),  # a normaliser change re-keys entries
        redactions=redact.digest(config.redact),  # and so does a redaction rule change
    )
    versions = ", ".join(
        [f"{r.name} {r.version} ({r.source})" for r in chosen]
        + [
            f"{r.name} {r.version} ({project})"
            for project, found in sorted(resolution.by_project.items())
            for r in found.values()
        ]
    )
    return base, versions


def next_step(config: Config, entries: Sequence[Entry]) -> str:
    """What follows a stamp in the one order of a re-record (docs/workflow.md): record, stamp,
    replay through every front door that owns entries, commit. The stamp is part of the cache
    tree the green record pins, so a replay before it leaves the record stale."""
    from cachelint.config import Layout
    from cachelint.frontdoors import FrontDoor, dataset_probe, owner, scenario_of

    root = config.cache[0]
    is_dataset = dataset_probe(config)
    present = set()
    for entry in entries:
        scenario = scenario_of(entry.directory, root) if entry.layout is Layout.CACHELINT else None
        if scenario is not None:
            present.add(owner(scenario, is_dataset))
    replays = " and ".join(f"`{d.command}`" for d in FrontDoor if d in present) or "your evals"
    return (
        "next: replay through every front door, so the green record and the entry lists "
        f"describe the stamped tree: {replays}; then commit (docs/workflow.md)"
    )


def _nothing_to_stamp(config: Config) -> str:
    """An empty tree's error, with the recording command of the tool that writes it."""
    from cachelint.meai import EMPTY_ADVICE, meai_roots

    where = ", ".join(config.cache)
    meai = meai_roots(config)
    if meai:
        return f"{where}: no cache entries to stamp; " + EMPTY_ADVICE.format(root=meai[0])
    return (
        f"{where}: no cache entries to stamp; record the tree first (`cachelint run "
        "--refresh-cache`), then run `cachelint stamp`"
    )
