"""Pull-request formats: a Markdown summary and GitHub workflow-command annotations.

Pure functions of an `ExecutionView` (no I/O, no clock, no env). Markdown escapes every
user-derived string so dataset text or model output cannot inject links, HTML or table cells;
annotations percent-encode what GitHub's workflow-command parser would otherwise read as the end
of the message or of a property.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from cachelint.display import sanitize, sanitize_block
from cachelint.runner.cost import money
from cachelint.runner.settings import ReportSettings
from cachelint.runner.views import ExecutionView, ScenarioView, group_cost

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~>])")


def md(text: str) -> str:
    """Plain text for a Markdown table cell or line: no markup, no HTML, one line."""
    flat = sanitize(" ".join(str(text).split()))
    return _MD_SPECIAL.sub(r"\\\1", html.escape(flat, quote=False))


def _judges(s: ScenarioView, settings: ReportSettings) -> str:
    parts = []
    for metric, score in sorted(s.judge_scores().items()):
        shown = f"{score:.1f}/5" if score is not None else "no score"
        parts.append(f"{md(metric)} {shown} ({settings.interpret(score)})")
    return ", ".join(parts)


def render_markdown(
    view: ExecutionView, settings: ReportSettings, extra: Sequence[str] = ()
) -> str:
    passed = sum(1 for s in view.scenarios if s.passed)
    total = len(view.scenarios)
    icon = "✅" if view.passed else "❌"
    out = [
        f"## {icon} cachelint run {md(view.name)} ({md(view.mode)}): {passed}/{total} passed",
        "",
        "| agent / tenant | passed | cost |",
        "| --- | --- | --- |",
    ]
    for name, members in view.groups(by_tenant=True):
        ok = sum(1 for s in members if s.passed)
        out.append(f"| {md(name)} | {ok}/{len(members)} | {money(group_cost(members))} |")
    out.append(f"| **total** | **{passed}/{total}** | **{money(view.cost)}** |")
    out.append("")
    for m in view.mutations:
        out.append(
            f"- ❌ `eval-cache-mutated`: {md(m.get('path', ''))}: {md(m.get('message', ''))}"
        )
    failed = [s for s in view.scenarios if not s.passed]
    if failed:
        out += ["### Failures", ""]
        for s in failed:
            out.append(f"- ❌ **{md(s.identity)}** ({md(s.path)})")
            out.extend(f"  - {md(reason)}" for reason in s.failure_reasons())
        out.append("")
    rest = [s for s in view.scenarios if s.passed]
    if rest:
        out.append(f"<details><summary>{len(rest)} passed scenarios</summary>")
        out += ["", "| scenario | trials | judges | tokens in/out | cost | cache |"]
        out.append("| --- | --- | --- | --- | --- | --- |")
        for s in rest:
            n_in, n_out = s.tokens
            out.append(
                f"| {md(s.identity)} | {len(s.trials)} | {_judges(s, settings)} | "
                f"{n_in}/{n_out} | {money(s.cost)} | {'hit' if s.cache_hit else 'live'} |"
            )
        out += ["", "</details>", ""]
    out.extend(extra)
    return "\n".join(out).rstrip("\n") + "\n"


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    # One line, controls shown (as the check's GitHub format does), then the runner's escaping.
    return _data(sanitize(text)).replace(":", "%3A").replace(",", "%2C")


def render_github(view: ExecutionView, settings: ReportSettings) -> str:
    """`::error` per failed scenario on its dataset file, `::warning` per judge score under the
    average threshold (judges never gate, so a poor score warns)."""
    out: list[str] = []
    for s in view.scenarios:
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
    for m in view.mutations:
        text = f"{m.get('code')}: {m.get('message')}"
        out.append(f"::error file={_prop(str(m.get('path', '')))}::{_data(sanitize_block(text))}")
    passed = sum(1 for s in view.scenarios if s.passed)
    out.append(
        f"cachelint run {sanitize(view.name)}: {passed}/{len(view.scenarios)} scenarios "
        f"passed, cost {money(view.cost)}"
    )
    return "\n".join(out) + "\n"
