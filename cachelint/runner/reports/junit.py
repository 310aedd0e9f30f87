"""The JUnit XML report of a run, a pure function of its `RunReport`, in pieces: a large run's is
never one string. The bytes are those ElementTree writes indented (`ET.indent`, two spaces).

CI pages show its attributes and bodies to people: controls, bidi marks and surrogates become
visible escapes (`display.sanitize_block`), which also keeps out the C0 controls XML 1.0 cannot
carry at all.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from cachelint.display import sanitize_block
from cachelint.runner.reports.model import RunReport, ScenarioReport
from cachelint.runner.reports.text import metric_text

_XML_UNSAFE = re.compile("[\ufffe\uffff]")
# What ElementTree escapes in an attribute value (one pass: no replacement holds another).
_ATTRIBUTE = str.maketrans(
    {
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        '"': "&quot;",
        "\r": "&#13;",
        "\n": "&#10;",
        "\t": "&#09;",
    }
)
_TEXT = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


def _safe(text: str) -> str:
    return _XML_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", sanitize_block(text))


def _start(depth: int, tag: str, attributes: Sequence[tuple[str, str]]) -> str:
    shown = "".join(f' {key}="{value.translate(_ATTRIBUTE)}"' for key, value in attributes)
    return f"{'  ' * depth}<{tag}{shown}"


def _element(depth: int, tag: str, attributes: Sequence[tuple[str, str]], text: str = "") -> str:
    """An element without children on its own line (`text` escaped here)."""
    body = f">{text.translate(_TEXT)}</{tag}>" if text else " />"
    return f"{_start(depth, tag, attributes)}{body}\n"


def _open(depth: int, tag: str, attributes: Sequence[tuple[str, str]]) -> str:
    return f"{_start(depth, tag, attributes)}>\n"


def _failure_text(s: ScenarioReport) -> tuple[str, str]:
    lines: list[str] = []
    for t in s.trials:
        if t["passed"]:
            continue
        prefix = f"trial {t['trial']}: " if len(s.trials) > 1 else ""
        if t.get("error") is not None:
            lines.append(prefix + str(t["error"]))
        lines.extend(
            f"{prefix}{a['type']}: {a['reason']}"
            for a in t.get("assertions") or ()
            if not a["passed"]
        )
    first = lines[0].splitlines()[0] if lines else "failed"
    return first, "\n".join(lines)


def _case(s: ScenarioReport) -> Iterator[str]:
    """One scenario's testcase: its cost, its failure and what the judges and metrics said."""
    where = [
        ("classname", _safe(f"{s.agent}.{s.tenant}")),
        ("name", _safe(s.name)),
        ("file", _safe(s.path)),
        ("time", f"{s.latency_s:.3f}"),
    ]
    yield _open(2, "testcase", where)
    yield _open(3, "properties", ())
    # A lower bound when calls went unpriced: named so, never a plain figure.
    prop = "cost_usd" if s.spend.complete else "cost_usd_at_least"
    yield _element(4, "property", [("name", prop), ("value", f"{s.spend.dollars:.8f}")])
    if not s.spend.complete:
        yield _element(4, "property", [("name", "cost_unpriced"), ("value", _safe(s.spend.gap()))])
    yield "      </properties>\n"
    if not s.passed:
        message, body = _failure_text(s)
        yield _element(3, "failure", [("message", _safe(message)), ("type", "failed")], _safe(body))
    judges = [
        f"judge {j['metric']}: {j['score'] if j.get('score') is not None else 'no score'} - "
        f"{j['reason']}"
        for t in s.trials
        for j in t.get("judges") or ()
    ]
    metrics = [
        f"metric {metric_text(m)}" + (f" - {m['reason']}" if m.get("reason") else "")
        for t in s.trials
        for m in t.get("metrics") or ()
    ]
    rate = f"pass rate {s.passed_trials}/{len(s.trials)}"
    yield _element(3, "system-out", (), _safe("\n".join([rate, *judges, *metrics])))
    yield "    </testcase>\n"


def _run_suite(name: str, cases: Sequence[tuple[str, str, str]]) -> Iterator[str]:
    """A suite of failed cases (name, message, type), when there are any."""
    if not cases:
        return
    n = str(len(cases))
    counts = [("tests", n), ("failures", n), ("errors", "0"), ("skipped", "0")]
    yield _open(1, "testsuite", [("name", name), *counts])
    for case_name, message, kind in cases:
        yield _open(2, "testcase", [("classname", name), ("name", _safe(case_name))])
        yield _element(3, "failure", [("message", _safe(message)), ("type", kind)])
        yield "    </testcase>\n"
    yield "  </testsuite>\n"


def junit_chunks(report: RunReport) -> Iterator[str]:
    """The JUnit XML document: a suite per agent/tenant (in the run's order), then the run's own
    failures as suites (a mutated cache tree; budget, baseline), or CI shows green."""
    suites: dict[str, list[ScenarioReport]] = {}
    for s in report.scenarios:
        suites.setdefault(f"{s.agent}/{s.tenant}", []).append(s)
    mutated = [(f.path, f.message, f.code) for f in report.mutations]
    failures = [(line.split(":", 1)[0], line, "run") for line in report.failures]
    total = len(report.scenarios) + len(mutated) + len(failures)
    failed = sum(1 for s in report.scenarios if not s.passed) + len(mutated) + len(failures)
    yield '<?xml version="1.0" encoding="UTF-8"?>\n'
    root = [("name", "cachelint"), ("tests", str(total)), ("failures", str(failed))]
    if not total:
        yield _element(0, "testsuites", root)
        return
    yield _open(0, "testsuites", root)
    for name, members in suites.items():
        down = sum(1 for s in members if not s.passed)
        counts = [("tests", str(len(members))), ("failures", str(down))]
        yield _open(
            1, "testsuite", [("name", _safe(name)), *counts, ("errors", "0"), ("skipped", "0")]
        )
        for s in members:
            yield from _case(s)
        yield "  </testsuite>\n"
    yield from _run_suite("eval-cache-mutated", mutated)
    yield from _run_suite("cachelint-run", failures)
    yield "</testsuites>\n"
