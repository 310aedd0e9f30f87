"""eval-cache-meai-shape: something in a MEAI storage root that MEAI neither wrote nor reads.

Warnings, each about one path and never about the root as a whole:
- an `entry.json` whose `scenarioName` or `iterationName` differs from the directories above
  its key directory: MEAI finds an entry by its path and never reads the two names back, so an
  entry whose names alone were edited still replays; one moved to another scenario or iteration
  is never found (the key covers both names), and an offline run then misses;
- a directory at key depth (`cache/<scenario>/<iteration>/<dir>`) that holds no entry, or a file
  above that depth: MEAI never looks there, so it is dead weight in the committed tree;
- a root whose layout `layout = "auto"` could not tell from the tree's shape.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator

from cachelint.config import Layout
from cachelint.facts import TreeFacts
from cachelint.findings import Finding, Severity
from cachelint.rules import Rule
from cachelint.store import CACHE_DIR

CODE = "eval-cache-meai-shape"


def check(facts: TreeFacts) -> Iterator[Finding]:
    meai = [r for r in facts.roots if r in facts.meai_roots]
    yield from _unsure(facts)
    if not meai:
        return
    yield from _renamed(facts)
    for root in meai:
        yield from _stray(facts, f"{root.rstrip('/')}/{CACHE_DIR}/")


def _unsure(facts: TreeFacts) -> Iterator[Finding]:
    if facts.config.layout is not Layout.AUTO:
        return
    for root in facts.roots:
        layout, sure = facts.layout_guesses[root]
        if sure or not any(d.startswith(f"{root.rstrip('/')}/") for d in facts.entry_dirs):
            continue
        yield Finding(
            root,
            CODE,
            f'layout = "auto" could not tell from the tree\'s shape whose layout this root is '
            f"and read it as {layout.value}'s; set `layout` in {facts.config.source} "
            '(`layout = "meai"` for Microsoft.Extensions.AI.Evaluation\'s disk cache)',
            Severity.WARNING,
        )


def _renamed(facts: TreeFacts) -> Iterator[Finding]:
    for entry in facts.entries:
        if entry.layout is not Layout.MEAI:
            continue
        parts = entry.directory.split("/")
        if len(parts) < 3 or (entry.scenario, entry.iteration) == (parts[-3], parts[-2]):
            continue
        yield Finding(
            entry.directory,
            CODE,
            f"entry.json names scenarioName {entry.scenario!r} and iterationName "
            f"{entry.iteration!r}, but the entry sits under {parts[-3]!r}/{parts[-2]!r}: if only "
            "the names were edited, MEAI still replays it (it finds entries by their path and "
            "never reads these names back): restore them; if the entry was moved here, MEAI "
            "never finds it (its key covers the scenario and iteration names): move it back",
            Severity.WARNING,
        )


def _stray(facts: TreeFacts, prefix: str) -> Iterator[Finding]:
    """Files under `prefix` (a MEAI root's `cache/`) outside any entry MEAI can find."""
    seen: set[str] = set()
    entries = facts.entry_dirs
    for path in facts.disk_files:
        if not path.startswith(prefix) or path.rpartition("/")[0] in entries:
            continue  # the usual file: one of an entry's own
        parts = path[len(prefix) :].split("/")
        if parts[-1].startswith(".git"):
            continue  # .gitattributes, .gitignore, .gitkeep: git's, not the cache's
        if len(parts) < 4:
            yield Finding(
                path,
                CODE,
                "a file above the key directories of a MEAI cache, where MEAI writes none and "
                f"reads none (it reads {prefix}<scenario>/<iteration>/<key>/); remove it: "
                f"`git rm -- {shlex.quote(path)}`",
                Severity.WARNING,
            )
            continue
        directory = prefix + "/".join(parts[:3])
        if directory in entries or directory in seen:
            continue
        if any(d.startswith(directory + "/") for d in entries):
            continue  # an entry below key depth: eval-cache-corrupt says where MEAI reads
        seen.add(directory)
        yield Finding(
            directory,
            CODE,
            "a directory at key depth that holds no entry (entry.json and contents.data): MEAI "
            "looks up only <key>/entry.json, so nothing here is ever read; remove it: "
            f"`git rm -r -- {shlex.quote(directory)}`",
            Severity.WARNING,
        )


RULE = Rule(CODE, "something in a MEAI storage root that MEAI neither writes nor reads", check)
