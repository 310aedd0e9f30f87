"""cachelint: keep a committed LLM response cache byte-exact, portable and replayable offline."""

# Not `typing`, and no `from __future__ import annotations` (it imports __future__): `import
# cachelint` is on the hook's fast path, where every import counts.
TYPE_CHECKING = False

__version__ = "0.1.0"
__all__ = ["Metric", "Rating", "__version__"]

if TYPE_CHECKING:
    from typing import Any

    from cachelint.runner.metrics import Metric, Rating


def __getattr__(name: str) -> "Any":
    # Lazy, so `import cachelint` on the hook's fast path stays as cheap as before.
    if name in ("Metric", "Rating"):
        from cachelint.runner import metrics

        return getattr(metrics, name)
    raise AttributeError(f"module 'cachelint' has no attribute {name!r}")
