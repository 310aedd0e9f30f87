"""`cachelint report`: render the HTML report from the results root, compare two executions, or
merge the results of `run --shard I/N` jobs into one execution.

It reads only the results root (`run.json` and the per-scenario results documents), so it works
on a CI artifact downloaded to another machine, offline.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from cachelint.config import Config, load
from cachelint.display import sanitize
from cachelint.errors import CachelintError, ExitCode
from cachelint.gitutil import repo_root
from cachelint.runner.reports.publishing import Extras

if TYPE_CHECKING:
    from cachelint.runner.reports.model import RunReport


def add_parser(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    parents: list[argparse.ArgumentParser],
) -> None:
    parser = subparsers.add_parser(
        "report",
        parents=parents,
        help="render the HTML report of an execution, compare two, or merge shards",
        description=(
            "Render <results>/<execution>/report.html from the results files (the latest "
            "execution by default), compare two executions, or merge the results directories "
            "of `run --shard I/N` jobs into one execution."
        ),
    )
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--compare", nargs=2, metavar=("A", "B"), help="B's report, compared with A")
    what.add_argument(
        "--merge",
        nargs="+",
        metavar="DIR",
        type=Path,
        help="merge these execution directories (shards) into one execution",
    )
    parser.add_argument(
        "--execution",
        default=None,
        help="the execution to render (default: the latest), or the merged execution's name",
    )
    parser.add_argument(
        "--output",
        "-o",
        metavar="PATH",
        type=Path,
        default=None,
        help="where to write the HTML (default: in the execution directory)",
    )
    parser.add_argument(
        "--save-baseline",
        metavar="LABEL",
        default=None,
        help="store the execution as baseline LABEL in eval-baselines.json (e.g. merged shards)",
    )
    parser.add_argument(
        "--baseline",
        metavar="LABEL",
        default=None,
        help="compare the execution with baseline LABEL; a regression exits 1",
    )
    parser.set_defaults(handler=_handle)


def _handle(ns: argparse.Namespace) -> int:
    return report(
        Path.cwd(),
        config_path=Path(ns.config) if ns.config else None,
        execution=ns.execution,
        compare=tuple(ns.compare) if ns.compare else None,
        merge=list(ns.merge) if ns.merge else None,
        output=ns.output,
        extras=Extras(save_baseline=ns.save_baseline, baseline=ns.baseline),
        out=sys.stdout,
    )


def _latest(config: Config) -> str:
    from cachelint.runner.reports.model import list_executions

    names = list_executions(config.repo / config.results)
    if not names:
        raise CachelintError(
            f"{config.results}/: no execution to report; run `cachelint run` first"
        )
    return names[-1]


def _execution(
    config: Config, name: str, *, verify: bool = True, extras: Extras | None = None
) -> tuple[dict[str, Any], RunReport]:
    """The run summary and report of execution `name`, read as evidence (`runner.evidence`):
    regular files below it, bounded, agreeing with each other; judged on the budget and the
    baseline with `extras`."""
    from cachelint.runner.evidence import read_summary, verified
    from cachelint.runner.reports.model import (
        NOT_JUDGED,
        RunReport,
        execution_directory,
        read_scenarios,
    )
    from cachelint.runner.reports.publishing import judge

    directory = execution_directory(config.repo, config.results, name)
    summary = dict((verified(directory) if verify else read_summary(directory)).document)
    scenarios = read_scenarios(directory, config.target.model, config.prices, summary)
    verdict = judge(scenarios, config, extras) if extras is not None else NOT_JUDGED
    return summary, RunReport.saved(summary, directory, scenarios, verdict)


def _merge(
    config: Config, sources: Sequence[Path], name: str | None, extras: Extras
) -> tuple[str, dict[str, Any], RunReport]:
    """Merge `sources` into a new execution and read it back; a merge that fails at any point,
    the reading back included, leaves no execution behind."""
    from cachelint import clock
    from cachelint.runner.results import claim_execution, release_execution
    from cachelint.runner.shards import merge
    from cachelint.runner.suite import suite_pairs

    root = config.repo / config.results
    order = [s.identity for s in suite_pairs(config)]
    wanted = name or "merged-" + clock.now().strftime("%Y%m%dT%H%M%SZ")
    claimed = claim_execution(root, wanted)
    try:
        merge([Path(s) for s in sources], root / claimed, order=order)
        # The files were validated as they were copied; the report checks their shape.
        summary, merged = _execution(config, claimed, verify=False, extras=extras)
    except BaseException:
        import shutil

        shutil.rmtree(root / claimed, ignore_errors=True)
        release_execution(root, claimed)
        raise
    return claimed, summary, merged


def _review_comment(path: Path, a: RunReport, b: RunReport, page: Path) -> Path:
    """The re-record review of `a` -> `b` as a pull-request comment, beside the compare page."""
    from cachelint.fsutil import atomic_write
    from cachelint.runner.reports.reviewviews import review_markdown
    from cachelint.runner.review import compare_executions

    text = review_markdown(compare_executions(a, b), full_page=page.name)
    try:
        atomic_write(path, text.encode("utf-8"))
    except OSError as exc:
        raise CachelintError(f"{path}: cannot write the review: {exc.strerror}") from None
    return path


def report(
    start: Path,
    *,
    out: TextIO,
    config_path: Path | None = None,
    execution: str | None = None,
    compare: tuple[str, str] | None = None,
    merge: Sequence[Path] | None = None,
    output: Path | None = None,
    extras: Extras | None = None,
) -> int:

    from cachelint.confine import check_output
    from cachelint.runner import baselines
    from cachelint.runner.reports.publishing import check_extras, write_html_page
    from cachelint.runner.results import execution_name

    config = load(repo_root(start), config_path)
    for name in (*(compare or ()), execution):
        if name is not None:
            execution_name(name)  # each is a directory right under the results root
    extras = extras or Extras()
    check_extras(config.repo, extras)
    if output is not None:
        output = check_output(config, "--output", output)
    root = config.repo / config.results
    if merge:
        name, summary, judged = _merge(config, merge, execution, extras)
        out.write(sanitize(f"merged {len(merge)} directories into {config.results}/{name}/") + "\n")
    else:
        name = compare[1] if compare else execution or _latest(config)
        summary, judged = _execution(config, name, extras=extras)
    other = _execution(config, compare[0])[1] if compare else None
    if extras.save_baseline is not None:
        baselines.save(config.repo, extras.save_baseline, judged)
    out.writelines(f"{sanitize(n)}\n" for n in judged.notes)
    out.writelines(f"FAIL  {sanitize(f)}\n" for f in judged.failures)
    default = root / name / (f"compare-{compare[0]}.html" if compare else "report.html")
    target = output or default
    write_html_page(target, judged, config, summary, compare=other)
    if compare and other is not None:  # the page stays the last line
        comment = _review_comment(root / name / f"compare-{compare[0]}.md", other, judged, target)
        out.write(f"{sanitize(str(comment))}\n")
    out.write(f"{sanitize(str(target))}\n")
    return int(ExitCode.OK if judged.passed else ExitCode.FINDINGS)
