"""eval-cache-secret: an API key, token or private key in anything the cache commits.

Scans every cache file (entry.json and contents.data), the stamps, the dataset files and the
watched prompt files for well-known key formats and for the configured API key's value. The
finding masks the secret (first 4 characters and the length) and gives its fingerprint, which
`secret-allow` accepts for a test fixture.

`scan_file(path, raw, context)` is the per-file entry point. Cache entries are scanned once per
content: the check that verified an entry already looked for an anchor of every pattern in its
bytes (`Entry.maybe_secret`), so only entries holding one are read again here (all of them when
the configured key's value is set); and the digests (`store.entry_digest`) of entries found clean
are kept in the repository's git directory, so a hook's check reads only new or changed ones.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path

import blake3

from cachelint.facts import TreeFacts
from cachelint.findings import Finding
from cachelint.fsutil import atomic_write_chunks, read_regular
from cachelint.rules import Rule
from cachelint.secretscan import (
    Allowlist,
    describe,
    fingerprint,
    mask_secrets,
    secret_names,
    secrets_in,
)
from cachelint.store import CONTENTS_FILE, ENTRY_FILE, ENTRY_FILES, entry_digest

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
        from cachelint.credentials import load_api_key

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


# Entries already scanned clean, by content digest (`store.entry_digest`), in the repository's
# git directory beside the entry cache: a hook's check then reads only new or changed entries.
_CLEAN_FILE = "cachelint/secrets-clean.txt"


def _scan_header(ctx: ScanContext) -> str:
    """What a clean verdict depends on: the patterns, the allowlist and the configured key."""
    from cachelint.secretscan import PATTERNS_VERSION

    parts = [PATTERNS_VERSION, repr(sorted(ctx.allow.fingerprints)), repr(ctx.allow.globs)]
    parts += [fingerprint(v) for v in ctx.extra]
    return "secrets-clean 1 " + blake3.blake3("\n".join(parts).encode()).hexdigest()


def _clean_path(git_dir: Path | None) -> Path | None:
    return None if git_dir is None else git_dir / _CLEAN_FILE


def _load_clean(path: Path | None, header: str) -> set[str]:
    if path is None:
        return set()
    try:
        lines = path.read_text(encoding="ascii").splitlines()
    except (OSError, UnicodeDecodeError):
        return set()
    return set(lines[1:]) if lines and lines[0] == header else set()


def _save_clean(path: Path | None, header: str, digests: set[str]) -> None:
    if path is None:
        return
    text = "\n".join([header, *sorted(digests)]) + "\n"
    try:
        atomic_write_chunks(path, (text.encode("ascii"),), durable=False)
    except OSError:
        pass  # only a cache: the next check scans again


def _cache_findings(facts: TreeFacts, ctx: ScanContext) -> Iterator[Finding]:
    """The entries that may hold a secret, except those whose digest was scanned clean before.

    Without a configured key to look for, an entry whose bytes the check saw hold no anchor of
    any well-known format (`Entry.maybe_secret` False) cannot match, and is not read again; only
    when no entry is left does the rule not touch its memory of clean digests at all."""
    entries = facts.entries
    unsuspected: set[str] = set()
    if not ctx.extra:
        flags = list(map(attrgetter("maybe_secret"), entries))
        if flags.count(False) == len(facts.entry_dirs):
            # Each entry comes from a directory of its own in `entry_dirs`: the usual tree, every
            # entry directory holding a valid entry without an anchor, is cleared at C speed.
            return
        unsuspected = {e.directory for e, flag in zip(entries, flags, strict=True) if flag is False}
    suspects = sorted(d for d in facts.entry_dirs.items() if d[0] not in unsuspected)
    if not suspects:
        return
    known = {e.directory: e.digest for e in facts.entries if e.digest}
    path = _clean_path(facts.git_dir)
    header = _scan_header(ctx)
    clean = _load_clean(path, header)
    now_clean: set[str] = set()
    for directory, names in suspects:
        digest = known.get(directory)
        if digest is not None and digest in clean:
            now_clean.add(digest)
            continue
        found: list[Finding] = []
        raws: dict[str, bytes] = {}
        for name in sorted(names):
            rel = f"{directory}/{name}"
            raw = _read(facts, rel, ctx.max_bytes)
            if raw is not None:
                raws[name] = raw
                found += scan_file(rel, raw, ctx)
        yield from found
        if not found and set(raws) == set(ENTRY_FILES):
            now_clean.add(entry_digest(raws[ENTRY_FILE], raws[CONTENTS_FILE]))
    if now_clean != clean:
        _save_clean(path, header, now_clean)


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
    ctx = context(facts)
    datasets = list(_dataset_files(facts))
    yield from _name_findings(facts, ctx, datasets)
    paths: list[str] = [f"{root}/{facts.config.stamp}" for root in facts.roots]
    paths += datasets
    paths += _watched_files(facts)
    for rel in dict.fromkeys(paths):
        raw = _read(facts, rel, ctx.max_bytes)
        if raw is not None:
            yield from scan_file(rel, raw, ctx)
    yield from _cache_findings(facts, ctx)


RULE = Rule(CODE, "an API key, token or private key in the cache, stamp, datasets, prompts", check)
