"""The entry cache: a check reuses the entries an earlier one verified only while git's index holds
both of their files as it did then (the same object ids) and git reports neither changed, and
reads and verifies everything else from disk. Real repositories, real git."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import blake3
import orjson
import pytest

from cachelint import __version__, entrycache
from cachelint.collect import collect
from cachelint.config import Layout, load
from cachelint.entrycache import CACHE_FILE, LISTING_FILE
from cachelint.facts import TreeFacts
from cachelint.store import UNREAD_REQUEST, Entry
from tests.conftest import commit_all, git, run_cachelint
from tests.helpers import NOW, put, stage_listing, write_meai

# The fixture's MEAI entry has a full-length key and no stamp: those findings are not the point.
TREE_ONLY = ("--select", "eval-cache-corrupt,eval-cache-empty,eval-cache-dirty")


def facts_of(repo: Path, *, entry_cache: bool = True) -> TreeFacts:
    return collect(load(repo), now=NOW, entry_cache=entry_cache)


def cache_path(repo: Path) -> Path:
    return repo / ".git" / CACHE_FILE


def entry_file(repo: Path, scenario: str) -> Path:
    return next(
        (repo / "eval-cache" / "cache" / "support" / "acme" / scenario).glob("*/entry.json")
    )


def entry(**fields: object) -> Entry:
    moment = datetime(2026, 1, 1, tzinfo=timezone.utc)
    base: dict[str, object] = dict(
        layout=Layout.CACHELINT,
        directory="r/cache/a/01",
        scenario="a",
        key="01ab",
        created=moment,
        expires=moment,
        provider="p",
        model="m",
        request=UNREAD_REQUEST,
    )
    return Entry(**{**base, **fields})


def encode(entries: list[Entry]) -> bytes:
    return entrycache._encode_line(entries)[0]


def decode(line: bytes) -> dict[str, Entry] | None:
    return entrycache._decode_line(line)


# The columns of a line of the cache file.
FIELDS = Entry._fields[: Entry._fields.index("request")]
Row = dict[str, object]


def rows(repo: Path) -> list[Row]:
    """The cache file's entries, each as its fields by name."""
    _, *lines, trailer = cache_path(repo).read_bytes().splitlines()
    assert trailer.startswith(b'{"mac":"')
    found = []
    for line in lines:
        if line.startswith(b'{"clean":'):
            continue  # the secret scan's memory, not entries
        columns = orjson.loads(line)
        assert len(columns) == len(FIELDS)
        found += [dict(zip(FIELDS, values, strict=True)) for values in zip(*columns, strict=True)]
    return found


def rewrite_rows(repo: Path, change: Callable[[Row], Row], *, sign: bool = True) -> None:
    """Edit every entry of the cache file in place (keeping its header), signed again with the
    clone's key as cachelint signs it (unless not `sign`: a forgery without the key)."""
    header = cache_path(repo).read_bytes().splitlines()[0]
    edited = [change(row) for row in rows(repo)]
    columns = [[row[field] for row in edited] for field in FIELDS]
    lines = [header + b"\n", orjson.dumps(columns) + b"\n"]
    key = bytes.fromhex((repo / ".git" / entrycache.KEY_FILE).read_text())
    signed = list(entrycache._signed(lines, key if sign else bytes(32)))
    cache_path(repo).write_bytes(b"".join(signed))


@pytest.fixture
def repo(git_repo: Path) -> Path:
    (git_repo / ".gitattributes").write_text("eval-cache/** -text\n")
    put(git_repo, scenario="support/acme/a", text="one")
    put(git_repo, scenario="support/acme/b", text="two")
    write_meai(git_repo)
    commit_all(git_repo)
    return git_repo


def test_first_check_writes_every_committed_entry_and_the_listing_it_checked(repo: Path) -> None:
    facts = facts_of(repo)
    written = rows(repo)
    assert {r["directory"] for r in written} == {e.directory for e in facts.entries}
    assert len(written) == 3
    listing = (repo / ".git" / LISTING_FILE).read_bytes()
    assert listing == stage_listing(repo)
    header = orjson.loads(cache_path(repo).read_bytes().splitlines()[0])
    assert header["index"] == blake3.blake3(listing).hexdigest()


def test_a_warm_check_sees_exactly_what_a_cold_one_sees(repo: Path) -> None:
    cold = facts_of(repo, entry_cache=False)
    facts_of(repo)  # writes the cache
    warm = facts_of(repo)
    assert warm.entries == cold.entries
    assert warm.corrupt == cold.corrupt


def test_rows_are_used_while_git_reports_entry_json_unchanged(repo: Path) -> None:
    facts_of(repo)

    # Only a reused row can put this scenario name into the facts: no file on disk says it.
    rewrite_rows(repo, lambda row: {**row, "scenario": "from-the-cache"})
    assert {e.scenario for e in facts_of(repo).entries} == {"from-the-cache"}
    assert {e.scenario for e in facts_of(repo, entry_cache=False).entries} != {"from-the-cache"}


def test_after_the_index_changes_only_the_entries_it_records_anew_are_read(repo: Path) -> None:
    """The cache keeps the index listing its entries were verified against. Once the index
    changes (here one entry restaged with an edit, one new entry staged), the entries whose
    records are the same in both listings are still taken; the others are read."""
    facts_of(repo)
    rewrite_rows(repo, lambda row: {**row, "scenario": "from-the-cache"})
    entry_json = entry_file(repo, "b")
    data = json.loads(entry_json.read_text())
    data["model"] = "restaged"
    entry_json.write_text(json.dumps(data, indent=2))
    put(repo, scenario="support/acme/c", text="three")
    git(repo, "add", "-A")
    facts = facts_of(repo)
    by_scenario = sorted(e.scenario or "" for e in facts.entries)
    assert by_scenario == ["from-the-cache", "from-the-cache", "support/acme/b", "support/acme/c"]
    assert (repo / ".git" / LISTING_FILE).read_bytes() == stage_listing(repo)
    assert facts_of(repo).entries == facts.entries  # now all from the new rows


@pytest.mark.parametrize("kept", ["lost", "another index", "the new index's"])
def test_without_the_listing_it_checked_the_cache_is_not_used_once_the_index_changes(
    repo: Path, kept: str
) -> None:
    """Only the listing whose digest the cache file's header holds says what its entries were
    verified against. One that is lost, or another (even the listing of the index the check
    then sees, under which a restaged entry's old row would pass), turns the cache off."""
    facts_of(repo)
    rewrite_rows(repo, lambda row: {**row, "scenario": "from-the-cache"})
    listing = repo / ".git" / LISTING_FILE
    if kept == "lost":
        listing.unlink()
    elif kept == "another index":
        listing.write_bytes(b"another index\0")
    assert "from-the-cache" in {e.scenario for e in facts_of(repo).entries}  # the same index
    entry_json = entry_file(repo, "b")
    data = json.loads(entry_json.read_text())
    data["model"] = "restaged"
    entry_json.write_text(json.dumps(data, indent=2))
    git(repo, "add", "-A")
    if kept == "the new index's":
        listing.write_bytes(stage_listing(repo))
    facts = facts_of(repo)
    assert "from-the-cache" not in {e.scenario for e in facts.entries}
    assert "restaged" in {e.model for e in facts.entries}
    assert listing.read_bytes() == stage_listing(repo)


def test_an_entry_changed_on_disk_is_read_again(repo: Path) -> None:
    facts_of(repo)
    entry_json = entry_file(repo, "a")
    entry_json.write_text("{ not json")
    facts = facts_of(repo)
    assert [d for d, _ in facts.corrupt] == [entry_json.parent.relative_to(repo).as_posix()]


def test_a_same_size_edit_with_the_old_mtime_is_still_read_again(repo: Path) -> None:
    """git compares ctime and size besides mtime, so putting the mtime back does not hide an
    edit from diff-files, and so not from the cache either."""
    facts_of(repo)
    entry_json = entry_file(repo, "a")
    before = entry_json.stat()
    text = entry_json.read_text()
    edited = text.replace('"provider": "openai"', '"provider": "OPENAI"')
    assert edited != text and len(edited) == len(text)
    entry_json.write_text(edited)
    os.utime(entry_json, ns=(before.st_atime_ns, before.st_mtime_ns))
    providers = {e.provider for e in facts_of(repo).entries if e.provider}
    assert "OPENAI" in providers


def test_an_entry_marked_assume_unchanged_is_always_read(repo: Path) -> None:
    facts_of(repo)
    entry_json = entry_file(repo, "a")
    git(repo, "update-index", "--assume-unchanged", entry_json.relative_to(repo).as_posix())
    entry_json.write_text("{ not json")
    assert git(repo, "diff-files", "--name-only") == ""  # git no longer compares it
    facts = facts_of(repo)
    assert [d for d, _ in facts.corrupt] == [entry_json.parent.relative_to(repo).as_posix()]


def test_a_staged_change_gets_a_new_row(repo: Path) -> None:
    facts_of(repo)
    entry_json = entry_file(repo, "b")
    data = json.loads(entry_json.read_text())
    data["model"] = "restaged"
    entry_json.write_text(json.dumps(data, indent=2))
    git(repo, "add", "-A")
    assert "restaged" in {e.model for e in facts_of(repo).entries}
    assert "restaged" in {r["model"] for r in rows(repo)}
    assert "restaged" in {e.model for e in facts_of(repo).entries}  # now from the new row


def test_untracked_and_corrupt_entries_get_no_row(repo: Path) -> None:
    put(repo, scenario="support/acme/new", text="untracked")
    broken = put(repo, scenario="support/acme/broken", text="broken")
    (broken / "entry.json").write_text("[]")
    commit_all(repo)
    put(repo, scenario="support/acme/later", text="not added")
    facts = facts_of(repo)
    assert len(facts.corrupt) == 1
    cached = {str(r["directory"]) for r in rows(repo)}
    assert broken.relative_to(repo).as_posix() not in cached
    assert not any("support/acme/later" in d for d in cached)
    assert len(cached) == len(facts.entries) - 1


@pytest.mark.skipif(sys.platform != "linux", reason="file names of arbitrary bytes")
def test_an_entry_under_an_undecodable_name_gets_no_row_and_the_others_do(repo: Path) -> None:
    entry = put(repo, scenario="support/odd/x", text="odd name")
    scenario_dir = os.fsencode(entry.parent)
    odd = scenario_dir[:-1] + b"\xff"  # not UTF-8: a lone surrogate in Python
    os.rename(scenario_dir, odd)
    entry_json = Path(os.fsdecode(odd)) / entry.name / "entry.json"
    data = json.loads(entry_json.read_text())
    data["scenario"] = "support/odd/\udcff"  # what the directory's name decodes to
    entry_json.write_text(json.dumps(data, indent=2))  # ASCII: the surrogate as an escape
    commit_all(repo)
    cold = facts_of(repo, entry_cache=False)
    assert not cold.corrupt
    assert len(cold.entries) == 4 and any("\udcff" in e.directory for e in cold.entries)
    facts_of(repo)  # writes the cache
    assert len(rows(repo)) == 3
    assert facts_of(repo).entries == cold.entries  # three from their rows, one from disk


def test_an_entry_under_a_non_ascii_name_gets_its_row_and_is_reused(repo: Path) -> None:
    put(repo, scenario="support/café/x", text="accented")  # JSON holds it, unlike a surrogate
    commit_all(repo)
    cold = facts_of(repo, entry_cache=False)
    facts_of(repo)  # writes the cache
    assert len(rows(repo)) == 4
    assert facts_of(repo).entries == cold.entries
    # Taken from its row: a mark put in the row comes back.
    rewrite_rows(
        repo, lambda row: {**row, "model": "from-the-cache"} if "café" in row["directory"] else row
    )
    reused = [e for e in facts_of(repo).entries if "café" in e.directory]
    assert [e.model for e in reused] == ["from-the-cache"]


def test_a_damaged_cache_file_is_ignored_and_rewritten(repo: Path) -> None:
    facts_of(repo)
    header = cache_path(repo).read_bytes().splitlines()[0]
    cache_path(repo).write_bytes(header + b'\n[["half a column"\n\x00\xff')
    # The header alone still names this very index: the check must find the body damaged and
    # write the file anew.
    assert entrycache.written_from(repo / ".git", Layout.AUTO) == orjson.loads(header)["index"]
    cold = facts_of(repo, entry_cache=False)
    assert facts_of(repo).entries == cold.entries
    assert len(rows(repo)) == 3


def test_the_index_a_cache_file_was_written_from_is_read_from_its_header(repo: Path) -> None:
    assert entrycache.written_from(repo / ".git", Layout.AUTO) == ""  # no file yet
    facts_of(repo)
    written = entrycache.written_from(repo / ".git", Layout.AUTO)
    assert written and written == entrycache.load(repo / ".git", Layout.AUTO).index_digest
    assert entrycache.written_from(repo / ".git", Layout.MEAI) == ""  # another layout's file


@pytest.mark.parametrize("field", FIELDS)
def test_a_wrong_type_in_any_column_leaves_the_whole_file_unused(repo: Path, field: str) -> None:
    cold = facts_of(repo, entry_cache=False)
    facts_of(repo)
    rewrite_rows(repo, lambda row: {**row, "scenario": "from-the-cache"})
    rewrite_rows(repo, lambda row: {**row, field: 12345} if row["layout"] == "cachelint" else row)
    assert facts_of(repo).entries == cold.entries  # read from disk again, not from the file


def test_a_row_for_another_layout_setting_is_not_used(repo: Path) -> None:
    facts_of(repo)
    rewrite_rows(repo, lambda row: {**row, "scenario": "from-the-cache"})
    pyproject = repo / "pyproject.toml"
    pyproject.write_text('[tool.cachelint]\nlayout = "auto"\n')
    assert "from-the-cache" in {e.scenario for e in facts_of(repo).entries}
    pyproject.write_text('[tool.cachelint]\nlayout = "cachelint"\nexclude = ["**/1/**"]\n')
    assert "from-the-cache" not in {e.scenario for e in facts_of(repo).entries}


def test_an_unwritable_cache_is_not_an_error(repo: Path) -> None:
    (repo / ".git" / "cachelint").write_text("a file where the directory should be")
    result = run_cachelint(repo, "check", *TREE_ONLY)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 entries" in result.stdout


def test_no_cache_neither_reads_nor_writes_it(repo: Path) -> None:
    result = run_cachelint(repo, "check", "--no-cache", *TREE_ONLY)
    assert result.returncode == 0, result.stdout + result.stderr
    assert not cache_path(repo).exists()

    facts_of(repo)
    before = cache_path(repo).read_bytes()
    put(repo, scenario="support/acme/c", text="three")
    commit_all(repo)
    result = run_cachelint(repo, "check", "--no-cache", *TREE_ONLY)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 entries" in result.stdout
    assert cache_path(repo).read_bytes() == before  # a cached run would have added a row
    run_cachelint(repo, "check")
    assert len(rows(repo)) == 4


def test_no_cache_unless_git_names_an_existing_absolute_git_dir(repo: Path) -> None:
    """A git older than 2.13 echoes `--absolute-git-dir` back: that must not become a directory
    in the work tree."""
    from cachelint.gitutil import GitResult
    from cachelint.listing import git_dir

    def named(text: str) -> Path | None:
        return git_dir(GitResult(0, text.encode() + b"\n", b""))

    assert named(str(repo / ".git")) == repo / ".git"
    assert named("--absolute-git-dir") is None
    assert named(".git") is None
    assert named(str(repo / "no-such-dir")) is None
    assert named("") is None


def test_columns_round_trip_both_layouts() -> None:
    moment = datetime(2026, 1, 1, tzinfo=timezone.utc)
    native = entry(digest="d" * 64)
    meai = Entry(
        layout=Layout.MEAI,
        directory="r/cache/S/1/" + "A" * 96,
        scenario="S",
        key=None,
        created=moment,
        expires=None,
        iteration="1",
    )
    decoded = decode(encode([native, meai]))
    assert decoded == {native.directory: native, meai.directory: meai}
    assert decoded[native.directory].request is UNREAD_REQUEST


def test_a_name_json_cannot_hold_drops_only_that_entry() -> None:
    good = entry()
    odd = good._replace(directory="r/cache/\udcff/01")  # undecodable bytes, surrogateescape
    decoded = decode(encode([good, odd]))
    assert decoded is not None and list(decoded) == [good.directory]


@pytest.mark.parametrize(
    "line",
    [
        b"",
        b"[[not json",
        b"[]",
        b"[1, 2]",
        b'[["a"], ["cachelint"]]',
        b'{"header": {}}',
        b"[" * 9,
        b'["o", "cachelint", "d", "s", "k", "c", "e", "p", "m", "i"]',  # strings, not columns
    ],
)
def test_anything_else_decodes_to_nothing(line: bytes) -> None:
    assert decode(line) is None


def test_columns_of_different_lengths_decode_to_nothing() -> None:
    columns = orjson.loads(encode([entry()]))
    columns[FIELDS.index("key")].append("02cd")  # one key too many
    assert decode(orjson.dumps(columns)) is None


def test_every_entry_field_but_the_request_is_a_column() -> None:
    """A field added to Entry without a column would be silently lost on a cached check."""
    from cachelint.store import COLUMNS

    assert [c.name for c in COLUMNS] == list(FIELDS)
    full = entry(digest="d" * 64, iteration="it", maybe_secret=False)
    assert all(value is not None for value in full[:-1])
    decoded = decode(encode([full]))
    assert decoded is not None and decoded[full.directory] == full


def test_a_file_of_several_lines_reads_as_one(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(entrycache, "LINE_ENTRIES", 2)
    cold = facts_of(repo, entry_cache=False)
    facts_of(repo)
    assert len(cache_path(repo).read_bytes().splitlines()) == 1 + 2 + 1  # 3 entries: 2, then 1
    cached = entrycache.load(repo / ".git", Layout.AUTO)
    assert sorted(cached.entries.values()) == sorted(cold.entries)
    assert facts_of(repo).entries == cold.entries


def test_one_damaged_line_leaves_the_whole_file_unused(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(entrycache, "LINE_ENTRIES", 2)
    facts_of(repo)
    header, first, second, trailer = cache_path(repo).read_bytes().splitlines()
    cache_path(repo).write_bytes(b"\n".join([header, first, second[:-5], trailer]) + b"\n")
    assert entrycache.load(repo / ".git", Layout.AUTO) == entrycache.Cached({})
    assert len(facts_of(repo).entries) == 3  # read from disk, and the file written anew
    assert len(rows(repo)) == 3


def test_a_warm_check_with_nothing_changed_leaves_the_cache_file_as_it_is(repo: Path) -> None:
    """Nothing verified anew, nothing unused, the secret scan's memory the same: no rewrite."""
    facts_of(repo)
    before = cache_path(repo).stat()
    assert facts_of(repo).entries
    after = cache_path(repo).stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_the_secret_scans_memory_is_kept_with_the_entries_under_the_same_mac(repo: Path) -> None:
    """The digests the secret scan found clean ride in the entry cache: a digest added by hand
    (which would hide a secret from the scan) leaves the whole file unused."""
    entries = facts_of(repo).entries
    memory = entrycache.Clean("scan", frozenset({"a" * 64}))
    entrycache.save(repo / ".git", Layout.AUTO, entries, "", memory)
    assert entrycache.load(repo / ".git", Layout.AUTO).clean == memory
    kept = b'"%s"' % (b"a" * 64)
    forged = cache_path(repo).read_bytes().replace(kept, kept + b',"%s"' % (b"b" * 64))
    assert forged != cache_path(repo).read_bytes()
    cache_path(repo).write_bytes(forged)
    assert entrycache.load(repo / ".git", Layout.AUTO) == entrycache.Cached({})


def test_a_file_of_the_row_format_is_ignored_and_rewritten(repo: Path) -> None:
    """Format 1 held a row per entry; a cache file left by an older cachelint must not be read."""
    cold = facts_of(repo, entry_cache=False)
    header = {"format": 1, "cachelint": __version__, "layout": "auto"}
    row = [cold.entries[0].directory, "0" * 40, "cachelint", "from-the-cache", None, None, None]
    cache_path(repo).parent.mkdir(exist_ok=True)
    cache_path(repo).write_bytes(orjson.dumps(header) + b"\n" + orjson.dumps(row) + b"\n")
    assert facts_of(repo).entries == cold.entries
    first_line = cache_path(repo).read_bytes().splitlines()[0]
    assert orjson.loads(first_line)["format"] == entrycache.FORMAT
    assert len(rows(repo)) == 3


def test_a_leftover_temp_file_beside_a_cached_entry_is_reported(repo: Path) -> None:
    """A warm check takes the entry from the cache and still reports the temp file beside it."""
    from cachelint.fsutil import TEMP_PREFIX

    cold = facts_of(repo, entry_cache=False)
    facts_of(repo)
    (entry_file(repo, "a").parent / f"{TEMP_PREFIX}x").write_text("torn")
    warm = facts_of(repo)
    assert warm.entries == cold.entries
    assert [reason for _, reason in warm.corrupt] == [
        "leftover temp file from an interrupted write"
    ]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
@pytest.mark.parametrize("name", [CACHE_FILE, LISTING_FILE])
def test_a_fifo_in_place_of_a_cache_file_is_no_cache_and_never_waited_on(
    repo: Path, name: str
) -> None:
    """Opening a FIFO for reading waits for a writer: a check must never, and must rewrite the
    cache as it would a damaged file."""
    facts_of(repo)
    git(repo, "rm", "-q", "--cached", "-r", "eval-cache/cache/support/acme/b")  # the index changes
    path = repo / ".git" / name
    path.unlink()
    os.mkfifo(path)
    result = run_cachelint(repo, "check", *TREE_ONLY)  # a wait would time out
    assert result.returncode == 0, result.stdout + result.stderr
    assert path.is_file()  # rewritten, a regular file again
    assert rows(repo)


@pytest.mark.parametrize("chunk", [1, 2, 5, 1 << 20])
def test_the_cache_file_is_read_line_by_line_as_iterating_the_file_reads_it(
    chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`_lines` (chunks split at memchr speed) gives the lines, newline kept, that iterating the
    buffered file gives, a line across chunks and a last line without a newline included."""
    import io
    import random

    monkeypatch.setattr(entrycache, "_CHUNK", chunk)
    rng = random.Random(chunk)
    for _ in range(500):
        data = bytes(rng.choice(b"ab\n") for _ in range(rng.randint(0, 24)))
        got = list(entrycache._lines(io.BufferedReader(io.BytesIO(data))))
        assert got == list(io.BytesIO(data)), data
