"""SQLite cassettes: EvalCore's `.evalcore/cache.db` and other single-file SQLite caches.

EvalCore (crates/evalcore-store/src/lib.rs) keeps its record/replay cache in one SQLite file with
two tables, `llm_cache (key TEXT PRIMARY KEY, request TEXT, response TEXT, created_at TEXT)` and
`runs (id, label, summary, created_at)`; the key is the lowercase SHA-256 hex of the canonical
request JSON stored beside it in `request`. Which files are cassettes:

- `layout = "evalcore"`: `<root>/cache.db` of every cache root (a missing one is a finding);
- `layout = "auto"`: `<root>/cache.db` of a root when it exists and starts with SQLite's magic;
- `sqlite = [...]` in the config: each named file (under a cache root), whatever the layout.

A cassette is only ever opened as `file:<path>?mode=ro&immutable=1`: read-only, and immutable so
SQLite takes no lock, reads no `-wal`, creates no `-shm` and never writes the header (a
read-write open can change the file with no row changed). The rule that reports what is read
here is `cachelint.rules.sqlite_cassette`; the stamp seals each cassette by its blake3 and its
row count per table (`seal_of`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

import blake3

from cachelint.config import Config, Layout
from cachelint.facts import TreeFacts

if TYPE_CHECKING:  # sqlite3 itself (~1.3 ms) loads only where a cassette file is opened
    import sqlite3

MAGIC = b"SQLite format 3\x00"
HEADER = 100
EVALCORE_DB = "cache.db"
EVALCORE_TABLES = ("llm_cache", "runs")
SIDECARS = ("-wal", "-shm", "-journal")
KEY_SHAPE = re.compile(r"[0-9a-f]{64}")
NAMED = 10  # rows a finding names; the rest are counted

CHECKPOINT = (
    "close every connection to it, then `sqlite3 {db} 'PRAGMA wal_checkpoint(TRUNCATE); "
    "PRAGMA journal_mode=DELETE;'` (moves the WAL's pages into the db and leaves rollback "
    "journaling on, so no side file is written again)"
)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a cassette; `table` and `key` say where, when a row is concerned."""

    message: str
    table: str | None = None
    key: str | None = None
    warning: bool = False


@dataclass
class Cassette:
    path: str  # repo-relative
    root: str  # the cache root it lies under
    evalcore: bool  # EvalCore's: its two tables are expected
    size: int | None = None  # None: not a regular file on disk
    digest: str | None = None  # blake3 of the bytes
    rows: dict[str, int] = field(default_factory=dict)  # table -> row count
    problems: list[Problem] = field(default_factory=list)


def _root_of(config: Config, path: str) -> str | None:
    for root in config.cache:
        if path.startswith(root.rstrip("/") + "/"):
            return root
    return None


def _is_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return False
            return fh.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


def cassette_paths(config: Config, roots: tuple[str, ...]) -> list[tuple[str, str, bool]]:
    """(path, root, evalcore) of every cassette the config and the tree name, each once."""
    found: dict[str, tuple[str, str, bool]] = {}
    evalcore = config.layout is Layout.EVALCORE
    for root in config.cache:
        path = f"{root.rstrip('/')}/{EVALCORE_DB}"
        if evalcore and root in roots:
            found[path] = (path, root, True)
        elif config.layout is Layout.AUTO and root in roots:
            if not os.path.islink(config.repo / path) and _is_sqlite(config.repo / path):
                found[path] = (path, root, True)
    for path in config.sqlite:
        holder = _root_of(config, path)
        if holder is not None and path not in found:
            found[path] = (path, holder, evalcore)
    return sorted(found.values())


def open_immutable(path: Path) -> sqlite3.Connection:
    """A read-only, immutable connection (see the module docs): never writes a byte."""
    import sqlite3

    uri = f"file:{quote(str(path.resolve()), safe='/')}?mode=ro&immutable=1"
    return sqlite3.connect(uri, uri=True, isolation_level=None)


def inspect(repo: Path, path: str, root: str, evalcore: bool) -> Cassette:
    """Everything checked inside one cassette file (not its git state; see `cassettes`)."""
    found = Cassette(path, root, evalcore)
    full = repo / path
    try:
        info = os.lstat(full)
    except OSError:
        found.problems.append(Problem("missing: the layout expects the SQLite cassette here"))
        return found
    if not stat.S_ISREG(info.st_mode):
        return found  # a link, FIFO or directory: eval-cache-symlink / -special-file say so
    found.size = info.st_size
    hasher = blake3.blake3()
    if info.st_size:
        hasher.update_mmap(full)
    found.digest = hasher.hexdigest()
    torn = _header_problem(full, info.st_size)
    if torn is not None:
        found.problems.append(Problem(torn))
        return found
    import sqlite3

    try:
        with _closing(open_immutable(full)) as conn:
            _read_database(conn, found)
    except sqlite3.DatabaseError as exc:
        found.problems.append(Problem(f"SQLite cannot read it ({exc}); {_RESTORE}"))
    return found


_RESTORE = (
    "restore the committed file (`git checkout -- <path>`) or re-record it with the tool that "
    "writes it"
)


class _closing:
    """`contextlib.closing` for a connection (whose own `with` commits, and does not close)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        return self.conn

    def __exit__(self, *_exc: object) -> None:
        self.conn.close()


def _header_problem(full: Path, size: int) -> str | None:
    """Why the file is not a whole SQLite database by its header and size, if it is not."""
    with open(full, "rb") as fh:
        header = fh.read(HEADER)
    if len(header) < HEADER or not header.startswith(MAGIC):
        return f"not a SQLite database (no 'SQLite format 3' header in its first bytes); {_RESTORE}"
    page = int.from_bytes(header[16:18], "big")
    page = 65536 if page == 1 else page
    if page < 512 or page & (page - 1) or size % page:
        return (
            f"torn: {size} bytes is not a whole number of its {page}-byte pages, so the file was "
            f"cut short (copied or committed mid-write); {_RESTORE}"
        )
    pages = int.from_bytes(header[28:32], "big")
    # The header's page count is valid when its change counter matches version-valid-for.
    if header[24:28] == header[92:96] and pages and pages * page != size:
        return (
            f"torn: the header counts {pages} pages of {page} bytes ({pages * page} bytes) but "
            f"the file holds {size}; {_RESTORE}"
        )
    return None


def _read_database(conn: sqlite3.Connection, found: Cassette) -> None:
    verdict = [row[0] for row in conn.execute("PRAGMA integrity_check(20)")]
    if verdict != ["ok"]:
        said = [line for v in verdict for line in str(v).splitlines()]
        lines = [line for line in said if not line.startswith("***")]  # "*** in database main"
        shown = "; ".join(lines[:3]) + (f" (and {len(lines) - 3} more)" if len(lines) > 3 else "")
        found.problems.append(Problem(f"PRAGMA integrity_check fails: {shown}; {_RESTORE}"))
        return
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    for table in sorted(tables):
        (count,) = conn.execute(f"SELECT count(*) FROM {_ident(table)}").fetchone()
        found.rows[table] = int(count)
    if found.evalcore:
        for table in EVALCORE_TABLES:
            if table not in found.rows:
                found.problems.append(
                    Problem(
                        f"table {table!r} is missing: EvalCore's cassette holds llm_cache and "
                        f"runs; is this EvalCore's cache.db? ({_RESTORE})",
                        table=table,
                    )
                )
    if "llm_cache" in found.rows:
        found.problems.extend(_key_problems(conn))


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _key_problems(conn: sqlite3.Connection) -> Iterator[Problem]:
    """Every `llm_cache` row whose key is not 64 lowercase hex, repeats, or (when the row keeps
    its request) is not the SHA-256 of that request; a response that is not JSON."""
    columns = {r[1] for r in conn.execute("PRAGMA table_info(llm_cache)")}
    if "key" not in columns:
        yield Problem("table 'llm_cache' has no column 'key'", table="llm_cache")
        return
    pick = ", ".join(_ident(c) if c in columns else "NULL" for c in ("key", "request", "response"))
    seen: set[object] = set()
    for key, request, response in conn.execute(f"SELECT {pick} FROM llm_cache ORDER BY rowid"):
        shown = key if isinstance(key, str) else repr(key)
        if not isinstance(key, str) or not KEY_SHAPE.fullmatch(key):
            yield _row(shown, "is not a SHA-256 key (64 lowercase hex), so no request can hit it")
        elif key in seen:
            yield _row(shown, "appears twice; which answer a replay gets is undefined")
        elif isinstance(request, str) and _sha256(request) != key:
            yield _row(
                shown,
                "is not the SHA-256 of the request stored with it: the request or the key was "
                "edited, so this answer replays for a request it was not recorded for",
            )
        if isinstance(response, str) and not _is_json(response):
            yield _row(shown, "holds a response that is not JSON; EvalCore fails the case")
        seen.add(key)


def _row(key: str, what: str) -> Problem:
    short = key if len(key) <= 80 else key[:77] + "..."
    return Problem(f"table llm_cache, key {short}: {what}; {_RESTORE}", "llm_cache", key)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


# ---- a check's view -----------------------------------------------------------------------------


def _of(facts: TreeFacts) -> list[Cassette]:
    config = facts.config
    return [inspect(config.repo, *found) for found in cassette_paths(config, facts.roots)]


def facts_cassettes(facts: TreeFacts) -> list[Cassette]:
    """The cassettes of a check, each read once however many rules ask (`TreeFacts.derived`)."""
    return facts.derived(_of)


def sidecars(facts: TreeFacts, cassette: Cassette) -> list[str]:
    """The `-wal`, `-shm` and `-journal` files beside the cassette, on disk or in the index."""
    return [p for p in (cassette.path + s for s in SIDECARS) if p in facts.files]


def under(facts: TreeFacts, root: str) -> list[Cassette]:
    return [c for c in facts_cassettes(facts) if c.root == root]


# Attributes that rewrite a file's bytes between the index and the working tree. `text` is
# eval-cache-text-attr's (it covers every cache file); these three it does not read.
_FILTERS = ("filter", "ident", "working-tree-encoding")


def attribute_problems(repo: Path, paths: list[str]) -> dict[str, list[str]]:
    """path -> "attr=value" of each of `_FILTERS` git applies to it (`git check-attr`)."""
    from cachelint.gitutil import run_git, split_z

    if not paths:
        return {}
    out = run_git(["check-attr", "-z", *_FILTERS, "--", *paths], cwd=repo).out
    parts = split_z(out)
    found: dict[str, list[str]] = {}
    for path, attr, value in zip(parts[0::3], parts[1::3], parts[2::3], strict=False):
        if value not in ("unspecified", "unset"):
            found.setdefault(path, []).append(attr if value == "set" else f"{attr}={value}")
    return found


# ---- the stamp's seal ---------------------------------------------------------------------------


def seal_of(cassette: Cassette) -> dict[str, object]:
    """What the stamp records of a cassette: its blake3 and its row count per table."""
    return {"blake3": cassette.digest, "rows": dict(sorted(cassette.rows.items()))}


def relative(cassette: Cassette) -> str:
    return cassette.path[len(cassette.root.rstrip("/")) + 1 :]


def _llm_rows(path: Path) -> dict[str, str] | None:
    """key -> digest of the request and response of every `llm_cache` row; None when the file
    cannot be read as such."""
    import sqlite3

    try:
        with _closing(open_immutable(path)) as conn:
            columns = {r[1] for r in conn.execute("PRAGMA table_info(llm_cache)")}
            if "key" not in columns:
                return None
            pick = ", ".join(_ident(c) if c in columns else "NULL" for c in _ROW)
            rows = conn.execute(f"SELECT {pick} FROM llm_cache")
            return {str(r[0]): _sha256(json.dumps(r[1:], default=repr)) for r in rows}
    except sqlite3.DatabaseError:
        return None


_ROW = ("key", "request", "response")


def keys_changed(facts: TreeFacts, stamp_path: str, cassette: Cassette) -> list[str]:
    """The `llm_cache` keys added, removed or edited since the commit that last wrote the stamp,
    each with what happened to it; none when that commit, or the cassette in it, is not there
    (an uncommitted stamp, a shallow clone) or the cassette is above db-max-bytes."""
    import tempfile

    from cachelint.gitutil import run_git

    repo = facts.repo
    if stamp_path in facts.modified or stamp_path not in facts.index:
        return []
    if (cassette.size or 0) > facts.config.db_max_bytes:
        return []
    log = run_git(["log", "-1", "--format=%H", "--", stamp_path], cwd=repo, check=False)
    commit = log.out.decode().strip()
    blob = run_git(["cat-file", "blob", f"{commit}:{cassette.path}"], cwd=repo, check=False)
    if log.rc != 0 or not commit or blob.rc != 0:
        return []
    with tempfile.TemporaryDirectory(prefix="cachelint-") as scratch:
        then_path = Path(scratch) / "stamped.db"
        then_path.write_bytes(blob.out)
        then = _llm_rows(then_path)
    now = _llm_rows(repo / cassette.path)
    if then is None or now is None:
        return []
    changed = [f"{k} (added)" for k in now.keys() - then.keys()]
    changed += [f"{k} (removed)" for k in then.keys() - now.keys()]
    changed += [f"{k} (edited)" for k in now.keys() & then.keys() if now[k] != then[k]]
    return sorted(changed)


def stamp_seals(facts: TreeFacts) -> dict[str, dict[str, dict[str, object]]]:
    """root -> {cassette relative to it: its seal}, for `cachelint stamp`; CachelintError for a
    cassette that cannot be sealed as it is (a seal of a damaged db, or of one whose WAL holds
    what it lacks, would vouch for the wrong thing)."""
    from cachelint.errors import CachelintError

    seals: dict[str, dict[str, dict[str, object]]] = {}
    for cassette in facts_cassettes(facts):
        if cassette.size is None and not cassette.problems:
            continue  # not a regular file: the check's other rules say what it is
        side = sidecars(facts, cassette)
        errors = [p for p in cassette.problems if not p.warning]
        if side or errors:
            why = errors[0].message if errors else f"{side[0]} lies beside it; " + CHECKPOINT
            raise CachelintError(
                f"{cassette.path}: cannot seal this SQLite cassette: "
                f"{why.format(db=cassette.path)}; run `cachelint check`, fix it, then run "
                "`cachelint stamp`"
            )
        seals.setdefault(cassette.root, {})[relative(cassette)] = seal_of(cassette)
    return seals
