"""The green record: proof that the evals passed against these prompts, datasets and this cache.

After a run where every selected scenario passed, `cachelint run` calls `record_green_run`, which
writes `config.green_record` (default `.eval-green.json`, committed, outside the cache tree) with
the content hash of every watched file, every dataset file and a digest per cache root. `cachelint
watch` compares that record with what is about to be committed; a red run never writes it.

Each front door (`cachelint.frontdoors`) has its own part: `cachelint run`'s is the record's top
level (as it always was, so records written before parts existed read unchanged, and an older
cachelint still reads this part), the pytest plugin's is under "pytest", written after a full
passing session of the eval tests (`record_green_pytest`) with the hashes of the watched files
and the cache (its tests read no dataset). Each writer keeps the other's part as it found it.

Content hashes ignore CRLF versus LF, as the cache key does: a prompt checked out with CRLF on
Windows (core.autocrlf) and stored with LF in the index is the same prompt, and the gate must not
fail on a line-ending conversion git does by itself.
"""

from __future__ import annotations

import codecs
import json
import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import blake3

from cachelint import __version__
from cachelint.canonical import dump_pretty, pretty_chunks
from cachelint.config import Config
from cachelint.errors import CachelintError
from cachelint.frontdoors import FrontDoor
from cachelint.fsutil import atomic_write_chunks
from cachelint.gitutil import GitProcess, iter_z, split_z, start_git
from cachelint.hashing import Snapshot, snapshot
from cachelint.paths import is_inside

FORMAT = 1


def content_hash(data: bytes) -> str:
    """blake3 of the bytes with CRLF read as LF (see the module docstring for why)."""
    return blake3.blake3(data.replace(b"\r\n", b"\n")).hexdigest()


class Selector:
    """Which repo-relative paths the gate watches: the `watch` globs plus the dataset tree."""

    def __init__(self, config: Config) -> None:
        self.datasets = config.datasets
        # Paths come from git, already normalised: one that does not start with the normalised
        # root is not inside it, which settles most paths (the cache's) before `is_inside`.
        root = os.path.normpath(config.datasets).replace(os.sep, "/")
        self._datasets_head = "" if root == "." else root
        self.globs = config.watch
        self._spec: Any = None
        if config.watch:
            from cachelint.globs import compile_globs  # git's ignore rules never go through it

            self._spec = compile_globs(config.watch)

    def watched(self, path: str) -> bool:
        return self._spec is not None and bool(self._spec.match_file(path))

    def dataset(self, path: str) -> bool:
        return path.startswith(self._datasets_head) and is_inside(path, self.datasets)

    def relevant(self, path: str) -> bool:
        return self.dataset(path) or self.watched(path)


@dataclass
class GreenState:
    """What a green record pins: path -> content hash, and cache root -> tree digest."""

    watched: dict[str, str] = field(default_factory=dict)
    datasets: dict[str, str] = field(default_factory=dict)
    cache: dict[str, str] = field(default_factory=dict)


def cache_digest(snap: Snapshot) -> str:
    """One digest over the sorted (path, hash) pairs of a cache root's snapshot."""
    return pairs_digest((path, snap[path]) for path in sorted(snap))


def pairs_digest(pairs: Iterable[tuple[str, str]]) -> str:
    """`cache_digest` of the (path, hash) pairs of a snapshot, taken one at a time in path
    order (`canary.Canary.digests`: a large tree's snapshot is never held)."""
    hasher = blake3.blake3()
    for path, digest in pairs:
        hasher.update(path.encode("utf-8", "surrogateescape") + b"\0" + digest.encode() + b"\n")
    return hasher.hexdigest()


def _digest(snap: Snapshot | str) -> str:
    return snap if isinstance(snap, str) else cache_digest(snap)


def cache_digests(
    config: Config, snapshots: Mapping[str, Snapshot | str] | None = None
) -> dict[str, str]:
    """One digest per cache root; `snapshots` are roots the caller already hashed, each its
    snapshot or that snapshot's `cache_digest` (a root missing from it, or from disk, is hashed
    here / digests as empty)."""
    from cachelint.meai import skip_matcher

    known = snapshots or {}
    hashed = all(r in known for r in config.cache)
    skip = None if hashed else skip_matcher(config, present_only=False)
    return {
        root: _digest(known[root] if root in known else snapshot(config.repo, [root], skip))
        for root in config.cache
    }


def start_worktree_listing(repo: Path) -> GitProcess:
    """`worktree_files`'s git listing, started now and read later (it runs beside Python work)."""
    return start_git(["ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=repo)


def start_record_listing(config: Config) -> GitProcess:
    """`worktree_state`'s git listing: `start_worktree_listing`'s without the cache roots under
    which no dataset or watched file can lie (`_unpinned_roots`). Listing untracked files, git
    reads every directory it walks and looks for a `.gitignore` in each: a cache tree of a
    directory or two per entry, for paths the record drops."""
    excluded = [f":(exclude,literal){root}" for root in _unpinned_roots(config)]
    return start_git(
        ["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *excluded],
        cwd=config.repo,
    )


def _unpinned_roots(config: Config) -> list[str]:
    """The cache roots (repo-relative, normalised) holding no path the record pins: the datasets
    directory neither lies inside one nor holds it, and no `watch` glob can match below it."""
    out: list[str] = []
    for root in config.cache:
        norm = os.path.normpath(root).replace(os.sep, "/")
        if os.path.isabs(norm) or norm == "." or norm.split("/")[0] == "..":
            continue
        if is_inside(norm, config.datasets) or is_inside(config.datasets, norm):
            continue
        if not any(_may_match_below(glob, norm.split("/")) for glob in config.watch):
            out.append(norm)
    return out


_WILD = frozenset("*?[\\")


def _may_match_below(glob: str, root: list[str]) -> bool:
    """Whether the gitignore-style `glob` may match a path below the directory whose segments
    are `root`. Only two kinds provably cannot: a negation (it takes matches away) and an
    anchored glob (a `/` before its end) whose leading literal segments part from `root`'s
    (compared without case, as git may on a case-insensitive filesystem). A glob without such a
    `/` matches at any depth; a wildcard, an escape or an empty segment before they part may."""
    if glob.startswith("!"):
        return False
    body = glob.rstrip()  # git drops a line's trailing spaces
    body = body[:-1] if body.endswith("/") else body
    if "/" not in body:
        return True
    for want, have in zip(body.removeprefix("/").split("/"), root, strict=False):
        if want in ("", ".", "..") or not _WILD.isdisjoint(want):
            return True
        if want.casefold() != have.casefold():
            return False
    return True


def worktree_files(repo: Path, listing: GitProcess | None = None) -> list[str]:
    """Tracked plus untracked-not-ignored paths, as git lists them (the truth for ignore rules);
    from `listing` when the caller started it earlier."""
    out = (listing or start_worktree_listing(repo)).result().out
    return sorted(set(split_z(out)))


def _hash_worktree(repo: Path, path: str) -> str | None:
    # One lstat and plain os paths: a run hashes every dataset file, and a big suite has many.
    full = os.path.join(repo, path)
    try:
        try:
            mode = os.lstat(full).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return None  # deleted but still in the index
        if stat.S_ISLNK(mode):
            # git stores a symlink as a blob holding its target; hash the same bytes.
            return content_hash(os.fsencode(os.readlink(full)))
        if not stat.S_ISREG(mode):
            return None  # a submodule directory
        with open(full, "rb") as fh:
            return content_hash(fh.read())
    except OSError as exc:
        raise CachelintError(f"{path}: cannot read watched file ({exc.strerror})") from None


def worktree_state(
    config: Config,
    *,
    cache_snapshots: Mapping[str, Snapshot | str] | None = None,
    known: Mapping[str, str] | None = None,
    listing: GitProcess | None = None,
) -> GreenState:
    """The state of the working tree as the green record would pin it. `known` holds content
    hashes (`content_hash`) the caller took of files as it read them, a run's dataset files: the
    record then pins what was run, and they are not read again. `listing` is
    `start_record_listing(config)` (or `start_worktree_listing`'s) when the caller started it."""
    selector = Selector(config)
    state = GreenState()
    known = known or {}
    out = (listing or start_record_listing(config)).result().out
    listed = 0  # dataset files listed that `known` holds, each counted once
    previous = ""
    # Into dicts, one path at a time as git listed them: order and repeats (stages) are moot.
    for path in iter_z(out):
        if not selector.relevant(path):
            continue
        held = known.get(path)
        digest = held or _hash_worktree(config.repo, path)
        if digest is None:
            continue
        if selector.dataset(path):
            if not held:
                state.datasets[path] = digest
            elif path != previous:  # git lists a path's stages one after another
                listed += 1
            previous = path
        if selector.watched(path):
            state.watched[path] = digest
    if listed != len(known) or not isinstance(known, dict):
        state.datasets = _listed_datasets(selector, out, {**known, **state.datasets})
    elif known:
        # Every known file is a listed dataset file: `known` is their part of the record, held
        # once (a large suite's paths and hashes are the plan's, 15 MB more at 100,000).
        state.datasets = {**known, **state.datasets} if state.datasets else known
    state.cache = cache_digests(config, cache_snapshots)
    return state


def _listed_datasets(selector: Selector, out: bytes, hashes: Mapping[str, str]) -> dict[str, str]:
    """The dataset files git listed in `out` that have a hash in `hashes` (every file that
    still exists), each with it."""
    return {
        path: digest
        for path in iter_z(out)
        if selector.dataset(path) and (digest := hashes.get(path))
    }


PYTEST_PART = "pytest"


def _proof(record: Mapping[str, Any]) -> Mapping[str, Any]:
    """What a record proves, without when or under which execution name it was proven."""
    proof = {**record, "recorded": None}
    run = record.get("run")
    if isinstance(run, dict):
        proof["run"] = {"scenarios": run.get("scenarios")}
    part = record.get(PYTEST_PART)
    if isinstance(part, dict):
        session = part.get("session")
        tests = session.get("tests") if isinstance(session, dict) else None
        proof[PYTEST_PART] = {**part, "recorded": None, "session": {"tests": tests}}
    return proof


def read_record_file(config: Config) -> bytes:
    """The green record's bytes, read as every repository file is (`confine.read_inside`: below
    the repository through no link, a regular file, bounded); FileNotFoundError when absent."""
    from cachelint.confine import GREEN_RECORD_BYTES, read_inside

    return read_inside(config.repo, config.green_record, "green record", GREEN_RECORD_BYTES)


def _record_bytes(config: Config) -> bytes | None:
    """The record's bytes, when they can be read (else None: it is rewritten whole)."""
    try:
        return read_record_file(config)
    except (OSError, ValueError, CachelintError):
        return None


def _decoded(data: bytes | None) -> dict[str, Any] | None:
    """The record as JSON, when it is one (else None: it is rewritten whole)."""
    try:
        existing = json.loads(data) if data is not None else None
    except (ValueError, RecursionError):
        return None
    return existing if isinstance(existing, dict) and existing.get("format") == FORMAT else None


def _existing(config: Config) -> dict[str, Any] | None:
    return _decoded(_record_bytes(config))


# `_written_alike`'s stand-in for a value `_proof` leaves out: a string no record holds (more
# of them than it put in: some string of the record is one, and nothing is proven).
_ANY = "\0cachelint: any value\0"
_ANY_ENCODED = dump_pretty(_ANY).rstrip(b"\n")
_DECODER = json.JSONDecoder()
_ANY_MAX = 1 << 20  # a left-out value longer than this is compared the slow way (decoded)


def _written_alike(data: bytes, record: Mapping[str, Any]) -> bool:
    """Whether `data` is `record` as this module writes it but for what `_proof` leaves out:
    when, under which execution name and mode it was proven, and the pytest part (an object),
    which the record copies as it finds it. Compared piece by piece as the record is encoded,
    so a large suite's record (15 MB at 100,000 scenarios) is neither decoded nor encoded
    whole. True proves that the record `_decoded` would make of `data` has `record`'s proof;
    False proves nothing (the caller decodes it and compares the proofs)."""
    template = {
        **record,
        "recorded": _ANY,
        "run": {**record["run"], "count": _ANY, "execution": _ANY, "mode": _ANY},
    }
    if b'\n  "' + PYTEST_PART.encode() + b'": {' in data:
        template[PYTEST_PART] = _ANY  # sorted first of the left-out values
    kinds = [dict] * (PYTEST_PART in template) + [object] * 4  # each left-out value's type
    at, pending = 0, b""
    try:
        for chunk in pretty_chunks(template):
            pending += chunk
            while (found := pending.find(_ANY_ENCODED)) >= 0:
                if not kinds or not data.startswith(pending[:found], at):
                    return False
                at = _value_end(data, at + found, kinds.pop(0))
                if at < 0:
                    return False
                pending = pending[found + len(_ANY_ENCODED) :]
            keep = len(pending) - len(_ANY_ENCODED) + 1  # a stand-in may begin in the rest
            if keep > 0:
                if not data.startswith(pending[:keep], at):
                    return False
                at, pending = at + keep, pending[keep:]
    except UnicodeEncodeError:  # a listed path that is not UTF-8: such a record is never written
        return False
    return not kinds and data.startswith(pending, at) and at + len(pending) == len(data)


def _value_end(data: bytes, at: int, kind: type) -> int:
    """Where the JSON value of type `kind` at `data[at]` ends; -1 when there is none (of
    `_ANY_MAX` bytes or fewer)."""
    size = 256
    while True:
        try:
            head = codecs.getincrementaldecoder("utf-8")().decode(data[at : at + size])
            value, end = _DECODER.raw_decode(head)
            break
        except (ValueError, RecursionError):
            if size >= _ANY_MAX or at + size >= len(data):
                return -1
            size *= 8  # a long value: looked for in a longer piece
    return at + len(head[:end].encode("utf-8")) if isinstance(value, kind) else -1


def _write_if_changed(config: Config, record: Mapping[str, Any], existing: Any) -> Path:
    path = config.repo / config.green_record
    if isinstance(existing, dict) and _proof(existing) == _proof(record):
        return path
    atomic_write_chunks(path, pretty_chunks(record))
    return path


def record_green_run(
    config: Config,
    *,
    execution: str,
    mode: str,
    scenarios: Iterable[str],
    now: datetime,
    cache_snapshots: Mapping[str, Snapshot | str] | None = None,
    known: Mapping[str, str] | None = None,
    listing: GitProcess | None = None,
) -> Path:
    """Write the green record after a run where every selected scenario passed; return its path.

    A record that already proves the same state (same hashes, same scenarios) is left untouched:
    the record is committed, and a CI replay or a second local run must not dirty the tree just
    to move a timestamp.

    `cache_snapshots` (cache root -> snapshot) lets `cachelint run` hand over the hashes its
    offline canary took after the run, so the cache tree is not read a third time; `known` and
    `listing` are `worktree_state`'s."""
    from cachelint.confine import check_green_record
    from cachelint.store import format_time

    state = worktree_state(config, cache_snapshots=cache_snapshots, known=known, listing=listing)
    listed = sorted(scenarios)
    record: dict[str, Any] = {
        "format": FORMAT,
        "cachelint": __version__,
        "recorded": format_time(now),
        "run": {
            "execution": execution,
            "mode": mode,
            "scenarios": listed,
            "count": len(listed),
        },
        "watch": list(config.watch),
        "watched": state.watched,
        "datasets": state.datasets,
        "cache": state.cache,
    }
    data = _record_bytes(config)
    if data is not None and _written_alike(data, record):
        # Checked as every record is before it may be overwritten, its bytes proven a record
        # by their digest (check_green_record would decode them: twice the record's bytes).
        digest = blake3.blake3(data).digest()
        del data
        check_green_record(config, proven=lambda raw: blake3.blake3(raw).digest() == digest)
        return config.repo / config.green_record
    del data
    check_green_record(config)
    existing = _existing(config)
    if existing is not None and isinstance(existing.get(PYTEST_PART), dict):
        record[PYTEST_PART] = existing[PYTEST_PART]  # the pytest plugin's part, as it was
    return _write_if_changed(config, record, existing)


def record_green_pytest(
    config: Config, *, session: str, mode: str, tests: Sequence[str], now: datetime
) -> Path:
    """Write the pytest plugin's part of the green record after a full session in which every
    eval test (`tests`, node ids) passed; `cachelint run`'s part is kept as it was."""
    from cachelint.confine import check_green_record
    from cachelint.store import format_time

    state = worktree_state(config)
    part = {
        "recorded": format_time(now),
        "session": {
            "execution": session,
            "mode": mode,
            "tests": sorted(tests),
            "count": len(tests),
        },
        "watched": state.watched,
        "cache": state.cache,
    }
    check_green_record(config)
    existing = _existing(config)
    # No record yet: the top level holds no run part ("run" absent), only what every reader
    # of the format needs.
    base = existing or {
        "format": FORMAT,
        "cachelint": __version__,
        "watch": list(config.watch),
        "watched": {},
    }
    record = {**base, PYTEST_PART: part}
    return _write_if_changed(config, record, existing)


@dataclass(frozen=True)
class GreenPart:
    """One front door's part: when it was proven, and what it pins."""

    door: FrontDoor
    recorded: str
    watched: Mapping[str, str]
    datasets: Mapping[str, str]  # empty for the pytest part: its tests read no dataset
    cache: Mapping[str, str]


@dataclass(frozen=True)
class GreenRecord:
    recorded: str  # `cachelint run`'s part (the top level), as records always held it
    watched: Mapping[str, str]
    datasets: Mapping[str, str]
    cache: Mapping[str, str]
    parts: Mapping[FrontDoor, GreenPart] = field(default_factory=dict)


def _hash_map(data: Mapping[str, Any], key: str, where: str) -> dict[str, str]:
    value = data.get(key, {})
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ValueError(f"{where}: field {key!r} is not an object of path -> hash")
    return dict(value)


def parse_record(raw: bytes, where: str) -> GreenRecord:
    """Parse a green record; a damaged one is a ValueError naming `where` and what is wrong."""
    from cachelint.store import decode_json

    try:
        data = decode_json(raw)
    except ValueError as exc:
        raise ValueError(f"{where}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{where}: not a JSON object")
    if data.get("format") != FORMAT:
        raise ValueError(f"{where}: 'format' is {data.get('format')!r}, expected {FORMAT}")
    top = _part(FrontDoor.RUN, data, where)
    parts = {FrontDoor.RUN: top} if "run" in data else {}
    pytest_part = data.get(PYTEST_PART)
    if pytest_part is not None:
        if not isinstance(pytest_part, dict):
            raise ValueError(f"{where}: field {PYTEST_PART!r} is not an object")
        parts[FrontDoor.PYTEST] = _part(FrontDoor.PYTEST, pytest_part, f"{where} ({PYTEST_PART})")
    return GreenRecord(top.recorded, top.watched, top.datasets, top.cache, parts)


def _part(door: FrontDoor, data: Mapping[str, Any], where: str) -> GreenPart:
    recorded = data.get("recorded")
    return GreenPart(
        door=door,
        recorded=recorded if isinstance(recorded, str) else "?",
        watched=_hash_map(data, "watched", where),
        datasets=_hash_map(data, "datasets", where),
        cache=_hash_map(data, "cache", where),
    )


@dataclass(frozen=True)
class Mismatch:
    path: str
    what: str  # "changed", "added", "removed"


def compare(recorded: Mapping[str, str], current: Mapping[str, str]) -> list[Mismatch]:
    out: list[Mismatch] = []
    for path in sorted(recorded.keys() | current.keys()):
        if path not in current:
            out.append(Mismatch(path, "removed"))
        elif path not in recorded:
            out.append(Mismatch(path, "added"))
        elif recorded[path] != current[path]:
            out.append(Mismatch(path, "changed"))
    return out


def compare_state(
    record: GreenRecord | GreenPart, state: GreenState, *, with_cache: bool
) -> list[Mismatch]:
    """Every watched path, dataset file and (optionally) cache root that differs from the record
    (a `GreenRecord`: its run part; the pytest part pins no dataset)."""
    seen: set[str] = set()
    out: list[Mismatch] = []
    datasets = (
        compare(record.datasets, state.datasets)
        if not isinstance(record, GreenPart) or record.door is FrontDoor.RUN
        else []
    )
    for m in [*compare(record.watched, state.watched), *datasets]:
        if m.path not in seen:
            seen.add(m.path)
            out.append(m)
    if with_cache:
        out.extend(compare(record.cache, state.cache))
    return sorted(out, key=lambda m: m.path)


def doors_in_use(config: Config, paths: Iterable[str]) -> set[FrontDoor]:
    """The front doors whose part the record must hold, from a listing of the repository (the
    index or the working tree): `cachelint run` with any dataset file, the pytest plugin with
    any entry it owns in the first cache root."""
    from cachelint.frontdoors import looks_like_pytest, owner, scenario_of

    selector = Selector(config)
    root = config.cache[0]
    head = f"{root}/cache/"
    datasets: set[str] = set()
    shaped: set[str] = set()
    for path in paths:
        if path.startswith(head):
            if path.endswith("/entry.json"):
                scenario = scenario_of(path[: -len("/entry.json")], root)
                if scenario is not None and looks_like_pytest(scenario):
                    shaped.add(scenario)
        elif selector.dataset(path):
            datasets.add(path)
    doors = {FrontDoor.RUN} if datasets else set()
    top = os.path.normpath(config.datasets).replace(os.sep, "/")
    prefix = "" if top == "." else top + "/"

    def is_dataset(scenario: str) -> bool:
        return f"{prefix}{scenario}.json" in datasets

    if any(owner(s, is_dataset) is FrontDoor.PYTEST for s in shaped):
        doors.add(FrontDoor.PYTEST)
    return doors


def relevant(config: Config, paths: Iterable[str]) -> list[str]:
    selector = Selector(config)
    return [p for p in paths if selector.relevant(p)]
