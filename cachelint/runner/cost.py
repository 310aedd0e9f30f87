"""Price recorded token usage: a price table per model, USD per million input/output tokens.

Replay answers from the recorded responses, whose `usage` is the provider's own count, so a cost
computed here is the same offline as it was when the entry was recorded. Providers name the counts
differently (OpenAI `prompt_tokens`/`completion_tokens`, Anthropic and the Responses API
`input_tokens`/`output_tokens`); both spellings are read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

_INPUT = ("prompt_tokens", "input_tokens")
_OUTPUT = ("completion_tokens", "output_tokens")


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float


def tokens(usage: Mapping[str, Any] | None) -> tuple[int, int]:
    """(input, output) tokens of one usage mapping; missing or non-integer counts are 0."""
    if not usage:
        return 0, 0

    def first(names: tuple[str, ...]) -> int:
        for name in names:
            value = usage.get(name)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        return 0

    return first(_INPUT), first(_OUTPUT)


def cost(usage: Mapping[str, Any] | None, price: Price) -> float:
    """USD for one usage mapping at `price`."""
    n_in, n_out = tokens(usage)
    return (n_in * price.input + n_out * price.output) / 1_000_000


def total_cost(
    usages: Iterable[Mapping[str, Any] | None], model: str, prices: Mapping[str, Price]
) -> float | None:
    """USD for all `usages` of `model`; None when the price table has no entry for it."""
    price = prices.get(model)
    if price is None:
        return None
    return sum(cost(u, price) for u in usages)


def money(value: float | None) -> str:
    """A cost as people read it: `$0.0123`, or `n/a` when the model has no price."""
    if value is None:
        return "n/a"
    return f"${value:.4f}" if value < 100 else f"${value:,.2f}"
