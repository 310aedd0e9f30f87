"""Prices and cost: `[tool.cachelint.prices]` and what recorded token usage cost.

    [tool.cachelint.prices]
    "gpt-4o-mini" = { input = 0.15, output = 0.60 }   # US dollars per million tokens

Replay reads the usage recorded in each cache entry's response, so a cost figure is the same offline
as it was when recorded. Providers name the counts differently (OpenAI
`prompt_tokens`/`completion_tokens`, Anthropic and the Responses API `input_tokens`/
`output_tokens`, Gemini `promptTokenCount`/`candidatesTokenCount`, Bedrock's Converse
`inputTokens`/`outputTokens`); every spelling is read. The
`cost` assertion, the run reports and the budget share this module and this one price table.

A call no price covers (its model is not in the table, or its response recorded no token usage)
is never counted as free: a `Spend` carries the dollars of the priced calls and the calls that
could not be priced, and says "at least $X (N calls unpriced: model M)" wherever it is shown.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cachelint.settings import Price

# OpenAI chat completions say prompt/completion; the Responses API and Anthropic say input/output;
# Gemini counts the prompt and the candidates; Bedrock's Converse says input/output in camelCase.
_INPUT_KEYS = ("prompt_tokens", "input_tokens", "promptTokenCount", "inputTokens")
_OUTPUT_KEYS = ("completion_tokens", "output_tokens", "candidatesTokenCount", "outputTokens")


def _tokens(usage: Mapping[str, Any], keys: Iterable[str]) -> int | None:
    for key in keys:
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def unpriced_reason(spend: Spend, prices: Mapping[str, Price]) -> str:
    """Why a call's `spend` has no figure, as the `cost` assertion says it."""
    why = spend.unpriced[0][0] if spend.unpriced else ""
    if why.startswith("model "):
        known = ", ".join(sorted(prices)) or "none"
        model = why[len("model ") :]
        return f"no price for model {model!r} in [tool.cachelint.prices] (priced: {known})"
    return "no token usage recorded in the response"


def response_model(response: Any, default: str) -> str:
    """The model a response names (a provider may answer with a dated snapshot), else the
    configured one."""
    if isinstance(response, Mapping) and isinstance(response.get("model"), str):
        return str(response["model"])
    return default


def price_for(model: str, prices: Mapping[str, Price]) -> str:
    """`model` itself when priced, else the longest priced name it starts with, so a dated
    snapshot ("gpt-4o-mini-2024-07-18") takes its family's price."""
    if model in prices:
        return model
    family = [name for name in prices if model.startswith(name)]
    return max(family, key=len) if family else model


def pricing_model(
    asked: str | None, answered: Any, default: str, prices: Mapping[str, Price]
) -> str:
    """The price-table name one call is priced at: the model it asked for (`default` when it
    does not say) when the table prices it, else the model its response names (an Azure
    deployment answers with the model behind it), else the asked-for name, unpriced. The `cost`
    assertion and every report price a call by this one rule, so they agree."""
    wanted = price_for(asked or default, prices)
    if wanted in prices:
        return wanted
    served = price_for(response_model(answered, wanted), prices)
    return served if served in prices else wanted


# A token count (Anthropic's count_tokens, Gemini's countTokens) answers with a count, no usage:
# the APIs charge nothing for it.
_COUNT_ANSWERS = ("input_tokens", "totalTokens")


def _free(response: Any) -> bool:
    return (
        isinstance(response, Mapping)
        and "usage" not in response
        and "usageMetadata" not in response
        and any(isinstance(response.get(k), int) for k in _COUNT_ANSWERS)
    )


@dataclass(frozen=True)
class Spend:
    """What some calls cost: the dollars of the priced ones, and how many could not be priced,
    by why (`model M`, `no usage recorded`). Added up over scenarios, groups and the run."""

    dollars: float = 0.0
    unpriced: tuple[tuple[str, int], ...] = field(default=())  # (why, calls), sorted

    @property
    def complete(self) -> bool:
        return not self.unpriced

    @property
    def unpriced_calls(self) -> int:
        return sum(n for _, n in self.unpriced)

    def unpriced_models(self) -> list[str]:
        return [why[len("model ") :] for why, _ in self.unpriced if why.startswith("model ")]

    def __add__(self, other: Spend) -> Spend:
        counts = dict(self.unpriced)
        for why, n in other.unpriced:
            counts[why] = counts.get(why, 0) + n
        return Spend(self.dollars + other.dollars, tuple(sorted(counts.items())))

    def gap(self) -> str:
        """`2 calls unpriced: model m`, or "" when every call was priced."""
        n = self.unpriced_calls
        if not n:
            return ""
        whys = [w if len(self.unpriced) == 1 else f"{w} ({k})" for w, k in self.unpriced]
        return f"{n} call{'s' if n != 1 else ''} unpriced: {', '.join(whys)}"

    def text(self) -> str:
        """`$0.0030`, or `at least $0.0030 (2 calls unpriced: model m)`."""
        if self.complete:
            return money(self.dollars)
        return f"at least {money(self.dollars)} ({self.gap()})"


def call_spend(
    usage: Mapping[str, Any] | None,
    asked: str | None,
    response: Any,
    default: str,
    prices: Mapping[str, Price],
) -> Spend:
    """One call's `Spend`: priced by `pricing_model`, or counted as unpriced with the reason."""
    model = pricing_model(asked, response, default, prices)
    price = prices.get(model)
    if price is None:
        return Spend(0.0, ((f"model {model}", 1),))
    if not usage or usage_tokens(usage) is None:
        return Spend() if _free(response) else Spend(0.0, (("no usage recorded", 1),))
    return Spend(cost(usage, price))


def usage_tokens(usage: Mapping[str, Any]) -> tuple[int, int] | None:
    """(input, output) tokens when `usage` counts either, else None."""
    n_in, n_out = _tokens(usage, _INPUT_KEYS), _tokens(usage, _OUTPUT_KEYS)
    if n_in is None and n_out is None:
        return None
    return n_in or 0, n_out or 0


def format_dollars(value: float) -> str:
    return f"${value:.6f}".rstrip("0").rstrip(".") if value else "$0"


def tokens(usage: Mapping[str, Any] | None) -> tuple[int, int]:
    """(input, output) tokens of one usage mapping; missing or non-integer counts are 0."""
    if not usage:
        return 0, 0
    return _tokens(usage, _INPUT_KEYS) or 0, _tokens(usage, _OUTPUT_KEYS) or 0


def cost(usage: Mapping[str, Any] | None, price: Price) -> float:
    """USD for one usage mapping at `price`."""
    n_in, n_out = tokens(usage)
    return (n_in * price.input + n_out * price.output) / 1_000_000


def money(value: float | None) -> str:
    """A cost as people read it in a report: `$0.0123`, or `n/a` when the model has no price."""
    if value is None:
        return "n/a"
    return f"${value:.4f}" if value < 100 else f"${value:,.2f}"
