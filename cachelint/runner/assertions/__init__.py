"""Every assertion type in one table: how its spec is validated when the dataset loads (a typo
must be an error, never a silently disabled check), how it is decided, what it looks at, and
whether it counts as the deterministic check every scenario needs.

`validate_assertion`, `evaluate`, `has_deterministic` and the "unknown assertion type" message read
`REGISTRY`. A type's functions live with its family (`checks`: one answer; `trajectory`: the
target's calls; `schemas`: JSON Schema), so a new type is its functions there and one line here.
The reference is docs/assertions.md; the shipped JSON Schema (cachelint/data/dataset.schema.json)
lists the same types, and tests/test_schema.py holds the two together.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

from cachelint.errors import CachelintError
from cachelint.runner.assertions import checks, schemas, trajectory
from cachelint.runner.assertions.checks import Undecided, Validate, bad, show
from cachelint.runner.client import CallRecord
from cachelint.runner.output import Output

Tools = Sequence[Mapping[str, Any]]
Decide = Callable[[Mapping[str, Any], Output, Sequence[CallRecord], Tools], tuple[bool, str]]
# What a type looks at: one answer (so it may be nested in `trajectory:answer`), the target's
# recorded calls, or the run's timings, prices and imported evaluators (decided in evaluators.py).
Scope = Literal["answer", "calls", "run"]


@dataclass(frozen=True)
class AssertionResult:
    type: str
    passed: bool
    reason: str  # always says why, pass or fail


@dataclass(frozen=True)
class AssertionType:
    validate: Validate
    decide: Decide | None  # None: decided by the run (evaluators.py)
    scope: Scope = "answer"
    deterministic: bool = True  # counts as the check every scenario needs


def _answer(validate: Validate, check: checks.Check) -> AssertionType:
    """A type over one answer."""
    return AssertionType(validate, lambda spec, output, calls, tools: check(spec, output))


def _steps(validate: Validate, check: Callable[..., tuple[bool, str]]) -> AssertionType:
    """A type over the target's calls, each read as an answer (`trajectory.steps`)."""
    return AssertionType(
        validate, lambda spec, output, calls, tools: check(spec, trajectory.steps(calls)), "calls"
    )


def _run(validate: Validate, *, deterministic: bool = True) -> AssertionType:
    """A type decided by the run itself (evaluators.py): timings, prices, imported evaluators."""
    return AssertionType(validate, None, "run", deterministic)


def _validate_nesting(spec: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    return trajectory.validate_answer(spec, where, nested=validate_assertion, not_nested=NOT_NESTED)


def _nesting(spec: Mapping[str, Any], steps: Sequence[trajectory.Step]) -> tuple[bool, str]:
    return trajectory.answer(spec, steps, nested=verdict)


REGISTRY: dict[str, AssertionType] = {
    "contains": _answer(checks.validate_text, checks.contains),
    "icontains": _answer(checks.validate_text, checks.icontains),
    "not-contains": _answer(checks.validate_text, checks.not_contains),
    "not-icontains": _answer(checks.validate_negated, checks.negated),
    "regex": _answer(checks.validate_regex, checks.regex),
    "not-regex": _answer(checks.validate_negated, checks.negated),
    "equals": _answer(checks.validate_equals, checks.equals),
    "not-equals": _answer(checks.validate_negated, checks.negated),
    "length": _answer(checks.validate_length, checks.length),
    "no-pii": _answer(checks.validate_no_pii, checks.no_pii),
    "json-valid": _answer(checks.validate_json_valid, checks.json_valid),
    "json-path": _answer(checks.validate_json_path, checks.json_path),
    "json-schema": _answer(schemas.validate_json_schema, schemas.json_schema),
    "tool-called": _answer(checks.validate_tool_name, partial(checks.tool_use, wanted=True)),
    "tool-not-called": _answer(checks.validate_tool_name, partial(checks.tool_use, wanted=False)),
    "tool-arg": _answer(checks.validate_tool_arg, checks.tool_arg),
    # Checks each tool call against the tools declared in the request that offered it.
    "tool-call-schema": AssertionType(
        schemas.validate_tool_call_schema, schemas.tool_call_schema, "calls"
    ),
    "trajectory:tool-called": _steps(trajectory.validate, trajectory.tool_use),
    "trajectory:tool-not-called": _steps(trajectory.validate, trajectory.tool_use),
    "trajectory:tool-sequence": _steps(trajectory.validate, trajectory.tool_sequence),
    "trajectory:step-count": _steps(trajectory.validate, trajectory.step_count),
    "trajectory:answer": _steps(_validate_nesting, _nesting),
    # A latency limit is only measured on live calls: alone it would let a replayed scenario
    # check nothing, so it is not the deterministic assertion every scenario needs.
    "latency-ms": _run(checks.validate_limit, deterministic=False),
    "cost": _run(checks.validate_limit),
    "python": _run(checks.validate_python),
}
DETERMINISTIC = frozenset(kind for kind, t in REGISTRY.items() if t.deterministic)
NOT_NESTED = frozenset(kind for kind, t in REGISTRY.items() if t.scope != "answer")
NEEDS_A_RUN = frozenset(kind for kind, t in REGISTRY.items() if t.scope == "run")


def validate_assertion(spec: Any, where: str) -> Mapping[str, Any]:
    """One assertion spec, validated (most types give `spec` itself, not a copy); `where` names
    the file and list position, e.g. "eval-datasets/a/b/c.json: assert[2]"."""
    if not isinstance(spec, Mapping):
        raise CachelintError(
            f'{where}: an assertion must be an object like {{"type": "contains", '
            f'"value": "..."}}, got {show(spec)}'
        )
    kind = spec.get("type")
    if not isinstance(kind, str) or kind not in REGISTRY:
        allowed = ", ".join(sorted(REGISTRY))
        raise bad(where, "type", f"unknown assertion type {show(kind)}; allowed: {allowed}")
    return REGISTRY[kind].validate(spec, where)


def has_deterministic(assertions: Iterable[Mapping[str, Any]]) -> bool:
    """Whether a scenario checks anything; one without a deterministic assertion fails the run
    ("checks nothing") instead of passing vacuously."""
    return any(spec.get("type") in DETERMINISTIC for spec in assertions)


def verdict(
    spec: Mapping[str, Any],
    output: Output,
    calls: Sequence[CallRecord] = (),
    tools: Tools = (),
) -> tuple[bool, str]:
    """Whether one validated spec holds for `output` (and the target's recorded `calls`, the
    scenario's declared `tools`), and why; one that cannot be decided fails."""
    kind = spec.get("type")
    entry = REGISTRY.get(kind) if isinstance(kind, str) else None
    if entry is None:
        raise CachelintError(
            f"unknown assertion type {kind!r}; validate specs with validate_assertion first"
        )
    if entry.decide is None:
        raise CachelintError(f"{kind!r} is decided by the run (evaluators.py), not here")
    try:
        return entry.decide(spec, output, calls, tools)
    except Undecided as exc:  # a pattern that timed out fails whatever its type, negated too
        return False, exc.reason


def evaluate(
    spec: Mapping[str, Any],
    output: Output,
    calls: Sequence[CallRecord] = (),
    tools: Tools = (),
) -> AssertionResult:
    """One validated spec's result: its verdict and reason."""
    return AssertionResult(str(spec.get("type")), *verdict(spec, output, calls, tools))
