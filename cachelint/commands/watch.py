"""`cachelint watch`: refuse a prompt, model or dataset change that no green eval run has seen.

`--staged` (the pre-commit hook) compares the staged content of every watched path and dataset
file with the green record as staged; `--base REF` (CI) compares the working tree with the
committed record when anything watched changed since the merge base with REF; without either it
compares the working tree with the record unconditionally.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from cachelint.config import Config, load
from cachelint.credentials import configured_keys
from cachelint.display import sanitize, shell_command
from cachelint.errors import CachelintError, ExitCode
from cachelint.findings import Finding
from cachelint.frontdoors import FrontDoor
from cachelint.gitutil import (
    cat_blobs,
    describe_failure,
    repo_root,
    run_git,
    split_z,
    stage_record,
)
from cachelint.paths import is_inside

if TYPE_CHECKING:  # green imports blake3 and the canonical JSON stack: load it only when gating
    from cachelint import green

_CODE_STALE = "eval-green-stale"
_CODE_MISSING = "eval-green-missing"
_CODE_INVALID = "eval-green-invalid"


def add_parser(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    parents: list[argparse.ArgumentParser],
) -> None:
    parser = subparsers.add_parser(
        "watch",
        parents=parents,
        help="fail when watched prompt/model/dataset files changed since the last green eval run",
        description=(
            "Compare watched files (the `watch` globs) and dataset files with the green record "
            "written by the last fully passing `cachelint run`."
        ),
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--staged",
        action="store_true",
        help="check what is staged (the pre-commit hook); fast when nothing watched is staged",
    )
    mode.add_argument(
        "--base",
        metavar="REF",
        help="CI: check when anything watched changed since the merge base with REF",
    )
    parser.set_defaults(handler=_handle)


def _handle(ns: argparse.Namespace) -> int:
    return watch(
        Path.cwd(),
        config_path=Path(ns.config) if ns.config else None,
        staged=bool(ns.staged),
        base=ns.base,
        out=sys.stdout,
    )


def watch(
    start: Path, *, config_path: Path | None, staged: bool, base: str | None, out: TextIO
) -> int:
    if staged and base is not None:
        raise CachelintError("watch: --staged and --base exclude each other; pick one")
    repo = repo_root(start)
    config = load(repo, config_path)
    if staged:
        names = run_git(["diff", "--cached", "--name-only", "-z"], cwd=repo).out
        return watch_staged(config, split_z(names), out=out)
    # Datasets are gated even without globs, but only once a green record exists: a repository
    # that never recorded one has not opted into the gate.
    if not config.watch and not (repo / config.green_record).exists():
        out.write(
            f"cachelint watch: no `watch` globs configured and no {sanitize(config.green_record)}, "
            "nothing to gate; name the prompt and model files in [tool.cachelint] "
            'watch = ["prompts/**"] and commit the record a green `cachelint run` writes\n'
        )
        return int(ExitCode.OK)
    if base is not None:
        return _watch_base(config, base, out=out)
    return _watch_worktree(config, out=out, why="working tree")


# ---- staged: the commit about to be made --------------------------------------------------------


def watch_staged(config: Config, staged_paths: Sequence[str], *, out: TextIO) -> int:
    """The hook's gate, given the already-listed staged paths (so the hook lists them once).
    A staged change under a cache root (a deletion included) is compared with the record's
    digest of that root, as staged, even when nothing watched changed with it. Every front
    door's part is compared (`green.doors_in_use`: a part the record lacks is missing)."""
    from cachelint import green

    cache_staged = [p for p in staged_paths if _cache_root(config, p) is not None]
    if not green.relevant(config, staged_paths) and not cache_staged:
        return int(ExitCode.OK)
    staged = _staged_blobs(config, with_cache=bool(cache_staged))
    record_name = config.green_record
    add_record = shell_command("git", "add", "--", record_name)
    record_blob = staged.record
    if record_blob is None and not config.watch:
        return int(ExitCode.OK)  # no record opted into the gate and no globs ask for one
    wanted = {
        *staged.blobs.values(),
        *staged.cache.values(),
        *((record_blob,) if record_blob else ()),
    }
    contents = cat_blobs(config.repo, sorted(wanted))
    state = _staged_state(config, staged, contents, with_cache=bool(cache_staged))
    in_use = green.doors_in_use(config, staged.paths)
    commands = _commands(in_use or {FrontDoor.RUN})
    worktree_hint = _worktree_hint(config, state, in_use, with_cache=bool(cache_staged))
    if record_blob is None:
        if not green.relevant(config, staged_paths):
            return int(ExitCode.OK)  # a cache change alone, and no record to compare it with
        finding = Finding(
            record_name,
            _CODE_MISSING,
            "no green record is staged, but watched files are; run the evals until they pass "
            f"({commands}), then `{add_record}`" + worktree_hint,
        )
        out.write(render([finding], None, configured_keys(config)))
        return int(ExitCode.FINDINGS)
    try:
        record = green.parse_record(contents[record_blob], f"{record_name} (staged)")
    except ValueError as exc:
        finding = Finding(
            record_name,
            _CODE_INVALID,
            f"{exc}; rerun {commands} to rewrite it, then `{add_record}`",
        )
        out.write(render([finding], None, configured_keys(config)))
        return int(ExitCode.FINDINGS)
    findings, stale = _part_findings(config, record, state, in_use, with_cache=bool(cache_staged))
    if not findings:
        return int(ExitCode.OK)
    fix = f"{_commands(stale)}, then `{add_record}`" + worktree_hint
    out.write(render(findings, fix, configured_keys(config)))
    return int(ExitCode.FINDINGS)


def _commands(doors: Iterable[FrontDoor]) -> str:
    """The commands that refresh these front doors' parts, `cachelint run` first."""
    return " and ".join(f"`{d.command}`" for d in FrontDoor if d in doors)


def _part_findings(
    config: Config,
    record: green.GreenRecord,
    state: green.GreenState,
    in_use: set[FrontDoor],
    *,
    with_cache: bool,
) -> tuple[list[Finding], list[FrontDoor]]:
    """Findings for every front door whose part is stale or missing, and those front doors."""
    from cachelint import green

    findings: list[Finding] = []
    stale: list[FrontDoor] = []
    for door in FrontDoor:
        part = record.parts.get(door)
        if part is None:
            if door in in_use:
                stale.append(door)
                findings.append(_missing_part(config, door))
            continue
        mismatches = green.compare_state(part, state, with_cache=with_cache)
        if mismatches:
            stale.append(door)
            findings.extend(_stale_findings(config, mismatches, part.recorded, door))
    return findings, stale


def _missing_part(config: Config, door: FrontDoor) -> Finding:
    why = (
        "the pytest plugin's entries are in the cache"
        if door is FrontDoor.PYTEST
        else "the datasets define scenarios"
    )
    return Finding(
        config.green_record,
        _CODE_MISSING,
        f"no green {door.shown} is recorded in it, but {why}; run `{door.command}` until it passes",
    )


class _Staged:
    """Blob ids of the index: gated paths, cache files (when asked for), and the record; and
    every path of the index (which front doors are in use)."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.blobs: dict[str, str] = {}
        self.cache: dict[str, str] = {}
        self.record: str | None = None


def _cache_root(config: Config, path: str) -> str | None:
    return next((r for r in config.cache if is_inside(path, r)), None)


def _staged_blobs(config: Config, *, with_cache: bool) -> _Staged:
    from cachelint import green

    selector = green.Selector(config)
    index = run_git(["ls-files", "-s", "-z"], cwd=config.repo).out
    staged = _Staged()
    for parsed in map(stage_record, index.split(b"\0")):
        if parsed is None:
            continue
        mode, object_id, _, raw_path = parsed
        path = raw_path.decode("utf-8", "surrogateescape")
        staged.paths.append(path)
        if mode == b"160000":  # a submodule has no content here to hash
            continue
        if path == config.green_record:
            staged.record = object_id.decode()
        elif selector.relevant(path):
            staged.blobs[path] = object_id.decode()
        elif with_cache and _cache_root(config, path) is not None:
            staged.cache[path] = object_id.decode()
    return staged


def _staged_state(
    config: Config, staged: _Staged, contents: dict[str, bytes], *, with_cache: bool
) -> green.GreenState:
    from cachelint import green
    from cachelint.hashing import hash_bytes

    selector = green.Selector(config)
    state = green.GreenState()
    for path, blob in staged.blobs.items():
        digest = green.content_hash(contents[blob])
        if selector.dataset(path):
            state.datasets[path] = digest
        if selector.watched(path):
            state.watched[path] = digest
    if with_cache:
        # Hashed as `cachelint run` hashes the working tree for the record (raw bytes): with
        # `-text` on the tree, the staged blob is the file's bytes.
        snapshots: dict[str, dict[str, str]] = {root: {} for root in config.cache}
        for path, blob in staged.cache.items():
            root = _cache_root(config, path)
            if root is not None:
                snapshots[root][path] = hash_bytes(contents[blob])
        state.cache = {root: green.cache_digest(snap) for root, snap in snapshots.items()}
    return state


def _worktree_hint(
    config: Config, state: green.GreenState, in_use: set[FrontDoor], *, with_cache: bool = False
) -> str:
    """If the working-tree record already matches the staged files, only `git add` is missing."""
    from cachelint import green

    try:
        record = green.parse_record(green.read_record_file(config), config.green_record)
    except (OSError, ValueError, CachelintError):
        return ""
    if _part_findings(config, record, state, in_use, with_cache=with_cache)[0]:
        return ""
    add = shell_command("git", "add", "--", config.green_record)
    return f" (the working-tree {config.green_record} already matches: only `{add}` is missing)"


# ---- CI: since a base ref, and the plain working-tree comparison --------------------------------


def _watch_base(config: Config, ref: str, *, out: TextIO) -> int:
    from cachelint import green

    merge = run_git(["merge-base", ref, "HEAD"], cwd=config.repo, check=False)
    if merge.rc != 0:
        reason = describe_failure(["git", "merge-base", ref, "HEAD"], merge)
        raise CachelintError(
            f"watch --base {ref}: no merge base with HEAD ({reason}); fetch the base branch "
            f"(e.g. `{shell_command('git', 'fetch', 'origin', ref)}`, or use fetch-depth: 0 in CI) "
            "or check the name"
        )
    base = merge.out.decode().strip()
    changed = split_z(run_git(["diff", "--name-only", "-z", base, "--"], cwd=config.repo).out)
    untracked = split_z(
        run_git(["ls-files", "-z", "--others", "--exclude-standard"], cwd=config.repo).out
    )
    if not green.relevant(config, [*changed, *untracked]):
        out.write(
            sanitize(f"cachelint watch: nothing watched changed since {ref} ({base[:12]})") + "\n"
        )
        return int(ExitCode.OK)
    return _watch_worktree(config, out=out, why=f"changes since {ref}")


def _watch_worktree(config: Config, *, out: TextIO, why: str) -> int:
    from cachelint import green

    name = config.green_record
    listing = green.worktree_files(config.repo)
    in_use = green.doors_in_use(config, listing)
    fix = f"{_commands(in_use or {FrontDoor.RUN})}, then commit {shell_command(name)}"
    try:
        raw = green.read_record_file(config)
    except FileNotFoundError:
        finding = Finding(
            name,
            _CODE_MISSING,
            f"no green record, but files are watched ({why}); run the evals until they pass "
            f"({fix})",
        )
        out.write(render([finding], None, configured_keys(config)))
        return int(ExitCode.FINDINGS)
    except OSError as exc:
        raise CachelintError(f"{name}: cannot read the green record ({exc.strerror})") from None
    try:
        record = green.parse_record(raw, name)
    except ValueError as exc:
        out.write(
            render(
                [Finding(name, _CODE_INVALID, f"{exc}; rewrite it with {fix}")],
                None,
                configured_keys(config),
            )
        )
        return int(ExitCode.FINDINGS)
    state = green.worktree_state(config)
    findings, stale = _part_findings(config, record, state, in_use, with_cache=True)
    if not findings:
        out.write(
            sanitize(f"cachelint watch: {name} matches the watched files, datasets and cache")
            + "\n"
        )
        return int(ExitCode.OK)
    out.write(
        render(
            findings,
            f"{_commands(stale)}, then commit {shell_command(name)}",
            configured_keys(config),
        )
    )
    return int(ExitCode.FINDINGS)


# ---- findings and their text --------------------------------------------------------------------


def _stale_findings(
    config: Config,
    mismatches: Sequence[green.Mismatch],
    recorded: str,
    door: FrontDoor = FrontDoor.RUN,
) -> list[Finding]:
    from cachelint import green

    selector = green.Selector(config)
    findings: list[Finding] = []
    for m in mismatches:
        if m.path in config.cache:
            kind = "cache tree"
        elif selector.watched(m.path):
            kind = "watched file"
        else:
            kind = "dataset file"
        verb = {
            "changed": "changed since",
            "added": "new since",
            "removed": "removed since",
        }[m.what]
        last = "the last green run" if door is FrontDoor.RUN else "the last green pytest session"
        findings.append(Finding(m.path, _CODE_STALE, f"{kind} {verb} {last} (recorded {recorded})"))
    return findings


def render(findings: list[Finding], fix: str | None, keys: Sequence[str] = ()) -> str:
    """Pure text reporter: one line per finding (as check prints it, the configured `keys`
    masked), then the fix."""
    from cachelint.reporters import finding_lines

    lines = finding_lines(findings, keys=keys)
    if fix is not None:
        count = len(findings)
        noun = "path differs" if count == 1 else "paths differ"
        lines.append(
            sanitize(
                f"cachelint watch: {count} {noun} from the green record; run the evals until "
                f"they pass: {fix}"
            )
        )
    return "".join(line + "\n" for line in lines)
