"""Custom evaluators for the bundled example, named in the datasets as
`{"type": "python", "function": "evals:word_count", ...}` (docs/assertions.md).

`word_count` is Microsoft.Extensions.AI.Evaluation's tutorial `WordCountEvaluator` in Python: it
counts the words of the response and rates the count, good between `min` and `max` words (6 and
100 by default), else unacceptable and failed, which fails the scenario.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from cachelint import Metric


def word_count(scenario: Any, output: Any, options: Mapping[str, Any]) -> Metric:
    low, high = options.get("min", 6), options.get("max", 100)
    words = len(re.findall(r"\b\w+\b", output.text))
    reason = f"the response has {words} words"
    if low <= words <= high:
        return Metric("words", words, f"{reason}, between {low} and {high}", "good")
    return Metric("words", words, f"{reason}, not between {low} and {high}", "unacceptable", True)
