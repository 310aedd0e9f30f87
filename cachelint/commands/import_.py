"""`cachelint import`: bring answers another tool recorded into the committed cache, so a team
moving to cachelint does not pay to re-record them.

`cachelint import vcrpy PATH...` reads vcrpy / pytest-recording cassettes (files, or directories
of `.yaml`, `.yml` and `.json` cassettes); `cachelint import promptfoo --cache cache.json
--output out.json` pairs promptfoo's cache with the eval's output file. Each recorded call is keyed
as the cache endpoint keys the same request during `cachelint run`, and written through the store's
atomic write path; what cannot be imported is listed with the reason, and nothing is written when
a file cannot be read at all. Exit 0 when every recorded call was imported, 1 when some were not,
2 on bad input. See docs/import.md.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from cachelint.config import Config
    from cachelint.importers import Parsed
    from cachelint.importers.apply import ScenarioMap

_CASSETTE_SUFFIXES = (".yaml", ".yml", ".json")
_MAX_CASSETTE_BYTES = 512 * 1024 * 1024


def add_parser(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    parents: list[argparse.ArgumentParser],
) -> None:
    parser = subparsers.add_parser(
        "import",
        parents=parents,
        help="import answers recorded by vcrpy or promptfoo into the cache",
        description=(
            "Key each call another tool recorded as `cachelint run` will look for it and write "
            "it into the cache; list what could not be imported and why. See docs/import.md."
        ),
    )
    tools = parser.add_subparsers(dest="tool", metavar="TOOL", required=True)
    vcrpy = tools.add_parser("vcrpy", parents=parents, help="vcrpy / pytest-recording cassettes")
    vcrpy.add_argument("paths", nargs="+", metavar="PATH", help="cassette files or directories")
    _common(vcrpy)
    vcrpy.set_defaults(handler=_handle_vcrpy)
    from cachelint.importers.promptfoo_cache import add_arguments

    promptfoo = tools.add_parser(
        "promptfoo", parents=parents, help="promptfoo's cache.json with its eval's out.json"
    )
    add_arguments(promptfoo)
    _common(promptfoo)
    promptfoo.set_defaults(handler=_handle_promptfoo)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--scenario", metavar="AGENT/TENANT/NAME", help="the scenario every call belongs to"
    )
    parser.add_argument(
        "--map", metavar="FILE", help="a TOML or JSON file mapping patterns to scenarios"
    )
    parser.add_argument(
        "--target",
        metavar="NAME",
        help="the target whose provider, model and params key the calls (default: the one "
        "`cachelint run` picks for the scenario)",
    )
    parser.add_argument(
        "--trial", type=int, default=0, help="the trial the calls are keyed for (default 0)"
    )
    parser.add_argument("--dry-run", action="store_true", help="report, write nothing")
    parser.add_argument(
        "--overwrite", action="store_true", help="replace an entry that holds another answer"
    )


def _handle_vcrpy(ns: argparse.Namespace) -> int:
    return import_vcrpy(
        Path.cwd(),
        [Path(p) for p in ns.paths],
        config_path=Path(ns.config) if ns.config else None,
        scenario=ns.scenario,
        map_file=Path(ns.map) if ns.map else None,
        target=ns.target,
        trial=ns.trial,
        dry_run=ns.dry_run,
        overwrite=ns.overwrite,
        out=sys.stdout,
    )


def _handle_promptfoo(ns: argparse.Namespace) -> int:
    from cachelint.importers.promptfoo_cache import import_promptfoo

    return import_promptfoo(ns, out=sys.stdout)


def cassette_files(repo: Path, paths: list[Path], skip: list[Path]) -> list[tuple[Path, str]]:
    """Each cassette named, directories walked (sorted, links not followed; `.git` and the
    `skip` directories, the cache roots, left out), with the name it is matched and shown by:
    its path relative to the repository, forward slashes."""
    found: list[tuple[Path, str]] = []
    skipped = {p.resolve() for p in skip}
    for given in paths:
        path = given if given.is_absolute() else Path.cwd() / given
        if path.is_dir() and not path.is_symlink():
            for dirpath, dirnames, filenames in os.walk(path):
                dirnames[:] = sorted(
                    d
                    for d in dirnames
                    if d != ".git" and (Path(dirpath) / d).resolve() not in skipped
                )
                for name in sorted(filenames):
                    if name.endswith(_CASSETTE_SUFFIXES):
                        file = Path(dirpath) / name
                        found.append((file, _shown(repo, file)))
        elif path.is_file():
            found.append((path, _shown(repo, path)))
        else:
            from cachelint.errors import CachelintError

            raise CachelintError(f"{given}: no such cassette file or directory")
    return found


def _shown(repo: Path, path: Path) -> str:
    try:
        return path.resolve().relative_to(repo.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def import_vcrpy(
    start: Path,
    paths: list[Path],
    *,
    config_path: Path | None,
    scenario: str | None,
    map_file: Path | None,
    target: str | None,
    trial: int,
    dry_run: bool,
    overwrite: bool,
    out: TextIO,
) -> int:
    """Import the cassettes at `paths`; return the exit code."""
    from cachelint import clock
    from cachelint.config import load
    from cachelint.display import sanitize_block
    from cachelint.gitutil import repo_root
    from cachelint.importers.apply import render, scenario_map, target_resolver, write_plan
    from cachelint.importers.keying import plan

    repo = repo_root(start)
    config = load(repo, config_path)
    mapping = scenario_map(scenario, map_file)
    files = cassette_files(repo, paths, config.cache_roots())
    every = _read_cassettes(files, mapping, config)  # every file read before anything is written
    planned, refused = plan(
        every.calls, config=config, target_of=target_resolver(config, target), trial=trial
    )
    written = write_plan(config, planned, now=clock.now(), overwrite=overwrite, dry_run=dry_run)
    skipped = [*every.skipped, *refused]
    what = f"{len(files)} cassette{'s' if len(files) != 1 else ''}"
    report = render(
        what=what,
        written=written,
        skipped=skipped,
        warnings=every.warnings,
        config=config,
        dry_run=dry_run,
    )
    out.write(sanitize_block(report))
    return 1 if skipped or written.skipped else 0


def _read_cassettes(files: list[tuple[Path, str]], mapping: ScenarioMap, config: Config) -> Parsed:
    """The calls of every cassette, each under the scenario `mapping` gives its file."""
    from cachelint.errors import CachelintError
    from cachelint.fsutil import read_regular
    from cachelint.importers import Parsed
    from cachelint.importers.vcrpy_cassette import read_cassette

    every = Parsed()
    for path, shown in files:
        chosen = mapping.scenario_of(shown)
        if chosen is None:
            raise CachelintError(
                f"{shown}: no scenario for this cassette in {mapping.source}; add a pattern "
                "for it, or pass --scenario"
            )
        try:
            raw = read_regular(path, _MAX_CASSETTE_BYTES)
        except OSError as exc:
            raise CachelintError(f"{shown}: cannot read the cassette ({exc})") from None
        parsed = read_cassette(raw, shown, chosen, config.max_entry_bytes)
        every.calls += parsed.calls
        every.skipped += parsed.skipped
        every.warnings += parsed.warnings
    return every
