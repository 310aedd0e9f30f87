"""`evidence.too_deep`: the depth bound every results file read back is held to, exactly."""

from __future__ import annotations

import random
from typing import Any

from cachelint.runner.evidence import MAX_DEPTH, too_deep


def _depth(value: Any) -> int:
    """Levels of lists and objects, the outermost counted (recursive: the reference)."""
    if not isinstance(value, (dict, list)):
        return 0
    children = value.values() if isinstance(value, dict) else value
    return 1 + max((_depth(c) for c in children), default=0)


def _chain(levels: int) -> Any:
    """`levels` nested containers, lists and objects in turn."""
    value: Any = "leaf"
    for n in range(levels):
        value = [value] if n % 2 else {"k": value, "n": n}
    return value


def test_the_bound_is_max_depth_levels_whatever_wraps_them() -> None:
    for levels in (MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, MAX_DEPTH + 2):
        deep = _chain(levels)
        assert too_deep(deep) is (levels > MAX_DEPTH), levels
        # Beside many shallow siblings, first or last, under a list or an object.
        wide = [*([{"a": [1]}] * 50), deep, *([[]] * 50)]
        assert too_deep(wide) is (levels + 1 > MAX_DEPTH), levels
        assert too_deep({"z": 1, "deep": deep}) is (levels + 1 > MAX_DEPTH), levels


def test_it_agrees_with_the_recursive_depth_on_mixed_documents() -> None:
    rnd = random.Random(37)

    def build(room: int, budget: list[int]) -> Any:
        budget[0] -= 1
        if room == 0 or budget[0] < 0 or rnd.random() < 0.05:
            return rnd.choice([1, "s", None, 2.5, [], {}])
        count = rnd.choice([0, 1, 1, 1, 2])
        if rnd.random() < 0.5:
            return [build(room - 1, budget) for _ in range(count)]
        return {str(i): build(room - 1, budget) for i in range(count)}

    seen = set()
    for _ in range(2000):
        value = [build(rnd.randint(1, MAX_DEPTH + 20), [3000])]
        depth = _depth(value)
        seen.add(depth > MAX_DEPTH)
        assert too_deep(value) is (depth > MAX_DEPTH), depth
    assert seen == {True, False}
