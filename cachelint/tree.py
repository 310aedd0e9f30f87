"""Facts about the cache tree, gathered once per check and shared by every rule.

Rules never call git or walk the disk themselves: `collect` lists the tree with a few bulk git
plumbing calls (always -z), walks each cache root once, and reads every entry once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from cachelint.config import Config
from cachelint.store import Entry


@dataclass(frozen=True)
class IndexEntry:
    mode: str  # "100644", "100755", "120000" (symlink), "160000" (gitlink)
    stage: int


@dataclass
class TreeFacts:
    repo: Path
    config: Config
    now: datetime  # injected clock: tests pass a fixed moment, never the real date
    roots: tuple[str, ...]  # repo-relative cache roots that exist on disk
    missing_roots: tuple[str, ...] = ()  # configured roots that do not exist
    disk_files: list[str] = field(default_factory=list)  # files and symlinks on disk under roots
    disk_dirs: list[str] = field(default_factory=list)  # directories on disk under roots
    symlinks: set[str] = field(default_factory=set)  # symlinks on disk (files or dirs)
    index: dict[str, IndexEntry] = field(default_factory=dict)  # index entries under roots
    untracked: set[str] = field(default_factory=set)  # --others --exclude-standard
    ignored: set[str] = field(default_factory=set)  # --others --ignored --exclude-standard
    text_attr: dict[str, str] = field(default_factory=dict)  # path -> set|unset|unspecified|auto|<value>
    entries: list[Entry] = field(default_factory=list)  # readable entries
    corrupt: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    excluded: int = 0  # files skipped by `exclude`
