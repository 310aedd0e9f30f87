"""Test helper: the scripted fake provider on 127.0.0.1 in a background thread.

    from tests.fakes import fake_server

    with fake_server({"rules": [...], "default": {"content": "hi"}}) as fake:
        call(fake.url)                    # "http://127.0.0.1:PORT/v1"
        fake.requests[0].body             # the JSON the client sent
        fake.requests[0].header("authorization")

The script format is documented in cachelint/devtools/fake_script.py.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cachelint.devtools.fake_provider import (
    FakeServer,
    ReceivedRequest,
    load_script,
    parse_script,
    running,
)

__all__ = ["FakeServer", "ReceivedRequest", "fake_server"]


@contextmanager
def fake_server(script: Mapping[str, Any] | Path) -> Iterator[FakeServer]:
    """Start the fake provider on a free port; stop it when the block ends."""
    parsed = (
        load_script(script)
        if isinstance(script, Path)
        else parse_script(dict(script), source="<inline script>")
    )
    with running(parsed) as server:
        yield server
