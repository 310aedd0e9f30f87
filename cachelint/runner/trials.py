"""Reading back a results file's verdict under the `pass` policy it names (`cachelint.passpolicy`
holds the policy itself, for datasets, the config's `trials-pass` and the pytest marker)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cachelint.passpolicy import ALL, PassPolicy


def policy_from_text(text: Any) -> PassPolicy:
    """The policy a results file names (`describe()`'s words); "all" when it names none."""
    words = str(text or "all").split()
    try:
        if words[:2] == ["at", "least"] and len(words) == 3:
            return PassPolicy("at-least", int(words[2]))
        if words[:1] == ["rate"] and len(words) == 2:
            return PassPolicy("rate", float(words[1]))
    except ValueError:
        pass
    return ALL


def recorded_verdict(record: Any, verdicts: Sequence[bool]) -> bool:
    """The verdict a results record's trials make under the policy it names."""
    policy = policy_from_text(record.get("pass_policy"))
    trials = record.get("trials") or []
    errored = any(isinstance(t, dict) and t.get("error") for t in trials)
    return policy.passes(verdicts, errored)
