"""SQLite cassettes (EvalCore's `.evalcore/cache.db`, or one `sqlite` names): real databases built
with Python's sqlite3 in EvalCore's own schema (crates/evalcore-store/src/lib.rs), in real git
repositories; cachelint must never change a byte of them."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import sys
from pathlib import Path

import pytest

from tests.conftest import commit_all, git, run_cachelint
from tests.helpers import assert_findings, assert_no_findings, findings

CODE = "eval-cache-sqlite"
DB = ".evalcore/cache.db"
CONFIG = '[tool.cachelint]\ncache = [".evalcore"]\npackages = ["cachelint"]\n'
# EvalCore's Store::open, verbatim.
SCHEMA = """CREATE TABLE IF NOT EXISTS llm_cache (
                key        TEXT PRIMARY KEY,
                request    TEXT NOT NULL,
                response   TEXT NOT NULL,
                created_at TEXT NOT NULL DEFAULT (datetime('now'))
            );
            CREATE TABLE IF NOT EXISTS runs (
                id         INTEGER PRIMARY KEY AUTOINCREMENT,
                label      TEXT NOT NULL,
                summary    TEXT NOT NULL,
                created_at TEXT NOT NULL DEFAULT (datetime('now'))
            );"""


def canonical(case: str) -> str:
    # serde_json's to_string of {"identity": ..., "input": ...}: sorted keys, no spaces.
    value = {"identity": {"model": "gpt-4o-mini", "type": "openai"}, "input": case}
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def record_rows(db: Path, cases: list[str], journal: str = "DELETE") -> sqlite3.Connection:
    """Write rows as EvalCore's Store::put does; the connection is left open (closed by the
    caller), so a WAL or journal stays as it is."""
    db.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA journal_mode={journal}")
    conn.executescript(SCHEMA)
    for case in cases:
        request = canonical(case)
        key = hashlib.sha256(request.encode()).hexdigest()
        answer = json.dumps({"latency_ms": 5, "text": f"answer to {case}", "tokens": None})
        conn.execute(
            "INSERT OR REPLACE INTO llm_cache (key, request, response) VALUES (?1, ?2, ?3)",
            (key, request, answer),
        )
    conn.commit()
    return conn


def evalcore_repo(repo: Path, cases: list[str] | None = None, *, stamp: bool = True) -> Path:
    (repo / "pyproject.toml").write_text(CONFIG)
    (repo / "requirements.txt").write_text("cachelint==0.1.0\n")
    (repo / ".gitattributes").write_text(".evalcore/** -text\n")
    record_rows(repo / DB, cases or ["hello", "world"]).close()
    if stamp:
        done = run_cachelint(repo, "stamp")
        assert done.returncode == 0, done.stderr
    commit_all(repo)
    return repo


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_a_clean_cassette_passes_and_check_never_changes_a_byte(git_repo: Path) -> None:
    repo = evalcore_repo(git_repo)
    before, names = digest(repo / DB), listing(repo / ".evalcore")
    done = run_cachelint(repo, "check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 findings" in done.stdout
    assert digest(repo / DB) == before
    assert listing(repo / ".evalcore") == names  # no -shm, -wal or -journal created
    assert git(repo, "status", "--porcelain") == ""


def test_a_wal_mode_cassette_is_read_without_a_side_file(git_repo: Path) -> None:
    repo = git_repo
    (repo / "pyproject.toml").write_text(CONFIG)
    conn = record_rows(repo / DB, ["hello"], journal="WAL")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()  # the last close of a WAL database removes -wal and -shm
    assert listing(repo / ".evalcore") == ["cache.db"]
    commit_all(repo)
    before = digest(repo / DB)
    assert_no_findings(repo, CODE)
    assert digest(repo / DB) == before
    assert listing(repo / ".evalcore") == ["cache.db"]


def test_a_wal_beside_the_cassette_is_an_error_naming_the_checkpoint(git_repo: Path) -> None:
    repo = evalcore_repo(git_repo)
    conn = record_rows(repo / DB, ["later"], journal="WAL")  # open: -wal and -shm stay
    try:
        before = digest(repo / DB)
        found = assert_findings(repo, CODE)
        paths = {f.path for f in found}
        assert {f"{DB}-wal", f"{DB}-shm"} <= paths
        wal = next(f for f in found if f.path == f"{DB}-wal")
        assert "PRAGMA wal_checkpoint(TRUNCATE)" in wal.message
        assert "journal_mode=DELETE" in wal.message
        assert digest(repo / DB) == before
        refused = run_cachelint(repo, "stamp")
        assert refused.returncode == 2
        assert "cannot seal" in refused.stderr and "-wal" in refused.stderr
    finally:
        conn.close()


def test_a_rollback_journal_beside_the_cassette_is_an_error_also_in_the_index(
    git_repo: Path,
) -> None:
    repo = evalcore_repo(git_repo)
    record_rows(repo / DB, ["later"], journal="PERSIST").close()  # leaves cache.db-journal
    assert (repo / f"{DB}-journal").exists()
    git(repo, "add", "-f", f"{DB}-journal")
    (repo / f"{DB}-journal").unlink()  # in the index only: still reported
    found = [f for f in assert_findings(repo, CODE) if f.path == f"{DB}-journal"]
    assert found and "rollback journal" in found[0].message
    assert "git rm --cached" in found[0].message


def test_a_torn_cassette_is_an_error(git_repo: Path) -> None:
    repo = evalcore_repo(git_repo)
    data = (repo / DB).read_bytes()
    (repo / DB).write_bytes(data[: len(data) - 1000])
    (message,) = [f.message for f in assert_findings(repo, CODE)]
    assert message.startswith("torn:")


def test_a_corrupt_page_fails_the_integrity_check(git_repo: Path) -> None:
    repo = git_repo
    (repo / "pyproject.toml").write_text(CONFIG)
    record_rows(repo / DB, [f"case {i} " + "x" * 200 for i in range(60)]).close()
    with open(repo / DB, "r+b") as fh:
        fh.seek(4096 * 2 + 3)  # the cell count of a b-tree page of llm_cache
        fh.write(b"\x00\x7f")
    before = digest(repo / DB)
    (finding,) = assert_findings(repo, CODE)
    assert finding.message.startswith("PRAGMA integrity_check fails: ")
    assert "\n" not in finding.message and "On tree page" in finding.message
    assert digest(repo / DB) == before


def test_a_row_edited_after_stamping_is_unstamped(git_repo: Path) -> None:
    repo = evalcore_repo(git_repo)
    assert_no_findings(repo, "eval-cache-unstamped")
    conn = sqlite3.connect(repo / DB)
    conn.execute('UPDATE llm_cache SET response = \'{"text": "edited"}\' WHERE rowid = 1')
    conn.commit()
    conn.close()
    (finding,) = assert_findings(repo, "eval-cache-unstamped")
    assert DB in finding.message and "rows were edited" in finding.message
    edited = hashlib.sha256(canonical("hello").encode()).hexdigest()
    assert f"llm_cache keys since the stamp's commit: {edited} (edited)" in finding.message
    git(repo, "checkout", "--", DB)
    conn = record_rows(repo / DB, ["added"])
    conn.close()
    (finding,) = assert_findings(repo, "eval-cache-unstamped")
    assert "table llm_cache: 3 rows now, 2 when stamped" in finding.message
    added = hashlib.sha256(canonical("added").encode()).hexdigest()
    assert f"{added} (added)" in finding.message


def test_keys_of_the_wrong_shape_repeated_or_not_their_request_name_table_and_key(
    git_repo: Path,
) -> None:
    repo = evalcore_repo(git_repo)
    conn = sqlite3.connect(repo / DB)
    good = hashlib.sha256(canonical("hello").encode()).hexdigest()
    conn.execute("UPDATE llm_cache SET request = ? WHERE key = ?", (canonical("other"), good))
    conn.execute("INSERT INTO llm_cache (key, request, response) VALUES ('ABC', 'x', '{}')")
    conn.commit()
    conn.close()
    messages = sorted(f.message for f in assert_findings(repo, CODE))
    assert any(f"table llm_cache, key {good}: is not the SHA-256" in m for m in messages)
    assert any("table llm_cache, key ABC: is not a SHA-256 key" in m for m in messages)


def test_missing_tables_and_an_empty_cache(git_repo: Path) -> None:
    repo = git_repo
    (repo / "pyproject.toml").write_text(CONFIG)
    (repo / ".evalcore").mkdir()
    conn = sqlite3.connect(repo / DB)
    conn.execute("CREATE TABLE llm_cache (key TEXT PRIMARY KEY, request TEXT, response TEXT)")
    conn.commit()
    conn.close()
    messages = [f.message for f in findings(repo, CODE)]
    assert any("table 'runs' is missing" in m for m in messages)
    assert any("llm_cache holds no row" in m for m in messages)


def test_a_filter_attribute_and_a_missing_minus_text_are_reported(git_repo: Path) -> None:
    repo = evalcore_repo(git_repo)
    (repo / ".gitattributes").write_text(".evalcore/cache.db filter=lfs ident\n")
    messages = [f.message for f in assert_findings(repo, CODE)]
    assert any("`filter=lfs`" in m for m in messages)
    assert any("`ident`" in m for m in messages)
    text = assert_findings(repo, "eval-cache-text-attr")
    # Grouped per root: the stamp and the cassette.
    assert any("unspecified for 2 files under .evalcore/" in f.message for f in text)


def test_the_cassette_must_be_tracked_and_not_ignored(git_repo: Path) -> None:
    repo = evalcore_repo(git_repo)
    git(repo, "rm", "-q", "--cached", DB)
    assert any(f.path == DB for f in assert_findings(repo, "eval-cache-untracked"))
    (repo / ".gitignore").write_text("*.db\n")
    assert any(f.path == DB for f in assert_findings(repo, "eval-cache-ignored"))


def test_size_against_the_budget_and_githubs_limits(git_repo: Path) -> None:
    repo = git_repo
    (repo / "pyproject.toml").write_text(CONFIG)
    conn = record_rows(repo / DB, ["hello"])
    conn.execute(
        "INSERT INTO runs (label, summary) VALUES ('big', CAST(zeroblob(?) AS TEXT))",
        (120 * 1024 * 1024,),
    )
    conn.commit()
    conn.close()
    try:
        (finding,) = [f for f in findings(repo, CODE) if "MiB" in f.message]
        assert finding.severity.value == "error" and "above db-max-bytes" in finding.message
        config = CONFIG + "db-max-bytes = 200000000\ndb-warn-bytes = 100000000\n"
        (repo / "pyproject.toml").write_text(config)
        (finding,) = [f for f in findings(repo, CODE) if "MiB" in f.message]
        assert finding.severity.value == "warning" and "db-warn-bytes" in finding.message
    finally:
        (repo / DB).unlink()


def test_guard_sees_a_row_written_into_the_cassette(git_repo: Path) -> None:
    repo = evalcore_repo(git_repo)
    write = (
        "import sqlite3; c = sqlite3.connect('.evalcore/cache.db'); "
        "c.execute(\"INSERT INTO runs (label, summary) VALUES ('x', '{}')\"); c.commit()"
    )
    done = run_cachelint(repo, "guard", "--", sys.executable, "-c", write)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{DB}: eval-cache-mutated" in done.stderr


def test_layout_evalcore_names_a_missing_cassette(git_repo: Path) -> None:
    repo = git_repo
    (repo / "pyproject.toml").write_text(CONFIG + 'layout = "evalcore"\n')
    (repo / ".evalcore").mkdir()
    (repo / ".evalcore/.gitkeep").write_text("")
    (finding,) = assert_findings(repo, CODE)
    assert finding.path == DB and finding.message.startswith("missing")


def test_a_configured_sqlite_file_and_one_outside_every_root(git_repo: Path) -> None:
    repo = git_repo
    db = repo / "eval-cache/answers.sqlite"
    record_rows(db, ["hello"]).close()
    (repo / "pyproject.toml").write_text(
        '[tool.cachelint]\nsqlite = ["eval-cache/answers.sqlite"]\n'
    )
    commit_all(repo)
    assert_no_findings(repo, CODE)
    data = db.read_bytes()
    db.write_bytes(data[:-10])
    assert_findings(repo, CODE)
    (repo / "pyproject.toml").write_text('[tool.cachelint]\nsqlite = ["other/answers.sqlite"]\n')
    done = run_cachelint(repo, "check")
    assert done.returncode == 2
    assert "lies outside every cache root" in done.stderr


@pytest.mark.parametrize("journal", ["DELETE", "WAL"])
def test_the_immutable_open_survives_a_writer_holding_the_lock(
    git_repo: Path, journal: str
) -> None:
    repo = evalcore_repo(git_repo)
    conn = sqlite3.connect(repo / DB)
    conn.execute(f"PRAGMA journal_mode={journal}")
    conn.execute("BEGIN EXCLUSIVE")
    try:
        done = run_cachelint(repo, "check", "--select", CODE)
        output = done.stdout + done.stderr
        assert "locked" not in output
        # In WAL mode the writer's -wal and -shm are there, and reported; nothing else is.
        assert done.returncode == (1 if journal == "WAL" else 0), output
        assert output.count(": eval-cache-sqlite:") == (2 if journal == "WAL" else 0), output
    finally:
        conn.rollback()
        conn.close()


def test_with_no_config_an_evalcore_cassette_is_found(git_repo: Path) -> None:
    repo = git_repo
    record_rows(repo / DB, ["hello"]).close()
    (repo / ".gitattributes").write_text(".evalcore/** -text\n")
    commit_all(repo)
    done = run_cachelint(repo, "check")
    assert "1 entry" not in done.stdout and "under .evalcore" in done.stdout, done.stdout
    assert "eval-cache-empty" not in done.stdout
    (repo / ".evalcore/cache.db-wal").write_bytes(b"")
    done = run_cachelint(repo, "check")
    assert f"{DB}-wal: {CODE}" in done.stdout
