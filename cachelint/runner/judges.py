"""LLM-as-judge metrics: reported next to the assertions, never gating.

A judge call is an ordinary chat request built from fixed text (no timestamps, no randomness), so
it gets a stable key and replays offline from the same committed cache: the run command builds it
with `build_request(..., scenario=<identity>, messages=judge_messages(...), options=JUDGE_OPTIONS)`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from cachelint.runner.output import Output
from cachelint.settings import METRICS

if TYPE_CHECKING:  # dataset imports METRICS from here; keep the runtime import one-way
    from cachelint.runner.dataset import Scenario


# Temperature 0 keeps a re-record as close to the recorded score as the provider allows.
JUDGE_OPTIONS: Mapping[str, Any] = MappingProxyType({"temperature": 0})

_RUBRICS: dict[str, str] = {
    "relevance": (
        "Relevance: does the response address what the user asked, staying on topic?\n"
        "5 = fully addresses the request, nothing off-topic\n"
        "4 = addresses the request with minor digressions\n"
        "3 = partly addresses it, or notable off-topic content\n"
        "2 = mostly misses the request\n"
        "1 = unrelated to the request"
    ),
    "completeness": (
        "Completeness: does the response cover everything the request needs?\n"
        "5 = covers every part of the request, with the details needed to act on it\n"
        "4 = covers every main part, minor details missing\n"
        "3 = covers some parts, misses others\n"
        "2 = covers little of what was needed\n"
        "1 = covers nothing the request needed"
    ),
    "coherence": (
        "Coherence: is the response well organised, consistent and easy to follow?\n"
        "5 = clear, logically ordered, no contradictions\n"
        "4 = clear with small lapses in flow\n"
        "3 = understandable but disorganised or repetitive\n"
        "2 = hard to follow or self-contradictory\n"
        "1 = incoherent"
    ),
}

_INSTRUCTIONS = (
    "You are an impartial evaluator. Rate the assistant's final response on one metric, using "
    "only the rubric below. Do not reward length.\n\n"
    "{rubric}\n\n"
    'Reply with exactly one JSON object and nothing else: {{"score": <integer 1-5>, '
    '"reason": "<one sentence>"}}'
)


def rubric(metric: str) -> str:
    try:
        return _RUBRICS[metric]
    except KeyError:
        raise ValueError(
            f"unknown judge metric {metric!r}; allowed: {', '.join(sorted(METRICS))}"
        ) from None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", "")) if isinstance(p, Mapping) else str(p) for p in content
        )
    return "" if content is None else json.dumps(content, ensure_ascii=False, sort_keys=True)


def _render_output(output: Output) -> str:
    parts = [output.text] if output.text else []
    for call in output.tool_calls:
        args = json.dumps(call.arguments, ensure_ascii=False, sort_keys=True)
        parts.append(f"[tool call] {call.name}({args})")
    return "\n".join(parts) if parts else "(empty response)"


def judge_messages(
    metric: str, scenario: Scenario, output: Output, rubric_text: str | None = None
) -> list[dict[str, Any]]:
    """The chat messages asking a judge model to score `output` on `metric` (1-5); a custom
    metric brings its own `rubric_text` from [tool.cachelint.judge.metrics]."""
    instructions = _INSTRUCTIONS.format(rubric=rubric_text or rubric(metric))
    # The system prompt is the agent's instructions, which the judge should know about too:
    # "relevant" and "complete" are relative to what the agent was told to do.
    lines: list[str] = []
    for message in scenario.messages:
        role = str(message.get("role", "user"))
        lines.append(f"<{role}>\n{_text(message.get('content'))}\n</{role}>")
    conversation = "\n".join(lines)
    user = (
        f"Metric: {metric}\n\n"
        f"<conversation>\n{conversation}\n</conversation>\n\n"
        f"<response>\n{_render_output(output)}\n</response>\n\n"
        f"Score the response for {metric} as the JSON object described."
    )
    return [
        {"role": "system", "content": instructions},
        {"role": "user", "content": user},
    ]


_SCORE_LINE = re.compile(
    r"""^[\s>*_#-]*score[\s*_]*[:=][\s*_]*(?P<n>-?\d+(?:\.\d+)?)[\s*_]*(?:/\s*(?P<of>\d+))?""",
    re.IGNORECASE | re.MULTILINE,
)
_REASON_LINE = re.compile(
    r"^[\s>*_#-]*(?:reason|explanation|rationale)[\s*_]*[:=][\s*_]*(?P<r>.+)$",
    re.IGNORECASE | re.MULTILINE,
)


def _json_objects(text: str) -> list[Any]:
    """Every JSON object embedded in `text` (judges wrap JSON in prose or ``` fences)."""
    decoder = json.JSONDecoder()
    found: list[Any] = []
    pos = text.find("{")
    while pos >= 0:
        try:
            value, end = decoder.raw_decode(text, pos)
        except ValueError:
            pos = text.find("{", pos + 1)
            continue
        found.append(value)
        pos = text.find("{", end)
    return found


def _as_score(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip().split("/")[0])
        except ValueError:
            return None
    return None


def _checked(number: float, reason: str, shown: str) -> tuple[int | None, str]:
    if number != int(number):
        return None, f"score {shown} is not a whole number from 1 to 5; {reason}".rstrip("; ")
    if not 1 <= number <= 5:
        return None, f"score {shown} out of range 1-5; {reason}".rstrip("; ")
    return int(number), reason


def parse_score(completion_text: str) -> tuple[int | None, str]:
    """(score 1-5 or None, the judge's reason, or why no score could be read).

    Accepts a JSON object {"score": n, "reason": "..."} (bare, fenced or inside prose) and a
    "Score: 4" (or "Score: 4/5") line with an optional "Reason: ..." line."""
    for obj in _json_objects(completion_text):
        if isinstance(obj, Mapping) and "score" in obj:
            reason_value = obj.get("reason", obj.get("explanation", ""))
            reason = reason_value if isinstance(reason_value, str) else json.dumps(reason_value)
            number = _as_score(obj["score"])
            if number is None:
                return None, f"score {json.dumps(obj['score'])} is not a number; {reason}".rstrip(
                    "; "
                )
            return _checked(number, reason.strip(), json.dumps(obj["score"]))
    match = _SCORE_LINE.search(completion_text)
    if match:
        if match.group("of") and match.group("of") != "5":
            return None, f"score given out of {match.group('of')}, expected out of 5"
        reason_match = _REASON_LINE.search(completion_text)
        if reason_match:
            reason = reason_match.group("r").strip()
        else:
            # No labelled reason: the rest of the reply is the explanation.
            rest = (completion_text[: match.start()] + completion_text[match.end() :]).strip()
            reason = " ".join(rest.split())
        return _checked(float(match.group("n")), reason, match.group("n"))
    head = " ".join(completion_text.split())[:80]
    return None, f"no score found in judge reply (first 80 chars: {json.dumps(head)})"
