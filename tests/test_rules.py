"""Every tree-integrity rule against real git repositories: one tree that triggers it, one that
does not. Trees are built from real entries (`Store.put`, literal MEAI files), committed, and then
broken in exactly one way."""

from __future__ import annotations

import json
import os
import subprocess
import unicodedata
from pathlib import Path

import pytest

from cachelint.facts import IndexEntry
from cachelint.fsutil import TEMP_PREFIX
from cachelint.listing import changed_since, parse_stage
from cachelint.rules import all_rules
from tests.conftest import commit_all, git
from tests.helpers import (
    TREE_CODES,
    assert_findings,
    assert_no_findings,
    facts_of,
    put,
    stage_listing,
    write_meai,
)


@pytest.fixture
def repo(git_repo: Path) -> Path:
    """A healthy committed cache: two native entries, `-text` on the tree."""
    (git_repo / ".gitattributes").write_text("eval-cache/** -text\n")
    put(git_repo, text="one")
    put(git_repo, text="two")
    commit_all(git_repo)
    return git_repo


@pytest.mark.parametrize("code", TREE_CODES)
def test_healthy_tree_has_no_findings(repo: Path, code: str) -> None:
    assert_no_findings(repo, code)


def test_every_tree_rule_has_a_test() -> None:
    assert set(TREE_CODES) == {
        "eval-cache-untracked",
        "eval-cache-ignored",
        "eval-cache-invisible",
        "eval-cache-missing",
        "eval-cache-dirty",
        "eval-cache-symlink",
        "eval-cache-path-too-long",
        "eval-cache-long-key",
        "eval-cache-windows-name",
        "eval-cache-case-collision",
        "eval-cache-text-attr",
        "eval-cache-empty",
        "eval-cache-corrupt",
        "eval-cache-special-file",  # tests/test_hostile.py
        "eval-cache-secret",  # tests/test_secrets.py
        "eval-cache-env-file",  # tests/test_secrets.py
        "eval-cache-unused",  # tests/test_lifecycle.py
        "eval-cache-results-in-root",  # tests/test_meai.py
        "eval-cache-meai-shape",  # tests/test_meai_layout.py
        "eval-cache-sqlite",  # tests/test_sqlite_cassette.py
        "eval-cache-unredacted",  # tests/test_redact.py
    }


def test_facts_record_what_was_looked_at(repo: Path) -> None:
    facts = facts_of(repo)
    assert facts.roots == ("eval-cache",)
    assert len(facts.entries) == 2 and not facts.corrupt
    assert len(facts.disk_files) == 4 and set(facts.index) == set(facts.disk_files)
    assert set(facts.text_attr.values()) == {"unset"}
    worst, length = facts.worst_path
    assert worst is not None and length == len(worst)


# ---- addressability ------------------------------------------------------------------------


def test_untracked(repo: Path) -> None:
    new = put(repo, text="three")
    (found,) = [f for f in assert_findings(repo, "eval-cache-untracked") if "entry.json" in f.path]
    assert found.path == new.relative_to(repo).as_posix() + "/entry.json"
    assert "git add" in found.message


def test_ignored_names_file_and_line_even_with_negation(repo: Path) -> None:
    # git cannot re-include a file whose parent directory is excluded, whatever `!` says.
    (repo / ".gitignore").write_text("# results\neval-cache/\n!eval-cache/keep.json\n")
    (repo / "eval-cache" / "keep.json").write_text("{}")
    (found,) = assert_findings(repo, "eval-cache-ignored")
    assert found.path == "eval-cache/keep.json"
    assert ".gitignore line 2 (`eval-cache/`)" in found.message
    assert_no_findings(repo, "eval-cache-untracked")
    assert_no_findings(repo, "eval-cache-invisible")


def test_file_under_a_dot_git_directory_is_invisible(repo: Path) -> None:
    hidden = repo / "eval-cache" / "cache" / "x" / ".git"
    os.makedirs(hidden)
    (hidden / "entry.json").write_text("{}")
    git(repo, "add", "-A")  # exits 0 and adds nothing: the reason this rule exists
    assert "eval-cache/cache/x/.git/entry.json" not in git(repo, "ls-files")
    (found,) = assert_findings(repo, "eval-cache-invisible")
    assert found.path == "eval-cache/cache/x/.git"
    assert "`.git`" in found.message and "its 1 file is never committed" in found.message


def test_nested_repository_is_invisible(repo: Path) -> None:
    nested = repo / "eval-cache" / "vendored"
    nested.mkdir()
    git(nested, "init", "-q")
    (nested / "a.json").write_text("{}")
    (nested / "b.json").write_text("{}")
    (found,) = assert_findings(repo, "eval-cache-invisible")
    assert found.path == "eval-cache/vendored"
    assert "nested git repository" in found.message and "2 files" in found.message
    assert_no_findings(repo, "eval-cache-untracked")


def test_gitlink_is_invisible(repo: Path) -> None:
    nested = repo / "eval-cache" / "vendored"
    nested.mkdir()
    git(nested, "init", "-q")
    (nested / "a.json").write_text("{}")
    commit_all(nested)
    git(repo, "add", "eval-cache/vendored")
    assert git(repo, "ls-files", "--stage", "eval-cache/vendored").startswith("160000")
    (found,) = assert_findings(repo, "eval-cache-invisible")
    assert found.path == "eval-cache/vendored" and "gitlink" in found.message
    assert_no_findings(repo, "eval-cache-missing")
    assert_no_findings(repo, "eval-cache-dirty")


def test_missing(repo: Path) -> None:
    victim = next((repo / "eval-cache").rglob("contents.data"))
    victim.unlink()
    rel = victim.relative_to(repo).as_posix()
    (found,) = assert_findings(repo, "eval-cache-missing")
    assert found.path == rel and f"git checkout -- {rel}" in found.message


def test_a_file_a_sparse_checkout_left_out_is_missing_as_such(repo: Path) -> None:
    put(repo, scenario="agent/tenant/elsewhere", text="kept")
    commit_all(repo)
    git(repo, "sparse-checkout", "set", "--no-cone", "/*", "!/eval-cache/cache/agent/tenant/hello/")
    assert not (repo / "eval-cache" / "cache" / "agent" / "tenant" / "hello").exists()
    found = assert_findings(repo, "eval-cache-missing")
    assert len(found) == 4  # both files of both entries left out
    for finding in found:
        assert "/agent/tenant/hello/" in finding.path
        assert (
            "skip-worktree" in finding.message and "git sparse-checkout disable" in finding.message
        )
        assert "deleted from the working tree" not in finding.message
    assert len(facts_of(repo).entries) == 1  # the entry still checked out


def test_dirty(repo: Path) -> None:
    victim = next((repo / "eval-cache").rglob("contents.data"))
    victim.write_text('{"text": "rewritten by an offline run"}\n')
    (found,) = assert_findings(repo, "eval-cache-dirty")
    assert found.path == victim.relative_to(repo).as_posix()


@pytest.mark.parametrize("mark", ["--assume-unchanged", "--skip-worktree"])
def test_dirty_behind_a_mark_that_stops_git_looking(repo: Path, mark: str) -> None:
    """git diff-files and git status skip a file so marked; the linter hashes it anyway."""
    victim = next((repo / "eval-cache").rglob("contents.data"))
    rel = victim.relative_to(repo).as_posix()
    git(repo, "update-index", mark, rel)
    assert_no_findings(repo, "eval-cache-dirty")  # marked but unchanged: clean
    victim.write_text('{"text": "rewritten by an offline run"}\n')
    assert git(repo, "diff-files", "--name-only") == ""  # git itself no longer sees it
    (found,) = assert_findings(repo, "eval-cache-dirty")
    assert found.path == rel


def test_touched_file_with_same_bytes_is_not_dirty(repo: Path) -> None:
    victim = next((repo / "eval-cache").rglob("contents.data"))
    victim.write_bytes(victim.read_bytes())
    os.utime(victim, (1_000_000_000, 1_000_000_000))
    assert git(repo, "diff-files", "--name-only")  # git's stat check does see it
    assert_no_findings(repo, "eval-cache-dirty")


def test_symlink_on_disk(repo: Path) -> None:
    os.symlink("../outside.json", repo / "eval-cache" / "link.json")
    (found,) = assert_findings(repo, "eval-cache-symlink")
    assert found.path == "eval-cache/link.json"


def test_committed_symlink(repo: Path) -> None:
    target = next((repo / "eval-cache").rglob("contents.data"))
    os.symlink(target.name, target.parent / "alias.data")
    commit_all(repo)
    assert "120000" in git(repo, "ls-files", "--stage", "eval-cache")
    alias = (target.parent / "alias.data").relative_to(repo).as_posix()
    assert [f.path for f in assert_findings(repo, "eval-cache-symlink")] == [alias]


# ---- portability ---------------------------------------------------------------------------


def test_path_too_long(repo: Path) -> None:
    put(repo, scenario="agent/" + "s" * 120, text="long")
    found = assert_findings(repo, "eval-cache-path-too-long")
    assert all(len(f.path) > 160 for f in found)
    assert "Windows allows 259 characters; a budget of 160 leaves 99" in found[0].message
    (repo / "cachelint.toml").write_text("max-path = 200\n")
    assert_no_findings(repo, "eval-cache-path-too-long")


def test_path_length_counts_utf16_code_units(repo: Path) -> None:
    # An emoji is one code point but two UTF-16 code units: Windows counts the latter.
    put(repo, scenario="agent/" + "\U0001f600" * 60, text="emoji")
    found = assert_findings(repo, "eval-cache-path-too-long")
    assert all(len(f.path) <= 160 for f in found)


def test_long_key(repo: Path) -> None:
    directory = write_meai(repo)
    (found,) = assert_findings(repo, "eval-cache-long-key")
    rel = directory.relative_to(repo).as_posix()
    assert found.path == rel
    longest = len(rel) + len("/contents.data")
    assert f"would be {longest - 80} characters instead of {longest}" in found.message
    assert facts_of(repo).entries  # the MEAI entry itself is readable


def test_a_key_prefix_longer_than_the_recorded_names_is_found(repo: Path) -> None:
    # Raised after recording, it makes replay look for names the tree does not have: every entry
    # verifies and every scenario misses.
    assert_no_findings(repo, "eval-cache-long-key")
    (repo / "cachelint.toml").write_text("key-prefix = 20\n")
    (found,) = assert_findings(repo, "eval-cache-long-key")
    assert found.message.startswith(
        "entry directory name is 16 characters, shorter than key-prefix 20 (and 1 more): replay "
        "looks for 20-character names and misses every such entry; set key-prefix = 16"
    )


@pytest.mark.parametrize(
    ("name", "bad"),
    [
        ("aux.json", "eval-cache/aux.json"),
        ("con.tar.gz", "eval-cache/con.tar.gz"),
        ("COM\u00b9", "eval-cache/COM\u00b9"),
        ("a:b", "eval-cache/a:b"),
        ("q?x", "eval-cache/q?x"),
        ("trail./x.json", "eval-cache/trail."),
        ("trail /x.json", "eval-cache/trail "),
        # ASCII names take _suspect's fast filters: each must still see what the regexes see.
        ("LpT1.txt", "eval-cache/LpT1.txt"),
        ("CONOUT$", "eval-cache/CONOUT$"),
        ("a\\b", "eval-cache/a\\b"),
        ("tab\tx", "eval-cache/tab\tx"),
        ("pipe|x", "eval-cache/pipe|x"),
    ],
)
def test_windows_name(repo: Path, name: str, bad: str) -> None:
    path = repo / "eval-cache" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{}")
    (found,) = assert_findings(repo, "eval-cache-windows-name")
    assert found.path == bad


@pytest.mark.parametrize("name", ["auxiliary.json", "common", "console.log", "x.con"])
def test_windows_name_lookalikes_pass(repo: Path, name: str) -> None:
    (repo / "eval-cache" / name).write_text("{}")
    assert_no_findings(repo, "eval-cache-windows-name")


def test_case_collision_in_directory_names(repo: Path) -> None:
    put(repo, scenario="Agent/x", text="upper")
    put(repo, scenario="agent/x", text="lower")
    (found,) = assert_findings(repo, "eval-cache-case-collision")
    assert found.path == "eval-cache/cache/agent"
    assert "'eval-cache/cache/Agent'" in found.message


def test_case_collision_after_nfc_and_casefold(repo: Path) -> None:
    root = repo / "eval-cache"
    (root / unicodedata.normalize("NFC", "caf\u00e9.json")).write_text("{}")
    (root / unicodedata.normalize("NFD", "CAF\u00c9.json")).write_text("{}")
    assert_findings(repo, "eval-cache-case-collision")


# ---- bytes stay exact ----------------------------------------------------------------------


def test_text_attr_missing_line(repo: Path) -> None:
    # Emptied, not deleted: git falls back to the index's copy of a deleted .gitattributes.
    (repo / ".gitattributes").write_text("*.png binary\n")
    (found,) = assert_findings(repo, "eval-cache-text-attr")
    assert found.path == "eval-cache"
    assert "unspecified for 4 files" in found.message
    assert "`eval-cache/** -text`" in found.message


def test_text_attr_diff_only_is_not_enough(repo: Path) -> None:
    (repo / ".gitattributes").write_text("eval-cache/** -diff\n")
    (found,) = assert_findings(repo, "eval-cache-text-attr")
    assert "unspecified" in found.message


def test_text_attr_binary_is_enough(repo: Path) -> None:
    (repo / ".gitattributes").write_text("eval-cache/** binary\n")
    assert_no_findings(repo, "eval-cache-text-attr")


def test_text_attr_subdirectory_override(repo: Path) -> None:
    scenario = next((repo / "eval-cache" / "cache").iterdir())
    (scenario / ".gitattributes").write_text("# normalise\n* text\n")
    found = assert_findings(repo, "eval-cache-text-attr")
    override = scenario.relative_to(repo).as_posix() + "/.gitattributes"
    (finding,) = [f for f in found if f.path == override]
    assert finding.line == 2
    assert "`* text` sets text=set" in finding.message
    assert ".gitattributes, " + override in finding.message


def test_text_attr_auto_from_root(repo: Path) -> None:
    (repo / ".gitattributes").write_text("eval-cache/** -text\n* text=auto\n")
    (found,) = assert_findings(repo, "eval-cache-text-attr")
    assert found.path == ".gitattributes" and found.line == 2
    assert "text=auto" in found.message


def test_text_attr_a_later_line_sets_text_on_some_files(repo: Path) -> None:
    """A line further down the same .gitattributes sets text on some of the files: the finding
    names that line and counts only those files."""
    (repo / ".gitattributes").write_text("eval-cache/** -text\neval-cache/**/contents.data text\n")
    (found,) = assert_findings(repo, "eval-cache-text-attr")
    assert found.path == ".gitattributes" and found.line == 2
    assert "text=set for 2 files" in found.message


def test_text_attr_of_a_file_the_index_lacks(repo: Path) -> None:
    """A file git does not track yet has its own effective attribute, as git would commit it."""
    (repo / ".gitattributes").write_text("eval-cache/** -text\neval-cache/notes.txt text\n")
    (repo / "eval-cache" / "notes.txt").write_text("new\n")
    found = assert_findings(repo, "eval-cache-text-attr")
    assert [(f.path, f.line) for f in found] == [(".gitattributes", 2)]
    assert "text=set for 1 file under eval-cache/ (e.g. eval-cache/notes.txt)" in found[0].message


# ---- an empty set is never green -----------------------------------------------------------


def test_empty_root_missing(git_repo: Path) -> None:
    (found,) = assert_findings(git_repo, "eval-cache-empty")
    assert found.path == "eval-cache" and "does not exist" in found.message


def test_empty_root_without_entries(git_repo: Path) -> None:
    (git_repo / "eval-cache").mkdir()
    (git_repo / "eval-cache" / "README.md").write_text("recorded answers go here\n")
    (found,) = assert_findings(git_repo, "eval-cache-empty")
    assert "no entries" in found.message


def test_every_configured_root_is_checked(repo: Path) -> None:
    (repo / "cachelint.toml").write_text('cache = ["eval-cache", "other-cache"]\n')
    (found,) = assert_findings(repo, "eval-cache-empty")
    assert found.path == "other-cache"


# ---- corrupt entries -----------------------------------------------------------------------


def _entry_dir(repo: Path) -> Path:
    return next((repo / "eval-cache").rglob("entry.json")).parent


def test_corrupt_invalid_json(repo: Path) -> None:
    directory = _entry_dir(repo)
    (directory / "entry.json").write_text("{not json")
    (found,) = assert_findings(repo, "eval-cache-corrupt")
    assert found.path == directory.relative_to(repo).as_posix()
    assert "not valid JSON" in found.message


def test_corrupt_contents_missing(repo: Path) -> None:
    directory = _entry_dir(repo)
    (directory / "contents.data").unlink()
    (found,) = assert_findings(repo, "eval-cache-corrupt")
    assert "contents.data is missing" in found.message


def test_corrupt_entry_json_missing(repo: Path) -> None:
    directory = _entry_dir(repo)
    (directory / "entry.json").unlink()
    (found,) = assert_findings(repo, "eval-cache-corrupt")
    assert "without entry.json" in found.message


def test_corrupt_key_not_matching_directory(repo: Path) -> None:
    directory = _entry_dir(repo)
    data = json.loads((directory / "entry.json").read_text())
    data["key"] = "f" * 64
    (directory / "entry.json").write_text(json.dumps(data))
    (found,) = assert_findings(repo, "eval-cache-corrupt")
    assert "does not start with its directory name" in found.message


def test_corrupt_leftover_temp_file(repo: Path) -> None:
    directory = _entry_dir(repo)
    (directory / f"{TEMP_PREFIX}abc123").write_text("half")
    (found,) = assert_findings(repo, "eval-cache-corrupt")
    assert found.path.endswith(f"/{TEMP_PREFIX}abc123") and "interrupted" in found.message


def test_corrupt_meai_entry(repo: Path) -> None:
    directory = write_meai(repo)
    (directory / "entry.json").write_text(json.dumps({"scenarioName": "Scenario"}))
    (found,) = assert_findings(repo, "eval-cache-corrupt")
    assert "iterationName" in found.message


def test_valid_meai_entry_is_not_corrupt(repo: Path) -> None:
    write_meai(repo)
    assert_no_findings(repo, "eval-cache-corrupt")


# ---- exclude -------------------------------------------------------------------------------


def test_exclude_drops_files_from_every_rule(repo: Path) -> None:
    (repo / "eval-cache" / "aux.json").write_text("{}")
    (repo / "cachelint.toml").write_text('exclude = ["eval-cache/aux.json"]\n')
    for code in ("eval-cache-windows-name", "eval-cache-untracked", "eval-cache-text-attr"):
        assert_no_findings(repo, code)
    assert facts_of(repo).excluded == 1


# ---- scale ---------------------------------------------------------------------------------


def test_a_few_thousand_entries(git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # fsync per file would make building the fixture, not the check, the slow part.
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    (git_repo / ".gitattributes").write_text("eval-cache/** -text\n")
    for i in range(3000):
        put(git_repo, scenario=f"agent{i % 7}/tenant{i % 3}/s{i % 50}", text=f"q{i}")
    commit_all(git_repo)
    put(git_repo, scenario="late", text="not added")
    facts = facts_of(git_repo)
    assert len(facts.entries) == 3001 and len(facts.index) == 6000
    found = [f for r in all_rules() if r.group == "tree" for f in r.check(facts)]
    assert {f.code for f in found} == {"eval-cache-untracked"} and len(found) == 2


def test_meai_entry_with_byte_order_mark_is_readable(repo: Path) -> None:
    directory = write_meai(repo)
    entry = directory / "entry.json"
    entry.write_bytes(b"\xef\xbb\xbf" + entry.read_bytes())
    assert_no_findings(repo, "eval-cache-corrupt")
    assert any(e.layout.value == "meai" for e in facts_of(repo).entries)


# ---- the shortcuts that keep a 100,000-entry check fast must not hide findings ---------------


def test_same_name_in_two_directories_is_no_collision(repo: Path) -> None:
    # "Support" and "support" fold alike but sit under different parents: the name shortcut
    # sees a candidate and the exact path check must clear it.
    put(repo, scenario="Support/x", text="upper")
    put(repo, scenario="other/support", text="lower")
    commit_all(repo)
    assert_no_findings(repo, "eval-cache-case-collision")


@pytest.mark.parametrize(("root", "bad"), [("evals/aux", "evals/aux"), ("con/eval-cache", "con")])
def test_windows_name_of_a_configured_root(git_repo: Path, root: str, bad: str) -> None:
    # The walk starts inside the root and never meets the root's own parts as names.
    put(git_repo, root=root)
    (git_repo / "cachelint.toml").write_text(f'cache = ["{root}"]\n')
    (found,) = assert_findings(git_repo, "eval-cache-windows-name")
    assert found.path == bad


def test_windows_name_reported_at_every_place_it_occurs(repo: Path) -> None:
    for parent in ("a", "b/c"):
        path = repo / "eval-cache" / parent / "aux.json"
        path.parent.mkdir(parents=True)
        path.write_text("{}")
    found = assert_findings(repo, "eval-cache-windows-name")
    assert [f.path for f in found] == ["eval-cache/a/aux.json", "eval-cache/b/c/aux.json"]


def test_windows_name_of_a_deleted_committed_file(repo: Path) -> None:
    # Only in the index: the walk never saw the name, the index must still bring it in.
    path = repo / "eval-cache" / "con.json"
    path.write_text("{}")
    commit_all(repo)
    path.unlink()
    (found,) = assert_findings(repo, "eval-cache-windows-name")
    assert found.path == "eval-cache/con.json"


def test_worst_path_is_the_first_of_equally_long_paths(repo: Path) -> None:
    directory = repo / "eval-cache" / ("z" * 100)
    directory.mkdir()
    for name in ("b.json", "a.json", "c.json"):
        (directory / name).write_text("{}")
    worst, length = facts_of(repo).worst_path
    assert worst == f"eval-cache/{'z' * 100}/a.json"
    assert length == len(worst)


def test_worst_path_counts_utf16_and_breaks_ties_across_ascii_and_wide_paths(repo: Path) -> None:
    emoji = "\U0001f600" * 30  # 30 code points, 60 UTF-16 units
    (repo / "eval-cache" / emoji).mkdir()
    (repo / "eval-cache" / emoji / "b.json").write_text("{}")
    assert facts_of(repo).worst_path == (f"eval-cache/{emoji}/b.json", 78)
    ascii_dir = repo / "eval-cache" / ("z" * 60)  # as long in UTF-16, sorts before the emoji
    ascii_dir.mkdir()
    (ascii_dir / "b.json").write_text("{}")
    assert facts_of(repo).worst_path == (f"eval-cache/{'z' * 60}/b.json", 78)


def test_listings_differ_in_the_paths_added_removed_or_recorded_anew(repo: Path) -> None:
    """A real index restaged, its mode changed, an entry added; and the other way round, removed:
    the paths named are exactly those whose records differ."""
    put(repo, scenario="agent/tenant/other", text="three")
    commit_all(repo)
    before = stage_listing(repo)
    assert changed_since(before, before) == set()
    first = _entry_dir(repo)
    rel = first.relative_to(repo).as_posix()
    (first / "contents.data").write_bytes(b"rewritten")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    assert changed_since(before, stage_listing(repo)) == {f"{rel}/contents.data"}
    subprocess.run(["git", "update-index", "--chmod=+x", f"{rel}/entry.json"], cwd=repo, check=True)
    both = {f"{rel}/contents.data", f"{rel}/entry.json"}
    assert changed_since(before, stage_listing(repo)) == both
    added = put(repo, scenario="agent/tenant/added", text="four").relative_to(repo).as_posix()
    subprocess.run(["git", "add", "--", added], cwd=repo, check=True)
    new = {f"{added}/contents.data", f"{added}/entry.json"}
    assert changed_since(before, stage_listing(repo)) == both | new
    assert changed_since(stage_listing(repo), before) == both | new  # removed, the other way


def test_listings_compared_from_both_ends_name_what_a_whole_comparison_names() -> None:
    """Only the records between the two listings' common start and end are split: whatever was
    changed, added or removed, and wherever, the paths named are those whose records differ."""
    import random

    def whole(earlier: bytes, now: bytes) -> set[str]:
        differing = set(earlier.split(b"\0")) ^ set(now.split(b"\0"))
        return {r.partition(b"\t")[2].decode() for r in differing if r}

    records = [
        f"H 100644 {n:040x} 0\tr/cache/a/{n:05d}/{name}".encode()
        for n in range(300)
        for name in ("contents.data", "entry.json")
    ]
    listing = b"".join(r + b"\0" for r in records)
    rng = random.Random(13)
    for trial in range(300):
        edited = records[: rng.randrange(1, len(records) + 1)] if trial % 4 == 0 else records[:]
        for _ in range(rng.randrange(4)):
            i = rng.randrange(len(edited))
            change = rng.randrange(4)
            if change == 0:  # restaged: another object id
                edited[i] = edited[i][:9] + f"{rng.getrandbits(160):040x}".encode() + edited[i][49:]
            elif change == 1:  # a path added
                edited.insert(i, edited[i].replace(b"\t", b"\tnew/", 1))
            elif change == 2 and len(edited) > 1:
                del edited[i]
            else:  # marked skip-worktree
                edited[i] = b"S" + edited[i][1:]
        now = b"".join(r + b"\0" for r in edited)
        assert changed_since(listing, now) == whole(listing, now), trial
        assert changed_since(now, listing) == whole(now, listing), trial


def test_the_usual_index_parses_like_the_general_case(repo: Path) -> None:
    """Every record a regular, unmarked file takes the sliced fast path; one executable file
    sends the same listing through the record-by-record loop. Both must agree."""
    put(repo, scenario="agent/tenant/other", text="three")
    commit_all(repo)
    out = subprocess.run(
        ["git", "ls-files", "-z", "-v", "--stage", "--", "eval-cache"],
        cwd=repo,
        capture_output=True,
        check=True,
    ).stdout
    general = out.replace(b"H 100644 ", b"H 100755 ", 1)
    assert general != out
    fast_index, fast_flagged = parse_stage(out)
    slow_index, slow_flagged = parse_stage(general)
    assert fast_index.keys() == slow_index.keys() and len(fast_index) == 6
    assert set(fast_index.values()) == {IndexEntry("100644", 0)}
    assert fast_flagged == slow_flagged == {}
    walked = [p.decode() for p in out.split(b"\0")[:-1:2]]  # three of the paths, as the walk
    walked = [p.partition("\t")[2] for p in walked]
    shared, _ = parse_stage(out, same_as=walked)
    assert shared == parse_stage(out)[0]
    assert {id(p) for p in shared} & {id(p) for p in walked} == {id(p) for p in walked}


def test_clean_tree_skips_the_untracked_listings_but_finds_a_new_file(repo: Path) -> None:
    assert facts_of(repo).untracked == set()
    put(repo, text="three")
    assert len(facts_of(repo).untracked) == 2  # entry.json and contents.data of the new entry


def test_leftover_temp_files_outside_entry_directories(repo: Path) -> None:
    stray = repo / "eval-cache" / f"{TEMP_PREFIX}stamp"
    stray.write_text("{}")
    twin = _entry_dir(repo) / f"{TEMP_PREFIX}x"
    twin.write_text("{}")
    found = assert_findings(repo, "eval-cache-corrupt")
    assert [f.path for f in found] == sorted(p.relative_to(repo).as_posix() for p in (stray, twin))


def test_stamp_states_and_pins_are_computed_once_per_check(repo: Path) -> None:
    from cachelint.stamp import facts_pins, facts_stamps

    facts = facts_of(repo)
    assert facts_stamps(facts) is facts_stamps(facts)
    assert facts_pins(facts) is facts_pins(facts)
