"""The git listings a check makes, and their parsers: what the index holds, which files git sees
changed, ignored or untracked, and their effective `text` attribute. Always `-z`, split on NUL,
decoded with surrogateescape so an undecodable name survives the round trip back to git."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

from cachelint.facts import GITLINK, SYMLINK, IgnoreSource, IndexEntry
from cachelint.fsutil import read_regular
from cachelint.gitutil import GitQueue, GitResult, blob_id, run_git, split_z, stage_record
from cachelint.walk import Walk

_REGULAR_TAG = "\0H 100644 "  # a record of a regular file, neither marked nor unmerged
_REGULAR = IndexEntry("100644", 0)
SKIP_WORKTREE = ("S", "s")  # ls-files -v: "s" is also marked assume-unchanged


def parse_stage(
    out: bytes, *, same_as: Iterable[str] = ()
) -> tuple[dict[str, IndexEntry], dict[str, str]]:
    """`ls-files -v --stage` records are "<tag> <mode> <object> <stage>\\t<path>". Returns the
    index, and the tag of each path whose tag is not "H": marked assume-unchanged ("h") or
    skip-worktree ("S", "s"), which git no longer compares with the disk, or unmerged ("M"). A
    path equal to one of `same_as` (the walk's) is that string object, not a copy: the index and
    the walk of a large tree then share their text."""
    index: dict[str, IndexEntry] = {}
    flagged: dict[str, str] = {}
    if not out:
        return index, flagged
    text = out.decode("utf-8", "surrogateescape")
    records = text.split("\0")
    records.pop()  # the empty string after the last terminator
    regular = text.count(_REGULAR_TAG) + text.startswith(_REGULAR_TAG[1:]) == len(records)
    del text
    if regular:
        # The usual index: every record "H 100644 <object> 0\t<path>", the object ids all one
        # length, so every path starts at the same offset and slicing replaces parsing.
        start = records[0].index("\t") + 1
        paths = [r[start:] for r in records]
        if same_as:
            walked = {path: path for path in same_as}
            paths = list(map(walked.get, paths, paths))
            del walked
        return dict.fromkeys(paths, _REGULAR), flagged
    shared: dict[str, IndexEntry] = {}
    for record in records:
        meta, _, path = record.partition("\t")
        kind = meta[2:8] + meta[-1]
        entry = shared.get(kind)
        if entry is None:
            entry = shared[kind] = IndexEntry(meta[2:8], int(meta[-1]))
        index[path] = entry
        if meta[0] != "H":
            flagged[path] = meta[0]
    return index, flagged


def changed_since(earlier: bytes, now: bytes) -> set[str]:
    """The paths whose record differs between two `ls-files -v --stage` listings: added,
    removed, or listed with another object id, mode, stage or tag. Both are in index order, so
    the records the two share at their start and at their end (all but a few, between two
    commits) are found by comparing bytes, and only the records between are split and compared."""
    head = _common_head(earlier, now)
    tail = _common_tail(earlier, now, head)
    before = earlier[head : len(earlier) - tail].split(b"\0")
    after = now[head : len(now) - tail].split(b"\0")
    differing = set(before).symmetric_difference(after)
    differing.discard(b"")
    return set(map(_record_path, differing))


def _common_head(earlier: bytes, now: bytes) -> int:
    """The length of the whole records both listings start with."""
    view = memoryview(earlier)
    same = _longest(lambda n: now.startswith(view[:n]), min(len(earlier), len(now)))
    return earlier.rfind(b"\0", 0, same) + 1


def _common_tail(earlier: bytes, now: bytes, head: int) -> int:
    """The length of the whole records both listings end with, after their first `head` bytes."""
    view = memoryview(earlier)
    end = len(earlier)
    same = _longest(lambda n: now.endswith(view[end - n :]), min(len(earlier), len(now)) - head)
    if same == 0:
        return 0
    start, other = end - same, len(now) - same
    if not (start == 0 or earlier[start - 1] == 0) or not (other == 0 or now[other - 1] == 0):
        start = earlier.find(b"\0", start) + 1  # the next record's start, in both
        if start == 0:  # no terminator: not a listing git wrote, compare it whole
            return 0
    return end - start


def _longest(fits: Callable[[int], bool], most: int) -> int:
    """The largest n up to `most` that `fits`, where every smaller n fits too: a binary search,
    each test here one memcmp."""
    low, high = 0, most
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


def _record_path(record: bytes) -> str:
    return record.partition(b"\t")[2].decode("utf-8", "surrogateescape")


def index_objects(stage: bytes, wanted: set[str]) -> dict[str, str]:
    """Object ids of the `wanted` paths in the `ls-files -v --stage` output, parsed only when
    git reported candidates (`gitutil.stage_record` reads each record)."""
    paths = {path.encode("utf-8", "surrogateescape"): path for path in wanted}
    out: dict[str, str] = {}
    for parsed in map(stage_record, stage.split(b"\0")):
        if parsed is not None and (path := paths.get(parsed[3])) is not None:
            out[path] = parsed[1].decode()
    return out


def really_modified(repo: Path, candidates: Iterable[str], recorded: dict[str, str]) -> set[str]:
    """diff-files compares stat data, so a file rewritten with the same bytes (or touched) shows
    up; hash each candidate's bytes as git hashes a blob and keep only those whose object id
    differs from the index's (`recorded`). The bytes are read here, not by `git hash-object`,
    which would follow a link that replaced the file since the walk: a file that is no longer a
    regular one (or is gone, or unreadable) counts as modified. They are hashed as stored, as
    git stores a `-text` path, which every cache path must be (`eval-cache-text-attr`)."""
    return {p for p in candidates if _blob_id(repo / p, recorded.get(p, "")) != recorded.get(p)}


def _blob_id(path: Path, recorded: str) -> str | None:
    """The object id of `path`'s bytes as a blob, in the hash of the repository (a 64-digit
    `recorded` id: SHA-256); None when it is not a regular file that can be read."""
    try:
        data = read_regular(path)
    except OSError:
        return None
    return blob_id(data, len(recorded))


def ignore_sources(repo: Path, ignored: set[str]) -> dict[str, IgnoreSource]:
    """One `git check-ignore -v` for all ignored files: which file and line ignores each."""
    paths = sorted(ignored)
    result = run_git(
        ["check-ignore", "-v", "-z", "--no-index", "--stdin"],
        cwd=repo,
        stdin=nul_joined(paths),
        ok_codes=(0, 1),
    )
    fields = split_z(result.out)
    out: dict[str, IgnoreSource] = {}
    for i in range(0, len(fields) - 3, 4):
        source, line, pattern, path = fields[i : i + 4]
        if source:
            out[path] = IgnoreSource(source, int(line) if line.isdigit() else 0, pattern)
    return out


# The .NET project files in git's index, which the pins are read from: untracked ones are left
# out, since listing them would make git walk the whole work tree.
PROJECT_SUFFIXES = (".csproj", ".fsproj", ".vbproj")
PROJECTS = ["ls-files", "-z", "--cached", "--", *(f"*{suffix}" for suffix in PROJECT_SUFFIXES)]


def projects(result: GitResult) -> tuple[str, ...] | None:
    """The project files `PROJECTS` listed, sorted; None when git could not list them."""
    return tuple(sorted(set(split_z(result.out)))) if result.rc == 0 else None


def git_dir(result: GitResult) -> Path | None:
    """The repository's own git directory from `rev-parse --absolute-git-dir`, or None (no entry
    cache this time) when git did not name an existing absolute directory: a git older than 2.13
    echoes the option back, and the cache must never land in the work tree."""
    text = result.out.decode("utf-8", "surrogateescape").strip()
    path = Path(text)
    return path if result.rc == 0 and text and path.is_absolute() and path.is_dir() else None


def nul_joined(paths: list[str]) -> bytes:
    return ("\0".join(paths) + "\0").encode("utf-8", "surrogateescape")


# Without preloadIndex: its threads would lstat the same files as the walk, on the same two
# cores, for a diff-files that finishes long before the walk anyway. With all of git's stat data
# whatever the config says: with core.trustctime=false or core.checkStat=minimal, a same-size edit
# with its mtime put back looks unchanged to diff-files, and so to the entry cache and the dirty
# rule (a file whose stat data then differs only costs a read: its content decides).
DIFF_FILES = [
    *(
        "-c",
        "core.preloadIndex=false",
        "-c",
        "core.trustctime=true",
        "-c",
        "core.checkStat=default",
    ),
    *("diff-files", "-z", "--name-only"),
]


@dataclass
class Listings:
    """What git said about the paths under the roots."""

    index: dict[str, IndexEntry]
    flagged: dict[str, str]  # ls-files -v tag of marked or unmerged paths
    candidates: set[str]  # paths whose working tree may differ from the index
    recorded: dict[str, str]  # the candidates' object ids in the index
    strays: bool  # the walk found a path the index lacks
    nested: set[str] = field(default_factory=set)
    untracked: set[str] = field(default_factory=set)
    ignored: set[str] = field(default_factory=set)
    excluded: int = 0


def gather(
    git: GitQueue,
    spec: list[str],
    walk: Walk,
    stage_job: Future[GitResult],
    changed_job: Future[GitResult],
) -> Listings:
    stage = stage_job.result().out
    index, flagged = parse_stage(stage, same_as=walk.walked)
    # Everything the --others listings can name is on disk and not in the index, so when every
    # walked path is in the index (checked before `exclude` dropped any) neither needs to run.
    strays = not all(map(index.__contains__, walk.walked))
    if strays:
        others = git.submit(["ls-files", "-z", "--others", "--exclude-standard", *spec])
        ignored = git.submit(
            ["ls-files", "-z", "--others", "--ignored", "--exclude-standard", *spec]
        )
    # diff-files skips files marked assume-unchanged or skip-worktree: those are compared like
    # its own candidates, so such a mark hides a change from neither the dirty rule nor the
    # entry cache.
    candidates = set(split_z(changed_job.result().out)) | flagged.keys()
    recorded = index_objects(stage, candidates) if candidates else {}
    found = Listings(index, flagged, candidates, recorded, strays)
    if _has_mode(index, GITLINK):
        found.nested = {p for p, e in index.items() if e.mode == GITLINK}
    drop = walk.drop
    if drop is not None:
        found.index = {p: e for p, e in index.items() if not drop(p)}
        found.excluded = len(index) - len(found.index)
        found.candidates = {p for p in candidates if not drop(p)}
    if strays:
        found.untracked = set(split_z(others.result().out))
        found.ignored = set(split_z(ignored.result().out))
    for listed in (found.untracked, found.ignored):
        dirs = {p for p in listed if p.endswith("/")}
        listed -= dirs
        found.nested.update(d.rstrip("/") for d in dirs)
    if drop is not None:
        found.untracked = {p for p in found.untracked if not drop(p)}
        found.ignored = {p for p in found.ignored if not drop(p)}
    if walk.unreadable:
        walk.files += _hidden_by(walk.unreadable, found.index)
    return found


def modified(repo: Path, walk: Walk, found: Listings, limit: int) -> set[str]:
    """Tracked files whose content differs from the index: git's candidates, hashed; one above
    `limit` (max-entry-bytes) is not read (it would be read whole) and counts as
    modified, as a FIFO does."""
    on_disk = set(walk.files)
    index = found.index
    hashable = {
        p
        for p in found.candidates
        if p in on_disk
        and p not in walk.symlinks
        and p not in walk.special
        and p in index
        and index[p].mode not in (GITLINK, SYMLINK)
    }
    oversized = {p for p in hashable if _size(repo / p) > limit} if hashable else set()
    hashable -= oversized
    modified = really_modified(repo, hashable, found.recorded) if hashable else set()
    # A FIFO or device in place of a tracked file is not what was committed; never hashed.
    return modified | oversized | {p for p in found.candidates if p in walk.special and p in index}


def _size(path: Path) -> int:
    try:
        return os.lstat(path).st_size
    except OSError:  # gone since the walk: hash-object reports it as it would
        return 0


def _hidden_by(unreadable: dict[str, str], index: dict[str, IndexEntry]) -> list[str]:
    """The index's paths under the directories that could not be listed: on disk as far as
    anyone can tell, and reported through their directory, not as deleted."""
    prefixes = tuple(f"{d}/" for d in unreadable)
    return [p for p in index if p.startswith(prefixes)]


def _has_mode(index: dict[str, IndexEntry], mode: str) -> bool:
    # The index shares one IndexEntry per (mode, stage): a few values to look at, not every path.
    return any(e.mode == mode for e in set(index.values()))


def env_file_state(repo: Path, env_file: str | None) -> str | None:
    """How git sees the credential file `env_file`: "tracked", "unignored" (one `git add -A`
    from a commit) or "ignored"; None when none is configured or it is not on disk."""
    if not env_file or not (repo / env_file).exists():
        return None
    tracked = split_z(run_git(["ls-files", "-z", "--", f":(literal){env_file}"], cwd=repo).out)
    if tracked:
        return "tracked"
    ignored = run_git(["check-ignore", "-q", "--", env_file], cwd=repo, ok_codes=(0, 1))
    return "unignored" if ignored.rc == 1 else "ignored"


def history(repo: Path) -> Callable[[str, str], set[str] | None]:
    """Asks git which paths under the directory `under` differ between the working tree and the
    commit that last wrote `path`: None when the history does not have it (a shallow clone).
    Asked only when a rule needs it, since `git log` walks the history."""

    def changed_since(path: str, under: str) -> set[str] | None:
        log = run_git(["log", "-1", "--format=%H", "--", path], cwd=repo, check=False)
        commit = log.out.decode().strip()
        if log.rc != 0 or not commit:
            return None
        diff = run_git(
            ["diff", "--name-only", "-z", "--no-renames", commit, "--", f":(literal){under}"],
            cwd=repo,
            check=False,
        )
        return None if diff.rc != 0 else set(split_z(diff.out))

    return changed_since
