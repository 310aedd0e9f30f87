"""cachelint: keep a committed LLM response cache byte-exact, portable and replayable offline."""

from __future__ import annotations

__version__ = "0.1.0"
