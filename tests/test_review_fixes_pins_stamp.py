"""Review fixes: a bad `pins` key is a config error, one stamp path, one `ls-files --stage` per
check, and a results file that fails to write leaves no temp file behind."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from cachelint.collect import collect
from cachelint.config import load
from cachelint.errors import CachelintError, ConfigError
from cachelint.fsutil import TEMP_PREFIX
from cachelint.stamp import entry_count, facts_stamps, recorded
from tests.conftest import commit_all
from tests.test_run_fast_paths import _result
from tests.test_stamp import NOW, cli, good_stamp, record, setup_repo, write_stamp

PINS_CASES = [
    ('pins = ["nope.props"]\n', "key 'pins' names 'nope.props', which does not exist"),
    ('pins = ["Gemfile.lock"]\n', "key 'pins' names 'Gemfile.lock', a format cachelint cannot"),
]


@pytest.mark.parametrize(("pins_line", "message"), PINS_CASES)
@pytest.mark.parametrize(
    "command",
    [
        ("check",),
        ("check", "--select", "eval-cache-unpinned"),
        # stale-pin used to swallow it and pass
        ("check", "--select", "eval-cache-stale-pin"),
        ("stamp", "--check"),
        ("stamp",),
    ],
)
def test_bad_pins_key_exits_2_with_one_line(
    git_repo: Path, pins_line: str, message: str, command: tuple[str, ...]
) -> None:
    setup_repo(git_repo, config='packages = ["Microsoft.Extensions.AI.Evaluation"]\n' + pins_line)
    (git_repo / "Gemfile.lock").write_text("GEM\n")
    record(git_repo)
    write_stamp(git_repo, good_stamp())
    commit_all(git_repo)
    result = cli(git_repo, *command)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.count("\n") == 1 and message in result.stderr
    assert result.stderr.startswith("cachelint: error: cachelint.toml: ")
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_broken_pin_file_is_still_a_finding_not_a_config_error(git_repo: Path) -> None:
    setup_repo(git_repo)
    (git_repo / "Directory.Packages.props").write_text("<Project>")
    record(git_repo)
    write_stamp(git_repo, good_stamp())
    commit_all(git_repo)
    result = cli(git_repo, "stamp", "--check")
    assert result.returncode == 1, result.stdout + result.stderr
    (finding, summary) = result.stdout.splitlines()
    assert finding.startswith("Directory.Packages.props: eval-cache-unpinned: invalid XML")
    assert summary.startswith("cachelint: 1 finding ")


def test_a_configured_stamp_name_is_used_everywhere(git_repo: Path) -> None:
    config = 'packages = ["Microsoft.Extensions.AI.Evaluation"]\nstamp = "STAMP.json"\n'
    setup_repo(git_repo, config=config)
    record(git_repo, n=1)
    written = cli(git_repo, "stamp")
    assert written.returncode == 0, written.stderr
    assert written.stdout.startswith("wrote eval-cache/STAMP.json: 1 entry, pinnedAt ")
    assert not (git_repo / "eval-cache" / ".eval-cache-stamp.json").exists()
    commit_all(git_repo)
    facts = collect(load(git_repo), now=NOW)
    (state,) = facts_stamps(facts)
    assert state.path == "eval-cache/STAMP.json" and state.stamp is not None
    # a stamp without entries still marks the tree as recorded, under the configured name only
    shutil.rmtree(git_repo / "eval-cache" / "cache")
    assert recorded(collect(load(git_repo), now=NOW))
    (git_repo / "eval-cache" / "STAMP.json").rename(git_repo / "eval-cache" / "other.json")
    assert not recorded(collect(load(git_repo), now=NOW))


def test_watch_globs_may_not_match_a_configured_stamp_name(git_repo: Path) -> None:
    (git_repo / "cachelint.toml").write_text('stamp = "STAMP.json"\nwatch = ["**/STAMP.json"]\n')
    with pytest.raises(ConfigError, match="key 'watch' matches 'eval-cache/STAMP.json'"):
        load(git_repo)


def test_entry_count() -> None:
    assert [entry_count(n) for n in (0, 1, 2)] == ["0 entries", "1 entry", "2 entries"]


def _git_logging_to(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Put a `git` first on PATH that logs its arguments, then runs the real git."""
    real = shutil.which("git")
    assert real is not None
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "git.log"
    shim = bin_dir / "git"
    shim.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{real}" "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return log


def test_modified_files_need_one_ls_files_stage(
    git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record(git_repo, n=3)
    commit_all(git_repo)
    changed, touched, *_ = sorted((git_repo / "eval-cache").rglob("contents.data"))
    changed.write_text(changed.read_text() + " ")
    os.utime(touched, (1, 1))  # diff-files lists it, the content is unchanged
    log = _git_logging_to(tmp_path, monkeypatch)
    facts = collect(load(git_repo), now=NOW)
    assert facts.modified == {changed.relative_to(git_repo).as_posix()}
    calls = log.read_text().splitlines()
    assert any(c.startswith("hash-object") for c in calls)  # the candidates were checked
    assert [c for c in calls if c.startswith("ls-files -z -v --stage")] == [
        "ls-files -z -v --stage -- :(literal)eval-cache"
    ]


def test_result_writer_failure_leaves_no_temp_file(tmp_path: Path) -> None:
    from cachelint.runner.engine import ResultWriter

    directory = tmp_path / "results" / "x"
    # a non-empty directory where the results file goes: the temp file is written, the rename
    # fails
    (directory / "a" / "t" / "s.json" / "keep").mkdir(parents=True)
    writer = ResultWriter(directory, execution="x", mode="replay")
    writer.write(_result(tmp_path, "a/t/s"))
    with pytest.raises(CachelintError, match=r"a/t/s\.json: cannot write the results file"):
        writer.close()
    assert [p.name for p in (directory / "a" / "t").iterdir()] == ["s.json"]
    assert not any(TEMP_PREFIX in p.name for p in tmp_path.rglob("*"))
