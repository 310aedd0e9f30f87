"""`cachelint guard -- CMD [ARG...]`: run any command and fail if it wrote into the cache tree.

For test runners cachelint does not drive (`cachelint guard -- dotnet test --filter
Category=Eval`): every file under the cache roots is hashed before and after, by content (a
rewrite with the same bytes is no change; a restored mtime hides nothing), and each changed, added
or removed file becomes an `eval-cache-mutated` finding. Under a MEAI root's cache/ the finding
says what MEAI did: it adds an entry only on a cache miss, and removes one only when it expired.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from cachelint.config import load
from cachelint.credentials import configured_keys
from cachelint.display import sanitize
from cachelint.errors import CachelintError, ExitCode
from cachelint.findings import Finding
from cachelint.gitutil import repo_root

if TYPE_CHECKING:
    from cachelint.hashing import SnapshotDiff


def add_parser(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    parents: list[argparse.ArgumentParser],
) -> None:
    parser = subparsers.add_parser(
        "guard",
        parents=parents,
        help="run a command and fail if it changed any byte under the cache roots",
        description=(
            "Hash every file under the cache roots, run CMD with the terminal's stdin/stdout/"
            "stderr, hash again, and fail with eval-cache-mutated naming each changed, added or "
            "removed file. Exit code: CMD's own when nothing changed, else 1 (or CMD's non-zero)."
        ),
        usage="cachelint guard [--config PATH] -- CMD [ARG...]",
    )
    parser.add_argument("cmd", nargs=argparse.REMAINDER, metavar="CMD", help="command to run")
    parser.set_defaults(handler=_handle)


def _handle(ns: argparse.Namespace) -> int:
    command = list(ns.cmd)
    if command[:1] == ["--"]:
        command = command[1:]
    return guard(
        Path.cwd(),
        config_path=Path(ns.config) if ns.config else None,
        command=command,
        out=sys.stderr,  # the command owns stdout; our findings must not mix into its output
    )


def guard(start: Path, *, config_path: Path | None, command: Sequence[str], out: TextIO) -> int:
    if not command:
        raise CachelintError(
            "guard: no command given; usage: cachelint guard -- CMD [ARG...] "
            "(e.g. cachelint guard -- dotnet test --filter Category=Eval)"
        )
    from cachelint.hashing import diff, mutation_findings, snapshot  # blake3: only when guarding

    repo = repo_root(start)
    config = load(repo, config_path)
    roots = [c for c in config.cache if (repo / c).is_dir()]
    if not roots:
        roots_named = sanitize(", ".join(config.cache))
        out.write(
            f"cachelint guard: no cache root exists ({roots_named}); "
            "nothing to guard, running the command anyway\n"
        )
    from cachelint.meai import meai_roots, skip_matcher

    # Results MEAI writes into its storage root change on every run by design: not the cache.
    skip = skip_matcher(config, present_only=False)
    # Decided before the command runs: it may delete every entry of the root.
    meai = tuple(f"{r.rstrip('/')}/cache/" for r in meai_roots(config))
    before = snapshot(repo, roots, skip)
    rc = _run(command, cwd=start)
    after = snapshot(repo, roots, skip)
    change = diff(before, after)
    if not change:
        return rc
    during = f"`{describe(command)}`"
    findings: list[Finding] = mutation_findings(change, during=during)
    if meai:
        findings = _explained(findings, change, meai, during)
    out.write(render(findings, configured_keys(config)))
    out.flush()
    return rc if rc != 0 else int(ExitCode.FINDINGS)


def _explained(
    findings: list[Finding], change: SnapshotDiff, meai: tuple[str, ...], during: str
) -> list[Finding]:
    """Findings under a MEAI root's cache/ say what MEAI did: an added entry is a cache miss
    (MEAI records only on one), a removed one an entry MEAI deleted because it had expired."""
    from cachelint.meai import mutation_message

    verbs = {p: "changed" for p in change.changed}
    verbs.update((p, "added") for p in change.added)
    verbs.update((p, "removed") for p in change.removed)
    return [
        replace(f, message=mutation_message(verbs[f.path], f.path, during))
        if f.path.startswith(meai) and f.path in verbs
        else f
        for f in findings
    ]


def describe(command: Sequence[str]) -> str:
    """The command as one line of at most 80 characters, whatever the arguments hold."""
    text = shlex.join(command).replace("\r", "\\r").replace("\n", "\\n")
    return text if len(text) <= 80 else text[:77] + "..."


def render(findings: list[Finding], keys: Sequence[str] = ()) -> str:
    """Pure text reporter: one line per finding (as check prints it, the configured `keys`
    masked) and a count."""
    from cachelint.reporters import finding_lines

    lines = finding_lines(findings, keys=keys)
    lines.append(
        f"cachelint guard: {len(findings)} {'file' if len(findings) == 1 else 'files'} under the "
        "cache roots changed"
    )
    return "".join(line + "\n" for line in lines)


def _run(command: Sequence[str], *, cwd: Path) -> int:
    try:
        proc = subprocess.Popen(list(command), cwd=cwd)
    except FileNotFoundError:
        raise CachelintError(
            f"guard: {command[0]}: command not found (exit 127 in a shell); check the spelling "
            "and PATH"
        ) from None
    except PermissionError:
        raise CachelintError(
            f"guard: {command[0]}: permission denied (exit 126 in a shell); make it executable "
            "(chmod +x) or run it through its interpreter"
        ) from None
    except OSError as exc:
        raise CachelintError(f"guard: {command[0]}: cannot start: {exc.strerror}") from None
    with _forwarding(proc):
        rc = proc.wait()
    if rc < 0:  # killed by a signal: report it the way a shell does (Ctrl-C -> 130)
        return 128 - rc
    return rc


@contextmanager
def _forwarding(proc: subprocess.Popen[Any]) -> Iterator[None]:
    """Let the child own Ctrl-C, and pass on termination requests.

    The terminal sends Ctrl-C (SIGINT) to the whole foreground process group, so the child already
    gets it; like system(3) and time(1) the parent ignores it instead of sending a second one (a
    second Ctrl-C makes `dotnet test` abort without cleanup) and still snapshots after the child
    exits. SIGTERM and SIGHUP reach only us (from kill or a closing session), so they are forwarded.
    """
    if os.name != "posix":
        yield
        return

    def forward(signum: int, _frame: object) -> None:
        if proc.poll() is None:
            proc.send_signal(signum)

    previous = {
        signal.SIGINT: signal.signal(signal.SIGINT, signal.SIG_IGN),
        signal.SIGTERM: signal.signal(signal.SIGTERM, forward),
        signal.SIGHUP: signal.signal(signal.SIGHUP, forward),
    }
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
