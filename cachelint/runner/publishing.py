"""What `cachelint run` publishes beyond the text/JSON/JUnit report: the HTML page, the pull-request
formats and `$GITHUB_STEP_SUMMARY`, the budget and the baselines.

Called once from `commands/run.py::publish`; the renderers it calls are pure, the I/O is here.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cachelint.config import Config
from cachelint.display import json_dumps
from cachelint.errors import CachelintError
from cachelint.forked import Forked
from cachelint.fsutil import atomic_write_chunks
from cachelint.runner.views import RUN_FILE, ExecutionView, scenario_view

if TYPE_CHECKING:
    from cachelint.runner.htmlreport import TrendRun

PR_FORMATS = ("markdown", "github")
STEP_SUMMARY = "GITHUB_STEP_SUMMARY"
TREND_FILE = "trend.json"  # beside run.json: what the next runs' trend lines read


@dataclass(frozen=True)
class Extras:
    """The run options this module serves."""

    save_baseline: str | None = None
    baseline: str | None = None


def add_report_options(parser: Any) -> None:
    parser.add_argument(
        "--save-baseline",
        metavar="LABEL",
        default=None,
        help="store this run's verdicts, judge scores, tokens and cost as LABEL in "
        "eval-baselines.json",
    )
    parser.add_argument(
        "--baseline",
        metavar="LABEL",
        default=None,
        help="compare with baseline LABEL; a regressed scenario fails the run (exit 1)",
    )
    parser.add_argument(
        "--shard",
        metavar="I/N",
        default=None,
        help="run only shard I of N (by a hash of each scenario identity); merge the shards "
        "with `cachelint report --merge`",
    )


def check_extras(repo: Path, extras: Extras | None) -> None:
    """Fail before the run, not after it, on a bad label or a baseline that does not exist."""
    from cachelint.runner import baselines

    if extras is None:
        return
    if extras.save_baseline is not None:
        baselines.check_label(extras.save_baseline, "--save-baseline")
    if extras.baseline is not None:
        baselines.load(repo, baselines.check_label(extras.baseline, "--baseline"))


def view_of(
    report: Any,
    config: Config,
    started: str | None,
    written: Mapping[str, Mapping[str, Any]] | None = None,
) -> ExecutionView:
    """The run's results as the reports read them (the same documents the results files hold:
    `written`, the ResultWriter's, where it has the scenario's)."""
    from cachelint.runner.engine import scenario_record

    known = written or {}
    records = [
        known.get(r.scenario.identity)
        or scenario_record(r, execution=report.execution, mode=report.mode)
        for r in report.results
    ]
    prices = config.prices
    return ExecutionView(
        name=report.execution,
        mode=report.mode,
        started=started,
        scenarios=[scenario_view(rec, config.target.model, prices) for rec in records],
        mutations=[
            {"code": f.code, "path": f.path, "message": f.message} for f in report.mutations
        ],
    )


def cost_summary(view: ExecutionView) -> dict[str, Any]:
    """USD by run, agent, tenant and scenario (None where the model has no price)."""
    from cachelint.runner.views import group_cost

    return {
        "currency": "USD",
        "run": view.cost,
        "by_agent": {n: group_cost(m) for n, m in view.groups(by_tenant=False)},
        "by_tenant": {n: group_cost(m) for n, m in view.groups(by_tenant=True)},
        "scenarios": {s.identity: s.cost for s in view.scenarios},
    }


def json_text(report_dict: Mapping[str, Any], cost: Mapping[str, Any]) -> str:
    """`--format json`: the report with the cost figures."""
    data = {**report_dict, "cost": cost}
    return json_dumps(data) + "\n"


def trend_point(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a run summary the trend lines read: the next runs' pages read this small
    document instead of parsing every earlier run.json whole."""
    return {
        "started": summary.get("started"),
        "execution": summary.get("execution"),
        "scenarios": [
            {
                "scenario": s.get("scenario"),
                "passed": s.get("passed"),
                "pass_rate": s.get("pass_rate"),
                "trials": [
                    {
                        "judges": [
                            {"metric": j.get("metric"), "score": j.get("score")}
                            for j in t.get("judges") or []
                        ]
                    }
                    for t in s.get("trials") or []
                ],
            }
            for s in summary.get("scenarios") or []
        ],
    }


def _earlier_run(directory: Path) -> Mapping[str, Any] | None:
    """An earlier execution's trend point (its run.json when it has none, e.g. merged shards);
    None when the execution has no readable run summary."""
    run_file = directory / RUN_FILE
    if not run_file.is_file():
        return None
    for path in (directory / TREND_FILE, run_file):
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError):
            continue
        if isinstance(doc, dict):
            return doc
    return None


# trend.json is written with sorted keys, so its top-level object ends with "started": the start
# time is read from the file's last bytes, and only the executions the trend shows are parsed.
_STARTED_AT_END = re.compile(rb'"started":("(?:[^"\\]|\\.)*"|null)\}\s*\Z')


def _started_at_end(path: Path) -> str | None:
    """The "started" of a trend.json from its last bytes; None when there is no such file or its
    end is not the one this module writes (the caller then parses the whole document)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 128))
            tail = fh.read()
    except OSError:
        return None
    found = _STARTED_AT_END.search(tail)
    if found is None:
        return None
    try:
        return str(json.loads(found.group(1)) or "")
    except ValueError:
        return None


def trend_runs(root: Path, current: Mapping[str, Any], count: int) -> list[TrendRun]:
    """The last `count` executions as the trend draws them, oldest first (by recorded start,
    name), ending with `current`. A damaged old run drops out of the trend; it does not stop this
    report. Each summary is drawn down as it is parsed, so no two are held whole at once."""
    from cachelint.runner.htmlreport import TrendRun

    now = TrendRun.of(current) or TrendRun(str(current.get("execution", "?")), None, {})
    if count <= 1 or not root.is_dir():
        return [now]
    listed: list[tuple[str, str, TrendRun | None]] = []
    for child in root.iterdir():
        if child.name == current.get("execution") or not (child / RUN_FILE).is_file():
            continue
        started = _started_at_end(child / TREND_FILE)
        if started is not None:
            listed.append((started, child.name, None))
            continue
        doc = _earlier_run(child)
        if doc is not None and (drawn := TrendRun.of(doc)) is not None:
            listed.append((str(doc.get("started") or ""), child.name, drawn))
    listed.sort(key=lambda item: item[:2])
    runs: list[TrendRun] = []
    for _, name, known in reversed(listed):
        if known is None:
            doc = _earlier_run(root / name)
            known = None if doc is None else TrendRun.of(doc)
        if known is not None:
            runs.append(known)
            if len(runs) == count - 1:
                break
    return [*reversed(runs), now]


def write_html_page(
    target: Path,
    view: ExecutionView,
    config: Config,
    summary: Mapping[str, Any],
    *,
    compare: ExecutionView | None = None,
    notes: Sequence[str] = (),
    durable: bool = True,
) -> None:
    """Write the HTML report to `target` atomically, each piece as it is rendered."""
    from cachelint.runner.htmlreport import Trend, render_html

    runs = trend_runs(config.repo / config.results, summary, config.reports.trend_executions)
    pieces = render_html(view, config.reports, trend=Trend(runs), compare=compare, notes=notes)
    try:
        atomic_write_chunks(target, (p.encode("utf-8") for p in pieces), durable=durable)
    except OSError as exc:
        raise CachelintError(f"{target}: cannot write report: {exc.strerror}") from None


def pr_text(fmt: str, view: ExecutionView, config: Config, notes: Sequence[str]) -> str:
    from cachelint.runner.prformats import render_github, render_markdown

    if fmt == "github":
        return render_github(view, config.reports)
    return render_markdown(view, config.reports, [f"- {n}" for n in notes])


def append_step_summary(markdown: str, env: Mapping[str, str]) -> None:
    """Append to the file GitHub Actions names in $GITHUB_STEP_SUMMARY (appending is its contract:
    several steps add to one summary)."""
    target = env.get(STEP_SUMMARY)
    if not target:
        return
    try:
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(markdown)
    except OSError as exc:
        raise CachelintError(
            f"${STEP_SUMMARY}={target}: cannot append the run summary ({exc.strerror})"
        ) from None


def verdict_notes(view: ExecutionView, config: Config, extras: Extras) -> tuple[list[str], bool]:
    """Budget and baseline lines for the reports, and whether they fail the run."""
    from cachelint.runner import baselines
    from cachelint.runner.cost import money
    from cachelint.runner.views import group_cost

    notes: list[str] = []
    failed = False
    budget = config.reports.budget
    if view.cost is not None:
        notes.append(f"cost: {money(view.cost)}" + (f" (budget {money(budget)})" if budget else ""))
        for by_tenant in (False, True):
            parts = [f"{n} {money(group_cost(m))}" for n, m in view.groups(by_tenant=by_tenant)]
            notes.append(f"cost by {'tenant' if by_tenant else 'agent'}: " + ", ".join(parts))
    if budget is not None and (view.cost or 0.0) > budget:
        notes.append(f"FAIL  over budget: {money(view.cost)} > {money(budget)}")
        failed = True
    if extras.baseline is not None:
        found = baselines.regressions(
            baselines.load(config.repo, extras.baseline), view, config.reports
        )
        notes.append(f"baseline {extras.baseline}: {len(found)} regression(s)")
        notes.extend(f"REGRESSED  {line}" for line in found)
        failed = failed or bool(found)
    return notes, failed


def write_run_summary(
    results_dir: Path,
    report_dict: Mapping[str, Any],
    view: ExecutionView,
    config: Config,
    *,
    started: str,
    shard: tuple[int, int] | None,
) -> dict[str, Any]:
    """`run.json`: the JSON report plus when, which model, the cost and the shard."""
    summary = {
        **report_dict,
        "started": started,
        "model": config.target.model,
        "cost": cost_summary(view),
    }
    if shard is not None:
        summary["shard"] = f"{shard[0]}/{shard[1]}"
    # Compact: the indenting encoder is pure Python, the compact one runs in C.
    # Results are not committed data: no fsync, as for the per-scenario files.
    data = json_dumps(summary, compact=True)
    atomic_write_chunks(results_dir / RUN_FILE, ((data + "\n").encode("utf-8"),), durable=False)
    point = json_dumps(trend_point(summary), compact=True)
    atomic_write_chunks(results_dir / TREND_FILE, ((point + "\n").encode("utf-8"),), durable=False)
    return summary


@dataclass(frozen=True)
class Published:
    notes: list[str]  # budget, baseline and cost lines for every report
    failed: bool  # a budget or baseline verdict fails the run
    text: str | None  # the stdout text, when this module renders the chosen format
    pages: Forked  # the HTML pages being written; join() before the run ends


def publish_more(
    view: ExecutionView,
    config: Config,
    report_dict: Mapping[str, Any],
    *,
    fmt: str,
    html: Path | None,
    results_dir: Path,
    extras: Extras,
    started: str,
    shard: tuple[int, int] | None,
) -> Published:
    """Write run.json, the HTML pages and the baseline; `Published.pages.join()` waits for the
    pages."""
    summary = write_run_summary(
        results_dir, report_dict, view, config, started=started, shard=shard
    )
    notes, failed = verdict_notes(view, config, extras)
    shown = list(notes)  # the page shows the notes as they are now

    def write_pages() -> None:
        page = results_dir / "report.html"
        write_html_page(page, view, config, summary, notes=shown, durable=False)
        if html is not None:
            try:
                with open(page, "rb") as fh:
                    atomic_write_chunks(html, iter(lambda: fh.read(1 << 20), b""))
            except OSError as exc:
                raise CachelintError(f"{html}: cannot write report: {exc.strerror}") from None

    # Nothing below reads the page: it is written on the second core while the run finishes.
    pages = Forked(write_pages)
    if extras.save_baseline is not None:
        from cachelint.runner import baselines

        baselines.save(config.repo, extras.save_baseline, view)
        notes.append(f"baseline {extras.save_baseline} saved to {baselines.FILE}")
    if fmt == "json":
        return Published(notes, failed, json_text(report_dict, summary["cost"]), pages)
    if fmt not in PR_FORMATS:
        return Published(notes, failed, None, pages)
    text = pr_text(fmt, view, config, notes)
    append_step_summary(
        text if fmt == "markdown" else pr_text("markdown", view, config, notes), os.environ
    )
    return Published(notes, failed, text, pages)
