"""The facts a single rule reads, gathered by `cachelint.collect` only for a check that runs that
rule, so every rule stays a function of the facts and never asks git or reads the cache itself:

- eval-cache-unstamped: what git's history says changed under a root since the commit that last
  wrote its stamp, for a committed stamp that no longer seals the root's entries;
- eval-cache-secret: the repository's files as git lists them (when the config watches files),
  and the secret scan of the cache entries (`cachelint.entryscan`), whose memory of entries
  scanned clean lives in the entry cache.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from concurrent.futures import Future
from dataclasses import replace
from functools import partial
from typing import NamedTuple

from cachelint import entryscan, listing
from cachelint.config import Config
from cachelint.entrycache import Clean
from cachelint.facts import TreeFacts
from cachelint.gitutil import GitQueue
from cachelint.reading import Read
from cachelint.rules import secret, unstamped
from cachelint.secretscan import Secret
from cachelint.sources import EntrySource


class Wanted(NamedTuple):
    """Which rules that read facts of their own a check runs."""

    unstamped: bool
    secret: bool

    @classmethod
    def of(cls, rules: AbstractSet[str] | None) -> Wanted:
        """For the rule codes `rules` (None: every rule)."""
        if rules is None:
            return cls(unstamped=True, secret=True)
        return cls(unstamped=unstamped.CODE in rules, secret=secret.CODE in rules)


def worktree(git: GitQueue, config: Config) -> Future[list[str]] | None:
    """The repository's files as git lists them, queued on git's thread, when the config
    watches files (the secret rule scans the watched ones)."""
    if not config.watch:
        return None
    from cachelint.green import worktree_files

    return git.call(partial(worktree_files, config.repo))


class Scanned(NamedTuple):
    secrets: tuple[tuple[str, Secret], ...]  # each secret in an entry's file, with its path
    memory: Clean  # the digests to remember as clean, and what they were judged by


def scan_entries(config: Config, read: Read, source: EntrySource) -> Scanned:
    """The secret scan of the entries read, skipping those `source` remembers clean."""
    ctx = entryscan.context(config)
    scan = entryscan.scan_header(ctx)
    found = entryscan.scan_entries(
        config.repo, ctx, read.entries, read.entry_dirs, source.clean(scan)
    )
    return Scanned(tuple(found.secrets), Clean(scan, found.clean))


def with_history(facts: TreeFacts) -> TreeFacts:
    """`facts` with what git's history says of every committed stamp that no longer seals its
    root's entries (`TreeFacts.stamp_changes`), asked once the entries are read, and only for
    those, since `git log` walks the history."""
    asked = [s for s in unstamped.unsealed(facts) if unstamped.asks_history(facts, s)]
    if not asked:
        return facts
    since = listing.history(facts.repo)
    changes = {s.path: since(s.path, unstamped.cache_dir(s)) for s in asked}
    return replace(facts, stamp_changes=changes)
