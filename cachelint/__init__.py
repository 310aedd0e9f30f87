"""cachelint: keep a committed LLM response cache byte-exact, portable and replayable offline."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Metric", "Rating", "__version__"]

if TYPE_CHECKING:
    from cachelint.runner.metrics import Metric, Rating


def __getattr__(name: str) -> Any:
    # Lazy, so `import cachelint` on the hook's fast path stays as cheap as before.
    if name in ("Metric", "Rating"):
        from cachelint.runner import metrics

        return getattr(metrics, name)
    raise AttributeError(f"module 'cachelint' has no attribute {name!r}")
