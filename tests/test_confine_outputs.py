"""Report paths named on the command line (issues 14 and 36.6).

`run --junit/--html` and `report --output` are written where the invoker says, outside the
repository too (`$RUNNER_TEMP/junit.xml`, `../artifacts/x.html`, as with `pytest --junitxml`):
directories created, written atomically, never through a link at the final component. Where such
a path lands in the repository, what the repository's own files could turn against the invoker
stays refused: a committed link on the way, `.git`, a cache root, a tracked file. A refusal is
exit 2 and one line naming the path; nothing is written.
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
def test_a_run_report_outside_the_repository_is_written_where_the_invoker_says(
    repo: Path, tmp_path: Path, option: str
) -> None:
    """CI writes reports to $RUNNER_TEMP, a directory that may not exist yet."""
    runner_temp = tmp_path / "runner-temp"
    outside = runner_temp / "reports" / "report.out"
    proc = run_cachelint(repo, "run", "--execution", "e1", option, str(outside))
    assert proc.returncode == 0, proc.stderr
    text = outside.read_text(encoding="utf-8")
    assert text.startswith("<?xml" if option == "--junit" else "<!DOCTYPE html>")
    assert [p.name for p in outside.parent.iterdir()] == ["report.out"]  # no temp file left


def test_dot_dot_out_of_the_repository_is_written_there(repo: Path, tmp_path: Path) -> None:
    proc = run_cachelint(repo, "run", "--execution", "e1", "--html", "../artifacts/x.html")
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "artifacts" / "x.html").read_bytes()
    assert page == (repo / "eval-results/e1/report.html").read_bytes()


@pytest.mark.parametrize("where", ["outside", "inside"])
@pytest.mark.parametrize("command", [("run", "--junit"), ("run", "--html"), ("report", "--output")])
def test_a_link_at_the_final_component_is_refused_and_not_written_through(
    repo: Path, tmp_path: Path, where: str, command: tuple[str, str]
) -> None:
    assert run_cachelint(repo, "run", "--execution", "e0").returncode == 0
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n", encoding="utf-8")
    base = tmp_path / "ci" if where == "outside" else repo / "eval-results"
    base.mkdir(exist_ok=True)
    link = base / "report.out"
    link.symlink_to(victim)
    executions = sorted(p.name for p in (repo / "eval-results").iterdir())
    err = one_error(run_cachelint(repo, *command, str(link)))
    assert f"{command[1]} {link}: is a symbolic link" in err
    assert victim.read_text(encoding="utf-8") == "keep me\n" and link.is_symlink()
    # Refused before the run: no execution directory was claimed.
    assert sorted(p.name for p in (repo / "eval-results").iterdir()) == executions


def test_a_path_outside_that_leads_back_into_the_cache_is_refused(
    repo: Path, tmp_path: Path
) -> None:
    """The invoker's own link may lead anywhere, but not into the committed cache or .git."""
    (tmp_path / "into-cache").symlink_to(repo / "eval-cache", target_is_directory=True)
    err = one_error(run_cachelint(repo, "run", "--junit", str(tmp_path / "into-cache" / "j.xml")))
    assert "inside cache root 'eval-cache'" in err
    assert not (repo / "eval-cache" / "j.xml").exists()


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


def test_report_output_goes_where_the_invoker_says_and_is_refused_like_run_reports(
    repo: Path, tmp_path: Path
) -> None:
    assert run_cachelint(repo, "run", "--execution", "e1").returncode == 0
    outside = tmp_path / "artifacts" / "page.html"
    done = run_cachelint(repo, "report", "--output", str(outside))
    assert done.returncode == 0, done.stderr
    assert outside.read_bytes().startswith(b"<!DOCTYPE html>")
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
