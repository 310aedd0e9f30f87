"""The verdicts at a git ref, for `cachelint diff --base REF` without `--before`: a replay.

The old verdict of a re-recorded scenario is what a replay at REF says: REF's datasets and
assertions, REF's agent code (a python target), against REF's cache, offline. The repository is
cloned to a temporary directory with `git clone --shared --no-checkout` (the clone borrows this
repository's objects and writes nothing into it), REF is checked out there, and this cachelint
runs `run --cache replay --format json` there for the scenarios asked about only. The clone is
removed afterwards. Results files, green records or baselines committed at REF are not read: none
of them is known to describe REF's own cache (a record is committed by whoever ran last), and a
replay is what `cachelint run` would say there.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cachelint.childproc import module_command
from cachelint.display import sanitize
from cachelint.gitutil import run_git
from cachelint.runner.matrix import split_identity
from cachelint.runner.reviewpairs import Verdicts, from_document

_EXECUTION = "diff-base-replay"
_TIMEOUT_S = 3600


@dataclass(frozen=True)
class BaseVerdicts:
    verdicts: Verdicts  # per scenario (and per pair, in a matrix) in the replay at REF
    note: str | None = None  # why some or all verdicts are unknown


def _glob(identity: str) -> str:
    """`identity` as a `--scenario` glob matching only itself (fnmatch: `[x]` is a literal x)."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in identity)


def _replay_args(scenarios: Sequence[str], config: Path | None) -> list[str]:
    """The replay's arguments. A pair's identity (`agent/tenant/name@TARGET`) selects nothing:
    its scenario is selected, which replays every pair of it."""
    args = ["run", "--cache", "replay", "--format", "json", "--execution", _EXECUTION]
    for identity in sorted({split_identity(s)[0] for s in scenarios}):
        args += ["--scenario", _glob(identity)]
    return args + (["--config", os.fspath(config)] if config is not None else [])


def replay_at(
    repo: Path, ref: str, scenarios: Sequence[str], *, config: Path | None = None
) -> BaseVerdicts:
    """Replay `scenarios` (identities recorded at `ref`) at `ref`; their verdicts. `config` is
    the --config path relative to the repository, when one was given."""
    if not scenarios:
        return BaseVerdicts(Verdicts())
    commit = run_git(["rev-parse", "--verify", f"{ref}^{{commit}}"], cwd=repo).out.decode().strip()
    with tempfile.TemporaryDirectory(prefix="cachelint-base-") as tmp:
        clone = Path(tmp) / "base"
        run_git(
            ["clone", "--quiet", "--shared", "--no-checkout", os.fspath(repo), "base"],
            cwd=Path(tmp),
        )
        run_git(["-c", "advice.detachedHead=false", "checkout", "--quiet", commit], cwd=clone)
        env = {k: v for k, v in os.environ.items() if k != "CACHELINT_EXECUTION"}
        try:
            done = subprocess.run(
                [*module_command("cachelint"), *_replay_args(scenarios, config)],
                cwd=clone,
                env=env,
                capture_output=True,
                timeout=_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return BaseVerdicts(
                Verdicts(), f"the replay at {ref} took over {_TIMEOUT_S} s; stopped"
            )
    return _verdicts(ref, done, clone)


def _verdicts(ref: str, done: subprocess.CompletedProcess[bytes], clone: Path) -> BaseVerdicts:
    try:
        verdicts = from_document(json.loads(done.stdout))
    except (ValueError, KeyError, TypeError, AttributeError):
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        why = lines[-1].removeprefix("cachelint: error: ") if lines else f"exit {done.returncode}"
        # the clone is gone by now: its path would name nothing
        why = sanitize(why.replace(os.fspath(clone), f"(a checkout of {ref})"))
        return BaseVerdicts(Verdicts(), f"old verdicts unknown: the replay at {ref} failed ({why})")
    return BaseVerdicts(verdicts)
