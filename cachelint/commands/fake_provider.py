"""`cachelint fake-provider`: serve a scripted OpenAI-compatible endpoint on 127.0.0.1.

For recording demos and CI without a real model; the script format is documented in
cachelint/devtools/fake_script.py.
"""

from __future__ import annotations

import argparse
import signal
import threading
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from cachelint.display import sanitize


class _Terminated(Exception):
    """Raised from the SIGTERM handler to leave `serve_forever` in the main thread."""


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise _Terminated


def fake_provider(*, script: Path, port: int, out: TextIO) -> int:
    """Serve `script` until SIGTERM or Ctrl-C; print the URL first so callers can wait for it."""
    from cachelint.devtools.fake_provider import FakeProvider, load_script, make_server, server_url

    lock = threading.Lock()

    def log(line: str) -> None:
        with lock:
            print(sanitize(line), file=out, flush=True)

    provider = FakeProvider(load_script(script), log=log)
    server = make_server(provider, port=port)
    # signal.signal only works in the main thread; elsewhere (an embedding test) the caller
    # stops us with KeyboardInterrupt or by killing the process.
    previous: Any = None
    in_main = threading.current_thread() is threading.main_thread()
    if in_main:
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        log(f"listening on {server_url(server)}")
        server.serve_forever(poll_interval=0.2)
    except (_Terminated, KeyboardInterrupt):
        pass
    finally:
        if in_main:
            signal.signal(signal.SIGTERM, previous)
        server.server_close()
    return 0


def add_parser(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "fake-provider",
        parents=parents,
        help="serve a scripted OpenAI-compatible chat-completions endpoint on 127.0.0.1",
        description=(
            "Serve POST /v1/chat/completions and GET /v1/models on 127.0.0.1 from a JSON script "
            "(deterministic replies, tool calls, scripted errors and latency). Prints "
            "'listening on http://127.0.0.1:PORT/v1' and serves until SIGTERM or Ctrl-C."
        ),
    )
    parser.add_argument("--script", required=True, type=Path, metavar="FILE", help="JSON script")
    parser.add_argument(
        "--port", type=int, default=8765, help="TCP port on 127.0.0.1 (default 8765; 0 = any free)"
    )
    parser.set_defaults(handler=_handle)


def _handle(ns: argparse.Namespace) -> int:
    import sys

    return fake_provider(script=ns.script, port=ns.port, out=sys.stdout)
