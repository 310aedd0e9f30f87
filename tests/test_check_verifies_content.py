"""check verifies every entry's content on every run, and the stamp's seal makes an entry that is
gone, added or changed visible. Every tree starts valid (a copy of the bundled cache, recorded
through cachelint's own write path, or a tree written as MEAI writes it), is broken the way real
trees break, committed, then checked three ways: from a fresh clone (no entry cache, what a CI
canary runs), from a working copy with a warm entry cache, and with `--no-cache`."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import commit_all, git, run_cachelint
from tests.trees import MEAI_KEY, PROPS, copy_bundled, entry_dirs, write_meai


def check(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cachelint(repo, "check", *args)


@pytest.fixture
def native(git_repo: Path) -> Path:
    """A copy of the bundled cache, pinned, stamped (sealed) and committed: check is clean."""
    copy_bundled(git_repo)
    clean = check(git_repo)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    return git_repo


@pytest.fixture
def meai(git_repo: Path) -> Path:
    (git_repo / ".gitattributes").write_text("eval-cache/** -text\n")
    (git_repo / "Directory.Packages.props").write_text(PROPS)
    (git_repo / "cachelint.toml").write_text(
        'layout = "meai"\nkey-prefix = 96\npackages = ["Microsoft.Extensions.AI.Evaluation"]\n'
    )
    write_meai(git_repo, "Support.Refund", "1", MEAI_KEY)
    write_meai(git_repo, "Support.Refund", "2", MEAI_KEY.replace("6B", "7C"))
    stamped = run_cachelint(git_repo, "stamp")
    assert stamped.returncode == 0, stamped.stderr
    commit_all(git_repo, "record")
    return git_repo


MEAI_RULES = ("--select", "eval-cache-corrupt,eval-cache-unstamped")


def assert_caught(repo: Path, code: str, words: str, *args: str) -> None:
    """Exit 1 with a `code` finding whose line holds `words`: from a fresh clone, with a warm
    entry cache (warmed before the breakage was committed, as a hook's earlier run leaves it),
    and with --no-cache."""
    clone = repo.parent / "clone"
    git(repo.parent, "clone", "-q", str(repo), str(clone))
    for where, extra in ((clone, ()), (repo, ()), (repo, ("--no-cache",))):
        result = check(where, *args, *extra)
        assert result.returncode == 1, (where, extra, result.stdout + result.stderr)
        lines = [line for line in result.stdout.splitlines() if f": {code}:" in line]
        assert any(words in line for line in lines), (where, extra, result.stdout)
    shutil.rmtree(clone)


def break_committed(repo: Path, breakage: Callable[[Path], None], *args: str) -> None:
    check(repo, *args)  # warms the entry cache on the intact tree
    breakage(repo)
    commit_all(repo, "broken")


# ---- native entries -----------------------------------------------------------------------------


def test_a_deleted_entry_directory_committed_is_unstamped(native: Path) -> None:
    gone = entry_dirs(native)[0]
    count = len(list((native / "eval-cache").rglob("entry.json")))
    check(native)
    git(native, "rm", "-r", "-q", str(gone.relative_to(native)))
    commit_all(native, "drop an entry")
    rel = gone.relative_to(native).as_posix()
    words = (
        f"{count - 1} entries now, {count} when stamped; changed since the stamp was committed: "
        f"{rel}"
    )
    assert_caught(native, "eval-cache-unstamped", words)


def test_every_rule_runs_on_the_facts_alone_with_git_gone(
    native: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rules are functions of the facts: what eval-cache-unstamped names from git's history (and
    whatever else a rule needs of git) is gathered by collect, so with git gone once the facts
    are in, every rule still runs and the entry is still named."""
    from cachelint.collect import collect
    from cachelint.config import load
    from cachelint.rules import all_rules
    from tests.helpers import NOW

    gone = entry_dirs(native)[0]
    git(native, "rm", "-r", "-q", str(gone.relative_to(native)))
    commit_all(native, "drop an entry")
    facts = collect(load(native), now=NOW)
    monkeypatch.setenv("PATH", "")
    found = [f for rule in all_rules() for f in rule.check(facts)]
    unstamped = [f for f in found if f.code == "eval-cache-unstamped"]
    assert len(unstamped) == 1
    assert gone.relative_to(native).as_posix() in unstamped[0].message


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda data: b'{"choices": []}\n', id="overwritten"),
        pytest.param(lambda data: data[: len(data) // 2], id="torn"),
        pytest.param(lambda data: data.replace(b"refund", b"REFUND", 1), id="edited"),
        pytest.param(lambda data: b"<<<<<<< HEAD\n" + data, id="merge-conflict"),
    ],
)
def test_contents_that_no_longer_hash_to_the_recorded_digest_are_corrupt(
    native: Path, damage: Callable[[bytes], bytes]
) -> None:
    contents = entry_dirs(native)[0] / "contents.data"

    def overwrite(repo: Path) -> None:
        contents.write_bytes(damage(contents.read_bytes()))

    break_committed(native, overwrite)
    assert_caught(native, "eval-cache-corrupt", "does not match the blake3 digest recorded")


def edit_entry(path: Path, change: Callable[[dict[str, object]], None]) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def test_a_scenario_that_no_longer_matches_its_directory_is_corrupt(native: Path) -> None:
    entry_json = entry_dirs(native)[0] / "entry.json"
    break_committed(native, lambda _: edit_entry(entry_json, lambda d: d.update(scenario="x/y/z")))
    assert_caught(native, "eval-cache-corrupt", "scenario 'x/y/z' is not the entry's directory")


def test_a_key_that_is_not_the_hash_of_the_stored_request_is_corrupt(native: Path) -> None:
    entry_json = entry_dirs(native)[0] / "entry.json"

    def reword(data: dict[str, object]) -> None:
        request = data["request"]
        assert isinstance(request, dict)
        request["messages"][-1]["content"] += " (edited)"

    break_committed(native, lambda _: edit_entry(entry_json, reword))
    assert_caught(native, "eval-cache-corrupt", "is not the hash of the request stored beside it")


def test_a_working_tree_change_says_to_restore_it_from_the_commit(native: Path) -> None:
    contents = entry_dirs(native)[0] / "contents.data"
    check(native)
    contents.write_bytes(b"{}\n")
    result = check(native)
    assert result.returncode == 1
    rel = contents.parent.relative_to(native).as_posix()
    both = f"{rel}/entry.json {rel}/contents.data"
    assert f"restore it with `git checkout -- {both}`" in result.stdout


def test_a_committed_corruption_says_to_re_record_the_scenario(native: Path) -> None:
    contents = entry_dirs(native)[0] / "contents.data"
    break_committed(native, lambda _: contents.write_bytes(b"{}\n"))
    result = check(native)
    assert "`cachelint run --scenario support/acme/refund --refresh-cache`" in result.stdout


def test_an_unsealed_stamp_is_a_warning_to_re_stamp(native: Path) -> None:
    stamp = native / "eval-cache" / ".eval-cache-stamp.json"
    data = json.loads(stamp.read_text())
    del data["entries"], data["seal"]
    stamp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    commit_all(native, "old stamp")
    result = check(native)
    assert result.returncode == 0, result.stdout
    assert "eval-cache-unstamped: warning: this stamp has no seal" in result.stdout
    assert check(native, "--strict").returncode == 1


def test_a_re_record_then_stamp_is_clean_again(native: Path) -> None:
    git(native, "rm", "-r", "-q", str(entry_dirs(native)[0].relative_to(native)))
    assert check(native).returncode == 1
    assert run_cachelint(native, "stamp").returncode == 0
    commit_all(native, "re-record")
    result = check(native)
    assert result.returncode == 0, result.stdout


def test_a_stamp_refuses_to_seal_a_corrupt_tree(native: Path) -> None:
    (entry_dirs(native)[0] / "contents.data").write_bytes(b"{}\n")
    result = run_cachelint(native, "stamp")
    assert result.returncode == 2
    assert "cannot seal a tree with 1 corrupt entry" in result.stderr


# ---- MEAI entries -------------------------------------------------------------------------------


def test_a_tree_written_as_meai_writes_it_is_clean(meai: Path) -> None:
    result = check(meai, *MEAI_RULES)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 entries" in result.stdout


@pytest.mark.parametrize(
    ("contents", "words"),
    [
        pytest.param(b"", "contents.data is empty", id="empty"),
        pytest.param(b'{\n  "messages": [\n', "contents.data is not valid JSON", id="truncated"),
        pytest.param(
            b"<<<<<<< HEAD\n{}\n=======\n{}\n>>>>>>> b\n", "merge-conflict", id="conflict"
        ),
        pytest.param(b"[1, 2]", "not a JSON object", id="not-an-object"),
    ],
)
def test_meai_contents_that_meai_cannot_replay_are_corrupt(
    meai: Path, contents: bytes, words: str
) -> None:
    target = meai / "eval-cache" / "cache" / "Support.Refund" / "1" / MEAI_KEY / "contents.data"
    break_committed(meai, lambda _: target.write_bytes(contents), *MEAI_RULES)
    assert_caught(meai, "eval-cache-corrupt", words, *MEAI_RULES)


def test_meai_entry_under_the_wrong_scenario_or_iteration_is_reported(meai: Path) -> None:
    """Names that disagree with the path: a warning that says both what an edit of the names
    and what a move means (issue 38); the moved entry also unseals the stamp."""

    def move(repo: Path) -> None:
        git(repo, "mv", "eval-cache/cache/Support.Refund/2", "eval-cache/cache/Support.Refund/3")

    rules = ("--select", "eval-cache-corrupt,eval-cache-unstamped,eval-cache-meai-shape")
    break_committed(meai, move, *rules)
    assert_caught(meai, "eval-cache-meai-shape", "iterationName '2'", *rules)


def test_meai_entry_one_level_too_shallow_is_corrupt(meai: Path) -> None:
    def shallow(repo: Path) -> None:
        write_meai(repo, "Support.Refund", "1", MEAI_KEY[::-1], at="Support.Refund")

    break_committed(meai, shallow, *MEAI_RULES)
    assert_caught(meai, "eval-cache-corrupt", "MEAI reads entries only at", *MEAI_RULES)
