"""The secret scan of a check's cache entries, gathered with the other facts of the tree
(`cachelint.collect`), so the secret rule only words what it found.

Each entry is scanned once per content: the check that verified an entry already looked for an
anchor of every pattern in its bytes (`Entry.maybe_secret`), so only entries holding one are read
again here (all of them when the configured key's value is set); and the digests
(`store.entry_digest`) of entries found clean are kept in the entry cache (`Cached.clean`,
judged by `scan_header`), so a hook's check reads only new or changed ones.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import NamedTuple

import blake3

from cachelint.config import Config
from cachelint.fsutil import read_regular
from cachelint.secretscan import PATTERNS_VERSION, Allowlist, Secret, fingerprint, secrets_in
from cachelint.store import CONTENTS_FILE, ENTRY_FILE, ENTRY_FILES, Entry, entry_digest


@dataclass(frozen=True)
class ScanContext:
    allow: Allowlist
    extra: tuple[str, ...]  # the configured API key's value, when it is set
    max_bytes: int


def context(config: Config) -> ScanContext:
    """What every file is scanned with; computed once per check."""
    extra: tuple[str, ...] = ()
    try:
        from cachelint.credentials import load_api_key

        key = load_api_key(config.repo, config.target.api_key_env, config.target.env_file)
        extra = (key,) if key else ()
    except Exception:  # an unreadable env-file is reported by eval-cache-env-file, not here
        extra = ()
    return ScanContext(Allowlist(config.secret_allow), extra, config.max_entry_bytes)


def scan_header(ctx: ScanContext) -> str:
    """What a clean verdict depends on: the patterns, the allowlist and the configured key."""
    parts = [PATTERNS_VERSION, repr(sorted(ctx.allow.fingerprints)), repr(ctx.allow.globs)]
    parts += [fingerprint(v) for v in ctx.extra]
    return "secrets-clean 1 " + blake3.blake3("\n".join(parts).encode()).hexdigest()


def read_scanned(repo: Path, rel: str, max_bytes: int) -> bytes | None:
    """A file's bytes to scan; None when it is missing, special, too large or a link (other rules
    report those)."""
    try:
        return read_regular(os.path.join(repo, rel), max_bytes)
    except OSError:
        return None


def found_in(path: str, raw: bytes, ctx: ScanContext) -> list[Secret]:
    """The secrets in one file's bytes (`path` repo-relative) the allowlist does not accept."""
    return secrets_in(path, raw.decode("utf-8", "replace"), allow=ctx.allow, extra=ctx.extra)


class Scanned(NamedTuple):
    """What the scan of the entries found: each secret with its file, in path order, and the
    digests to remember as clean (those it found or knew clean; all it knew when it read none)."""

    secrets: list[tuple[str, Secret]]
    clean: frozenset[str]


def scan_entries(
    repo: Path,
    ctx: ScanContext,
    entries: list[Entry],
    entry_dirs: Mapping[str, frozenset[str]],
    clean: frozenset[str],
) -> Scanned:
    """Scan the entry directories that may hold a secret, except those whose digest is in
    `clean` (scanned clean before under this `ctx`).

    Without a configured key to look for, an entry whose bytes the check saw hold no anchor of
    any well-known format (`Entry.maybe_secret` False) cannot match, and is not read again."""
    unsuspected: set[str] = set()
    if not ctx.extra:
        flags = list(map(attrgetter("maybe_secret"), entries))
        if flags.count(False) == len(entry_dirs):
            # Each entry comes from a directory of its own in `entry_dirs`: the usual tree, every
            # entry directory holding a valid entry without an anchor, is cleared at C speed.
            return Scanned([], clean)
        unsuspected = {e.directory for e, flag in zip(entries, flags, strict=True) if flag is False}
    suspects = sorted(d for d in entry_dirs.items() if d[0] not in unsuspected)
    if not suspects:
        return Scanned([], clean)
    known = {e.directory: e.digest for e in entries if e.digest}
    secrets: list[tuple[str, Secret]] = []
    now_clean: set[str] = set()
    for directory, names in suspects:
        digest = known.get(directory)
        if digest is not None and digest in clean:
            now_clean.add(digest)
            continue
        found, digest = _scan_directory(repo, ctx, directory, names)
        secrets += found
        if digest is not None:
            now_clean.add(digest)
    return Scanned(secrets, frozenset(now_clean))


def _scan_directory(
    repo: Path, ctx: ScanContext, directory: str, names: Iterable[str]
) -> tuple[list[tuple[str, Secret]], str | None]:
    """The secrets in one entry directory's files, and the entry's digest when it has both
    files and none holds a secret."""
    found: list[tuple[str, Secret]] = []
    raws: dict[str, bytes] = {}
    for name in sorted(names):
        rel = f"{directory}/{name}"
        raw = read_scanned(repo, rel, ctx.max_bytes)
        if raw is not None:
            raws[name] = raw
            found += [(rel, secret) for secret in found_in(rel, raw, ctx)]
    if found or set(raws) != set(ENTRY_FILES):
        return found, None
    return found, entry_digest(raws[ENTRY_FILE], raws[CONTENTS_FILE])
