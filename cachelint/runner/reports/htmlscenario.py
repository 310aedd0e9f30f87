"""One scenario's recorded conversation and checks as HTML (runner/htmlreport.py draws the page).

Every call of every trial with every message it sent (system included) and its answer; what a
call repeats of the conversation above it is folded into a count. A system text sent by several
scenarios of one tenant is written once, under the tenant's heading, and each scenario's turn
links to it (`Shared`): the text of a large suite's prompts was most of its page. With
JavaScript on, opening a scenario fills each link in with the text (`textContent`, never markup).
An answer longer than the review's cut (1,500 characters) shows its start and the rest behind a
closed <details> that counts it.
A passed trial's conversation and checks are written inside <noscript> (`trial_body`): with
JavaScript off the parser reads them as markup, as before; with it on, as one text node, which the
search reads and the script turns into the same elements when the scenario is opened
(htmlassets.py). A failed trial (what a person reads first) keeps its elements. With a passed
scenario drawn as a <div> (`FRAMES`), a page of 20,000 scenarios holds a quarter of the browser's
garbage-collected heap it did, and its search and filter answer sooner.
Every user-derived string goes through `e` (attributes) or `t` (element text).
"""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import blake3

from cachelint.display import UNSAFE_IN_BLOCK_CHARS, sanitize_block
from cachelint.errors import CachelintError
from cachelint.runner.output import call_arguments, output_from_value
from cachelint.settings import ReportSettings

# A shorter text is no larger written out than its link.
SHARE_MIN = 64

# The turns that are answers: one longer than ANSWER_CHARS (the review's cut too) shows its
# start, and the rest behind a closed <details> that says how many characters it holds.
ANSWER_CHARS = 1_500
_ANSWERS = frozenset({"assistant", "response"})
# Roles written without quotes (an attribute value of letters needs none): 100,000s of turns.
_PLAIN_ROLES = frozenset({"system", "user", "assistant", "tool", "response"})

# What changes in a value: `[&<>]` (and in an attribute, quotes) or display.UNSAFE_IN_BLOCK, as one
# class (LF left out), which `re` searches about five times faster than an alternation with its
# lookahead: a page searches every value it writes, and most need
# nothing (tests/test_html_text.py checks that the classes match the same characters).
_NEEDS_ESCAPE = re.compile(f"[&<>\"'{UNSAFE_IN_BLOCK_CHARS}]")
_TEXT_NEEDS_ESCAPE = re.compile(f"[&<>{UNSAFE_IN_BLOCK_CHARS}]")


def escape(value: Any) -> str:
    """`value` HTML-escaped, quotes included: model answers and dataset text with bidi marks,
    controls and lone surrogates shown as escapes (`display.sanitize_block`)."""
    text = value if type(value) is str else str(value)
    if _NEEDS_ESCAPE.search(text) is None:
        return text
    return html.escape(sanitize_block(text), quote=True)


def text(value: Any) -> str:
    """`escape` for an element's text (never an attribute): quotes stay quotes, a sixth of the bytes
    of `&#x27;` in every reason and answer that holds one."""
    text = value if type(value) is str else str(value)
    if _TEXT_NEEDS_ESCAPE.search(text) is None:
        return text
    return html.escape(sanitize_block(text), quote=False)


def verdict(passed: bool) -> str:
    return '<span class="pass">PASS</span>' if passed else '<span class="fail">FAIL</span>'


VERDICT_B = {True: "<b class=pass>PASS</b>", False: "<b class=fail>FAIL</b>"}


def _verdict_cell(passed: bool) -> str:
    # A cell's end tag is implied by the next cell or row (HTML's optional end tags).
    return "<td class=pass>PASS<td>" if passed else "<td class=fail>FAIL<td>"


def _content(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


Turn = tuple[str, str]  # (role, text) as the page shows one part of a conversation


Shared = Mapping[str, str]  # a system text sent by several scenarios -> the id it is shown under

CALL_LINE = "<div data-testid=call>"  # a call's line: "call 1 of 2: model m, cache hit"


def _message(role: str, body: str, extra: str = "", shared: Shared | None = None) -> str:
    # The role's name and colour come from the attribute (CSS `::before`, shown with JavaScript
    # off too): no element but the text's own per turn, and a page holds 100,000s of turns.
    note = f' data-note="{escape(extra)}"' if extra else ""
    ident = shared.get(body) if shared and role == "system" else None
    if ident is not None:
        return (
            f'<div data-role="system"{note}><a class=same href=#{ident}>text {ident} (above)</a>'
            "</div>"
        )
    shown = _long(body) if role in _ANSWERS else f"<pre>{text(body)}</pre>"
    quoted = role if role in _PLAIN_ROLES else f'"{escape(role)}"'
    return f"<div data-role={quoted}{note}>{shown}</div>"


def _long(body: str) -> str:
    """An answer, cut after ANSWER_CHARS characters with the rest in a closed <details> saying
    how many more there are: the scenario list stays short, and the text is still on the page
    once and whole (in the search, in the browser's find, which opens the details, and with
    JavaScript off)."""
    if len(body) <= ANSWER_CHARS:
        return f"<pre>{text(body)}</pre>"
    head, rest = body[:ANSWER_CHARS], body[ANSWER_CHARS:]
    return (
        f"<pre>{text(head)}</pre><details class=more><summary>… {len(rest):,} more "
        f"characters</summary><pre>{text(rest)}</pre></details>"
    )


def system_texts(trials: Sequence[Mapping[str, Any]]) -> list[str]:
    """The system texts of SHARE_MIN characters or more the trials sent, each once, first sent
    first (an order that never depends on string hashing, so neither does the page)."""
    sent: dict[str, None] = {}
    for trial in trials:
        for call in (*(trial.get("calls") or ()), *(trial.get("judge_calls") or ())):
            listed = call.get("messages")
            for message in trial.get("messages") or () if listed is None else listed:
                if message.get("role") == "system":
                    body = _body(message)  # the text of its "system" turn (`_turns`)
                    if body is not None and len(body) >= SHARE_MIN:
                        sent[body] = None
    return list(sent)


def text_key(body: str) -> bytes:
    """A system text's key for `shared_texts`: 16 bytes however long the text (a large run keeps
    the keys of every scenario's texts, and only the texts two scenarios sent)."""
    # blake3 as every digest here: hashlib would load OpenSSL (~3 ms) for this alone.
    return blake3.blake3(body.encode("utf-8", "surrogatepass")).digest(16)


def shared_texts(sent: Iterable[Sequence[tuple[bytes, str | None]]], prefix: str) -> dict[str, str]:
    """Of the scenarios given, each as its `system_texts` by `text_key` (with the text, or None
    where it is not held: another scenario's pair then gives it), the texts two or more scenarios
    sent: text -> `<prefix><n>`, in first-sent order."""
    counts: Counter[bytes] = Counter()
    texts: dict[bytes, str] = {}
    for scenario in sent:
        for key, body in scenario:
            counts[key] += 1
            if body is not None:
                texts.setdefault(key, body)
    shared = (texts[key] for key, n in counts.items() if n > 1 and key in texts)
    return {body: f"{prefix}{i}" for i, body in enumerate(shared)}


def shared_block(shared: Shared) -> str:
    """Each shared text once, with the id the scenarios' turns link to."""
    return "".join(
        f'<div class="shared" data-role="system" data-note=" {ident}, sent by several scenarios '
        f'below"><pre id="{ident}">{text(body)}</pre></div>'
        for body, ident in shared.items()
    )


def _body(message: Mapping[str, Any]) -> str | None:
    """The text of the message's own turn, None without content."""
    content = message.get("content")
    return None if content in (None, "") else _content(content)


def _turns(message: Mapping[str, Any]) -> list[Turn]:
    turns: list[Turn] = []
    body = _body(message)
    if body is not None:
        turns.append((str(message.get("role", "?")), body))
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        turns.append(("tool call", f"{fn.get('name')}({call_arguments(fn.get('arguments', ''))})"))
    return turns


def _answer(response: Any) -> list[Turn]:
    """A recorded response as turns: its tool calls and its text, whatever the API."""
    if response is None:
        return []
    try:
        output = output_from_value(response)
    except (CachelintError, TypeError, ValueError, AttributeError):
        return [("response", _content(response))]
    return _output_turns(output.text, [(c.name, c.arguments) for c in output.tool_calls])


def _output_turns(text: Any, calls: Sequence[tuple[Any, Any]]) -> list[Turn]:
    turns: list[Turn] = [("tool call", f"{name}({call_arguments(args)})") for name, args in calls]
    return turns + ([("assistant", str(text))] if text else [])


def _calls(
    calls: Sequence[Mapping[str, Any]], trial: Mapping[str, Any], label: str, shared: Shared
) -> tuple[list[str], list[Turn]]:
    """Every call's messages and answer, in call order. What a call repeats of the conversation
    shown above it (a tool loop sends it all again) is folded into a count, never dropped."""
    parts: list[str] = []
    above: list[Turn] = []
    for i, call in enumerate(calls, 1):
        sent = call.get("messages")
        if sent is None:  # results written before each call kept its messages: the scenario's
            sent = trial.get("messages") or []
        # A trial's one target call keeps its response on the trial (not written twice).
        answer = _answer(call.get("response", trial.get("response")))
        turns = [t for m in sent for t in _turns(m)]
        same = 0
        while same < min(len(turns), len(above)) and turns[same] == above[same]:
            same += 1
        hit = "cache hit" if call.get("cache_hit") else "live"
        folded = f"; the first {same} message(s) as above" if same else ""
        parts.append(
            f"{CALL_LINE}{text(label)} {i} of {len(calls)}: model "
            f"{text(call.get('model') or '?')}, {hit}{folded}</div>"
        )
        parts.extend(_message(role, body, "", shared) for role, body in turns[same:] + answer)
        above = turns + answer
    return parts, above


class Frame(NamedTuple):
    """The elements a scenario is written in: its own (with `open`), and its line's."""

    tag: str
    opened: str
    line: str
    line_attributes: str


# A failed scenario is a <details>, open. A passed one is a <div> whose line is a button the
# script opens it with: Chromium gives every <details> a shadow tree of its own (about 5 kB of
# its garbage-collected heap, a page of 20,000 of them two thirds of it), which V8's major
# garbage collection traced in the first keys typed after a load (0.2 to 1.9 s on a shared
# machine). With JavaScript off its content is all shown (a <noscript>'s markup, `trial_body`).
FRAMES = {
    False: Frame("details", " open", "summary", ""),
    True: Frame("div", "", "button", " aria-expanded=false"),
}


def trial_body(trial: Mapping[str, Any], shared: Shared, settings: ReportSettings) -> str:
    """The trial's conversation and checks; a passed trial's inside one <noscript> (see the
    module's note) but for its first call's line, an element that ends the scenario's <p> above
    (with JavaScript on that <p> would hold the <noscript> otherwise). Every user-derived string
    in it is escaped, so no `</noscript>` can end it early."""
    parts = _conversation(trial, shared)
    head = parts.pop(0) if parts and parts[0].startswith(CALL_LINE) else ""
    body = "".join(parts) + checks(trial, settings)
    return head + (f"<noscript>{body}</noscript>" if trial.get("passed") else body)


def _conversation(trial: Mapping[str, Any], shared: Shared) -> list[str]:
    """Every call of the trial, each with every message it sent (system included) and its
    answer; then the target's final output where it is not the last answer; then the judges'
    calls, folded."""
    parts: list[str] = []
    calls = trial.get("calls") or []
    last: list[Turn] = []
    if calls:
        shown, last = _calls(calls, trial, "call", shared)
        parts.extend(shown)
    else:  # no call was answered (a miss, an error): what the scenario sends
        sent = [turn for m in trial.get("messages") or [] for turn in _turns(m)]
        parts.extend(_message(r, b, "", shared) for r, b in sent)
    output = trial.get("output")
    if output is not None:
        calls_made = [(c.get("name"), c.get("arguments")) for c in output.get("tool_calls") or []]
        final = _output_turns(output.get("text"), calls_made)
        if final and final != last[-len(final) :]:
            parts.extend(_message(role, body, " (final output)") for role, body in final)
    judged = trial.get("judge_calls") or []
    if judged:
        shown, _ = _calls(judged, {}, "judge call", shared)
        parts.append(f"<details><summary>judge calls ({len(judged)})</summary>")
        parts.extend(shown)
        parts.append("</details>")
    return parts


def checks(trial: Mapping[str, Any], settings: ReportSettings) -> str:
    # No header row: each row reads "contains | PASS | found 'refund'" (the page has one such
    # table per trial, 20,000 in a large suite's).
    rows = ["<table>"]
    if trial.get("error"):
        rows.append(f"<tr><td>run{_verdict_cell(False)}<pre>{text(trial['error'])}</pre>")
    for a in trial.get("assertions") or []:
        rows.append(
            f"<tr><td>{text(a.get('type'))}{_verdict_cell(bool(a.get('passed')))}"
            f"{text(a.get('reason'))}"
        )
    for j in trial.get("judges") or []:
        score = j.get("score")
        reading = settings.interpret(score if isinstance(score, int) else None)
        shown = f"{score}/5" if isinstance(score, int) else "no score"
        rows.append(
            f'<tr class="judge"><td>judge {escape(j.get("metric"))}</td><td>{escape(shown)} '
            f'<span class="{escape(reading.replace(" ", "-"))}">{escape(reading)}</span></td>'
            f"<td>{escape(j.get('reason'))} (reported, not gating)</td></tr>"
        )
    for m in trial.get("metrics") or []:
        rows.append(_metric_row(m))
    rows.append("</table>")
    return "".join(rows)


def _metric_row(metric: Mapping[str, Any]) -> str:
    """A custom evaluator's metric: its rating as the verdict, its value and reason."""
    value = metric.get("value")
    shown = ("true" if value else "false") if isinstance(value, bool) else f"{value}"
    if isinstance(value, float):
        shown = f"{value:g}"
    rating = str(metric.get("rating") or "unknown")
    gate = "" if metric.get("gating", True) else " (reported, not gating)"
    failed = " FAILED" if metric.get("failed") else ""
    return (
        f'<tr class="metric"><td>metric {escape(metric.get("name"))}</td>'
        f"<td>{escape(rating)}{failed}</td>"
        f"<td>{escape(metric.get('name'))} = {escape(shown)} ({escape(rating)}): "
        f"{escape(metric.get('reason'))}{gate}</td></tr>"
    )
