"""Pull-request formats: a Markdown summary and GitHub workflow-command annotations.

Pure functions of a `RunReport` (no I/O, no clock, no env). Markdown escapes every
string taken from the repository or a model (agent, tenant and dataset names, answers, reasons,
the notes built from them) so it cannot inject links, images, HTML or table cells, and breaks what
GitHub would turn into a live @mention, an autolink or an issue reference with an invisible
joiner; annotations percent-encode what GitHub's workflow-command parser would otherwise read as
the end of the message or of a property.
"""

from __future__ import annotations

import html
import re

from cachelint.display import sanitize, sanitize_block
from cachelint.runner.cost import Spend, money
from cachelint.runner.reports.matrixviews import matrix_markdown
from cachelint.runner.reports.model import RunReport, ScenarioReport, group_spend
from cachelint.settings import ReportSettings

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~>])")

# GitHub links more than Markdown does: `@name` and `@org/team` (a mention, which notifies),
# `#12` and `GH-12` (issue references), bare `www.` hosts, `scheme://` URLs and e-mail addresses
# (autolinks). A backslash escape does not stop these (GitHub finds them in the rendered text),
# so a word joiner (U+2060, invisible) goes inside each: the text reads the same, links nothing.
_JOINER = "\u2060"
# Where the joiner goes, in text already escaped (`\#12`, `GH\-12`, `www\.`).
_LINKED = re.compile(
    r"(?<=@)|(?<=#)(?=[0-9])|(?<=[Gg][Hh]\\-)(?=[0-9])|(?<=[Ww]{3})(?=\\\.)|(?<=:)(?=//)"
)


def md(text: object) -> str:
    """Plain text for a Markdown table cell or line: no markup, no HTML, no mention or autolink,
    one line."""
    flat = sanitize(" ".join(str(text).split()))
    escaped = _MD_SPECIAL.sub(r"\\\1", html.escape(flat, quote=False))
    return _LINKED.sub(_JOINER, escaped)


def _spent(spend: Spend) -> str:
    # The figure is digits and '$'; the unpriced part names models, which come from the repository.
    return money(spend.dollars) if spend.complete else md(spend.text())


def _judges(s: ScenarioReport, settings: ReportSettings) -> str:
    parts = []
    for metric, score in sorted(s.judge_scores().items()):
        shown = f"{score:.1f}/5" if score is not None else "no score"
        parts.append(f"{md(metric)} {shown} ({settings.interpret(score)})")
    return ", ".join(parts)


def render_markdown(report: RunReport, settings: ReportSettings) -> str:
    """The run summary: a header that is ❌ whenever the run fails (a scenario, the canary, the
    budget, a baseline), what failed the run, cost per agent/tenant, failures, passed scenarios;
    then its notes (cost and baseline lines), escaped like everything else."""
    passed = sum(1 for s in report.scenarios if s.passed)
    total = len(report.scenarios)
    icon = "✅" if report.passed else "❌"
    # The header names what failed the run (the budget and its figures, say), not only ❌.
    why = f"; {md(report.failures[0].split(';')[0])}" if report.failures else ""
    why += f" (and {len(report.failures) - 1} more)" if len(report.failures) > 1 else ""
    title = f"cachelint run {md(report.name)} ({md(report.mode)})"
    out = [f"## {icon} {title}: {passed}/{total} passed{why}", ""]
    out += [f"- ❌ {md(failure)}" for failure in report.failures]
    out += ([""] if report.failures else []) + [
        "| agent / tenant | passed | cost |",
        "| --- | --- | --- |",
    ]
    for name, members in report.groups(by_tenant=True):
        ok = sum(1 for s in members if s.passed)
        out.append(f"| {md(name)} | {ok}/{len(members)} | {_spent(group_spend(members))} |")
    out.append(f"| **total** | **{passed}/{total}** | **{_spent(report.spend)}** |")
    out.append("")
    matrix = report.matrix()
    out.extend(matrix_markdown(matrix, md) if matrix is not None else ())
    for m in report.mutations:
        out.append(f"- ❌ `eval-cache-mutated`: {md(m.path)}: {md(m.message)}")
    failed = [s for s in report.scenarios if not s.passed]
    if failed:
        out += ["### Failures", ""]
        for s in failed:
            out.append(f"- ❌ **{md(s.identity)}** ({md(s.path)})")
            out.extend(f"  - {md(reason)}" for reason in s.failure_reasons())
        out.append("")
    out.extend(_passed_table(report, settings))
    out.extend(f"- {md(note)}" for note in report.notes)
    return "\n".join(out).rstrip("\n") + "\n"


def _passed_table(report: RunReport, settings: ReportSettings) -> list[str]:
    rest = [s for s in report.scenarios if s.passed]
    if not rest:
        return []
    out = [f"<details><summary>{len(rest)} passed scenarios</summary>"]
    out += ["", "| scenario | trials | judges | tokens in/out | cost | cache |"]
    out.append("| --- | --- | --- | --- | --- | --- |")
    for s in rest:
        n_in, n_out = s.tokens
        out.append(
            f"| {md(s.identity)} | {len(s.trials)} | {_judges(s, settings)} | "
            f"{n_in}/{n_out} | {_spent(s.spend)} | {'hit' if s.cache_hit else 'live'} |"
        )
    return [*out, "", "</details>", ""]


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    # One line, controls shown (as the check's GitHub format does), then the runner's escaping.
    return _data(sanitize(text)).replace(":", "%3A").replace(",", "%2C")


def render_github(report: RunReport, settings: ReportSettings) -> str:
    """`::error` per failed scenario on its dataset file, `::warning` per judge score under the
    average threshold (judges never gate, so a poor score warns)."""
    out: list[str] = []
    for s in report.scenarios:
        where = f"file={_prop(s.path)},title={_prop('cachelint: ' + s.identity)}"
        if not s.passed:
            message = f"{s.identity} failed:\n" + "\n".join(s.failure_reasons())
            out.append(f"::error {where}::{_data(sanitize_block(message))}")
        for metric, score in sorted(s.judge_scores().items()):
            if score is None or score < settings.judge_average:
                shown = f"{score:.1f}/5" if score is not None else "no score"
                text = (
                    f"{s.identity}: judge {metric} {shown} "
                    f"({settings.interpret(score)}; average is {settings.judge_average:g})"
                )
                out.append(f"::warning {where}::{_data(sanitize_block(text))}")
    for m in report.mutations:
        text = f"{m.code}: {m.message}"
        out.append(f"::error file={_prop(m.path)}::{_data(sanitize_block(text))}")
    for failure in report.failures:
        out.append(f"::error title=cachelint run::{_data(sanitize_block(failure))}")
    passed = sum(1 for s in report.scenarios if s.passed)
    out.append(
        f"cachelint run {sanitize(report.name)}: {passed}/{len(report.scenarios)} scenarios "
        f"passed, cost {sanitize(report.spend.text())}" + ("" if report.passed else "; FAILED")
    )
    return "\n".join(out) + "\n"
