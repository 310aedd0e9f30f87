"""eval-cache-secret: an API key, token or private key in anything the cache commits.

Scans every cache file (entry.json and contents.data), the stamps, the dataset files and the
watched prompt files for well-known key formats and for the configured API key's value. The
finding masks the secret (first 4 characters and the length) and gives its fingerprint, which
`secret-allow` accepts for a test fixture.

`scan_file(path, raw, context)` is the per-file entry point. The cache entries are scanned with
the other facts of the check (`cachelint.entryscan`, once per content); this rule words what that
scan found.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

from cachelint import entryscan
from cachelint.entryscan import ScanContext, read_scanned
from cachelint.facts import TreeFacts
from cachelint.findings import Finding
from cachelint.rules import Rule
from cachelint.secretscan import Secret, describe, mask_secrets, secret_names

CODE = "eval-cache-secret"


def context(facts: TreeFacts) -> ScanContext:
    """What every file is scanned with; computed once per check."""
    return entryscan.context(facts.config)


def scan_file(path: str, raw: bytes, ctx: ScanContext) -> list[Finding]:
    """Findings for one file's bytes (`path` repo-relative): the per-entry call for a check."""
    return [_finding(path, secret) for secret in entryscan.found_in(path, raw, ctx)]


def _finding(path: str, secret: Secret) -> Finding:
    return Finding(
        path,
        CODE,
        f"holds a secret: {describe(secret)}; remove it (re-record the entry after fixing "
        "the prompt or provider), rotate it, or allow a test fixture with secret-allow = "
        f'["{secret.fingerprint}"]',
    )


def _dataset_files(facts: TreeFacts) -> Iterator[str]:
    base = os.path.join(facts.repo, facts.config.datasets)
    for dirpath, dirnames, filenames in os.walk(base):  # never follows links
        dirnames.sort()
        rel_dir = os.path.relpath(dirpath, facts.repo).replace(os.sep, "/")
        for name in sorted(filenames):
            yield f"{rel_dir}/{name}"


def _watched_files(facts: TreeFacts) -> Iterable[str]:
    if not facts.config.watch:
        return []
    from cachelint.green import Selector

    selector = Selector(facts.config)
    return [p for p in facts.worktree or () if selector.watched(p)]


def _gathered(facts: TreeFacts) -> tuple[tuple[str, Secret], ...]:
    """The secrets the check's scan found in the entries (`TreeFacts.entry_secrets`). Facts
    gathered for other rules lack this rule's: an internal error, never a silent pass."""
    if facts.entry_secrets is None or (facts.config.watch and facts.worktree is None):
        raise RuntimeError("the secret rule's facts were not gathered: collect(rules=...) omits it")
    return facts.entry_secrets


def _name_findings(facts: TreeFacts, ctx: ScanContext, datasets: list[str]) -> Iterator[Finding]:
    """A secret in a file or directory name (a key pasted as a scenario name): the finding's path
    shows it masked, as every line must."""
    names = facts.names_text + "/".join(p.rpartition("/")[2] for p in datasets) + "/"
    bad = secret_names(names, ctx.extra)
    if not bad:
        return
    for node in sorted({*facts.nodes, *datasets}):
        for secret in bad.get(node.rpartition("/")[2], ()):
            if not ctx.allow.allows(node, secret):
                yield Finding(
                    mask_secrets(node, ctx.extra),
                    CODE,
                    f"its name holds a secret: {describe(secret)}; rename it (`git mv`), rotate "
                    "the key, or allow a test fixture with secret-allow = "
                    f'["{secret.fingerprint}"]',
                )


def check(facts: TreeFacts) -> Iterator[Finding]:
    in_entries = _gathered(facts)
    ctx = context(facts)
    datasets = list(_dataset_files(facts))
    yield from _name_findings(facts, ctx, datasets)
    paths: list[str] = [f"{root}/{facts.config.stamp}" for root in facts.roots]
    paths += datasets
    paths += _watched_files(facts)
    for rel in dict.fromkeys(paths):
        raw = read_scanned(facts.repo, rel, ctx.max_bytes)
        if raw is not None:
            yield from scan_file(rel, raw, ctx)
    yield from (_finding(path, secret) for path, secret in in_entries)


RULE = Rule(CODE, "an API key, token or private key in the cache, stamp, datasets, prompts", check)
