"""`cachelint green --from-results EXECUTION`: write the green record from a finished execution.

For sharded CI: each job runs `cachelint run --shard I/N` (a filtered run never writes the record),
`cachelint report --merge` joins their results, and this command writes the record only when the
merged execution covers every scenario in the datasets and every one passed with the cache tree
untouched, the same conditions an unsharded `cachelint run` checks. It acts only on evidence: a
complete execution (its `run.json` written last) whose per-scenario results files agree with it
(`cachelint.runner.evidence`), and never while a recording no full pass has followed left its
marker (`cachelint.usage.recording_refusals`); anything else is one error line, exit 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from cachelint.config import Config, load
from cachelint.display import sanitize, shell_command
from cachelint.errors import CachelintError, ExitCode
from cachelint.gitutil import repo_root


def add_parser(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    parents: list[argparse.ArgumentParser],
) -> None:
    parser = subparsers.add_parser(
        "green",
        parents=parents,
        help="write the green record from a (merged) execution that covers and passes everything",
        description=(
            "Write the green record (`green-record`, default .eval-green.json) from the results "
            "of an execution, typically one merged from shards by `cachelint report --merge`."
        ),
    )
    parser.add_argument(
        "--from-results", metavar="EXECUTION", required=True, help="execution under <results>/"
    )
    parser.set_defaults(handler=_handle)


def _handle(ns: argparse.Namespace) -> int:
    return green(
        Path.cwd(),
        config_path=Path(ns.config) if ns.config else None,
        execution=ns.from_results,
        out=sys.stdout,
        err=sys.stderr,
    )


def green(
    start: Path, *, out: TextIO, err: TextIO, execution: str, config_path: Path | None = None
) -> int:
    from cachelint import clock
    from cachelint.green import record_green_run
    from cachelint.runner.evidence import verified
    from cachelint.runner.results import execution_name
    from cachelint.runner.suite import suite_pairs
    from cachelint.usage import recording_refusals

    config = load(repo_root(start), config_path)
    # A recording no full pass has followed (a killed re-record) changed the tree this record
    # would pin: the marker it left stands until a full pass of its front door finishes.
    standing = recording_refusals(config)
    if standing:
        raise CachelintError("green record not written: " + "; ".join(standing))
    # Evidence, not claims: the run summary and every scenario's results file, read bounded and
    # without following a link, must agree; a verdict that is not true or false is refused.
    name = execution_name(execution)
    _refuse_committed(config, f"{config.results}/{name}".removeprefix("./"))
    summary = verified(config.repo / config.results / name)
    entries = {s.identity: s.passed for s in summary.scenarios}
    pairs = suite_pairs(config)
    # The record pins the primary identities, as `cachelint run` writes it; every matrix pair
    # must be in the execution all the same, since a run of the suite runs them all.
    every = [s.identity for s in pairs if s.origin in ("", s.identity)]
    missing = [s.identity for s in pairs if s.identity not in entries]
    failed = [s for s, ok in entries.items() if not ok]
    problems = []
    if missing:
        noun = "scenario is" if len(missing) == 1 else "scenarios are"
        problems.append(f"{len(missing)} {noun} not in it (first: {missing[0]})")
    if failed:
        problems.append(f"{len(failed)} failed (first: {failed[0]})")
    if summary.mutations:
        problems.append("the cache tree was modified during the run")
    if problems:
        line = f"cachelint: green record not updated: execution {execution}: " + "; ".join(problems)
        err.write(sanitize(line) + "\n")
        return int(ExitCode.FINDINGS)
    path = record_green_run(
        config, execution=execution, mode=summary.mode, scenarios=every, now=clock.now()
    )
    rel = path.relative_to(config.repo).as_posix()
    out.write(sanitize(f"green record: {rel} ({len(every)} scenarios)") + "\n")
    return int(ExitCode.OK)


def _refuse_committed(config: Config, rel: str) -> None:
    """An execution is what a run wrote here, never what a commit brought: a pull request can
    commit a forged one (run and report --merge then write to NAME-2 beside it), so a directory
    git tracks anything under is no evidence."""
    from cachelint.gitutil import run_git, split_z

    listed = run_git(["ls-files", "-z", "--", f":(literal){rel}"], cwd=config.repo)
    tracked = split_z(listed.out)
    if tracked:
        raise CachelintError(
            f"green: execution directory {rel} is tracked by git ({tracked[0]}): a committed "
            "execution is no evidence of a run; run the evals (`cachelint run`) and name the "
            "execution they write, and remove the committed one "
            f"(`{shell_command('git', 'rm', '-r', '--cached', '--', rel)}`)"
        )
