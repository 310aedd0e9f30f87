"""eval-cache-secret: an API key, token or private key in anything the cache commits.

Scans every cache file (entry.json and contents.data), the stamps, the dataset files and the
watched prompt files for well-known key formats and for the configured API key's value. The
finding masks the secret (first 4 characters and the length) and gives its fingerprint, which
`secret-allow` accepts for a test fixture.

`scan_file(path, raw, context)` is the per-file entry point: a check that already reads every
contents.data (content verification) hands each one to it and stores the findings in
`facts.secret_findings`; then this rule does not read the cache files again.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from cachelint.findings import Finding
from cachelint.fsutil import read_regular
from cachelint.rules import Rule
from cachelint.secretscan import Allowlist, describe, secrets_in
from cachelint.tree import TreeFacts

CODE = "eval-cache-secret"


@dataclass(frozen=True)
class ScanContext:
    allow: Allowlist
    extra: tuple[str, ...]  # the configured API key's value, when it is set
    max_bytes: int


def context(facts: TreeFacts) -> ScanContext:
    """What every file is scanned with; computed once per check."""
    config = facts.config
    extra: tuple[str, ...] = ()
    try:
        from cachelint.runner.transport import load_api_key

        key = load_api_key(config.repo, config.target.api_key_env, config.target.env_file)
        extra = (key,) if key else ()
    except Exception:  # an unreadable env-file is reported by eval-cache-env-file, not here
        extra = ()
    return ScanContext(Allowlist(config.secret_allow), extra, config.max_entry_bytes)


def scan_file(path: str, raw: bytes, ctx: ScanContext) -> list[Finding]:
    """Findings for one file's bytes (`path` repo-relative): the per-entry call for a check."""
    text = raw.decode("utf-8", "replace")
    return [
        Finding(
            path,
            CODE,
            f"holds a secret: {describe(secret)}; remove it (re-record the entry after fixing "
            "the prompt or provider), rotate it, or allow a test fixture with secret-allow = "
            f'["{secret.fingerprint}"]',
        )
        for secret in secrets_in(path, text, allow=ctx.allow, extra=ctx.extra)
    ]


def _read(facts: TreeFacts, rel: str, max_bytes: int) -> bytes | None:
    try:
        return read_regular(os.path.join(facts.repo, rel), max_bytes)
    except OSError:
        return None  # missing, special, too large or a link: other rules report it


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
    from cachelint.green import Selector, worktree_files

    selector = Selector(facts.config)
    return [p for p in worktree_files(facts.repo) if selector.watched(p)]


def _cache_files(facts: TreeFacts) -> Iterator[str]:
    for directory, names in sorted(facts.entry_dirs.items()):
        for name in sorted(names):
            yield f"{directory}/{name}"


def check(facts: TreeFacts) -> Iterator[Finding]:
    ctx = context(facts)
    paths: list[str] = [f"{root}/{facts.config.stamp}" for root in facts.roots]
    paths += _dataset_files(facts)
    paths += _watched_files(facts)
    done: list[Finding] | None = getattr(facts, "secret_findings", None)
    if done is None:
        paths += _cache_files(facts)
    else:
        yield from done
    for rel in dict.fromkeys(paths):
        raw = _read(facts, rel, ctx.max_bytes)
        if raw is not None:
            yield from scan_file(rel, raw, ctx)


RULE = Rule(CODE, "an API key, token or private key in the cache, stamp, datasets, prompts", check)
