"""`cachelint fake-provider`: serve a scripted OpenAI-compatible endpoint on 127.0.0.1.

For recording demos and CI without a real model; the script format is documented in
cachelint/devtools/fake_script.py.
"""

from __future__ import annotations

import argparse
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from cachelint.display import sanitize


def fake_provider(*, script: Path, port: int, out: TextIO) -> int:
    """Serve `script` until SIGTERM or Ctrl-C; print the URL first so callers can wait for it."""
    from cachelint.devtools.fake_provider import FakeProvider, load_script, make_server, server_url

    lock = threading.Lock()

    def log(line: str) -> None:
        with lock:
            print(sanitize(line), file=out, flush=True)

    provider = FakeProvider(load_script(script), log=log)
    server = make_server(provider, port=port)
    # The server runs on its own thread and the main thread only waits. A signal handler that
    # raised instead would land wherever the main thread happened to be, and inside
    # socketserver's request handling the exception is caught, logged and served past.
    stop = threading.Event()
    restore = _stop_on_signals(stop)
    serving = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.2}, name="fake-provider"
    )
    serving.start()
    try:
        log(f"listening on {server_url(server)}")
        # A bounded wait, because a wait without a timeout cannot be interrupted on Windows.
        while not stop.wait(timeout=0.5):
            pass
    finally:
        server.shutdown()
        serving.join()
        server.server_close()
        restore()
    return 0


def _stop_on_signals(stop: threading.Event) -> Callable[[], None]:
    """Set `stop` on SIGTERM and SIGINT; return what puts the previous handlers back.

    signal.signal only works in the main thread. Elsewhere (a test embedding the server) the
    caller stops the server by killing the process.
    """
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}

    def restore() -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    return restore


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
