"""What `cachelint run` and `cachelint report` publish of a run's report: the verdict on the budget
and the baseline that goes into the report (`judge`), run.json and trend.json, the HTML page, the
pull-request formats and `$GITHUB_STEP_SUMMARY`, the baselines.

The renderers it calls are pure, the I/O is here.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cachelint.config import Config
from cachelint.errors import CachelintError
from cachelint.fsutil import atomic_write_chunks
from cachelint.jsonstream import Streamed, json_chunks
from cachelint.runner.cost import Spend, money
from cachelint.runner.reports.model import (
    RUN_FILE,
    RunReport,
    ScenarioReport,
    Verdict,
    group_spend,
    groups,
)

if TYPE_CHECKING:
    from cachelint.runner.reports.htmlreport import TrendRun

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
    if extras is None or (extras.save_baseline is None and extras.baseline is None):
        return
    from cachelint.runner import baselines

    if extras.save_baseline is not None:
        baselines.check_label(extras.save_baseline, "--save-baseline")
    if extras.baseline is not None:
        baselines.load(repo, baselines.check_label(extras.baseline, "--baseline"))


def cost_summary(report: RunReport) -> dict[str, Any]:
    """USD by run, agent, tenant and scenario: the priced calls' dollars (a lower bound where
    `complete` is false), and the run's calls no price covers, by why (`model M`)."""
    spend = report.spend
    return {
        "currency": "USD",
        "run": spend.dollars,
        "complete": spend.complete,
        "unpriced": dict(spend.unpriced),
        "by_agent": {n: group_spend(m).dollars for n, m in report.groups(by_tenant=False)},
        "by_tenant": {n: group_spend(m).dollars for n, m in report.groups(by_tenant=True)},
        "scenarios": {s.identity: s.spend.dollars for s in report.scenarios},
    }


def json_text(report_dict: Mapping[str, Any], cost: Mapping[str, Any]) -> Iterator[str]:
    """`--format json`: the report with the cost figures, in pieces."""
    yield from json_chunks({**report_dict, "cost": cost})
    yield "\n"


def _trend_scenario(s: Mapping[str, Any]) -> dict[str, Any]:
    return {
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


def trend_point(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a run summary the trend lines read: the next runs' pages read this small
    document instead of parsing every earlier run.json whole. Its scenarios are `Streamed` when
    the summary's are."""
    listed = summary.get("scenarios") or []
    scenarios: Any
    if isinstance(listed, Streamed):
        scenarios = Streamed(len(listed), lambda: map(_trend_scenario, listed))
    else:
        scenarios = [_trend_scenario(s) for s in listed]
    return {
        "started": summary.get("started"),
        "execution": summary.get("execution"),
        "mode": summary.get("mode"),
        "filtered": summary.get("filtered"),
        "shard": summary.get("shard"),
        "scenarios": scenarios,
    }


def _earlier_run(directory: Path) -> Mapping[str, Any] | None:
    """An earlier execution's trend point (its run.json when it has none, e.g. merged shards);
    None when the execution has no readable run summary. A large suite's trend.json is read
    with its scenarios decoded one at a time as they are drawn (`_streamed_trend`)."""
    from cachelint.runner.evidence import SUMMARY_MAX_BYTES, BadEvidence, read_json

    if not (directory / RUN_FILE).is_file():
        return None
    streamed = _streamed_trend(directory)
    if streamed is not None:
        return streamed
    for name in (TREND_FILE, RUN_FILE):
        # Bounded, through no link, depth-checked, as every results file is read back.
        try:
            _, doc = read_json(directory, name, SUMMARY_MAX_BYTES)
        except BadEvidence:
            continue
        # A trend.json from before it said the mode is read from run.json instead.
        if isinstance(doc, dict) and (name == RUN_FILE or "mode" in doc):
            return doc
    return None


# From this size a trend.json (about 10,000 scenarios) is not decoded whole: its scenarios, a
# few hundred bytes each once decoded, are decoded one at a time each time the trend walks them.
STREAM_TREND_BYTES = 1 << 20
_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


class _Scenarios:
    """A trend.json's scenarios, each decoded as it is iterated (`_items`); validated and
    counted once when the file is read."""

    def __init__(self, text: str, start: int, count: int) -> None:
        self._text, self._start, self._count = text, start, count

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[Any]:
        return (item for item, _ in _items(self._text, self._start))


def _items(text: str, at: int) -> Iterator[tuple[Any, int]]:
    """The values of the JSON array whose `[` is just before `at`, each with where it ends
    (after its `]` for the last); ValueError where the text is no such array."""
    at = _skip(text, at)
    if text.startswith("]", at):
        return
    while True:
        item, at = _DECODER.raw_decode(text, at)
        at = _skip(text, at)
        if text.startswith("]", at):
            yield item, at + 1
            return
        if not text.startswith(",", at):
            raise ValueError(f"expected ',' or ']' at character {at}")
        yield item, at
        at = _skip(text, at + 1)


def _streamed_trend(directory: Path) -> dict[str, Any] | None:
    """A trend.json of `STREAM_TREND_BYTES` or more, its "scenarios" a `_Scenarios`; None for a
    smaller one or one that is not such a document (read as before: whole, or run.json). Read
    as every results file is: through no link, a regular file, bounded, depth-checked."""
    from cachelint.confine import first_link
    from cachelint.fastjson import utf8_sig_text
    from cachelint.fsutil import read_regular
    from cachelint.runner.evidence import SUMMARY_MAX_BYTES

    path = directory / TREND_FILE
    try:
        if first_link(directory, TREND_FILE) is not None:
            return None
        if path.stat().st_size < STREAM_TREND_BYTES:
            return None
        doc = _lazy_document(utf8_sig_text(read_regular(path, SUMMARY_MAX_BYTES)))
    except (OSError, ValueError, RecursionError):
        return None
    return doc if doc is not None and "mode" in doc else None


def _lazy_document(text: str) -> dict[str, Any] | None:
    """The JSON object `text` holds, its "scenarios" array (of objects) a `_Scenarios`; None
    when `text` holds something else (ValueError where it is no JSON)."""
    from cachelint.runner.evidence import too_deep

    doc: dict[str, Any] = {}
    at = _skip(text, 0)
    if not text.startswith("{", at):
        return None
    at = _skip(text, at + 1)
    while not text.startswith("}", at) or doc:  # `{}`, or a key and its value, then `,` or `}`
        key, at = _DECODER.raw_decode(text, at)
        at = _skip(text, at)
        if not isinstance(key, str) or not text.startswith(":", at):
            return None
        at = _skip(text, at + 1)
        if key == "scenarios" and text.startswith("[", at):
            start, count = at + 1, 0
            empty = _skip(text, start)
            at = empty + 1 if text.startswith("]", empty) else start
            for item, after in _items(text, start):
                if not isinstance(item, dict) or too_deep([[item]]):
                    return None
                count, at = count + 1, after
            doc[key] = _Scenarios(text, start, count)
        else:
            doc[key], at = _DECODER.raw_decode(text, at)
            if too_deep([doc[key]]):
                return None
        at = _skip(text, at)
        if text.startswith(",", at):
            at = _skip(text, at + 1)
        elif text.startswith("}", at):
            break
        else:
            return None
    return doc if not text[at + 1 :].strip(" \t\n\r") else None


def _skip(text: str, at: int) -> int:
    """Where the JSON whitespace from `at` ends."""
    space = _SPACE.match(text, at)
    return space.end() if space is not None else at


# trend.json is written with sorted keys, so its top-level object ends with "started": the start
# time is read from the file's last bytes, and only the executions the trend shows are parsed.
_STARTED_AT_END = re.compile(rb'"started":("(?:[^"\\]|\\.)*"|null)\}\s*\Z')


def _started_at_end(path: Path) -> str | None:
    """The "started" of a trend.json from its last bytes; None when there is no such file or its
    end is not the one this module writes (the caller then parses the whole document). Opened
    as a regular file, never through a link nor a FIFO (`open_regular`); 128 bytes read."""
    from cachelint.fsutil import open_regular

    try:
        with open_regular(path) as fh:
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
    """The last `count` replays of the whole suite as the trend draws them, oldest first (by
    recorded start, name), ending with `current` when it is one. A recording, a filtered run
    (`--agent`, `--scenario`, a shard) or a damaged old run drops out: a re-record of one agent
    is no dip of the suite. Each summary is drawn down as it is parsed, so no two are held whole
    at once."""
    from cachelint.runner.reports.htmlreport import TrendRun

    now = TrendRun.of(current)
    ends = [now] if now is not None and now.whole_suite else []
    if count <= 1 or not root.is_dir():
        return ends
    listed: list[tuple[str, str, TrendRun | None]] = []
    for child in root.iterdir():
        # A directory linked elsewhere is no execution of this repository: never read.
        if child.name == current.get("execution") or child.is_symlink():
            continue
        if not (child / RUN_FILE).is_file():
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
        if len(runs) + len(ends) == count:
            break
        if known is None:
            doc = _earlier_run(root / name)
            known = None if doc is None else TrendRun.of(doc)
        if known is not None and known.whole_suite:
            runs.append(known)
    return [*reversed(runs), *ends]


def write_html_page(
    target: Path,
    report: RunReport,
    config: Config,
    summary: Mapping[str, Any],
    *,
    compare: RunReport | None = None,
    durable: bool = True,
) -> None:
    """Write the HTML report to `target` atomically, each piece as it is rendered."""
    from cachelint.runner.reports.htmlreport import Trend, render_html

    runs = trend_runs(config.repo / config.results, summary, config.reports.trend_executions)
    pieces = render_html(report, config.reports, trend=Trend(runs), compare=compare)
    try:
        atomic_write_chunks(target, (p.encode("utf-8") for p in pieces), durable=durable)
    except OSError as exc:
        raise CachelintError(f"{target}: cannot write report: {exc.strerror}") from None


def pr_text(fmt: str, report: RunReport, config: Config) -> str:
    from cachelint.runner.reports.prformats import render_github, render_markdown

    if fmt == "github":
        return render_github(report, config.reports)
    return render_markdown(report, config.reports)


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


def _budget_failures(spend: Spend, budget: float) -> list[str]:
    """Why the run's cost fails its budget: over it, or not known well enough to check it."""
    where = "[tool.cachelint.reports] budget"
    failures: list[str] = []
    if spend.dollars > budget:
        over = f"over budget: {money(spend.dollars)} > {money(budget)} ({where})"
        failures.append(over + ("" if spend.complete else f"; {spend.gap()}"))
    elif not spend.complete:
        failures.append(
            f"budget {money(budget)} cannot be checked ({where}): the run cost {spend.text()}"
        )
    for model in spend.unpriced_models():
        failures.append(
            f"no price for model {model}: add it to [tool.cachelint.prices], e.g. "
            f'"{model}" = {{ input = <$ per million tokens>, output = <$ per million tokens> }}'
        )
    if any(why == "no usage recorded" for why, _ in spend.unpriced):
        failures.append(
            "a recorded response has no token usage: re-record it with usage (a streamed chat "
            "completion needs stream_options = {include_usage = true})"
        )
    return failures


def judge(scenarios: Sequence[ScenarioReport], config: Config, extras: Extras) -> Verdict:
    """The run judged on its budget and baseline, as its `RunReport` holds it: what fails the run
    (`failures`), and the cost and baseline lines (`notes`), with the baseline it saves."""
    notes: list[str] = []
    failures: list[str] = []
    budget, spend = config.reports.budget, group_spend(scenarios)
    if config.prices or budget is not None:
        shown = f" (budget {money(budget)})" if budget is not None else ""
        notes.append(f"cost: {spend.text()}{shown}")
        for by_tenant in (False, True):
            parts = [f"{n} {group_spend(m).text()}" for n, m in groups(scenarios, by_tenant)]
            notes.append(f"cost by {'tenant' if by_tenant else 'agent'}: " + ", ".join(parts))
    if budget is not None:
        failures.extend(_budget_failures(spend, budget))
    if extras.baseline is not None:
        from cachelint.runner import baselines  # as below: loaded by a run that names one

        found = baselines.regressions(
            baselines.load(config.repo, extras.baseline), scenarios, config.reports
        )
        line = f"baseline {extras.baseline}: {len(found)} regression(s)"
        (failures if found else notes).append(line)
        notes.extend(f"REGRESSED  {line}" for line in found)
    if extras.save_baseline is not None:
        from cachelint.runner.baselines import FILE

        notes.append(f"baseline {extras.save_baseline} saved to {FILE}")
    return Verdict(tuple(failures), tuple(notes))


def write_run_summary(
    results_dir: Path,
    report_dict: Mapping[str, Any],
    report: RunReport,
    config: Config,
    *,
    shard: tuple[int, int] | None,
    filtered: bool = False,
) -> dict[str, Any]:
    """`run.json`: the JSON report plus when, which model, the cost, the shard, and whether the
    run selected less than the whole suite (`filtered`: the trend leaves it out)."""
    summary = {
        **report_dict,
        "started": report.started,
        "model": config.target.model,
        "cost": cost_summary(report),
        "filtered": filtered,
    }
    if shard is not None:
        summary["shard"] = f"{shard[0]}/{shard[1]}"
    # Compact: the indenting encoder is pure Python, the compact one runs in C.
    # Results are not committed data: no fsync, as for the per-scenario files.
    # Written in pieces (`jsonstream`): a large run's summary is never one string.
    for name, document in ((RUN_FILE, summary), (TREND_FILE, trend_point(summary))):
        pieces = itertools.chain(json_chunks(document, compact=True), ("\n",))
        atomic_write_chunks(results_dir / name, encoded(pieces), durable=False)
    return summary


def encoded(pieces: Iterable[str], size: int = 1 << 16) -> Iterator[bytes]:
    """`pieces` as UTF-8, joined into writes of about `size` characters."""
    batch: list[str] = []
    held = 0
    for piece in pieces:
        batch.append(piece)
        held += len(piece)
        if held >= size:
            yield "".join(batch).encode("utf-8")
            batch, held = [], 0
    if batch:
        yield "".join(batch).encode("utf-8")


def publish_run(
    report: RunReport,
    config: Config,
    *,
    fmt: str,
    html: Path | None,
    results_dir: Path,
    extras: Extras,
    shard: tuple[int, int] | None,
    filtered: bool = False,
) -> str | Iterable[str] | None:
    """Write run.json and trend.json, the baseline and the HTML pages of a run; return the stdout
    text when this module renders the chosen format (`--format json`: in pieces), else None."""
    from cachelint.runner.reports.text import report_dict

    document = report_dict(report, streamed=True)  # run.json's, and --format json's
    summary = write_run_summary(
        results_dir, document, report, config, shard=shard, filtered=filtered
    )
    if extras.save_baseline is not None:
        from cachelint.runner import baselines

        baselines.save(config.repo, extras.save_baseline, report)
    page = results_dir / "report.html"
    write_html_page(page, report, config, summary, durable=False)
    if html is not None:
        from cachelint.fsutil import open_regular

        try:  # the page just written, copied as the regular file it is, never a link
            with open_regular(page) as fh:
                atomic_write_chunks(html, iter(lambda: fh.read(1 << 20), b""))
        except OSError as exc:
            raise CachelintError(f"{html}: cannot write report: {exc.strerror}") from None
    if fmt == "json":
        return json_text(document, summary["cost"])
    if fmt not in PR_FORMATS:
        return None
    text = pr_text(fmt, report, config)
    append_step_summary(
        text if fmt == "markdown" else pr_text("markdown", report, config), os.environ
    )
    return text
