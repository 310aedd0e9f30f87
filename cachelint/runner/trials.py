"""When a scenario of several trials passes: its `pass` policy.

- `"all"` (the default): every trial passes;
- `{"at-least": k}`: at least k trials pass (k no more than `trials`);
- `{"rate": 0.8}`: at least that share of the trials pass.

The policy tolerates failed assertions only (a model's variance from trial to trial): a trial that
errored (a cache miss, a transport error, a target exception, "checks nothing") fails the
scenario whatever the policy, as a miss is never a pass or a skip.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cachelint.errors import CachelintError


@dataclass(frozen=True)
class PassPolicy:
    kind: str  # "all", "at-least" or "rate"
    value: float = 0

    def describe(self) -> str:
        if self.kind == "at-least":
            return f"at least {self.value:g}"
        if self.kind == "rate":
            return f"rate {self.value:g}"
        return "all"

    def passes(self, verdicts: Sequence[bool], errored: bool) -> bool:
        """Whether trials with these verdicts pass; `errored`: some trial did not run through."""
        if errored or not verdicts:
            return False
        passed = sum(verdicts)
        if self.kind == "at-least":
            return passed >= self.value
        if self.kind == "rate":
            return passed >= self.value * len(verdicts) - 1e-9
        return passed == len(verdicts)


ALL = PassPolicy("all")


def parse_policy(value: Any, trials: int, where: str) -> PassPolicy:
    """The policy of a `pass` field (`where` names the file and field); one line when bad."""
    if value == "all":
        return ALL
    if isinstance(value, dict) and len(value) == 1:
        ((kind, number),) = value.items()
        bad_number = isinstance(number, bool) or not isinstance(number, (int, float))
        if kind == "at-least" and not bad_number and number == int(number) and number >= 1:
            if number > trials:
                raise CachelintError(
                    f"{where}: at-least {number:g} is more than the {trials} trial(s); raise "
                    "'trials' or lower it"
                )
            return PassPolicy("at-least", int(number))
        if kind == "rate" and not bad_number and 0 < number <= 1:
            return PassPolicy("rate", float(number))
    raise CachelintError(
        f'{where}: expected "all", {{"at-least": k}} (a whole number >= 1) or {{"rate": r}} '
        f"(0 < r <= 1), got {value!r}"
    )


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
