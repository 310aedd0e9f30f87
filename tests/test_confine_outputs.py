"""Report paths named on the command line stay inside the repository (issue 14, confinement).

`run --junit/--html` and `report --output` get the treatment `results` and `green-record` get
from the config: inside the repository, through no link, not into `.git` or a cache root, not
onto a tracked file. A violation is exit 2 and one line naming the path; nothing is written.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import commit_all, git, run_cachelint
from tests.helpers import DEAD, RUN_NOW, record, refund, write_repo


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CACHELINT_EXECUTION", raising=False)
    monkeypatch.setenv("CACHELINT_NOW", RUN_NOW)


@pytest.fixture
def repo(git_repo: Path) -> Path:
    write_repo(git_repo, DEAD, {"support/acme/refund": refund(prompt="prompts/acme.md")})
    assert record(git_repo)[0].rc == 0
    commit_all(git_repo)
    return git_repo


def one_error(proc: subprocess.CompletedProcess[str]) -> str:
    err = proc.stderr
    assert proc.returncode == 2, err
    assert err.count("\n") == 1 and err.startswith("cachelint: error: "), err
    return err


@pytest.mark.parametrize("option", ["--junit", "--html"])
def test_a_run_report_outside_the_repository_is_refused_and_not_written(
    repo: Path, tmp_path: Path, option: str
) -> None:
    outside = tmp_path / "ci-temp" / "report.out"
    executions = sorted(p.name for p in (repo / "eval-results").iterdir())
    err = one_error(run_cachelint(repo, "run", option, str(outside)))
    assert f"{option} {outside}: outside the repository" in err
    assert "eval-results/" in err  # how to fix it
    assert not outside.parent.exists()
    # Refused before the run: no execution directory was claimed.
    assert sorted(p.name for p in (repo / "eval-results").iterdir()) == executions


def test_dot_dot_out_of_the_repository_is_outside_too(repo: Path, tmp_path: Path) -> None:
    err = one_error(run_cachelint(repo, "run", "--junit", "out/../../escaped.xml"))
    assert "--junit out/../../escaped.xml: outside the repository" in err
    assert not (tmp_path / "escaped.xml").exists()


def test_a_run_report_inside_the_repository_is_written(repo: Path) -> None:
    sub = repo / "prompts"
    proc = run_cachelint(
        sub, "run", "--execution", "e2", "--junit", "../out/junit.xml", "--html", "../out/r.html"
    )
    assert proc.returncode == 0, proc.stderr
    assert (repo / "out/junit.xml").read_text(encoding="utf-8").startswith("<?xml")
    page = (repo / "out/r.html").read_bytes()
    assert page.startswith(b"<!DOCTYPE html>")
    assert page == (repo / "eval-results/e2/report.html").read_bytes()


@pytest.mark.parametrize("command", [("run", "--html"), ("report", "--output")])
def test_a_page_that_cannot_be_written_is_one_error_line(
    repo: Path, command: tuple[str, str]
) -> None:
    if command[0] == "report":
        assert run_cachelint(repo, "run").returncode == 0
    (repo / "out" / "r.html").mkdir(parents=True)  # a directory where the page should go
    err = one_error(run_cachelint(repo, *command, "out/r.html"))
    assert "out/r.html: cannot write report: Is a directory" in err
    # Atomic: the temp file the page went to first is gone, and nothing landed in the directory.
    assert [p.name for p in (repo / "out").iterdir()] == ["r.html"]
    assert list((repo / "out" / "r.html").iterdir()) == []


def test_a_run_report_through_a_link_in_the_repository_path_is_refused(
    repo: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (repo / "out").symlink_to(elsewhere, target_is_directory=True)
    err = one_error(run_cachelint(repo, "run", "--html", str(repo / "out" / "r.html")))
    assert "is a symbolic link" in err and "out" in err
    assert list(elsewhere.iterdir()) == []


def test_report_output_is_confined_like_run_reports(repo: Path, tmp_path: Path) -> None:
    assert run_cachelint(repo, "run", "--execution", "e1").returncode == 0
    outside = tmp_path / "page.html"
    err = one_error(run_cachelint(repo, "report", "--output", str(outside)))
    assert f"--output {outside}: outside the repository" in err
    assert not outside.exists()
    before = (repo / "pyproject.toml").read_bytes()
    err = one_error(run_cachelint(repo, "report", "-o", "pyproject.toml"))
    assert "would overwrite the tracked file pyproject.toml" in err
    assert (repo / "pyproject.toml").read_bytes() == before
    err = one_error(run_cachelint(repo, "report", "-o", os.path.join("eval-cache", "r.html")))
    assert "inside cache root 'eval-cache'" in err
    done = run_cachelint(repo, "report", "-o", "eval-results/page.html")
    assert done.returncode == 0, done.stderr
    assert (repo / "eval-results/page.html").is_file()


def test_an_execution_named_like_a_path_is_refused_by_every_command(
    repo: Path, tmp_path: Path
) -> None:
    """An execution is a directory right under the results root. `report --merge` used to create
    `<results>/<name>/` from a name such as `../eval-cache/cache/x` (or an absolute path) and
    write the merged results there: into the cache tree, or anywhere."""
    assert run_cachelint(repo, "run", "--execution", "e1").returncode == 0
    shard = os.path.join("eval-results", "e1")
    outside = tmp_path / "merged"
    results = sorted(p.name for p in (repo / "eval-results").iterdir())
    for name in (os.path.join("..", "eval-cache", "cache", "x"), str(outside), "..", "a/b"):
        for args in (
            ["run", "--execution", name],
            ["report", "--execution", name],
            ["report", "--merge", shard, "--execution", name],
            ["report", "--compare", name, "e1"],
            ["report", "--compare", "e1", name],
            ["green", "--from-results", name],
        ):
            err = one_error(run_cachelint(repo, *args))
            assert f"execution name {name!r} is not a plain directory name" in err, args
    assert not outside.exists()
    assert git(repo, "status", "--porcelain", "--untracked-files=all", "--", "eval-cache") == ""
    assert sorted(p.name for p in (repo / "eval-results").iterdir()) == results
