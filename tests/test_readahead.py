"""Helper processes read the index's entries while the linter walks: a check with them must see
exactly what a check without them sees, whatever they fail to hand back. Real repositories, real
git, real helper processes (MIN_SLICE lowered so a small tree gets them)."""

from __future__ import annotations

import gc
import io
import sys
import threading
from pathlib import Path

import pytest

from cachelint import entrycache, readahead, tree
from cachelint.config import Layout, load
from cachelint.entrycache import CACHE_FILE
from cachelint.store import UNREAD_REQUEST
from cachelint.tree import TreeFacts, collect
from tests.conftest import commit_all, git
from tests.test_rules import NOW, put, write_meai


def facts_of(repo: Path, *, helpers: bool, entry_cache: bool = False) -> TreeFacts:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(readahead, "MIN_SLICE", 1 if helpers else 10**9)
        return collect(load(repo), now=NOW, entry_cache=entry_cache)


def same_facts(a: TreeFacts, b: TreeFacts) -> None:
    assert a.entries == b.entries
    assert [e.request is UNREAD_REQUEST for e in a.entries] == [
        e.request is UNREAD_REQUEST for e in b.entries
    ]
    assert a.corrupt == b.corrupt
    assert a.entry_dirs == b.entry_dirs


@pytest.fixture
def repo(git_repo: Path) -> Path:
    """Native entries in several scenarios (one with a non-ASCII name) and an MEAI entry."""
    (git_repo / ".gitattributes").write_text("eval-cache/** -text\n")
    for n in range(6):
        put(git_repo, scenario=f"support/acme/case-{n}", text=f"question {n}")
    put(git_repo, scenario="support/café/b-c", text="dash")
    put(git_repo, scenario="support/café/b", text="prefix of a sibling")
    write_meai(git_repo)
    commit_all(git_repo)
    return git_repo


def test_helpers_read_every_committed_entry(repo: Path) -> None:
    with_helpers = facts_of(repo, helpers=True)
    assert with_helpers.read_ahead == len(with_helpers.entries) == 9
    same_facts(with_helpers, facts_of(repo, helpers=False))


def test_helpers_give_the_object_ids_the_index_listing_has(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a first check encodes the entry cache with when it cannot copy the helpers' lines."""
    stage = git(repo, "ls-files", "-z", "-v", "--stage").encode()
    monkeypatch.setattr(readahead, "MIN_SLICE", 1)
    helpers = readahead.start(repo, stage, ["eval-cache/cache/"], Layout.AUTO)
    assert helpers is not None
    try:
        objects = helpers.entry_objects()
    finally:
        helpers.close()
    assert objects == tree._parse_stage(stage, entry_objects=True)[1]
    assert len(objects) == 9


def test_a_small_tree_gets_no_helper(repo: Path) -> None:
    facts = collect(load(repo), now=NOW, entry_cache=False)  # 9 entries, far below MIN_SLICE
    assert facts.read_ahead == 0
    assert len(facts.entries) == 9


def test_what_helpers_cannot_read_the_linter_reads_and_reports(repo: Path) -> None:
    broken = next((repo / "eval-cache" / "cache" / "support" / "acme" / "case-0").glob("*"))
    (broken / "entry.json").write_text("{not json")
    gone = next((repo / "eval-cache" / "cache" / "support" / "acme" / "case-1").glob("*"))
    (gone / "contents.data").unlink()
    linked = next((repo / "eval-cache" / "cache" / "support" / "acme" / "case-2").glob("*"))
    (linked / "entry.json").unlink()
    (linked / "entry.json").symlink_to(broken.parent.parent / "case-3" / "x.json")
    put(repo, scenario="support/acme/untracked", text="not committed yet")
    with_helpers = facts_of(repo, helpers=True)
    without = facts_of(repo, helpers=False)
    same_facts(with_helpers, without)
    assert {path for path, _ in with_helpers.corrupt} >= {
        broken.relative_to(repo).as_posix(),
        gone.relative_to(repo).as_posix(),
    }
    linked_dir = linked.relative_to(repo).as_posix()
    assert linked_dir in {path for path, _ in with_helpers.corrupt}  # no entry.json file
    # 9 committed, 3 of them corrupt now, 1 untracked.
    assert len(with_helpers.entries) == 7
    # Helpers read what the index names: not the untracked entry, not through the link, and
    # not the invalid JSON; `gone` is valid JSON (its missing contents.data is the linter's
    # finding).
    assert with_helpers.read_ahead == 7


def test_excluded_entries_stay_excluded(repo: Path) -> None:
    config = repo / "cachelint.toml"
    config.write_text('exclude = ["**/case-4/**"]\n')
    same_facts(facts_of(repo, helpers=True), facts_of(repo, helpers=False))
    assert not any("case-4" in e.directory for e in facts_of(repo, helpers=True).entries)


@pytest.mark.parametrize("program", ["/nonexistent/python", "/bin/false"])
def test_a_helper_that_cannot_start_or_fails_costs_only_time(
    repo: Path, monkeypatch: pytest.MonkeyPatch, program: str
) -> None:
    expected = facts_of(repo, helpers=False)
    monkeypatch.setattr(sys, "executable", program)
    facts = facts_of(repo, helpers=True)
    assert facts.read_ahead == 0
    same_facts(facts, expected)


def test_helpers_read_for_the_first_check_and_the_entry_cache_for_the_next(repo: Path) -> None:
    cold = facts_of(repo, helpers=False)
    first = facts_of(repo, helpers=True, entry_cache=True)
    assert first.read_ahead == 9
    assert (repo / ".git" / CACHE_FILE).exists()
    warm = facts_of(repo, helpers=True, entry_cache=True)
    assert warm.read_ahead == 0  # the cache file served them
    same_facts(first, cold)
    same_facts(warm, cold)


def test_an_entry_changed_after_the_commit_is_read_as_it_is_on_disk(repo: Path) -> None:
    entry = next((repo / "eval-cache" / "cache" / "support" / "acme" / "case-5").glob("*"))
    path = entry / "entry.json"
    path.write_text(path.read_text().replace('"model": "m"', '"model": "edited"'))
    facts = facts_of(repo, helpers=True)
    assert {e.model for e in facts.entries if e.directory.endswith(entry.name)} == {"edited"}
    same_facts(facts, facts_of(repo, helpers=False))


def test_slices_are_whole_records_in_order() -> None:
    records = b"".join(b"H 100644 %040d 0\tdir/%05d/entry.json\0" % (n, n) for n in range(1000))
    for count in (1, 2, 3, 4):
        slices = readahead._slices(records, count)
        assert len(slices) == count
        assert b"".join(slices) == records
        assert all(s.endswith(b"\0") and s.startswith(b"H ") for s in slices)


def test_helpers_take_the_committed_entry_json_records_only() -> None:
    oid = b"%040d"
    stage = b"".join(
        [
            b"H 100644 " + oid % 1 + b" 0\tr/cache/a/01/entry.json\0",
            b"H 100644 " + oid % 2 + b" 0\tr/cache/a/01/contents.data\0",
            b"h 100644 " + oid % 3 + b" 0\tr/cache/tab\there/02/entry.json\0",  # marked
            b"M 100644 " + oid % 4 + b" 1\tr/cache/a/03/entry.json\0",  # unmerged: the linter's
            b"M 100644 " + oid % 5 + b" 2\tr/cache/a/03/entry.json\0",
            b"H 100644 " + oid % 6 + b" 0\tr/cache/\xff/04/entry.json\0",
            b"H 100644 " + oid % 7 + b" 0\tr/cache/a/05/entry.json.orig\0",
        ]
    )
    assert readahead._entry_records(stage) == [
        ("r/cache/a/01/entry.json", (oid % 1).decode()),
        ("r/cache/tab\there/02/entry.json", (oid % 3).decode()),
        ("r/cache/\udcff/04/entry.json", (oid % 6).decode()),
    ]


def test_helpers_never_change_the_work_tree(repo: Path) -> None:
    before = git(repo, "status", "--porcelain", "--ignored")
    facts_of(repo, helpers=True)
    assert git(repo, "status", "--porcelain", "--ignored") == before


def test_plumbing_runs_then_on_its_thread_before_handing_the_result_over(repo: Path) -> None:
    seen: list[tuple[str, bytes]] = []
    git = tree._Plumbing(repo)
    try:
        git.submit(
            "top",
            ["rev-parse", "--show-toplevel"],
            then=lambda r: seen.append((threading.current_thread().name, r.out)),
        )
        result = git.result("top")
    finally:
        git.close()
    assert seen == [("cachelint-git", result.out)]


def test_plumbing_hands_a_failing_then_to_the_caller(repo: Path) -> None:
    def fail(_: object) -> None:
        raise RuntimeError("then failed")

    git = tree._Plumbing(repo)
    try:
        git.submit("top", ["rev-parse", "--show-toplevel"], then=fail)
        with pytest.raises(RuntimeError, match="then failed"):
            git.result("top")
    finally:
        git.close()


def test_plumbing_close_drops_calls_not_started_and_waits_for_the_one_under_way(
    repo: Path,
) -> None:
    started, release = threading.Event(), threading.Event()
    ran: list[str] = []

    def hold(_: object) -> None:
        started.set()
        release.wait(10)
        ran.append("hold")

    git = tree._Plumbing(repo)
    git.submit("hold", ["rev-parse", "HEAD"], then=hold)
    assert started.wait(10)
    for name in ("a", "b"):  # queued while the thread is busy
        git.submit(name, ["rev-parse", "HEAD"], then=lambda _, n=name: ran.append(n))
    threading.Timer(0.2, release.set).start()
    git.close()
    assert ran == ["hold"]
    assert not git._thread.is_alive()


def cached(repo: Path) -> entrycache.Cached:
    return entrycache.load(repo / ".git", Layout.AUTO)


def test_the_first_check_takes_the_entry_cache_from_the_helpers(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = repo / ".git" / CACHE_FILE
    facts_of(repo, helpers=False, entry_cache=True)
    written_by_the_linter = cached(repo)
    cache.unlink()

    def not_here(*_: object) -> None:
        raise AssertionError("the linter encoded entries the helpers had encoded")

    monkeypatch.setattr(entrycache, "encode", not_here)  # in this process only
    first = facts_of(repo, helpers=True, entry_cache=True)
    monkeypatch.undo()
    # The header, then a line per helper (one per core here, whatever the machine has).
    assert 2 <= len(cache.read_bytes().splitlines()) <= 1 + readahead.MAX_HELPERS
    assert cached(repo) == written_by_the_linter
    assert len(written_by_the_linter.entries) == len(first.entries) == 9
    warm = facts_of(repo, helpers=True, entry_cache=True)
    assert warm.read_ahead == 0
    same_facts(warm, first)


def test_entries_changed_or_left_out_are_not_cached(repo: Path) -> None:
    (repo / "cachelint.toml").write_text('exclude = ["**/case-4/**"]\n')  # read, then left out
    entry = next((repo / "eval-cache" / "cache" / "support" / "acme" / "case-5").glob("*"))
    path = entry / "entry.json"
    path.write_text(path.read_text().replace('"model": "m"', '"model": "edited"'))
    cache = repo / ".git" / CACHE_FILE
    facts_of(repo, helpers=False, entry_cache=True)
    expected = cached(repo)
    cache.unlink()
    facts = facts_of(repo, helpers=True, entry_cache=True)
    assert facts.read_ahead == 9
    assert cached(repo) == expected
    assert len(expected.entries) == 7  # neither case-4 nor the edited case-5
    assert not any("case-4" in d or "case-5" in d for d in expected.entries)


def test_an_entry_the_check_read_itself_is_cached_beside_the_helpers_entries(repo: Path) -> None:
    put(repo, scenario="support/acme/new", text="staged, not committed")
    broken = next((repo / "eval-cache" / "cache" / "support" / "acme" / "case-0").glob("*"))
    (broken / "entry.json").write_text("{not json")  # the helpers skip it, the check reports it
    git(repo, "add", "-A")
    first = facts_of(repo, helpers=True, entry_cache=True)
    assert first.read_ahead == 9  # 10 staged entries, one not JSON
    assert len(first.corrupt) == 1
    assert set(cached(repo).entries) == {e.directory for e in first.entries}
    same_facts(facts_of(repo, helpers=True, entry_cache=True), facts_of(repo, helpers=False))


@pytest.mark.parametrize("module", ["orjson.py", "cachelint/__init__.py"])
def test_helpers_never_import_code_from_the_checked_repository(repo: Path, module: str) -> None:
    # A helper runs in the repository's top directory; `python -m` there would put it first on
    # sys.path, so a pull request could run its own code in the CI that lints it.
    marker = repo.parent / "imported"
    planted = repo / module
    planted.parent.mkdir(exist_ok=True)
    planted.write_text(f"open({str(marker)!r}, 'w').close()\n")
    facts = facts_of(repo, helpers=True)
    assert not marker.exists()
    assert facts.read_ahead == 9


def test_entries_the_check_read_itself_get_rows_when_the_helpers_failed(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "executable", "/bin/false")  # starts, then fails
    facts_of(repo, helpers=True, entry_cache=True)
    assert len(cached(repo).entries) == 9
    monkeypatch.undo()
    warm = facts_of(repo, helpers=True, entry_cache=True)
    assert warm.read_ahead == 0  # the cache file served them
    same_facts(warm, facts_of(repo, helpers=False))


def test_a_helper_writes_a_line_each_time_one_is_full(
    repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Run in this process (the helper's `main`), so the line length can be lowered."""
    stage = git(repo, "ls-files", "-z", "-v", "--stage").encode()
    monkeypatch.setattr(entrycache, "LINE_ENTRIES", 4)
    monkeypatch.chdir(repo)
    monkeypatch.setattr(sys, "argv", ["helper", "auto", "eval-cache/cache/"])
    answer = tmp_path / "answer"
    with (tmp_path / "stage").open("w+b") as source, answer.open("wb") as out:
        source.write(stage)
        source.seek(0)
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(source))
        monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(out))
        try:
            assert readahead.main() == 0
        finally:
            gc.enable()  # the helper turns the collector off for its short life
        sys.stdout.flush()
    header, *lines = answer.read_bytes().splitlines(keepends=True)
    assert header == entrycache.header(Layout.AUTO)
    assert len(lines) == 3  # 9 entries: 4, 4, 1
    read = entrycache.decode_lines(lines)
    assert read is not None
    same = facts_of(repo, helpers=False)
    assert read.entries == {e.directory: e for e in same.entries}
