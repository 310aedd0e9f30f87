"""`cachelint` command line: parse, dispatch, and turn errors into one line and an exit code.

Each subcommand lives in `cachelint/commands/<name>.py`, which exposes `add_parser(subparsers,
parents)` and a typed function with keyword-only options that returns an exit code. Command modules
keep heavy imports (httpx, rich, GitPython) inside functions so `cachelint check` in a pre-commit
hook imports only what it uses.
"""

from __future__ import annotations

import argparse
import importlib
import io
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from cachelint import __version__
from cachelint.display import sanitize
from cachelint.errors import CachelintError, ExitCode

COMMANDS = (
    "init",
    "check",
    "stamp",
    "run",
    "report",
    "green",
    "watch",
    "guard",
    "prune",
    "fake-provider",
    "schema",
    "import",
    "diff",
)


class _Parser(argparse.ArgumentParser):
    """argparse's usage errors quote the offending argument: make it safe like every other line.
    Subcommand parsers are made with the parent's class, so they inherit this."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(int(ExitCode.USAGE), f"{self.prog}: error: {sanitize(message)}\n")


def _parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; with `only`, the one command it will run (its module alone is
    imported: every command's imports together cost ~40 ms of each start-up)."""
    common = _Parser(add_help=False)
    common.add_argument(
        "--config", metavar="PATH", help="config file (default: cachelint.toml, pyproject.toml)"
    )
    common.add_argument(
        "-v", "--verbose", action="store_true", help="show a traceback on internal errors"
    )
    parser = _Parser(
        prog="cachelint",
        description=(
            "Keep a committed LLM response cache byte-exact and portable, and replay evals "
            "from it offline."
        ),
    )
    parser.add_argument("--version", action="version", version=f"cachelint {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS if only is None else (only,):
        module_name = name.replace("-", "_") + ("_" if name == "import" else "")  # a keyword
        module = importlib.import_module(f"cachelint.commands.{module_name}")
        module.add_parser(sub, [common])
    return parser


class _ClosedPipeGuard:
    """stdout that outlives its reader: once the pipe is closed (`cachelint run | head -n1`),
    further output goes to the null device and the command runs to its end, so the exit code is
    the command's own. Mapping the BrokenPipeError to 0 made a failed run pass a `set -o
    pipefail` CI step."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.closed_pipe = False

    def write(self, text: str) -> int:
        if not self.closed_pipe:
            try:
                return int(self.inner.write(text))
            except BrokenPipeError:
                self._to_null()
        return len(text)

    def flush(self) -> None:
        if not self.closed_pipe:
            try:
                self.inner.flush()
            except BrokenPipeError:
                self._to_null()

    def _to_null(self) -> None:
        self.closed_pipe = True
        # The interpreter flushes stdout again when it exits: point its descriptor at the null
        # device so that flush finds no closed pipe either.
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self.inner.fileno())
            os.close(null)
        except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def main(argv: Sequence[str] | None = None) -> int:
    guard = _ClosedPipeGuard(sys.stdout)
    sys.stdout = guard
    try:
        return _main(argv)
    finally:
        sys.stdout = guard.inner


def _main(argv: Sequence[str] | None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    verbose = "-v" in args or "--verbose" in args
    try:
        # A command named first is the only one parsed; anything else (`--help`, a typo) gets
        # the parser that knows every command.
        ns = _parser(args[0] if args and args[0] in COMMANDS else None).parse_args(args)
        return int(ns.handler(ns))
    except CachelintError as exc:
        print(f"cachelint: error: {sanitize(str(exc))}", file=sys.stderr)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        print("cachelint: interrupted", file=sys.stderr)
        return int(ExitCode.INTERRUPTED)
    except BrokenPipeError:  # written past the guard (a descriptor, a child): outcome unknown
        print("cachelint: stdout closed before the command finished", file=sys.stderr)
        return int(ExitCode.FINDINGS)
    except Exception as exc:  # a bug in cachelint, not in the user's input
        if verbose:
            import traceback  # only here: with textwrap, ~2 ms of every start-up

            traceback.print_exc()
        print(
            f"cachelint: internal error: {type(exc).__name__}: {sanitize(str(exc))} "
            "(rerun with --verbose for a traceback, and report it)",
            file=sys.stderr,
        )
        return int(ExitCode.INTERNAL)
