"""The green record and `cachelint watch`, against real git repositories."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from cachelint.commands.watch import watch
from cachelint.errors import CachelintError
from cachelint.green import content_hash
from tests.conftest import commit_all, git
from tests.helpers import BASIC, DEAD, do_run, make_gated_repo, record, record_green, write_repo

NOW = datetime(2026, 1, 31, 12, 0, tzinfo=timezone.utc)


def run_watch(repo: Path, *, staged: bool = False, base: str | None = None) -> tuple[int, str]:
    out = io.StringIO()
    rc = watch(repo, config_path=None, staged=staged, base=base, out=out)
    return rc, out.getvalue()


def test_record_pins_watched_files_datasets_cache_and_the_run(git_repo: Path) -> None:
    repo = make_gated_repo(git_repo)
    data = json.loads((repo / ".eval-green.json").read_text())
    assert data["format"] == 1
    assert data["recorded"] == "2026-01-31T12:00:00Z"
    assert data["run"] == {
        "execution": "e1",
        "mode": "replay",
        "scenarios": ["agent/tenant/s1"],
        "count": 1,
    }
    assert data["watched"] == {
        "models.json": content_hash(b'{"model": "gpt-4o-mini"}\n'),
        "prompts/system.txt": content_hash(b"You are terse.\n"),
    }
    assert list(data["datasets"]) == ["eval-datasets/agent/tenant/s1.json"]
    assert set(data["cache"]) == {"eval-cache"}
    # Deterministic: the same tree and clock give the same bytes.
    before = (repo / ".eval-green.json").read_bytes()
    record_green(repo)
    assert (repo / ".eval-green.json").read_bytes() == before


def test_record_skips_ignored_files_and_follows_cache_content(git_repo: Path) -> None:
    repo = make_gated_repo(git_repo)
    (repo / ".gitignore").write_text("prompts/*.bak\n")
    (repo / "prompts" / "system.txt.bak").write_text("old\n")
    record_green(repo)
    data = json.loads((repo / ".eval-green.json").read_text())
    assert "prompts/system.txt.bak" not in data["watched"]
    digest = data["cache"]["eval-cache"]
    entry = next((repo / "eval-cache").rglob("contents.data"))
    entry.write_text('"changed"\n')
    record_green(repo)
    assert json.loads((repo / ".eval-green.json").read_text())["cache"]["eval-cache"] != digest


def test_a_run_s_record_pins_the_datasets_as_it_loaded_them_and_watch_agrees(
    git_repo: Path,
) -> None:
    # The run hashes each dataset file from the bytes it parsed (not a second read); those hashes
    # must be the ones `watch` takes from the working tree, CRLF files included.
    write_repo(git_repo, DEAD, BASIC)
    crlf = sorted((git_repo / "eval-datasets").rglob("*.json"))[0]
    crlf.write_bytes(crlf.read_bytes().replace(b"\n", b"\r\n"))
    assert record(git_repo)[0].rc == 0
    (git_repo / ".gitattributes").write_text("eval-cache/** -text\n")
    commit_all(git_repo, "recorded")
    replay = do_run(git_repo)
    assert replay.rc == 0, replay.out + replay.err
    data = json.loads((git_repo / ".eval-green.json").read_text())
    path = crlf.relative_to(git_repo).as_posix()
    assert data["datasets"][path] == content_hash(crlf.read_bytes().replace(b"\r\n", b"\n"))
    assert len(data["datasets"]) == len(list((git_repo / "eval-datasets").rglob("*.json")))
    rc, said = run_watch(git_repo)
    assert rc == 0 and "matches" in said, said


def test_crlf_and_lf_hash_alike() -> None:
    assert content_hash(b"a\r\nb\r\n") == content_hash(b"a\nb\n")
    assert content_hash(b"a\nb\n") != content_hash(b"a\nc\n")


def test_staged_prompt_change_without_green_run_fails_naming_the_path(git_repo: Path) -> None:
    repo = make_gated_repo(git_repo)
    (repo / "prompts" / "system.txt").write_text("You are verbose.\n")
    (repo / "prompts" / "new.txt").write_text("extra\n")
    git(repo, "add", "prompts")
    rc, out = run_watch(repo, staged=True)
    assert rc == 1
    assert (
        "prompts/system.txt: eval-green-stale: watched file changed since the last green run" in out
    )
    assert "prompts/new.txt: eval-green-stale: watched file new since the last green run" in out
    assert "`cachelint run`, then `git add -- .eval-green.json`" in out


def test_staged_compares_the_index_not_the_working_tree(git_repo: Path) -> None:
    repo = make_gated_repo(git_repo)
    (repo / "prompts" / "system.txt").write_text("You are verbose.\n")
    git(repo, "add", "prompts")
    # The green run happened, but its record is not staged yet: still blocked, with a hint.
    record_green(repo)
    rc, out = run_watch(repo, staged=True)
    assert rc == 1
    assert "already matches: only `git add -- .eval-green.json` is missing" in out
    git(repo, "add", ".eval-green.json")
    assert run_watch(repo, staged=True) == (0, "")
    # An unstaged edit after staging does not count: the commit holds the staged bytes.
    (repo / "prompts" / "system.txt").write_text("unstaged edit\n")
    assert run_watch(repo, staged=True) == (0, "")


def test_staged_removed_watched_file_and_dataset_change_fail(git_repo: Path) -> None:
    repo = make_gated_repo(git_repo)
    git(repo, "rm", "-q", "models.json")
    rc, out = run_watch(repo, staged=True)
    assert rc == 1
    assert "models.json: eval-green-stale: watched file removed since" in out
    git(repo, "reset", "-q", "--hard")
    dataset = repo / "eval-datasets" / "agent" / "tenant" / "s1.json"
    dataset.write_text('{"input": "hello"}\n')
    git(repo, "add", "eval-datasets")
    rc, out = run_watch(repo, staged=True)
    assert rc == 1
    assert "eval-datasets/agent/tenant/s1.json: eval-green-stale: dataset file changed" in out


def test_staged_change_outside_the_globs_passes(git_repo: Path) -> None:
    repo = make_gated_repo(git_repo)
    (repo / "README.md").write_text("more docs\n")
    (repo / "prompts" / "system.txt").write_text("unstaged, not part of the commit\n")
    git(repo, "add", "README.md")
    assert run_watch(repo, staged=True) == (0, "")


def test_staged_without_a_record_in_the_index(git_repo: Path) -> None:
    repo = make_gated_repo(git_repo)
    git(repo, "rm", "-q", "--cached", ".eval-green.json")
    (repo / "prompts" / "system.txt").write_text("new\n")
    git(repo, "add", "prompts")
    rc, out = run_watch(repo, staged=True)
    assert rc == 1
    assert out.startswith(".eval-green.json: eval-green-missing: no green record is staged")


def test_damaged_record_is_one_finding(git_repo: Path) -> None:
    repo = make_gated_repo(git_repo)
    (repo / ".eval-green.json").write_text("{not json")
    (repo / "prompts" / "system.txt").write_text("new\n")
    git(repo, "add", "-A")
    rc, out = run_watch(repo, staged=True)
    assert rc == 1
    assert out.startswith(
        ".eval-green.json: eval-green-invalid: .eval-green.json (staged): not valid"
    )
    assert out.count("\n") == 1


def test_a_record_larger_than_a_config_file_is_read(git_repo: Path) -> None:
    """A large suite's record (15 MB at 100,000 scenarios) is read and kept, not refused as a
    config file over 4 MiB would be (and rewritten by every run)."""
    repo = make_gated_repo(git_repo)
    path = repo / ".eval-green.json"
    padded = path.read_bytes() + b" " * (5 * 1024 * 1024)  # the same JSON, a large suite's size
    path.write_bytes(padded)
    rc, out = run_watch(repo)
    assert (rc, out) == (
        0,
        "cachelint watch: .eval-green.json matches the watched files, datasets and cache\n",
    )
    record_green(repo)  # the same state: the record is left as it is
    assert path.read_bytes() == padded


def test_no_watch_globs_and_no_record_is_not_gated(git_repo: Path) -> None:
    dataset = git_repo / "eval-datasets" / "a" / "t"
    dataset.mkdir(parents=True)
    (dataset / "s.json").write_text("{}\n")
    git(git_repo, "add", "-A")
    assert run_watch(git_repo, staged=True) == (0, "")  # the hook stays quiet
    rc, out = run_watch(git_repo)
    assert rc == 0
    assert "no `watch` globs configured and no .eval-green.json, nothing to gate" in out


def test_no_watch_globs_still_gates_datasets_once_a_record_is_committed(git_repo: Path) -> None:
    repo = make_gated_repo(git_repo, config="")
    dataset = repo / "eval-datasets" / "agent" / "tenant" / "s1.json"
    dataset.write_text('{"input": "hello"}\n')
    (repo / "prompts" / "system.txt").write_text("not watched without globs\n")
    git(repo, "add", "-A")
    rc, out = run_watch(repo, staged=True)
    assert rc == 1
    assert out.splitlines()[0] == (
        "eval-datasets/agent/tenant/s1.json: eval-green-stale: dataset file changed since the "
        "last green run (recorded 2026-01-31T12:00:00Z)"
    )
    assert "prompts/system.txt" not in out
    rc, out = run_watch(repo)
    assert rc == 1 and "eval-datasets/agent/tenant/s1.json: eval-green-stale" in out
    record_green(repo)
    git(repo, "add", ".eval-green.json")
    assert run_watch(repo, staged=True) == (0, "")


def test_escape_sequences_in_file_names_never_reach_the_terminal(git_repo: Path) -> None:
    repo = make_gated_repo(git_repo)
    (repo / "prompts" / "\x1b[2Jwiped\u202e.txt").write_text("new\n")
    git(repo, "add", "prompts")
    rc, out = run_watch(repo, staged=True)
    assert rc == 1
    assert "prompts/\\x1b[2Jwiped\\u202e.txt: eval-green-stale: watched file new" in out
    assert "\x1b" not in out and "\u202e" not in out


def test_base_reports_changes_since_the_merge_base(git_repo: Path) -> None:
    repo = make_gated_repo(git_repo)
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "README.md").write_text("unrelated\n")
    commit_all(repo, "docs")
    rc, out = run_watch(repo, base="main")
    assert rc == 0 and "nothing watched changed since main" in out

    (repo / "models.json").write_text('{"model": "gpt-5"}\n')
    commit_all(repo, "swap model")
    rc, out = run_watch(repo, base="main")
    assert rc == 1
    assert "models.json: eval-green-stale: watched file changed since" in out
    assert "then commit .eval-green.json" in out

    record_green(repo)
    commit_all(repo, "green again")
    rc, out = run_watch(repo, base="main")
    assert rc == 0 and "matches" in out


def test_base_sees_untracked_new_watched_files(git_repo: Path) -> None:
    repo = make_gated_repo(git_repo)
    (repo / "prompts" / "extra.txt").write_text("new prompt\n")
    rc, out = run_watch(repo, base="HEAD")
    assert rc == 1
    assert "prompts/extra.txt: eval-green-stale: watched file new since" in out


def test_base_catches_a_cache_changed_after_the_green_run(git_repo: Path) -> None:
    repo = make_gated_repo(git_repo)
    next((repo / "eval-cache").rglob("contents.data")).write_text('"edited by hand"\n')
    (repo / "prompts" / "system.txt").write_text("changed\n")
    rc, out = run_watch(repo, base="HEAD")
    assert rc == 1
    assert "eval-cache: eval-green-stale: cache tree changed since the last green run" in out


def test_base_with_an_unknown_ref_is_one_line_usage_error(git_repo: Path) -> None:
    repo = make_gated_repo(git_repo)
    with pytest.raises(CachelintError) as info:
        run_watch(repo, base="origin/nope")
    message = str(info.value)
    assert "\n" not in message
    assert "watch --base origin/nope: no merge base" in message and "git fetch" in message
    assert info.value.exit_code == 2


def test_building_the_cli_parser_loads_no_gate_or_hashing_modules() -> None:
    # `cachelint check` builds the whole parser; watch and guard must not make it pay for blake3.
    probe = (
        "import sys; from cachelint import cli; cli._parser(); "
        "heavy = ('cachelint.green', 'cachelint.hashing', 'cachelint.canonical', 'blake3', "
        "'rfc8785', 'pathspec'); print([m for m in heavy if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert out == "[]\n"


def test_staged_cache_change_alone_is_compared_with_the_record(git_repo: Path) -> None:
    """Deleting an entry (or rewriting its contents) stages nothing watched, yet the record's
    digest of the cache tree no longer matches: the gate refuses it."""
    repo = make_gated_repo(git_repo)
    entry = "eval-cache/cache/agent/tenant/s1/0123456789abcdef"
    git(repo, "rm", "-r", "-q", entry)
    rc, out = run_watch(repo, staged=True)
    assert rc == 1, out
    assert "eval-cache: eval-green-stale: cache tree changed since the last green run" in out

    git(repo, "reset", "-q", "--hard")
    assert run_watch(repo, staged=True)[0] == 0  # nothing staged
    (repo / entry / "contents.data").write_text('"HELLO"\n')
    git(repo, "add", entry)
    rc, out = run_watch(repo, staged=True)
    assert rc == 1 and "cache tree changed" in out, out

    record_green(repo)  # a green run over the new cache: the record follows it
    git(repo, "add", "-A")
    assert run_watch(repo, staged=True) == (0, "")
