"""eval-cache-sqlite: a SQLite cassette (EvalCore's `.evalcore/cache.db`, or one `sqlite` names)
that a replay cannot trust, read through `cachelint.sqlite_cache` (read-only and immutable).

Errors, each naming the cassette and, for a row, its table and key:
- a `-wal`, `-shm` or `-journal` file beside it, on disk or in the index: the db alone lacks what
  the WAL holds (or a write was cut off), and committing the side file is worse;
- a `filter`, `ident` or `working-tree-encoding` attribute on it (each rewrites its bytes);
- torn (not whole pages), not a database, `PRAGMA integrity_check` failing;
- for EvalCore's cassette, `llm_cache` or `runs` missing; in `llm_cache`, a key not of 64
  lowercase hex, a key repeated, a key that is not the SHA-256 of the request stored with it,
  a response that is not JSON;
- its size above `db-max-bytes` (default 100 MiB, where GitHub refuses a push); a warning above
  `db-warn-bytes` (50 MiB, where GitHub warns) and for an `llm_cache` that holds no row.

Tracked, ignored and `-text` are the general rules' (eval-cache-untracked, -ignored, -text-attr),
which cover every file under a cache root, the cassette included; the stamp's seal of it is
eval-cache-unstamped's (`sealed_findings` below).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator

from cachelint.facts import TreeFacts
from cachelint.findings import Finding, Severity
from cachelint.rules import Rule
from cachelint.sqlite_cache import (
    CHECKPOINT,
    NAMED,
    Cassette,
    attribute_problems,
    facts_cassettes,
    keys_changed,
    relative,
    seal_of,
    sidecars,
)
from cachelint.stamp import RootStamp

CODE = "eval-cache-sqlite"
MIB = 1024 * 1024


def check(facts: TreeFacts) -> Iterator[Finding]:
    cassettes = facts_cassettes(facts)
    if not cassettes:
        return
    filtered = attribute_problems(facts.repo, [c.path for c in cassettes if c.size is not None])
    for cassette in cassettes:
        yield from _sidecar_findings(facts, cassette)
        for attrs in filtered.get(cassette.path, []):
            yield Finding(
                cassette.path,
                CODE,
                f"git applies `{attrs}` to this binary SQLite file, which rewrites its bytes on "
                "checkout or add; remove that attribute for it in .gitattributes (keep `-text`)",
            )
        for problem in cassette.problems:
            severity = Severity.WARNING if problem.warning else Severity.ERROR
            yield Finding(cassette.path, CODE, problem.message, severity)
        yield from _size_findings(facts, cassette)
        if cassette.rows.get("llm_cache", 1) == 0:
            yield Finding(
                cassette.path,
                CODE,
                "table llm_cache holds no row, so a replay answers nothing from it; record "
                "(EvalCore: `--cache auto` with credentials), commit the db and run `cachelint "
                "stamp`",
                Severity.WARNING,
            )


def _sidecar_findings(facts: TreeFacts, cassette: Cassette) -> Iterator[Finding]:
    db = shlex.quote(cassette.path)
    for side in sidecars(facts, cassette):
        kind = side.rpartition("-")[2]
        why = {
            "wal": "a write-ahead log: entries recorded since the last checkpoint live only in "
            "it, so the db committed alone lacks them and a committed WAL is applied to "
            "whatever db it meets",
            "shm": "the WAL's shared-memory index: a connection in WAL mode is (or was) open",
            "journal": "a rollback journal: a write was cut off (a hot journal) or is under "
            "way, and the db may hold half of it",
        }[kind]
        indexed = f"; `git rm --cached -- {shlex.quote(side)}`" if side in facts.index else ""
        yield Finding(
            side,
            CODE,
            f"{why}; never commit it: {CHECKPOINT.format(db=db)}, then delete it if it is still "
            f"there{indexed}",
        )


def _size_findings(facts: TreeFacts, cassette: Cassette) -> Iterator[Finding]:
    size, config = cassette.size, facts.config
    if size is None or size <= config.db_warn_bytes:
        return
    over_max = size > config.db_max_bytes
    limit = config.db_max_bytes if over_max else config.db_warn_bytes
    yield Finding(
        cassette.path,
        CODE,
        f"{size / MIB:.1f} MiB, above {'db-max-bytes' if over_max else 'db-warn-bytes'} "
        f"({limit / MIB:.1f} MiB; GitHub warns above 50 MiB and refuses a file above 100 MiB); "
        f"drop old baselines from `runs` and unused `llm_cache` rows, then `sqlite3 "
        f"{shlex.quote(cassette.path)} VACUUM`, or split the cache",
        Severity.ERROR if over_max else Severity.WARNING,
    )


def sealed_findings(facts: TreeFacts, state: RootStamp, code: str) -> Iterator[Finding]:
    """The stamp's seal of each cassette under its root against the cassette now: an added,
    removed or edited row (or any changed byte) is eval-cache-unstamped."""
    stamp = state.stamp
    if stamp is None:
        return
    sealed = dict(stamp.databases)
    for cassette in facts_cassettes(facts):
        if cassette.root != state.root or cassette.digest is None:
            continue
        then = sealed.pop(relative(cassette), None)
        now = seal_of(cassette)
        if then == now:
            continue
        changed = keys_changed(facts, state.path, cassette)
        more = len(changed) - NAMED
        named = ", ".join(changed[:NAMED]) + (f" and {more} more" if more > 0 else "")
        yield Finding(state.path, code, _unsealed(cassette, then, named))
    for name in sorted(sealed):
        yield Finding(
            state.path,
            code,
            f"the stamp seals SQLite cassette {name!r}, which is gone; restore it (`git checkout "
            "-- <it>`) or, if it was removed on purpose, run `cachelint stamp`",
        )


def _unsealed(cassette: Cassette, then: object, named: str) -> str:
    fix = (
        "if that was a deliberate re-record, run `cachelint stamp` and commit the stamp with it, "
        f"else restore it (`git checkout -- {shlex.quote(cassette.path)}`)"
    )
    if not isinstance(then, dict):
        return f"SQLite cassette {cassette.path} is not sealed by this stamp; {fix}"
    rows = then.get("rows")
    old: dict[str, int] = rows if isinstance(rows, dict) else {}
    new = cassette.rows
    changes = [
        f"table {table}: {new.get(table, 0)} rows now, {old.get(table, 0)} when stamped"
        for table in sorted(set(old) | set(new))
        if new.get(table, 0) != old.get(table, 0)
    ]
    what = "; ".join(changes) or (
        "every table holds as many rows as when stamped, so rows were edited or the file was "
        "rewritten (a read-write open, VACUUM)"
    )
    if named:
        what += f"; llm_cache keys since the stamp's commit: {named}"
    return f"SQLite cassette {cassette.path} changed since `cachelint stamp` ({what}); {fix}"


RULE = Rule(
    CODE,
    "a SQLite cassette with side files, a rewriting attribute, damage, bad keys or over its size",
    check,
)
