"""check's read path as a recipe: list (git), walk (the disk), read (every entry once, from its
source), assemble (the facts every rule reads).

The git listings run one after another on one worker thread (`gitutil.GitQueue`), queued before
the Python walk, so git works on the other core while Python scans the disk and reads entries;
per-file git calls or GitPython would make a large tree take minutes instead of seconds. The
`--others` listings, which walk the whole tree again inside git, run only when the walk found a
path the index lacks (`listing.gather`).
"""

from __future__ import annotations

import os
from collections.abc import Set as AbstractSet
from concurrent.futures import Future
from datetime import datetime
from functools import partial
from typing import NamedTuple, TextIO

from cachelint import attrcheck, attrfiles, listing, meai, rulefacts, sources
from cachelint.config import Config
from cachelint.facts import TreeFacts
from cachelint.gitutil import GitQueue, GitResult
from cachelint.progressbar import BarFactory, bars_on
from cachelint.reading import UNREADABLE, Read, Reading, cache_prefixes, read_entries
from cachelint.walk import Walk, opening_base, walk_roots

# How many entries a command must read (those the entry cache cannot supply) before a terminal
# shows a bar counting them: fewer are read in well under a second, where a bar would flicker.
BAR_MIN = 10_000


def entry_bars(stream: TextIO | None) -> BarFactory | None:
    """The bars for `collect(progress=...)` on `stream`, when it is a terminal."""
    return None if stream is None else bars_on(stream, "verifying entries", at_least=BAR_MIN)


def collect(
    config: Config,
    *,
    now: datetime,
    entry_cache: bool = True,
    jobs: int | None = None,
    progress: BarFactory | None = None,
    rules: AbstractSet[str] | None = None,
) -> TreeFacts:
    """Gather every fact the rules need. `entry_cache` reuses entries an earlier check verified
    whose files git holds unchanged (see `cachelint.entrycache`); False reads every entry.
    `jobs` is how many processes may read entries at once (see `cachelint.pooled`); `progress`
    gives the bar, if any, that counts the entries read; `rules` names the rules to run (None:
    all), for the facts a single rule reads (`cachelint.rulefacts`)."""
    wanted = rulefacts.Wanted.of(rules)
    repo = config.repo
    roots = [r for r in config.cache if os.path.isdir(repo / r) and not os.path.islink(repo / r)]
    # `:(literal)` so a root named like a glob is never expanded by git.
    spec = ["--", *(f":(literal){r}" for r in config.cache)]
    prefixes = cache_prefixes(roots)
    base = opening_base(repo)
    with GitQueue(repo) as git:
        # Queued first: none of these needs the walk, so they run while Python walks.
        git_dir = git.submit(["rev-parse", "--absolute-git-dir"])
        stage = git.submit(["ls-files", "-z", "-v", "--stage", *spec])
        cache_dir = git_dir if entry_cache else None
        prepared = git.call(partial(sources.prepare, config, stage, cache_dir))
        changed = git.submit(listing.DIFF_FILES + spec)
        # The pins' projects, unless the config names the pin files.
        projects = None if config.pins else git.submit(listing.PROJECTS)
        walk = walk_roots(config, base, roots)
        plain = [p for p in walk.files if p not in walk.symlinks and p not in walk.special]
        attrfiles.refuse_special(repo, config, walk)
        attrs = git.submit_parsed(
            attrcheck.COMMAND, listing.nul_joined(plain), lambda out: attrcheck.parse(out, plain)
        )
        found = listing.gather(git, spec, walk, stage, changed)
        del stage  # its listing, parsed: not kept while entries are read
        # Last in git's queue, so no listing the read needs waits for it.
        worktree = rulefacts.worktree(git, config) if wanted.secret else None
        source = sources.entry_source(config, found, prepared.result())
        read = read_entries(walk, prefixes, source, Reading(base, config, jobs, progress))
        read.corrupt += [(d, UNREADABLE.format(why)) for d, why in walk.unreadable.items()]
        scanned = rulefacts.scan_entries(config, read, source) if wanted.secret else None
        source.finish(read.entries, None if scanned is None else scanned.memory)
        attributes = attrs.result()
        files = None if worktree is None else tuple(worktree.result())
    listed = _Listed(found, attributes, projects, files)
    facts = _assemble(config, now, roots, walk, listed, read, scanned)
    return rulefacts.with_history(facts) if wanted.unstamped else facts


class _Listed(NamedTuple):
    """What git said, beside the walk and the entries read."""

    found: listing.Listings
    attributes: attrcheck.Attributes
    projects: Future[GitResult] | None
    worktree: tuple[str, ...] | None


def _assemble(
    config: Config,
    now: datetime,
    roots: list[str],
    walk: Walk,
    listed: _Listed,
    read: Read,
    scanned: rulefacts.Scanned | None,
) -> TreeFacts:
    repo, found, projects = config.repo, listed.found, listed.projects
    return TreeFacts(
        repo=repo,
        config=config,
        now=now,
        roots=tuple(roots),
        missing_roots=tuple(r for r in config.cache if r not in roots),
        disk_files=walk.files,
        symlinks=walk.symlinks,
        index=found.index,
        untracked=found.untracked,
        ignored=found.ignored,
        text_attr=listed.attributes.text,
        rewrite_attr=listed.attributes.rewrite,
        entries=read.entries,
        corrupt=read.corrupt,
        excluded=walk.excluded + found.excluded,
        special=frozenset(walk.special),
        nested_repos=found.nested,
        git_dirs=walk.git_dirs,
        modified=listing.modified(repo, walk, found, config.max_entry_bytes),
        skip_worktree={p for p, tag in found.flagged.items() if tag in listing.SKIP_WORKTREE},
        ignore_sources=listing.ignore_sources(repo, found.ignored) if found.ignored else {},
        entry_dirs=read.entry_dirs,
        attributes=attrfiles.read_attributes(repo, config, walk),
        walked_names=walk.names,
        all_indexed=not found.strays,
        projects=None if projects is None else listing.projects(projects.result()),
        env_file=listing.env_file_state(repo, config.target.env_file),
        worktree=listed.worktree,
        entry_secrets=None if scanned is None else scanned.secrets,
        layout_guesses=meai.layout_guesses(config),
    )
