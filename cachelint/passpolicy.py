"""When a scenario of several trials passes: its `pass` policy.

- `"all"` (the default): every trial passes;
- `{"at-least": k}`: at least k trials pass;
- `{"rate": 0.8}`: at least that share of the trials pass.

A dataset's `pass` field, the `trials-pass` default of `[tool.cachelint]` and the pytest marker
`eval(pass_=...)` all take these values; the core holds them so the configuration can check its
default without importing the runner.

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

    def for_trials(self, trials: int) -> PassPolicy:
        """The policy as it applies to `trials` trials: at least k of fewer than k trials is
        every one of them ("all"), so a suite-wide default of at least 2 asks a one-trial
        scenario for its one trial, and reports name what was asked."""
        if self.kind == "at-least" and self.value > trials:
            return ALL
        return self

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


def read_policy(value: Any) -> PassPolicy | None:
    """The policy `value` spells (`"all"`, `{"at-least": k}`, `{"rate": r}`), or None."""
    if value == "all":
        return ALL
    if isinstance(value, dict) and len(value) == 1:
        ((kind, number),) = value.items()
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            return None
        if kind == "at-least" and number == int(number) and number >= 1:
            return PassPolicy("at-least", int(number))
        if kind == "rate" and 0 < number <= 1:
            return PassPolicy("rate", float(number))
    return None


def parse_policy(value: Any, trials: int, where: str) -> PassPolicy:
    """The policy of a dataset's `pass` field (`where` names the file and field); one line when
    bad, or when it asks for more passing trials than the dataset runs."""
    policy = read_policy(value)
    if policy is None:
        raise CachelintError(
            f'{where}: expected "all", {{"at-least": k}} (a whole number >= 1) or {{"rate": r}} '
            f"(0 < r <= 1), got {value!r}"
        )
    if policy.kind == "at-least" and policy.value > trials:
        raise CachelintError(
            f"{where}: at-least {policy.value:g} is more than the {trials} trial(s); raise "
            "'trials' or lower it"
        )
    return policy


def config_policy(value: Any) -> PassPolicy:
    """`trials-pass` of `[tool.cachelint]`; ValueError says what is expected (config.py adds the
    key and the file)."""
    policy = read_policy(value)
    if policy is None:
        raise ValueError(
            '"all", { at-least = k } (a whole number >= 1) or { rate = r } (0 < r <= 1)'
        )
    return policy
