"""Re-record review renderers (runner/review.py): HTML (a section, or a page of its own) and
Markdown sized for a pull-request comment.

Pure functions. Answers and requests are untrusted text: HTML escapes every one
(`htmlscenario.escape`); Markdown puts them in fenced blocks whose fence is longer than any
backtick run inside, and escapes the rest (`prformats.md`). The Markdown stays under GitHub's
comment limit (`COMMENT_LIMIT`): each answer is cut to `ANSWER_CHARS` with a count of what was
cut, and the scenarios that no longer fit are counted, not shown.
"""

from __future__ import annotations

import difflib
import html
import re
from collections.abc import Iterator, Sequence

from cachelint.display import sanitize, sanitize_block
from cachelint.runner.reports.htmlassets import REVIEW_CSS
from cachelint.runner.reports.htmlscenario import ANSWER_CHARS, escape
from cachelint.runner.reports.prformats import md
from cachelint.runner.review import AnswerChange, Review

COMMENT_LIMIT = 65_536  # GitHub refuses a longer issue or pull-request comment
_BUDGET = COMMENT_LIMIT - 2_000  # room for the closing lines
REQUEST_LINES = 12


def truncate(text: str, limit: int = ANSWER_CHARS) -> str:
    """`text` cut to `limit` characters, saying how many were cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n… ({len(text) - limit:,} more characters)"


def _verdict(passed: bool | None) -> str:
    return "?" if passed is None else "PASS" if passed else "FAIL"


def verdict_line(change: AnswerChange) -> str:
    line = f"{_verdict(change.before)} → {_verdict(change.after)}"
    return f"{line} ({change.verdict_change})" if change.verdict_change else line


def headline(review: Review) -> str:
    scenarios = review.scenarios()
    regressed = sum(1 for _, c in scenarios if c[0].verdict_change == "regressed")
    fixed = sum(1 for _, c in scenarios if c[0].verdict_change == "fixed")
    count = len({c.scenario for c in review.changes})
    word = "scenario's" if count == 1 else "scenarios'"
    line = f"{count} {word} recorded answers changed ({review.base} → {review.head})"
    if regressed or fixed:
        line += f": {regressed} regressed, {fixed} fixed"
    return line


# ---- HTML ---------------------------------------------------------------------------------------


def _marked(old: str, new: str) -> tuple[str, str]:
    """One changed line pair, with the changed characters in <del> / <ins>."""
    a, b = [], []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        left, right = escape(old[i1:i2]), escape(new[j1:j2])
        a.append(left if op == "equal" else f"<del>{left}</del>" if left else "")
        b.append(right if op == "equal" else f"<ins>{right}</ins>" if right else "")
    return "".join(a), "".join(b)


def side_by_side(old: str, new: str) -> str:
    """A two-column table of the answers, line by line, differences marked."""
    a, b = truncate(old).split("\n"), truncate(new).split("\n")
    rows = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        for k in range(max(i2 - i1, j2 - j1)):
            left = a[i1 + k] if i1 + k < i2 else None
            right = b[j1 + k] if j1 + k < j2 else None
            if op == "equal":
                cells = (escape(left), escape(right), "same")
            elif left is not None and right is not None:
                cells = (*_marked(left, right), "changed")
            else:
                cells = (
                    "" if left is None else f"<del>{escape(left)}</del>",
                    "" if right is None else f"<ins>{escape(right)}</ins>",
                    "changed",
                )
            rows.append(
                f'<tr class="{cells[2]}"><td><pre>{cells[0]}</pre></td>'
                f"<td><pre>{cells[1]}</pre></td></tr>"
            )
    return (
        '<table class="answers" data-testid="answer-diff"><tr><th>old answer</th>'
        f"<th>new answer</th></tr>{''.join(rows)}</table>"
    )


def _html_change(change: AnswerChange) -> str:
    requests = "".join(f"<li><code>{escape(c)}</code></li>" for c in change.request_changes)
    answers = (
        side_by_side(change.old, change.new)
        if change.old is not None
        else f'<p class="meta">new answer:</p><pre data-testid="answer-new">'
        f"{escape(truncate(change.new))}</pre>"
    )
    return (
        '<div class="change" data-testid="answer-change">'
        f'<p class="meta">{escape(change.where)}</p>'
        f"<p>request change (recorded → now):</p><ul>{requests}</ul>{answers}</div>"
    )


def review_html(review: Review) -> Iterator[str]:
    """The review as a section of a page: one collapsed block per scenario (open on regress)."""
    yield (
        f'<section class="review" data-testid="review"><h2>re-record review</h2>'
        f"<p>{escape(headline(review))}</p>"
    )
    yield from (f'<p class="note">{escape(n)}</p>' for n in review.notes)
    for label, changes in review.scenarios():
        first = changes[0]
        opened = " open" if first.verdict_change == "regressed" else ""
        target = "" if first.target is None else f' data-target="{escape(first.target)}"'
        yield (
            '<details class="reviewed" data-testid="reviewed" '
            f'data-scenario="{escape(first.scenario)}"{target}'
            f"{opened}><summary>{escape(label)}: {escape(verdict_line(first))}"
            f'<span class="meta"> ({len(changes)} answer(s) changed)</span></summary>'
        )
        yield from (_html_change(c) for c in changes)
        yield "</details>"
    yield "</section>"


_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def review_page(review: Review) -> Iterator[str]:
    """The review as a page of its own: no script, no fetch."""
    title = escape(f"cachelint re-record review: {review.base} → {review.head}")
    yield (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}"><title>{title}</title>'
        "<style>body{font-family:system-ui,sans-serif;margin:1.5rem 2rem;color:#222}"
        "pre{white-space:pre-wrap;margin:0}.meta{color:#555;font-size:.9em}"
        f"td,th{{border:1px solid #ccc;padding:.25rem .5rem;vertical-align:top}}"
        f"table{{border-collapse:collapse}}{REVIEW_CSS}</style></head><body><h1>{title}</h1>"
    )
    yield from review_html(review)
    yield "</body></html>\n"


# ---- Markdown -----------------------------------------------------------------------------------


# A line that starts with `::` after blanks is a GitHub workflow command when the Markdown goes
# to a job's log (`cachelint diff` prints it to stdout): the runner trims leading white space and
# parses `::error ...::`, `::stop-commands::`, `::add-mask::`. A word joiner (U+2060, invisible,
# not white space to the runner) before the `::` keeps the line as text.
_COMMAND_LINE = re.compile(r"^([^\S\n]*)::", re.MULTILINE)


def _fenced(text: str, lang: str = "") -> str:
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    shown = _COMMAND_LINE.sub("\\1\u2060::", sanitize_block(text))
    return f"{fence}{lang}\n{shown}\n{fence}"


def _unified(old: str, new: str) -> str:
    """Both answers in one diff block: '-' old lines, '+' new ones, common lines kept."""
    a, b = truncate(old).split("\n"), truncate(new).split("\n")
    lines: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            lines.extend(f"  {line}" for line in a[i1:i2])
            continue
        lines.extend(f"- {line}" for line in a[i1:i2])
        lines.extend(f"+ {line}" for line in b[j1:j2])
    return "\n".join(lines)


def _md_change(change: AnswerChange) -> str:
    shown = list(change.request_changes[:REQUEST_LINES])
    more = len(change.request_changes) - len(shown)
    if more:
        shown.append(f"… ({more} more changes)")
    answer = (
        _fenced(_unified(change.old, change.new), "diff")
        if change.old is not None
        else "new answer:\n\n" + _fenced(truncate(change.new))
    )
    return (
        f"{md(change.where)}, request change (recorded → now):\n\n"
        f"{_fenced(chr(10).join(truncate(c, 300) for c in shown))}\n\n"
        f"answer (old → new, `-` old, `+` new):\n\n{answer}\n"
    )


def _in_html(text: str) -> str:
    """Text inside the comment's HTML (<summary>): GitHub reads no Markdown there, but still
    links mentions, so a word joiner follows each '@'."""
    flat = html.escape(sanitize(" ".join(text.split())), quote=False)
    return flat.replace("@", "@\u2060")


def _md_scenario(scenario: str, changes: Sequence[AnswerChange]) -> str:
    head = f"<b>{_in_html(scenario)}</b>: {_in_html(verdict_line(changes[0]))}"
    body = "\n".join(_md_change(c) for c in changes)
    return f"<details><summary>{head}</summary>\n\n{body}\n</details>\n"


def review_markdown(review: Review, *, full_page: str | None = None) -> str:
    """The review as a pull-request comment: always under `COMMENT_LIMIT` characters."""
    parts = [f"### Re-record review\n\n{md(headline(review))}\n"]
    parts.extend(f"- {md(n)}\n" for n in review.notes)
    size = sum(len(p) for p in parts)
    scenarios = review.scenarios()
    for shown, (scenario, changes) in enumerate(scenarios):
        section = _md_scenario(scenario, changes)
        if size + len(section) > _BUDGET:
            rest = len(scenarios) - shown
            where = f"; all of them in {md(full_page)}" if full_page else ""
            parts.append(f"\n{rest} more scenarios not shown (comment size limit){where}\n")
            break
        parts.append(section)
        size += len(section)
    return "\n".join(parts)
