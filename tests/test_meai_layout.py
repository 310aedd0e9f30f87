"""MEAI trees, second pass (issue 38): the layout told from the tree's shape, never from one file;
the entry checks MEAI's own reads imply; and advice a .NET developer can follow. Every tree is
written byte for byte as Microsoft.Extensions.AI.Evaluation 10.9.0 writes it (tests/meai_tree.py),
with LF and with CRLF, and checked through the real CLI in a real git repository."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from cachelint.config import Layout, load
from cachelint.meai import guess_layout, is_meai_root
from tests.conftest import commit_all, git, run_cachelint
from tests.meai_tree import meai_key, stj_indented, write_entry
from tests.test_meai import ENV, STORAGE, meai_repo, results_writer
from tests.trees import copy_bundled

NEWLINES = pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
CAPITALS_1 = f"{STORAGE}/cache/Geography.Capitals/1"


def findings(repo: Path, *args: str) -> list[dict[str, str]]:
    proc = run_cachelint(repo, "check", "--format", "json", *args, env=ENV)
    assert proc.returncode in (0, 1), proc.stderr
    found: list[dict[str, str]] = json.loads(proc.stdout)["findings"]
    return found


def codes(repo: Path) -> list[tuple[str, str]]:
    return [(f["code"], f["path"]) for f in findings(repo)]


def first_entry(repo: Path) -> Path:
    return sorted((repo / STORAGE / "cache").glob("*/*/*"))[0]


def stamped(repo: Path) -> Path:
    proc = run_cachelint(repo, "stamp", env=ENV)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    commit_all(repo, "stamp")
    return repo


# ---- one torn file is a finding about that entry only --------------------------------------


@NEWLINES
@pytest.mark.parametrize(
    "torn",
    [b"", b'{\n  "scenarioName": "Geo', None],
    ids=["empty", "half-written", "missing"],
)
def test_a_torn_first_entry_is_a_finding_about_that_entry_only(
    git_repo: Path, tmp_path: Path, newline: str, torn: bytes | None
) -> None:
    """`dotnet test` interrupted while MEAI wrote the first entry (entry.json first, then
    contents.data, not atomically): with `layout = "auto"` the root stays MEAI's."""
    repo = stamped(meai_repo(git_repo, newline=newline, layout=None))
    entry = first_entry(repo)
    assert entry.relative_to(repo).as_posix().startswith(CAPITALS_1)
    if torn is None:
        (entry / "entry.json").unlink()
    else:
        (entry / "entry.json").write_bytes(torn)
    commit_all(repo, "torn")
    assert is_meai_root(load(repo), STORAGE)

    found = codes(repo)
    where = entry.relative_to(repo).as_posix()
    # The entry, and the stamp whose seal it no longer matches; never unpinned, stale-pin
    # "vs pin (none)" or results linted as cache files.
    assert sorted(found) == [
        ("eval-cache-corrupt", where),
        ("eval-cache-results-in-root", f"{STORAGE}/results"),
        ("eval-cache-unstamped", f"{STORAGE}/.eval-cache-stamp.json"),
    ], found
    message = next(f["message"] for f in findings(repo) if f["code"] == "eval-cache-corrupt")
    assert "dotnet test" in message and "cachelint run" not in message, message
    guarded = run_cachelint(repo, "guard", "--", *results_writer(tmp_path, newline), env=ENV)
    assert guarded.returncode == 0, guarded.stderr


@NEWLINES
def test_guess_layout_reads_names_depth_results_and_several_entries(
    git_repo: Path, newline: str
) -> None:
    repo = meai_repo(git_repo, newline=newline, layout=None, results=False)
    assert guess_layout(str(repo / STORAGE)) == (Layout.MEAI, True)
    # Every entry.json emptied: the uppercase 96-character names still say MEAI.
    for entry in (repo / STORAGE / "cache").rglob("entry.json"):
        entry.write_bytes(b"")
    assert guess_layout(str(repo / STORAGE)) == (Layout.MEAI, True)


def test_guess_layout_keeps_a_native_tree_native(git_repo: Path) -> None:
    repo = copy_bundled(git_repo)
    first = sorted((repo / "eval-cache" / "cache").rglob("entry.json"))[0]
    first.write_bytes(b"")  # one torn native entry decides nothing either
    assert guess_layout(str(repo / "eval-cache")) == (Layout.CACHELINT, True)
    assert guess_layout(str(repo / "nowhere")) == (Layout.CACHELINT, False)


def test_an_auto_root_that_cannot_be_told_says_so(git_repo: Path) -> None:
    """Neither names nor contents nor results speak: the check asks for an explicit layout."""
    entry = git_repo / STORAGE / "cache" / "Scenario" / "1" / "draft"
    entry.mkdir(parents=True)
    (entry / "entry.json").write_bytes(b"")
    (entry / "contents.data").write_bytes(b"{}")
    commit_all(git_repo)
    assert guess_layout(str(git_repo / STORAGE)) == (Layout.CACHELINT, False)
    found = findings(git_repo)
    unsure = [f for f in found if f["code"] == "eval-cache-meai-shape" and f["path"] == STORAGE]
    assert unsure and 'layout = "meai"' in unsure[0]["message"], found
    (git_repo / "cachelint.toml").write_text('layout = "meai"\n')
    assert not [f for f in findings(git_repo) if f["code"] == "eval-cache-meai-shape"]


# ---- entry checks MEAI's own reads imply -----------------------------------------------------


@NEWLINES
def test_a_byte_order_mark_in_contents_data_is_corrupt(git_repo: Path, newline: str) -> None:
    repo = meai_repo(git_repo, newline=newline)
    contents = first_entry(repo) / "contents.data"
    contents.write_bytes(b"\xef\xbb\xbf" + contents.read_bytes())
    commit_all(repo)
    found = [f for f in findings(repo) if f["code"] == "eval-cache-corrupt"]
    assert [f["path"] for f in found] == [first_entry(repo).relative_to(repo).as_posix()]
    assert "byte-order mark" in found[0]["message"]


@NEWLINES
def test_names_edited_in_entry_json_are_a_warning_not_corrupt(git_repo: Path, newline: str) -> None:
    """MEAI finds an entry by its path and never reads scenarioName/iterationName back."""
    repo = meai_repo(git_repo, newline=newline)
    entry = first_entry(repo) / "entry.json"
    data = json.loads(entry.read_bytes())
    entry.write_bytes(stj_indented({**data, "scenarioName": "Géo <Capitals>"}, newline).encode())
    assert b"\\u00E9" in entry.read_bytes() and b"\\u003C" in entry.read_bytes()
    stamped(repo)
    found = findings(repo)
    assert not [f for f in found if f["code"] == "eval-cache-corrupt"], found
    (shape,) = [f for f in found if f["code"] == "eval-cache-meai-shape"]
    assert shape["severity"] == "warning" and "never reads these names back" in shape["message"]
    assert "if the entry was moved here, MEAI never finds it" in shape["message"]
    checked = run_cachelint(repo, "check", env=ENV)
    assert checked.returncode == 0, checked.stdout


def test_a_stray_directory_at_key_depth_is_reported(git_repo: Path) -> None:
    repo = meai_repo(git_repo)
    stray = repo / CAPITALS_1 / "backup"
    stray.mkdir()
    (stray / "notes.txt").write_text("old answers\n")
    (repo / STORAGE / "cache" / "README.md").write_text("cache\n")
    commit_all(repo)
    shapes = {f["path"] for f in findings(repo) if f["code"] == "eval-cache-meai-shape"}
    assert shapes == {f"{CAPITALS_1}/backup", f"{STORAGE}/cache/README.md"}


@pytest.mark.parametrize(
    ("name", "why"),
    [
        (meai_key("x").lower(), "not a key MEAI writes"),
        (meai_key("x")[:95], "where MEAI writes 96, and entry.json carries no full key"),
        (meai_key("x")[:16], "where MEAI writes 96, and entry.json carries no full key"),
    ],
    ids=["lowercase", "95-characters", "short-path-without-key"],
)
def test_key_directories_meai_cannot_write_are_corrupt(git_repo: Path, name: str, why: str) -> None:
    repo = meai_repo(git_repo)
    write_entry(repo / "eval-cache", "Geography.Rivers", "1", key=name)
    commit_all(repo)
    found = [f for f in findings(repo) if f["code"] == "eval-cache-corrupt"]
    assert [f["path"] for f in found] == [f"{STORAGE}/cache/Geography.Rivers/1/{name}"], found
    assert why in found[0]["message"]


def _short_path_entry(repo: Path, key: str, prefix: int) -> Path:
    directory = write_entry(repo / STORAGE, "Geography.Rivers", "1", key=key[:prefix])
    entry = directory / "entry.json"
    data = json.loads(entry.read_bytes())
    entry.write_bytes(stj_indented({**data, "key": key}).encode())
    return directory


def test_a_short_path_entry_with_its_full_key_passes_at_the_configured_prefix(
    git_repo: Path,
) -> None:
    repo = meai_repo(git_repo, key_prefix=16)
    key = meai_key("Geography.Rivers", "1", "The Seine.")
    _short_path_entry(repo, key, 16)
    commit_all(repo)
    corrupt = [f for f in findings(repo) if f["code"] == "eval-cache-corrupt"]
    assert corrupt == []
    # A prefix the config does not name, or a key that does not start with the directory.
    _short_path_entry(repo, key, 20)
    commit_all(repo)
    bad = _short_path_entry(repo, meai_key("other"), 24)
    bad.rename(bad.with_name(key[:24]))
    commit_all(repo)
    corrupt = {f["path"]: f["message"] for f in findings(repo) if f["code"] == "eval-cache-corrupt"}
    rivers = f"{STORAGE}/cache/Geography.Rivers/1"
    assert set(corrupt) == {f"{rivers}/{key[:20]}", f"{rivers}/{key[:24]}"}
    assert "key-prefix is 16" in corrupt[f"{rivers}/{key[:20]}"]
    assert "starting with its directory name" in corrupt[f"{rivers}/{key[:24]}"]


# ---- advice that works when followed ---------------------------------------------------------


def test_results_advice_anchors_the_storage_paths_at_the_repository(git_repo: Path) -> None:
    repo = meai_repo(git_repo)
    (message,) = [f["message"] for f in findings(repo) if f["code"] == "eval-cache-results-in-root"]
    assert 'Path.Combine(repoRoot, "eval-results")' in message
    assert 'Path.Combine(repoRoot, "eval-cache")' in message
    assert 'DiskBasedResultStore("eval-results")' not in message
    assert "bin/" in message and ".git" in message and "EvalStorage.cs" in message


def test_an_empty_meai_root_is_told_the_dotnet_commands(git_repo: Path) -> None:
    repo = meai_repo(git_repo)
    git(repo, "rm", "-r", "-q", "--", f"{STORAGE}/cache")
    commit_all(repo)
    (empty,) = [f["message"] for f in findings(repo) if f["code"] == "eval-cache-empty"]
    assert "dotnet test" in empty and "cachelint run" not in empty
    assert f"git add {STORAGE}" in empty and "bin/" in empty


def test_a_stale_pin_of_a_meai_root_says_delete_then_record(git_repo: Path) -> None:
    repo = stamped(meai_repo(git_repo))
    props = repo / "Directory.Packages.props"
    bumped = 'Reporting" Version="10.11.0"'
    props.write_text(props.read_text().replace('Reporting" Version="10.9.0"', bumped))
    commit_all(repo)
    (stale,) = [f["message"] for f in findings(repo) if f["code"] == "eval-cache-stale-pin"]
    assert "recorded 10.9.0 vs pin 10.11.0" in stale
    assert f"git rm -r -q -- {STORAGE}/cache" in stale and "never rewrites" in stale


def _guard(repo: Path, tmp_path: Path, program: str) -> str:
    script = tmp_path / "meai_run.py"
    script.write_text(program)
    proc = run_cachelint(repo, "guard", "--", sys.executable, str(script), env=ENV)
    assert proc.returncode == 1, proc.stderr
    return proc.stderr


@NEWLINES
def test_guard_says_an_added_entry_is_a_miss_and_a_removed_one_expired(
    git_repo: Path, tmp_path: Path, newline: str
) -> None:
    repo = meai_repo(git_repo, newline=newline, layout=None)
    removed = first_entry(repo).relative_to(repo).as_posix()
    added = write_entry(tmp_path / "new", "Geography.Capitals", "3", newline=newline)
    target = f"{STORAGE}/cache/Geography.Capitals/3/{added.name}"
    program = (
        "import pathlib, shutil\n"
        f"shutil.rmtree({removed!r})\n"
        f"shutil.copytree({str(added)!r}, {target!r})\n"
    )
    lines = _guard(repo, tmp_path, program).splitlines()
    miss = [line for line in lines if line.startswith(f"{target}/entry.json")]
    gone = [line for line in lines if line.startswith(f"{removed}/entry.json")]
    assert miss and "cache miss" in miss[0] and "added by" in miss[0], lines
    assert gone and "expired" in gone[0] and "removed by" in gone[0], lines
