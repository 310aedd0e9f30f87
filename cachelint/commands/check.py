"""`cachelint check`: lint every configured cache root as a whole.

pre-commit passes batches of staged file names (20,001 files arrive as 4 calls), but collisions,
an empty set or an untracked sibling are properties of the whole tree, so PATH arguments are
accepted and ignored: the tree is always listed by cachelint itself.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from cachelint.errors import CachelintError, ExitCode
from cachelint.formats import FindingsFormat, choices, parse_findings_format

if TYPE_CHECKING:
    from cachelint.facts import TreeFacts
    from cachelint.findings import CheckSummary
    from cachelint.rules import Rule


def add_parser(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    parents: list[argparse.ArgumentParser],
) -> None:
    parser = subparsers.add_parser(
        "check",
        parents=parents,
        help="lint the committed cache tree (integrity, portability, stamps)",
        description=(
            "Lint every configured cache root as a whole: files git will not commit, changed or "
            "deleted entries, Windows-hostile paths, case collisions, line-ending conversion, "
            "corrupt entries, an empty tree. Exit 0 clean, 1 findings, 2 usage or config error."
        ),
    )
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="accepted for pre-commit and ignored: the whole tree is always checked",
    )
    parser.add_argument("--format", dest="fmt", choices=choices(FindingsFormat), default="text")
    parser.add_argument(
        "--select",
        action="append",
        default=[],
        metavar="CODE",
        help="run only these rules (repeatable or comma-separated)",
    )
    parser.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="CODE",
        help="skip these rules (repeatable or comma-separated)",
    )
    parser.add_argument("--strict", action="store_true", help="warnings fail too (exit 1)")
    parser.add_argument(
        "--unused",
        action="store_true",
        help="list only the entries no scenario reached in the last full `cachelint run`, and "
        "fail when there are any (`cachelint prune` deletes them)",
    )
    parser.add_argument(
        "--no-cache",
        dest="entry_cache",
        action="store_false",
        help="read every entry from disk instead of reusing those an earlier check parsed and "
        "git reports unchanged (the cache lives in .git/cachelint/)",
    )
    parser.add_argument(
        "--jobs",
        type=_jobs,
        default=None,
        metavar="N",
        help="processes that may read entries at once (default: every core, on large trees)",
    )
    parser.set_defaults(handler=_handle)


def _jobs(value: str) -> int:
    try:
        jobs = int(value)
    except ValueError:
        jobs = 0
    if jobs < 1:
        raise argparse.ArgumentTypeError(
            f"expected a whole number of processes >= 1, got {value!r}"
        )
    return jobs


def split_codes(values: Iterable[str]) -> frozenset[str]:
    return frozenset(c.strip() for v in values for c in v.split(",") if c.strip())


def _handle(ns: argparse.Namespace) -> int:
    from cachelint import clock

    select = split_codes(ns.select)
    if ns.unused:
        from cachelint.commands.prune import unused_options

        select, ns.strict = unused_options(Path.cwd(), Path(ns.config) if ns.config else None)
    return check(
        Path.cwd(),
        config_path=Path(ns.config) if ns.config else None,
        fmt=ns.fmt,
        select=select or None,
        ignore=split_codes(ns.ignore),
        strict=ns.strict,
        now=clock.now(),
        entry_cache=ns.entry_cache,
        jobs=ns.jobs,
        out=sys.stdout,
        err=sys.stderr,
    )


def choose_rules(
    rules: Sequence[Rule],
    *,
    select: Iterable[str] | None,
    ignore: Iterable[str],
    groups: Iterable[str] | None,
) -> list[Rule]:
    """The rules to run; an unknown code is a usage error naming the known ones."""
    known = {r.code for r in rules}
    chosen = set(select or ()) | set(ignore)
    unknown = sorted(chosen - known)
    if unknown:
        raise CachelintError(
            f"unknown rule code {', '.join(unknown)}; known codes: {', '.join(sorted(known))}"
        )
    wanted = set(select) if select else known
    wanted -= set(ignore)
    group_set = set(groups) if groups is not None else None
    return [r for r in rules if r.code in wanted and (group_set is None or r.group in group_set)]


def check(
    start: Path,
    *,
    config_path: Path | None,
    fmt: FindingsFormat | str,
    select: Iterable[str] | None,
    ignore: Iterable[str],
    strict: bool,
    groups: Iterable[str] | None = None,
    now: datetime | None = None,
    entry_cache: bool = True,
    jobs: int | None = None,
    out: TextIO,
    err: TextIO | None = None,
) -> int:
    """Check the cache tree of the repository containing `start`; return the exit code.

    `select` None (or empty) runs every rule; `groups` limits the run to rules of those groups
    (`cachelint stamp --check` passes {"stamp"}). On an `err` that is a terminal, a bar counts
    the entries read when there are many.
    """
    from cachelint import clock
    from cachelint.collect import collect, entry_bars
    from cachelint.config import load
    from cachelint.findings import fails, sort_findings
    from cachelint.gitutil import repo_root
    from cachelint.reporters import render
    from cachelint.rules import all_rules

    chosen_format = parse_findings_format(fmt)
    repo = repo_root(start)
    config = load(repo, config_path)
    rules = choose_rules(all_rules(), select=select, ignore=ignore, groups=groups)
    from cachelint.gcpolicy import no_cyclic_gc

    with no_cyclic_gc():
        facts = collect(
            config,
            now=now if now is not None else clock.now(),
            entry_cache=entry_cache,
            jobs=jobs,
            progress=entry_bars(err),
            rules=frozenset(rule.code for rule in rules),
        )
        findings = sort_findings([f for rule in rules for f in rule.check(facts)])
    from cachelint.credentials import configured_keys

    keys = configured_keys(config)  # masked in every line whatever their shape
    out.write(render(chosen_format, findings, _summary(facts), rules, keys=keys))
    out.flush()
    return int(ExitCode.FINDINGS if fails(findings, strict=strict) else ExitCode.OK)


def _summary(facts: TreeFacts) -> CheckSummary:
    """The summary line's figures: what was checked, and the longest path."""
    from cachelint.findings import CheckSummary

    config = facts.config
    worst, worst_length = facts.worst_path
    notes = []
    if facts.excluded:
        from cachelint.meai import skipped_note

        notes.append(skipped_note(config, facts.excluded))
    return CheckSummary(
        roots=config.cache,
        files=facts.file_count,
        entries=len(facts.entries),
        worst_path=worst,
        worst_length=worst_length,
        max_path=config.max_path,
        notes=tuple(notes),
    )
