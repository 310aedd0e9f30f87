"""Prices and cost: `[tool.cachelint.prices]` and what recorded token usage cost.

    [tool.cachelint.prices]
    "gpt-4o-mini" = { input = 0.15, output = 0.60 }   # US dollars per million tokens

Replay reads the usage recorded in each cache entry's response, so a cost figure is the same offline
as it was when recorded. Providers name the counts differently (OpenAI
`prompt_tokens`/`completion_tokens`, Anthropic and the Responses API `input_tokens`/
`output_tokens`, Gemini `promptTokenCount`/`candidatesTokenCount`, Bedrock's Converse
`inputTokens`/`outputTokens`); every spelling is read. The
`cost` assertion, the run reports and the budget share this module and this one price table.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# OpenAI chat completions say prompt/completion; the Responses API and Anthropic say input/output;
# Gemini counts the prompt and the candidates; Bedrock's Converse says input/output in camelCase.
_INPUT_KEYS = ("prompt_tokens", "input_tokens", "promptTokenCount", "inputTokens")
_OUTPUT_KEYS = ("completion_tokens", "output_tokens", "candidatesTokenCount", "outputTokens")


@dataclass(frozen=True)
class Price:
    input: float  # dollars per million input tokens
    output: float  # dollars per million output tokens


def parse_prices(table: Any) -> Mapping[str, Price]:
    """`[tool.cachelint.prices]`; ValueError says what is expected (config.py names the file)."""
    if not isinstance(table, dict):
        raise ValueError("a table of model -> {input = $/Mtok, output = $/Mtok}")
    out: dict[str, Price] = {}
    for model, spec in table.items():
        if not isinstance(spec, dict) or set(spec) != {"input", "output"}:
            raise ValueError(f"{model}: {{input = <$/Mtok>, output = <$/Mtok>}}, both keys")
        values = []
        for side in ("input", "output"):
            value = spec[side]
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or value < 0
            ):
                raise ValueError(f"{model}.{side}: a number of dollars per million tokens, >= 0")
            values.append(float(value))
        out[str(model)] = Price(*values)
    return out


def _tokens(usage: Mapping[str, Any], keys: Iterable[str]) -> int | None:
    for key in keys:
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def call_cost(
    usage: Mapping[str, Any] | None, model: str, prices: Mapping[str, Price]
) -> tuple[float | None, str]:
    """(dollars, "") for one call's usage, or (None, why not)."""
    price = prices.get(model)
    if price is None:
        known = ", ".join(sorted(prices)) or "none"
        return None, f"no price for model {model!r} in [tool.cachelint.prices] (priced: {known})"
    if not usage:
        return None, "no token usage recorded in the response"
    tokens_in, tokens_out = _tokens(usage, _INPUT_KEYS), _tokens(usage, _OUTPUT_KEYS)
    if tokens_in is None or tokens_out is None:
        return None, "recorded usage has no input/output token counts"
    return (tokens_in * price.input + tokens_out * price.output) / 1_000_000, ""


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


def total_cost(
    usages: Iterable[Mapping[str, Any] | None], model: str, prices: Mapping[str, Price]
) -> float | None:
    """USD for all `usages` of `model` (a dated snapshot takes its family's price); None when
    the price table has no entry for it."""
    price = prices.get(price_for(model, prices))
    if price is None:
        return None
    return sum(cost(u, price) for u in usages)


def money(value: float | None) -> str:
    """A cost as people read it in a report: `$0.0123`, or `n/a` when the model has no price."""
    if value is None:
        return "n/a"
    return f"${value:.4f}" if value < 100 else f"${value:,.2f}"
