"""`cachelint diff --base REF`: review a re-record before it is merged.

Compares the cache committed at REF with the working tree and shows, per scenario whose
recorded answer changed, the request change that caused it, the old and the new answer and the
verdict change (runner/cachediff.py, runner/review.py). Markdown for a pull-request comment goes
to stdout (or `--markdown PATH`), an HTML page to `--html PATH`. It reads; it never writes the
cache.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from cachelint.config import Config, load
from cachelint.display import sanitize
from cachelint.errors import CachelintError, ExitCode
from cachelint.gitutil import repo_root

if TYPE_CHECKING:
    from cachelint.runner.reviewpairs import Verdicts


def add_parser(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    parents: list[argparse.ArgumentParser],
) -> None:
    parser = subparsers.add_parser(
        "diff",
        parents=parents,
        help="review a re-record: the cache at a git ref against the working tree",
        description=(
            "Per scenario whose recorded answer changed since REF: the request change that "
            "caused it, the old and new answer, the verdict change. Markdown (sized for a "
            "pull-request comment) to stdout, HTML with --html."
        ),
    )
    parser.add_argument("--base", required=True, metavar="REF", help="the commit to compare with")
    parser.add_argument(
        "--execution",
        default=None,
        help="the execution whose verdicts are 'now' (default: the latest, if any)",
    )
    parser.add_argument(
        "--before",
        default=None,
        metavar="EXECUTION",
        help="the execution whose verdicts are 'before' (default: a replay at REF)",
    )
    parser.add_argument("--html", metavar="PATH", type=Path, default=None, help="write HTML here")
    parser.add_argument(
        "--markdown", metavar="PATH", type=Path, default=None, help="write the Markdown here"
    )
    parser.set_defaults(handler=_handle)


def _handle(ns: argparse.Namespace) -> int:
    return diff(
        Path.cwd(),
        base=ns.base,
        config_path=Path(ns.config) if ns.config else None,
        execution=ns.execution,
        before=ns.before,
        html=ns.html,
        markdown=ns.markdown,
        out=sys.stdout,
    )


def _verdicts(config: Config, name: str | None, *, latest: bool) -> Verdicts:
    """An execution's verdicts, per scenario and per matrix pair (none: empty)."""
    from cachelint.runner.evidence import verified
    from cachelint.runner.reports.model import execution_directory, list_executions, load_execution
    from cachelint.runner.results import execution_name
    from cachelint.runner.reviewpairs import Verdicts, from_records

    root = config.repo / config.results
    if name is None:
        names = list_executions(root) if latest else []
        if not names:
            return Verdicts()
        name = names[-1]
    execution_name(name)
    # A linked execution is refused as report --execution refuses it: read from elsewhere.
    directory = execution_directory(config.repo, config.results, name)
    summary = dict(verified(directory).document)
    view = load_execution(directory, config.target.model, config.prices, summary)
    return from_records([s.record for s in view.scenarios])


def _inside(config: Config, path: Path | None) -> Path | None:
    """--config as the replay at REF is given it: relative to the repository when inside."""
    if path is None:
        return None
    resolved = path.resolve()
    return resolved.relative_to(config.repo) if resolved.is_relative_to(config.repo) else resolved


def diff(
    start: Path,
    *,
    base: str,
    out: TextIO,
    config_path: Path | None = None,
    execution: str | None = None,
    before: str | None = None,
    html: Path | None = None,
    markdown: Path | None = None,
) -> int:
    from dataclasses import replace

    from cachelint.confine import check_output
    from cachelint.fsutil import atomic_write, atomic_write_chunks
    from cachelint.runner.cachediff import cache_review
    from cachelint.runner.reports.reviewviews import review_markdown, review_page
    from cachelint.runner.reviewpairs import paired

    config = load(repo_root(start), config_path)
    targets = {
        option: check_output(config, option, path)
        for option, path in (("--html", html), ("--markdown", markdown))
        if path is not None
    }
    if base.startswith("-"):
        raise CachelintError(f"diff --base {base}: not a git ref; pass a branch, tag or commit")
    review = cache_review(config.repo, base, list(config.cache))
    now = _verdicts(config, execution, latest=True)
    if before is None:  # the verdicts at REF: its scenarios replayed there (runner/basereplay.py)
        from cachelint.runner.basereplay import replay_at

        recorded = [c.scenario for c in review.changes if c.old is not None]
        at_base = replay_at(config.repo, base, recorded, config=_inside(config, config_path))
        then = at_base.verdicts
        review = replace(review, notes=(*review.notes, *filter(None, [at_base.note])))
    else:
        then = _verdicts(config, before, latest=False)
    review = replace(review, changes=[paired(c, then, now) for c in review.changes])
    page = targets.get("--html")
    text = review_markdown(review, full_page=str(html) if page else None)
    try:
        if page is not None:
            atomic_write_chunks(page, (p.encode("utf-8") for p in review_page(review)))
        if "--markdown" in targets:
            atomic_write(targets["--markdown"], text.encode("utf-8"))
    except OSError as exc:
        raise CachelintError(f"cannot write the review: {exc}") from None
    if "--markdown" in targets:
        out.write(sanitize(str(targets["--markdown"])) + "\n")
    else:
        out.write(text)
    return int(ExitCode.OK)
