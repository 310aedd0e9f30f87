"""The facts model: what one check found out about the cache tree, shared by every rule.

Rules never call git or walk the cache tree themselves; `cachelint.collect` gathers these facts
once per check (git listings in `cachelint.listing`, entries through `cachelint.reading`) and
hands them over frozen, so a rule is a function of these facts alone. The derived views below
are computed on first use, because most checks need only a few of them and a large tree makes
each cost real time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from itertools import compress, repeat
from operator import eq
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, TypeVar, cast

from cachelint.config import Config, Layout
from cachelint.store import Entry

if TYPE_CHECKING:
    from cachelint.secretscan import Secret

GITLINK = "160000"
SYMLINK = "120000"
ATTRIBUTES = ".gitattributes"
INFO_ATTRIBUTES = ".git/info/attributes"

_T = TypeVar("_T")


class IndexEntry(NamedTuple):
    # Immutable and shared: a tree has a handful of distinct (mode, stage) pairs, so every index
    # path points at one of a few instances instead of an object of its own.
    mode: str  # "100644", "100755", "120000" (symlink), "160000" (gitlink)
    stage: int


@dataclass(frozen=True)
class IgnoreSource:
    """Where git found the rule that ignores a path (`git check-ignore -v`)."""

    source: str  # ".gitignore", "sub/.gitignore", ".git/info/exclude", a core.excludesFile path
    line: int
    pattern: str


@dataclass(frozen=True)
class TreeFacts:
    repo: Path
    config: Config
    now: datetime  # injected clock: tests pass a fixed moment, never the real date
    roots: tuple[str, ...]  # repo-relative cache roots that exist on disk
    missing_roots: tuple[str, ...] = ()  # configured roots that do not exist
    # Files and symlinks on disk under roots, each once, in the walk's order.
    disk_files: list[str] = field(default_factory=list)
    symlinks: set[str] = field(default_factory=set)  # symlinks on disk (files or dirs)
    index: dict[str, IndexEntry] = field(default_factory=dict)  # index entries under roots
    untracked: set[str] = field(default_factory=set)  # --others --exclude-standard
    ignored: set[str] = field(default_factory=set)  # --others --ignored --exclude-standard
    # path -> "set", "unset", "unspecified", "auto" or a text=<value> string (git check-attr)
    text_attr: dict[str, str] = field(default_factory=dict)
    # path -> the attributes that rewrite its bytes ("ident", "filter=lfs", "eol=crlf",
    # "working-tree-encoding=UTF-16"; `cachelint.attrcheck`), only for paths that have one
    rewrite_attr: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Valid entries, their content verified (`cachelint.entries`). Their `request` is always
    # empty: the linter needs it only to verify the key; `Store.get` reads one when it is needed.
    entries: list[Entry] = field(default_factory=list)
    corrupt: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    excluded: int = 0  # files skipped by `exclude`
    # Neither file, directory nor symbolic link (a FIFO, socket or device): never opened, since
    # reading one can block forever or never end, and git cannot commit it.
    special: frozenset[str] = frozenset()
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
    # Every name the walk met under the roots, and every part of each configured root's path.
    walked_names: set[str] = field(default_factory=set)
    all_indexed: bool = False  # True: every path the walk found is in the index (collect knows)
    # The .NET project files in git's index (`listing.PROJECTS`), which the pins are read from;
    # None: not listed (the pins then list them themselves).
    projects: tuple[str, ...] | None = None
    # The configured env-file as git sees it (`listing.env_file_state`): "tracked", "unignored"
    # or "ignored"; None when none is configured or it is not on disk.
    env_file: str | None = None
    # By stamp path, for each root whose committed, unchanged stamp no longer seals its entries
    # (`rules.unstamped.unsealed`): the paths under the root's cache directory that differ
    # between the working tree and the commit that last wrote the stamp (`listing.history`);
    # None when the history lacks that commit (a shallow clone). Asked only for those roots,
    # since `git log` walks the history.
    stamp_changes: Mapping[str, AbstractSet[str] | None] = field(default_factory=dict)
    # Every tracked or untracked-but-not-ignored path of the repository, sorted, when the config
    # watches files (the secret rule scans the watched ones); None when it watches none.
    worktree: tuple[str, ...] | None = None
    # Each secret in a cache entry's file, with the file's path, in path order
    # (`entryscan.scan_entries`); None when the check runs no secret rule.
    entry_secrets: tuple[tuple[str, Secret], ...] | None = None
    # Each configured root's layout as `meai.guess_layout` reads it from the tree's shape, and
    # whether the evidence was clear; only for `layout = "auto"` (empty otherwise).
    layout_guesses: Mapping[str, tuple[Layout, bool]] = field(default_factory=dict)
    _derived: dict[Callable[[TreeFacts], object], object] = field(
        default_factory=dict, repr=False, compare=False
    )

    def derived(self, compute: Callable[[TreeFacts], _T]) -> _T:
        """`compute(self)`, computed once per check: several rules share the stamp states and
        the current pins, which are too costly to recompute per rule on a large tree."""
        try:
            return cast(_T, self._derived[compute])
        except KeyError:
            value = self._derived[compute] = compute(self)
            return value

    @cached_property
    def meai_roots(self) -> tuple[str, ...]:
        """The configured roots holding a MEAI storage root (`meai.is_meai_root`): every one
        for `layout = "meai"`, those the tree's shape says are MEAI's for "auto"."""
        if self.config.layout is Layout.MEAI:
            return tuple(self.config.cache)
        guesses = self.layout_guesses.items()
        return tuple(root for root, (layout, _) in guesses if layout is Layout.MEAI)

    @cached_property
    def on_disk(self) -> frozenset[str]:
        return frozenset(self.disk_files)

    @cached_property
    def gone(self) -> frozenset[str]:
        """Paths in the index that are not on disk (usually none)."""
        if self.all_indexed and len(self.disk_files) == len(self.index):
            return frozenset()  # a subset of the same size: equal, no set of either to build
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
        sorting every path of a large tree costs more than the rules that read them, so rules
        sort only what they report."""
        return self.on_disk | self.gone if self.gone else self.on_disk

    @property
    def file_count(self) -> int:
        """len(files), without building the set: no path in `gone` is on disk."""
        return len(self.disk_files) + len(self.gone)

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
    def names(self) -> AbstractSet[str]:
        """Every name a path in `nodes` can end in, and possibly a few more (empty or excluded
        directories). A cache repeats its scenario directories and file names thousands of
        times, so rules about single names clear the whole tree by checking this set, which the
        walk gathers at no cost, and build `nodes` only when a name is suspect."""
        if not self.gone:
            return self.walked_names  # no copy of a set as large as the tree
        more = {part for path in self.gone for part in path.split("/")}
        return frozenset(self.walked_names | more)

    @cached_property
    def names_text(self) -> str:
        """Every name in `names`, each between two "/" (which no name holds): one string that
        the rules about names scan at C speed instead of looping over the names."""
        return "/".join(["", *self.names, ""])

    @cached_property
    def worst_path(self) -> tuple[str | None, int]:
        """The longest file path in UTF-16 code units (what Windows counts), and its length;
        the first in sorted order among equally long ones, so output is stable."""
        # The list rather than the `files` set: a pass over a large set visits its strings in
        # hash order, scattered over memory, and takes several times as long.
        files = [*self.disk_files, *self.gone] if self.gone else self.disk_files
        if not files:
            return None, 0
        # A path's UTF-16 length is its len() unless it holds characters beyond the BMP, so
        # only non-ASCII paths need encoding; the rest runs at C speed, not a Python loop.
        wide: dict[str, int] = {}
        # Every part of every path is in `names`, a small fraction of the paths' text.
        if not self.names_text.isascii():
            wide = {p: utf16_len(p) for p in files if not p.isascii()}
        lengths = list(map(len, files))
        length = max(max(lengths), max(wide.values(), default=0))
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
