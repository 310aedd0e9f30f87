"""Facts about the cache tree, gathered once per check and shared by every rule.

Rules never call git or walk the disk themselves: `collect` lists the tree with a few bulk git
plumbing calls (always -z), walks each cache root once, and reads every entry once, or takes it
from the entry cache when git reports its entry.json unchanged (`cachelint.entrycache`). Without
an entry cache, helper processes read the committed entries on the other cores while the walk
goes on (`cachelint.readahead`).

The plumbing runs one call after another on a background thread, queued before the Python walk,
so git uses the second core while Python scans the disk and parses entry.json files; per-file git
calls or GitPython would make a 100,000-entry tree take minutes instead of seconds. The walk
also hands back the entry directories and the distinct names it met, so nothing later regroups
or re-splits 200,000 paths; the two `--others` listings run only when the walk found a path the
index lacks.
"""

from __future__ import annotations

import gc
import os
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from itertools import compress, repeat
from operator import attrgetter, eq, itemgetter
from pathlib import Path
from typing import NamedTuple, TypeVar, cast

from cachelint import entrycache, readahead
from cachelint.config import Config
from cachelint.errors import CorruptEntry
from cachelint.fsutil import TEMP_PREFIX
from cachelint.gitutil import GitResult, run_git, split_z, stage_record, start_git
from cachelint.readahead import read_entry
from cachelint.store import (
    CACHE_DIR,
    CONTENTS_FILE,
    ENTRY_FILE,
    ENTRY_FILES,
    Entry,
)

GITLINK = "160000"
SYMLINK = "120000"
ATTRIBUTES = ".gitattributes"
INFO_ATTRIBUTES = ".git/info/attributes"

_Matcher = Callable[[str], bool]
_T = TypeVar("_T")


class IndexEntry(NamedTuple):
    # Immutable and shared: a tree has a handful of distinct (mode, stage) pairs, so 200,000
    # index paths point at a few instances instead of 200,000 objects.
    mode: str  # "100644", "100755", "120000" (symlink), "160000" (gitlink)
    stage: int


@dataclass(frozen=True)
class IgnoreSource:
    """Where git found the rule that ignores a path (`git check-ignore -v`)."""

    source: str  # ".gitignore", "sub/.gitignore", ".git/info/exclude", a core.excludesFile path
    line: int
    pattern: str


@dataclass
class TreeFacts:
    repo: Path
    config: Config
    now: datetime  # injected clock: tests pass a fixed moment, never the real date
    roots: tuple[str, ...]  # repo-relative cache roots that exist on disk
    missing_roots: tuple[str, ...] = ()  # configured roots that do not exist
    disk_files: list[str] = field(default_factory=list)  # files and symlinks on disk under roots
    symlinks: set[str] = field(default_factory=set)  # symlinks on disk (files or dirs)
    index: dict[str, IndexEntry] = field(default_factory=dict)  # index entries under roots
    untracked: set[str] = field(default_factory=set)  # --others --exclude-standard
    ignored: set[str] = field(default_factory=set)  # --others --ignored --exclude-standard
    # path -> "set", "unset", "unspecified", "auto" or a text=<value> string (git check-attr)
    text_attr: dict[str, str] = field(default_factory=dict)
    # Readable entries. Their `request` is always empty: the linter never needs it and 100,000
    # request bodies would triple its memory; `Store.get` reads a request when it is needed.
    entries: list[Entry] = field(default_factory=list)
    corrupt: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    excluded: int = 0  # files skipped by `exclude`
    read_ahead: int = 0  # entries helper processes read for this check (`cachelint.readahead`)
    # Directories git shows as a whole ("sub/" in ls-files --others) or as a gitlink: nested
    # repositories, whose files git never tracks one by one.
    nested_repos: set[str] = field(default_factory=set)
    git_dirs: list[str] = field(default_factory=list)  # directories named .git under the roots
    modified: set[str] = field(default_factory=set)  # tracked, content differs from the index
    # Index paths marked skip-worktree, as a sparse checkout marks what it leaves out: git does
    # not expect them on disk.
    skip_worktree: set[str] = field(default_factory=set)
    ignore_sources: dict[str, IgnoreSource] = field(default_factory=dict)
    entry_dirs: dict[str, frozenset[str]] = field(default_factory=dict)  # entry dir -> file names
    # Lines of every attributes file that can apply to a file under a root, keyed by its
    # repo-relative path: ".gitattributes", "eval-cache/sub/.gitattributes", ".git/info/attributes".
    attributes: dict[str, list[str]] = field(default_factory=dict)
    walked_names: set[str] = field(default_factory=set)  # every name the walk met under roots
    all_indexed: bool = False  # True: every path the walk found is in the index (collect knows)
    _derived: dict[Callable[[TreeFacts], object], object] = field(
        default_factory=dict, repr=False, compare=False
    )

    def derived(self, compute: Callable[[TreeFacts], _T]) -> _T:
        """`compute(self)`, computed once per check: several rules share the stamp states and
        the current pins, and recomputing them per rule cost a second at 100,000 entries."""
        try:
            return cast(_T, self._derived[compute])
        except KeyError:
            value = self._derived[compute] = compute(self)
            return value

    @cached_property
    def on_disk(self) -> frozenset[str]:
        return frozenset(self.disk_files)

    @cached_property
    def gone(self) -> frozenset[str]:
        """Paths in the index that are not on disk (usually none)."""
        if self.all_indexed and len(self.on_disk) == len(self.index):
            return frozenset()  # a subset of the same size: equal, no pass over either needed
        return frozenset(self.index.keys() - self.on_disk)

    @cached_property
    def unindexed(self) -> frozenset[str]:
        """Paths on disk that are not in the index (usually none)."""
        if self.all_indexed:
            return frozenset()
        return frozenset(self.on_disk - self.index.keys())

    @cached_property
    def files(self) -> frozenset[str]:
        """Every file path git could commit or already has: on disk or in the index. Unordered:
        sorting 200,000 paths costs more than every rule that reads them, so rules sort only
        what they report."""
        return self.on_disk | self.gone if self.gone else self.on_disk

    @cached_property
    def nodes(self) -> set[str]:
        """`files` plus every directory above them (up to the repository top): what a checkout
        creates, so what Windows and case-insensitive file systems must accept."""
        out: set[str] = set()
        for path in self.files:
            out.add(path)
            parent = path.rpartition("/")[0]
            while parent and parent not in out:
                out.add(parent)
                parent = parent.rpartition("/")[0]
        return out

    @cached_property
    def names(self) -> frozenset[str]:
        """Every name a path in `nodes` can end in, and possibly a few more (empty or excluded
        directories). A cache repeats its scenario directories and file names thousands of
        times, so rules about single names clear the whole tree by checking this set, which the
        walk gathers at no cost, and build `nodes` only when a name is suspect."""
        out = set(self.walked_names)
        for path in self.gone:
            out.update(path.split("/"))
        for root in self.config.cache:
            out.update(root.split("/"))
        return frozenset(out)

    @cached_property
    def worst_path(self) -> tuple[str | None, int]:
        """The longest file path in UTF-16 code units (what Windows counts), and its length;
        the first in sorted order among equally long ones, so output is stable."""
        files = self.files
        if not files:
            return None, 0
        # A path's UTF-16 length is its len() unless it holds characters beyond the BMP, so
        # only non-ASCII paths need encoding. Everything else here runs at C speed: 200,000
        # paths through a Python loop cost 0.2 s.
        wide: dict[str, int] = {}
        # Every part of every path is in `names` (a tenth of the text of 200,000 paths).
        if not "".join(self.names).isascii():
            wide = {p: utf16_len(p) for p in files if not p.isascii()}
        lengths = list(map(len, files))
        length = max(max(lengths), max(wide.values(), default=0))
        # Iterating the same frozenset twice yields the same order, so compress pairs them.
        tied: Iterable[str] = compress(files, map(eq, lengths, repeat(length)))
        if wide:
            tied = [p for p in tied if p not in wide]
            tied += [p for p, n in wide.items() if n == length]
        return min(tied), length

    def index_paths(self, mode: str) -> list[str]:
        """Index paths with this mode (GITLINK, SYMLINK, ...). The index shares one IndexEntry
        per (mode, stage), so the usual answer, none, costs one pass over those few values."""
        kinds = {e for e in set(self.index.values()) if e.mode == mode}
        if not kinds:
            return []
        return [p for p, e in self.index.items() if e in kinds]


def utf16_len(text: str) -> int:
    if text.isascii():
        return len(text)
    # surrogatepass: undecodable bytes from git arrive as lone surrogates (surrogateescape).
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def under(path: str, root: str) -> bool:
    return path == root or path.startswith(root + "/")


def collect(config: Config, *, now: datetime, entry_cache: bool = True) -> TreeFacts:
    """Gather every fact the rules need with one walk, one read per entry and bulk git calls.

    `entry_cache` reuses the entries an earlier check parsed where git reports entry.json
    unchanged (see `cachelint.entrycache`); False reads every entry from disk."""
    repo = config.repo
    roots = [r for r in config.cache if os.path.isdir(repo / r) and not os.path.islink(repo / r)]
    facts = TreeFacts(
        repo=repo,
        config=config,
        now=now,
        roots=tuple(roots),
        missing_roots=tuple(r for r in config.cache if r not in roots),
    )
    # `:(literal)` so a root named like a glob is never expanded by git.
    spec = ["--", *(f":(literal){r}" for r in config.cache)]
    git = _Plumbing(repo)
    # Filled on the git thread: the git directory, then the helpers reading ahead (if any).
    known_git_dir: list[Path | None] = []
    ahead: list[readahead.Helpers] = []

    def read_ahead(stage: GitResult) -> None:
        """On the git thread, as soon as the index is listed: helpers read its entries while the
        walk goes on, unless the entry cache will serve them."""
        git_dir = known_git_dir[0] if known_git_dir else None
        if git_dir is not None and entrycache.has_entries(git_dir, config.layout):
            return
        helpers = readahead.start(repo, stage.out, _cache_prefixes(roots), config.layout)
        if helpers is not None:
            ahead.append(helpers)

    try:
        with no_cyclic_gc():
            # None of these needs the walk: they run on the other core while Python walks.
            if entry_cache:
                git.submit(
                    "git-dir",
                    ["rev-parse", "--absolute-git-dir"],
                    then=lambda result: known_git_dir.append(_git_dir(result)),
                )
            git.submit("stage", ["ls-files", "-z", "-v", "--stage", *spec], then=read_ahead)
            # Without preloadIndex: its threads lstat the same files the walk lists, and on
            # two cores that contention slowed the walk by a quarter (1.3 s to 1.0 s measured
            # at 100,000 entries) for a diff-files that finishes long before the walk anyway.
            unthreaded = ["-c", "core.preloadIndex=false"]
            git.submit("changed", [*unthreaded, "diff-files", "-z", "--name-only", *spec])
            _collect(facts, git, spec, entry_cache=entry_cache, ahead=ahead)
    finally:
        git.close()
        for helpers in ahead:
            helpers.close()
    if facts.ignored:
        facts.ignore_sources = _ignore_sources(repo, facts.ignored)
    return facts


@contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """Collecting builds ~10 objects per file, all kept to the end and none in a cycle, so every
    run of the cyclic collector rescans a growing heap for nothing: at 100,000 entries it cost
    as much as parsing the JSON, and running the rules over those facts afterwards cost another
    0.1-0.2 s of collections. Reference counting still frees everything transient.

    On leaving, what was built is moved to the oldest generation unscanned (freeze, then
    unfreeze): enabled as it is, the collector would find every object since the start in its
    youngest generation, and the first allocation would run a full collection over them all
    (0.07 s at 100,000 entries, spent after the check had its answer)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.freeze()
            gc.unfreeze()
            gc.enable()


def _collect(
    facts: TreeFacts,
    git: _Plumbing,
    spec: list[str],
    *,
    entry_cache: bool,
    ahead: list[readahead.Helpers],
) -> None:
    repo, config, roots = facts.repo, facts.config, facts.roots

    for root in config.cache:
        if os.path.islink(repo / root):
            facts.symlinks.add(root)
            facts.disk_files.append(root)
    holders: list[tuple[str, tuple[str, ...]]] = []
    base = _opening_base(repo)
    for root in roots:
        holders += _walk(base, root, facts)

    # check-attr is the longest git call: queued as soon as the walk ends, it is done by the
    # time the entries are read.
    walked = facts.disk_files
    drop = _exclusions(config)
    if drop is not None:
        facts.disk_files = [p for p in walked if not drop(p)]
        facts.excluded = len(walked) - len(facts.disk_files)
        facts.symlinks = {p for p in facts.symlinks if not drop(p)}
        holders = [(d, tuple(n for n in names if not drop(f"{d}/{n}"))) for d, names in holders]
    plain = [p for p in facts.disk_files if p not in facts.symlinks]
    if plain:
        git.submit("attrs", ["check-attr", "-z", "--stdin", "text"], stdin=_nul_joined(plain))

    stage = git.result("stage").out
    # With helpers, the object ids of the entry.json files come with their lines (or from their
    # input, when the cache is encoded anew): only a check that reads entries itself, with the
    # entry cache on, needs them from here (0.07 s at 100,000 entries).
    own_objects = entry_cache and not ahead
    facts.index, entry_objects, flagged = _parse_stage(stage, entry_objects=own_objects)
    # git's --others listings walk the whole tree again (a second each at 200,000 files, twice as
    # long as the rest of the plumbing). Everything they can list is on disk and not in the index
    # (a nested repository shows as "sub/", but its .git is on disk and never in the index), so
    # when every walked path is in the index they are empty and neither needs to run. Checked
    # on the walk before `exclude` dropped anything, so nested repositories are found exactly as
    # before.
    strays = not all(map(facts.index.__contains__, walked))  # C speed over 200,000 paths
    # `exclude` drops the same paths from both sides below, so this stays true.
    facts.all_indexed = not strays
    del walked
    if strays:
        git.submit("others", ["ls-files", "-z", "--others", "--exclude-standard", *spec])
        git.submit(
            "ignored", ["ls-files", "-z", "--others", "--ignored", "--exclude-standard", *spec]
        )

    # diff-files ran right after ls-files, long before the walk ended: no wait in practice.
    # It skips files marked assume-unchanged or skip-worktree: those are hashed like its own
    # candidates, so such a mark can hide a change from neither the dirty rule nor the entry
    # cache.
    candidates = set(split_z(git.result("changed").out))
    candidates.update(flagged)
    facts.skip_worktree = {p for p, tag in flagged.items() if tag in _SKIP_WORKTREE}
    # The object ids the dirty check compares with, and then the 20 MB listing can go.
    recorded = _index_objects(stage, candidates) if candidates else {}
    del stage
    git_dir = _git_dir(git.result("git-dir")) if entry_cache else None
    facts.nested_repos.update(facts.index_paths(GITLINK))
    if drop is not None:
        before_index = len(facts.index)
        facts.index = {p: e for p, e in facts.index.items() if not drop(p)}
        facts.excluded += before_index - len(facts.index)
        candidates = {p for p in candidates if not drop(p)}
    # `ahead` was filled on the git thread before it reported the index listed.
    if ahead:
        # While the helpers finish, what every check reports anyway and no entry changes (the
        # summary's worst path, and the names it needs): 0.2 s at 100,000 entries, else idle.
        facts.worst_path  # noqa: B018
    read = ahead[0].entries() if ahead else None
    facts.read_ahead = len(read or ())
    if git_dir is not None and read is not None:
        _read_entries_ahead(facts, holders, git_dir, candidates, ahead[0], read)
    elif git_dir is not None:
        _read_entries_cached(facts, holders, git_dir, entry_objects, candidates)
    else:
        _read_entries(facts, holders, None if read is None else read.get)
    _read_attributes(facts)

    if strays:
        facts.untracked = set(split_z(git.result("others").out))
        facts.ignored = set(split_z(git.result("ignored").out))
    for listing in (facts.untracked, facts.ignored):
        dirs = {p for p in listing if p.endswith("/")}
        listing -= dirs
        facts.nested_repos.update(d.rstrip("/") for d in dirs)
    if drop is not None:
        facts.untracked = {p for p in facts.untracked if not drop(p)}
        facts.ignored = {p for p in facts.ignored if not drop(p)}
    if plain:
        facts.text_attr = _parse_text_attr(git.result("attrs").out, plain)

    facts.modified = _really_modified(facts, candidates, recorded)


def _git_dir(result: GitResult) -> Path | None:
    """The repository's own git directory, or None (no entry cache this time) when git did not
    name an existing absolute directory: a git older than 2.13 echoes `--absolute-git-dir` back,
    and the cache must never land in the work tree."""
    text = result.out.decode("utf-8", "surrogateescape").strip()
    path = Path(text)
    return path if text and path.is_absolute() and path.is_dir() else None


_Job = tuple[str, list[str], bytes | None, Callable[[GitResult], None] | None]


class _Plumbing:
    """Runs the bulk git calls one after another on a background thread.

    Started all at once, four git processes and the Python walk (the critical path) fought over
    two cores and the walk got a fraction of one. Queued, git runs back to back on the other core
    while Python keeps its own; the thread waits for git (`waitpid`, which releases the GIL) and
    runs a call's short `then`.
    """

    def __init__(self, repo: Path) -> None:
        self._repo = repo
        self._jobs: queue.Queue[_Job | None] = queue.Queue()
        self._done: dict[str, threading.Event] = {}
        self._results: dict[str, GitResult | BaseException] = {}
        self._thread = threading.Thread(target=self._run, name="cachelint-git", daemon=True)
        self._thread.start()

    def submit(
        self,
        name: str,
        args: list[str],
        *,
        stdin: bytes | None = None,
        then: Callable[[GitResult], None] | None = None,
    ) -> None:
        """Queue `git ARGS`; `then(result)` runs on the git thread before `result(name)` returns
        it."""
        self._done[name] = threading.Event()
        self._jobs.put((name, args, stdin, then))

    def result(self, name: str) -> GitResult:
        self._done[name].wait()
        outcome = self._results.pop(name)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def close(self) -> None:
        """Drop the calls not started yet and wait for the thread: the call under way may still
        be starting processes (its `then`) that the caller must clean up."""
        with suppress(queue.Empty):
            while True:
                self._jobs.get_nowait()
        self._jobs.put(None)
        self._thread.join()

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            name, args, stdin, then = job
            del job  # the input is in git's temp file once started: 20 MB for check-attr
            try:
                process = start_git(args, cwd=self._repo, stdin=stdin)
                stdin = None
                result = process.result()
                if then is not None:
                    then(result)
                self._results[name] = result
            except BaseException as exc:  # handed to the main thread by result()
                self._results[name] = exc
            self._done[name].set()


def _nul_joined(paths: list[str]) -> bytes:
    return ("\0".join(paths) + "\0").encode("utf-8", "surrogateescape")


def _opening_base(repo: Path) -> str:
    """`repo` as the path to open the files under it by: relative to the working directory when
    that has fewer parts (usually "."), as the kernel resolves a path part by part. The walk of
    100,000 entry directories took 20% less time under "." than under /tmp/.../repo."""
    absolute = str(repo)
    try:
        relative = os.path.relpath(absolute)
    except (OSError, ValueError):  # no working directory any more; another drive on Windows
        return absolute
    return relative if relative.count(os.sep) < absolute.count(os.sep) else absolute


def _walk(base: str, root: str, facts: TreeFacts) -> list[tuple[str, tuple[str, ...]]]:
    """One scandir pass: symlinks are recorded, never followed (a link can point out of the
    tree or loop); `.git` directories are noted because git silently skips them.

    Returns each directory holding entry files or temp files with their names (links left out),
    so entries are found without grouping 200,000 paths again."""
    files, links, git_dirs = facts.disk_files, facts.symlinks, facts.git_dirs
    seen = facts.walked_names
    holders: list[tuple[str, tuple[str, ...]]] = []
    # Nearly every entry directory holds the same two names: one tuple for all of them, not a
    # list each (9 MB at 100,000 entries).
    held_alike: dict[tuple[str, ...], tuple[str, ...]] = {}
    stack = [root]
    while stack:
        rel = stack.pop()
        try:
            it = os.scandir(f"{base}/{rel}")
        except OSError:
            continue
        with it:
            prefix = rel + "/"
            held: list[str] = []
            for de in it:
                name = de.name
                # DirEntry answers from d_type, without a stat; regular files (two of every
                # three names) are asked about first, and nothing follows a link.
                if de.is_file(follow_symlinks=False):
                    files.append(prefix + name)
                    if name in ENTRY_FILES or name.startswith(TEMP_PREFIX):
                        held.append(name)
                        continue  # into `seen` with its directory's names, below
                    seen.add(name)
                    continue
                seen.add(name)
                if de.is_dir(follow_symlinks=False):
                    path = prefix + name
                    stack.append(path)
                    if name == ".git":
                        git_dirs.append(path)
                else:  # a symbolic link (or a fifo, socket or device: never read)
                    path = prefix + name
                    if de.is_symlink():
                        links.add(path)
                    files.append(path)
            if held:
                names = tuple(held)
                holders.append((rel, held_alike.setdefault(names, names)))
    for names in held_alike:  # a few distinct tuples, not 200,000 names one by one
        seen.update(names)
    return holders


def _exclusions(config: Config) -> _Matcher | None:
    from cachelint.meai import skip_matcher  # `exclude`, and the results in a MEAI root

    return skip_matcher(config)


_ENTRY_SUFFIX = "/" + ENTRY_FILE
_REGULAR_TAG = "\0H 100644 "  # a record of a regular file, neither marked nor unmerged
_REGULAR = IndexEntry("100644", 0)
_SKIP_WORKTREE = ("S", "s")  # ls-files -v: "s" is also marked assume-unchanged


def _parse_stage(
    out: bytes, *, entry_objects: bool = False
) -> tuple[dict[str, IndexEntry], dict[str, str], dict[str, str]]:
    """`ls-files -v --stage` records are "<tag> <mode> <object> <stage>\t<path>". Returns the
    index; if `entry_objects`, the object ids of the entry.json files by path (what the entry
    cache checks its entries against; other ids are left out, only the few dirty candidates need
    theirs, see `_really_modified`); and the tag of each path whose tag is not "H": marked
    assume-unchanged ("h") or skip-worktree ("S", "s"), which git no longer compares with the
    disk, or unmerged ("M")."""
    index: dict[str, IndexEntry] = {}
    objects: dict[str, str] = {}
    flagged: dict[str, str] = {}
    if not out:
        return index, objects, flagged
    text = out.decode("utf-8", "surrogateescape")
    # Decode once and split as str: per-record bytes decoding doubled the cost at 200,000 files.
    records = text.split("\0")
    records.pop()  # the empty string after the last terminator
    regular = text.count(_REGULAR_TAG) + text.startswith(_REGULAR_TAG[1:]) == len(records)
    any_flags = text.count("\0H ") + text.startswith("H ") != len(records)
    del text  # 20 MB at 200,000 files, while the walk's helpers hold theirs
    if regular:
        # The usual index: every record "H 100644 <object> 0\t<path>" (tag H is never an
        # unmerged entry, so stage 0), the object ids all one length, so every path starts at
        # the same offset; sliced and keyed at C speed, a third of the general loop's cost.
        start = records[0].index("\t") + 1
        paths = [r[start:] for r in records]
        index = dict.fromkeys(paths, _REGULAR)
        if entry_objects:  # keyed by the index's own path strings: 10 MB less at 100,000
            # At C speed too: a comprehension over 200,000 pairs cost 0.1 s.
            wanted = list(map(str.endswith, paths, repeat(_ENTRY_SUFFIX)))
            object_id = itemgetter(slice(9, start - 3))  # "H 100644 <object> 0\t"
            ids = map(object_id, compress(records, wanted))
            objects = dict(zip(compress(paths, wanted), ids, strict=True))
        return index, objects, flagged
    shared: dict[str, IndexEntry] = {}
    for record in records:
        meta, _, path = record.partition("\t")
        kind = meta[2:8] + meta[-1]
        entry = shared.get(kind)
        if entry is None:
            entry = shared[kind] = IndexEntry(meta[2:8], int(meta[-1]))
        index[path] = entry
        if entry_objects and path.endswith(_ENTRY_SUFFIX):
            objects[path] = meta[9:-2]
        if any_flags and meta[0] != "H":
            flagged[path] = meta[0]
    return index, objects, flagged


def _parse_text_attr(out: bytes, paths: list[str]) -> dict[str, str]:
    """check-attr answers "<path>\0text\0<value>\0" in input order. The usual answer is "unset"
    for every file: counting that triple avoids building 600,000 strings for 200,000 files."""
    if out.count(b"\0text\0unset\0") == len(paths):
        return dict.fromkeys(paths, "unset")
    fields = split_z(out)
    values: dict[str, str] = {}
    result: dict[str, str] = {}
    for i in range(0, len(fields) - 2, 3):
        value = fields[i + 2]
        result[fields[i]] = values.setdefault(value, value)
    return result


def _index_objects(stage: bytes, wanted: set[str]) -> dict[str, str]:
    """Object ids of the `wanted` paths in the `ls-files -v --stage` output, parsed only when
    diff-files reported candidates: cheaper than keeping 200,000 ids for the common clean case."""
    paths = {path.encode("utf-8", "surrogateescape"): path for path in wanted}
    out: dict[str, str] = {}
    for parsed in map(stage_record, stage.split(b"\0")):
        if parsed is not None and (path := paths.get(parsed[3])) is not None:
            out[path] = parsed[1].decode()
    return out


def _read_entries_cached(
    facts: TreeFacts,
    holders: list[tuple[str, tuple[str, ...]]],
    git_dir: Path,
    entry_objects: dict[str, str],
    candidates: set[str],
) -> None:
    """`_read_entries`, taking each entry whose entry.json git reports unchanged from the entry
    cache, then rewriting it if any entry would be added, changed or dropped. Loaded only now,
    after the index listing's parse, whose moment of 70 MB was the check's peak with the
    entries already loaded beside it."""
    layout = facts.config.layout
    cached = entrycache.load(git_dir, layout)
    used = 0

    def unchanged(directory: str) -> Entry | None:
        nonlocal used
        path = f"{directory}/{ENTRY_FILE}"
        object_id = cached.objects.get(directory)
        if object_id is None or path in candidates or object_id != entry_objects.get(path):
            return None
        used += 1
        return cached.entries[directory]

    _read_entries(facts, holders, unchanged)
    if len(facts.entries) == used == len(cached.entries):
        return  # every entry came from the cache and none went unused: nothing to rewrite
    committed = _committed(facts, entry_objects, candidates)
    if used != len(committed) or len(cached.entries) != len(committed):
        entrycache.save(git_dir, layout, committed)


def _read_entries_ahead(
    facts: TreeFacts,
    holders: list[tuple[str, tuple[str, ...]]],
    git_dir: Path,
    candidates: set[str],
    helpers: readahead.Helpers,
    ahead: dict[str, Entry],
) -> None:
    """`_read_entries`, taking the entries helpers read in this run, which they do only when the
    cache file has none; then writing the lines they encoded as the new cache file when those
    hold exactly the committed entries (0.15 s not spent here), else encoding them all, with the
    object ids of the records the helpers were given."""
    own = _read_entries(facts, holders, ahead.get)
    suffix = len(_ENTRY_SUFFIX)
    if (
        own == 0  # every entry came from a helper...
        and len(facts.entries) == len(ahead)  # ...and the check left none of theirs out
        and not any(p[:-suffix] in ahead for p in candidates if p.endswith(_ENTRY_SUFFIX))
    ):
        entrycache.write(git_dir, facts.config.layout, helpers.lines())
    else:
        committed = _committed(facts, helpers.entry_objects(), candidates)
        entrycache.save(git_dir, facts.config.layout, committed)


def _committed(
    facts: TreeFacts, entry_objects: dict[str, str], candidates: set[str]
) -> list[tuple[Entry, str]]:
    """Each entry with the object id the index has for its entry.json, but those git reports
    changed or that are not in the index: what the entry cache may hold."""
    return [
        (e, object_id)
        for e in facts.entries
        if (path := f"{e.directory}/{ENTRY_FILE}") not in candidates
        and (object_id := entry_objects.get(path)) is not None
    ]


def _read_entries(
    facts: TreeFacts,
    holders: list[tuple[str, tuple[str, ...]]],
    unchanged: Callable[[str], Entry | None] | None = None,
) -> int:
    """Read every entry once; anything unreadable becomes a (path, reason) in `facts.corrupt`.
    Returns how many entry.json files it read itself.

    `holders` are the walk's directories with their entry and temp file names (links and
    excluded files already left out). `unchanged(directory)` may hand back an entry parsed by an
    earlier check (or a helper) instead of reading it again."""
    own = 0
    base = _opening_base(facts.repo)
    layout = facts.config.layout
    cache_prefixes = _cache_prefixes(facts.roots)
    entry_dirs, entries, corrupt = facts.entry_dirs, facts.entries, facts.corrupt
    ordered = sorted(holders)
    if unchanged is not None and _all_plain(ordered, cache_prefixes):
        # The usual tree, where every directory holds exactly the two entry files, the loop
        # below comes down to asking `unchanged` about each: done at C speed, 0.15 s less at
        # 100,000 entries when it has them all.
        directories = list(map(itemgetter(0), ordered))
        known = list(map(unchanged, directories))
        if None not in known:
            # Keyed by the entries' own directory strings: equal, and one of the two is kept.
            entry_dirs.update(dict.fromkeys(map(attrgetter("directory"), known), _PAIR))
            entries.extend(cast(list[Entry], known))
            return 0
        unchanged = dict(zip(directories, known, strict=True)).get  # each was asked once
    # Nearly every entry directory holds the same two names: share one frozenset between them
    # (a set per directory was 20 MB at 100,000 entries).
    shared: dict[frozenset[str], frozenset[str]] = {_PAIR: _PAIR}
    for directory, found in ordered:
        key = frozenset(found)
        names = shared.get(key)
        if names is None:
            names = shared[key] = frozenset(n for n in key if not n.startswith(TEMP_PREFIX))
        for temp in sorted(key - names) if len(key) > len(names) else ():
            corrupt.append(
                (
                    f"{directory}/{temp}",
                    "leftover temp file from an interrupted write; delete it and re-record",
                )
            )
        if not names or not directory.startswith(cache_prefixes):
            continue
        entry = None
        if unchanged is not None and ENTRY_FILE in names:
            entry = unchanged(directory)
            if entry is not None:
                directory = entry.directory  # equal: keep one of the two strings, not both
        entry_dirs[directory] = names
        if ENTRY_FILE not in names:
            corrupt.append(
                (
                    directory,
                    f"{CONTENTS_FILE} without {ENTRY_FILE} (an interrupted write); delete the "
                    "directory and re-record the entry",
                )
            )
            continue
        try:
            if entry is None:
                own += 1
                entry = read_entry(f"{base}/{directory}/{ENTRY_FILE}", directory, layout)
            if CONTENTS_FILE not in names:
                raise CorruptEntry(f"{CONTENTS_FILE} is missing")
            entries.append(entry)
        except CorruptEntry as exc:
            corrupt.append((directory, f"{exc}; delete the directory and re-record the entry"))
    return own


_PAIR = frozenset(ENTRY_FILES)
# The walk's name tuples of a directory holding exactly the two entry files, in either order.
_PAIRS = frozenset({ENTRY_FILES, ENTRY_FILES[::-1]})


def _all_plain(holders: list[tuple[str, tuple[str, ...]]], cache_prefixes: tuple[str, ...]) -> bool:
    """Whether every holder is an entry directory under a cache root with both entry files and
    nothing else (no temp file), checked at C speed."""
    return all(map(_PAIRS.__contains__, map(itemgetter(1), holders))) and all(
        map(str.startswith, map(itemgetter(0), holders), repeat(cache_prefixes))
    )


def _cache_prefixes(roots: Iterable[str]) -> tuple[str, ...]:
    """Where entry directories can be: under `<root>/cache/`."""
    return tuple(f"{root.rstrip('/')}/{CACHE_DIR}/" for root in roots)


def _read_attributes(facts: TreeFacts) -> None:
    """Read the attributes files that can apply under the roots: those in the directories above
    each root, those found inside by the walk, and .git/info/attributes (highest priority)."""
    wanted: set[str] = set()
    if ATTRIBUTES in facts.walked_names:  # else scanning 200,000 paths finds none
        wanted = {p for p in facts.disk_files if p.rpartition("/")[2] == ATTRIBUTES}
    for root in facts.config.cache:
        parent = root
        while parent:
            parent = parent.rpartition("/")[0]
            wanted.add(f"{parent}/{ATTRIBUTES}" if parent else ATTRIBUTES)
    wanted.add(INFO_ATTRIBUTES)
    for rel in wanted:
        try:
            with open(facts.repo / rel, encoding="utf-8", errors="surrogateescape") as fh:
                facts.attributes[rel] = fh.read().splitlines()
        except OSError:
            continue


def _really_modified(
    facts: TreeFacts, candidates: Iterable[str], recorded: dict[str, str]
) -> set[str]:
    """diff-files compares stat data, so a file rewritten with the same bytes (or touched) shows
    up; hash the few candidates once with `git hash-object` (which applies the same filters as
    `git add`) and keep only those whose content really differs from the index (`recorded`:
    the candidates' object ids there)."""
    disk = facts.on_disk
    check = sorted(
        p
        for p in candidates
        if p in disk
        and p not in facts.symlinks
        and p in facts.index
        and facts.index[p].mode not in (GITLINK, SYMLINK)
    )
    if not check:
        return set()
    # --stdin-paths is line based: a name with a newline cannot be hashed this way, keep it.
    odd = {p for p in check if "\n" in p}
    plain = [p for p in check if p not in odd]
    if not plain:
        return odd
    result = run_git(
        ["hash-object", "--stdin-paths"],
        cwd=facts.repo,
        stdin="".join(p + "\n" for p in plain).encode("utf-8", "surrogateescape"),
    )
    shas = result.out.decode("ascii").split()
    return odd | {p for p, sha in zip(plain, shas, strict=True) if sha != recorded.get(p)}


def _ignore_sources(repo: Path, ignored: set[str]) -> dict[str, IgnoreSource]:
    """One `git check-ignore -v` for all ignored files: which file and line ignores each."""
    paths = sorted(ignored)
    result = run_git(
        ["check-ignore", "-v", "-z", "--no-index", "--stdin"],
        cwd=repo,
        stdin=_nul_joined(paths),
        ok_codes=(0, 1),
    )
    fields = split_z(result.out)
    out: dict[str, IgnoreSource] = {}
    for i in range(0, len(fields) - 3, 4):
        source, line, pattern, path = fields[i : i + 4]
        if source:
            out[path] = IgnoreSource(source, int(line) if line.isdigit() else 0, pattern)
    return out
