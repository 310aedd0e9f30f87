"""`cachelint run`'s command line: its options, made into one `RunOptions` and handed to the run
pipeline (`cachelint.runner.pipeline`), which holds what a run does."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cachelint.runner.options import RunOptions
from cachelint.runner.reports.publishing import Extras, add_report_options
from cachelint.runner.rerun import Rerun
from cachelint.runner.rerun import add_options as add_rerun_options


def add_parser(
    subparsers: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]
) -> None:
    parser = subparsers.add_parser(
        "run",
        parents=parents,
        help="replay the eval datasets from the committed cache (offline by default)",
        description=(
            "Run every scenario under the datasets root through the target, answering model "
            "calls from the committed cache. Exit 0 when every selected scenario passes, 1 when "
            "one fails or the cache tree was modified, 2 on usage or configuration errors."
        ),
    )
    parser.add_argument(
        "--cache",
        metavar="MODE",
        default=None,
        help="replay (default: offline, a miss fails), auto (record misses), live (re-record "
        "everything), off (live, record nothing)",
    )
    parser.add_argument(
        "--refresh-cache",
        action="store_true",
        help="re-record the selected scenarios (same as --cache live)",
    )
    _add_selection(parser)
    parser.add_argument(
        "--trials", type=int, default=None, help="trials per scenario (overrides the dataset)"
    )
    parser.add_argument(
        "--jobs", "-j", type=int, default=1, help="scenarios run concurrently (default 1)"
    )
    parser.add_argument(
        "--format",
        default="text",
        help="stdout report: text (default), json, junit, markdown (also appended to "
        "$GITHUB_STEP_SUMMARY), github (annotations, and the Markdown summary)",
    )
    parser.add_argument(
        "--execution",
        default=None,
        help="results go to <results>/<EXECUTION>/ "
        "(default: $CACHELINT_EXECUTION, else a timestamp)",
    )
    parser.add_argument(
        "--junit", metavar="PATH", default=None, help="also write a JUnit XML report"
    )
    parser.add_argument("--html", metavar="PATH", default=None, help="also write an HTML report")
    add_report_options(parser)
    add_rerun_options(parser)  # --failed, --resume
    parser.set_defaults(handler=_handle)


def _add_selection(parser: argparse.ArgumentParser) -> None:
    """The options that choose the scenarios and the targets they run against."""
    parser.add_argument("--agent", action="append", default=[], help="only this agent (repeatable)")
    parser.add_argument(
        "--tenant", action="append", default=[], help="only this tenant (repeatable)"
    )
    parser.add_argument(
        "--scenario",
        action="append",
        default=[],
        metavar="GLOB",
        help="only scenarios whose identity (agent/tenant/name) matches GLOB (repeatable)",
    )
    matrix = "each scenario against this target (repeatable: a matrix, the first is primary)"
    parser.add_argument("--target", action="append", default=[], metavar="NAME", help=matrix)


def _handle(ns: argparse.Namespace) -> int:
    # Here, not at the top: the pipeline's imports would load for `cachelint run --help` and
    # every usage error argparse reports (1.7x the CPU of `--help`, 11 paired rounds).
    from cachelint.runner.pipeline import run

    options = RunOptions(
        config_path=Path(ns.config) if ns.config else None,
        mode=ns.cache,
        refresh=ns.refresh_cache,
        agents=tuple(ns.agent),
        tenants=tuple(ns.tenant),
        scenarios=tuple(ns.scenario),
        targets=tuple(ns.target),
        trials=ns.trials,
        jobs=ns.jobs,
        fmt=ns.format,
        execution=ns.execution,
        junit=Path(ns.junit) if ns.junit else None,
        html=Path(ns.html) if ns.html else None,
        shard=ns.shard,
        extras=Extras(save_baseline=ns.save_baseline, baseline=ns.baseline),
        again=Rerun(failed=ns.failed, resume=ns.resume),
    )
    return run(Path.cwd(), options, out=sys.stdout, err=sys.stderr)
