"""Dataset assertions inside a team's own pytest tests: `cachelint.expect(spec, ...)` checks specs
(docs/assertions.md), trajectory and schema ones included, against the model calls the test made
through the fixture so far, and fails the test with each failed assertion's reason."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cachelint.errors import CachelintError
from cachelint.runner.assertions import NEEDS_A_RUN, evaluate, validate_assertion
from cachelint.runner.client import CallRecord
from cachelint.runner.output import Output, output_from_value


def expect(specs: Sequence[Mapping[str, Any]], calls: Sequence[CallRecord], answer: Any) -> None:
    """Check each spec over `calls`, failing with each failed one's reason; the output checks see
    `answer` (what the test's agent returned: a string, a chat.completion, ...), else the last
    target call's answer."""
    if answer is not None:
        output = output_from_value(answer)
    else:
        target = [c for c in calls if c.purpose == "target"]
        output = output_from_value(target[-1].response) if target else Output("")
    failed = []
    for i, raw in enumerate(specs):
        spec = validate_assertion(raw, f"cachelint.expect: spec {i}")
        kind = spec["type"]
        if kind in NEEDS_A_RUN:
            raise CachelintError(
                f"cachelint.expect: spec {i}: {kind!r} needs `cachelint run`; in a test, assert "
                "on the value directly"
            )
        result = evaluate(spec, output, calls)
        if not result.passed:
            failed.append(f"{result.type}: {result.reason}")
    if failed:
        raise AssertionError("\n".join(failed))
