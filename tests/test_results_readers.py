"""An earlier execution's results read back by `cachelint run` (the trend of report.html) and by
`cachelint report` (issue 37, "trust in what was written earlier"): each file is read as evidence,
a regular file below its execution directory through no link, bounded in size and nesting. A
file that is not is a skipped execution or one error line: never a hang on a FIFO, never a
traceback, never the bytes of a link's target in the output or in eval-results/."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from cachelint.errors import CachelintError
from cachelint.runner.evidence import MAX_DEPTH, RECORD_MAX_BYTES
from cachelint.runner.reports.model import load_execution
from cachelint.runner.reports.publishing import TREND_FILE, _started_at_end
from tests.conftest import PROJECT, RUN_NOW, commit_all
from tests.fakes import fake_server
from tests.helpers import DEAD, SCRIPT, refund, write_repo

SECRET = "OUTSIDE-SECRET-3f9a8c7e1d2b4a6f"
RECORD = "support/acme/refund.json"


@pytest.fixture(autouse=True)
def _env(recording_env: None) -> None:
    """No key from outside, the clock pinned."""


def cachelint(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A real process with a short timeout: a hang on a FIFO fails the test, never blocks it."""
    env = {**os.environ, "PYTHONPATH": str(PROJECT), "CACHELINT_NOW": RUN_NOW}
    env.pop("CACHELINT_EXECUTION", None)
    return subprocess.run(
        [sys.executable, "-m", "cachelint", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def replayed(repo: Path, outside: Path) -> Path:
    """A recorded repository with one replayed execution, `old`; `outside` made beside it."""
    write_repo(repo, DEAD, {"support/acme/refund": refund(prompt="prompts/acme.md")})
    pyproject = repo / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    with fake_server(SCRIPT) as fake:  # recorded through the fake provider, in a real process
        pyproject.write_text(text.replace(DEAD, fake.url), encoding="utf-8")
        proc = cachelint(repo, "run", "--refresh-cache", "--execution", "recorded")
    pyproject.write_text(text, encoding="utf-8")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    shutil.rmtree(repo / "eval-results")
    commit_all(repo)
    proc = cachelint(repo, "run", "--execution", "old")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    outside.mkdir()
    (outside / "secret.txt").write_text(f'{{"started":"{SECRET}"}}\n', encoding="utf-8")
    return repo / "eval-results"


def written(repo: Path, proc: subprocess.CompletedProcess[str]) -> str:
    results = repo / "eval-results"
    files = [p for p in results.rglob("*") if p.is_file() and not p.is_symlink()]
    return proc.stdout + proc.stderr + "".join(p.read_text("utf-8", "replace") for p in files)


def _no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("kind", ["fifo", "link to a fifo outside", "link to a secret outside"])
def test_run_reads_no_earlier_trend_json_that_is_not_a_regular_file(
    git_repo: Path, tmp_path: Path, kind: str
) -> None:
    results = replayed(git_repo, tmp_path / "outside")
    trend = results / "old" / TREND_FILE
    trend.unlink()
    if kind == "fifo":
        os.mkfifo(trend)
    elif kind == "link to a fifo outside":
        os.mkfifo(tmp_path / "outside/pipe")
        trend.symlink_to(tmp_path / "outside/pipe")
    else:
        trend.symlink_to(tmp_path / "outside/secret.txt")
    proc = cachelint(git_repo, "run", "--execution", "new")  # a hang hits the timeout
    assert proc.returncode == 0, proc.stdout + proc.stderr
    _no_traceback(proc)
    assert (results / "new/report.html").is_file()
    assert SECRET not in written(git_repo, proc)


def test_the_trend_start_is_never_read_through_a_link_or_from_a_fifo(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text(f'{{"started":"{SECRET}"}}\n', encoding="utf-8")
    (tmp_path / "regular.json").write_text('{"started":"2026-01-01"}\n', encoding="utf-8")
    (tmp_path / "link.json").symlink_to(tmp_path / "secret.txt")
    os.mkfifo(tmp_path / "pipe.json")
    assert _started_at_end(tmp_path / "regular.json") == "2026-01-01"
    assert _started_at_end(tmp_path / "link.json") is None
    unblock = threading.Timer(5, _open_writer, [tmp_path / "pipe.json"])  # a hang ends, fails
    unblock.daemon = True
    unblock.start()
    assert _started_at_end(tmp_path / "pipe.json") is None
    unblock.cancel()


def _open_writer(fifo: Path) -> None:
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # EOF for a reader blocked on it
    except OSError:
        pass  # no reader: nothing blocked


def _linked_execution(results: Path, outside: Path) -> Path:
    """A copy of `old` outside the repository, newest by its start, named by the secret, and an
    execution directory in eval-results/ linked to it."""
    elsewhere = outside / "execution"
    shutil.copytree(results / "old", elsewhere)
    for name in ("run.json", TREND_FILE):
        document = json.loads((elsewhere / name).read_text(encoding="utf-8"))
        document.update(execution=SECRET, started="2099-01-01T00:00:00Z")
        (elsewhere / name).write_text(json.dumps(document, sort_keys=True), encoding="utf-8")
    (elsewhere / "report.html").unlink()
    (results / "zz-linked").symlink_to(elsewhere, target_is_directory=True)
    return elsewhere


def test_an_execution_directory_linked_outside_is_no_execution(
    git_repo: Path, tmp_path: Path
) -> None:
    results = replayed(git_repo, tmp_path / "outside")
    elsewhere = _linked_execution(results, tmp_path / "outside")
    proc = cachelint(git_repo, "run", "--execution", "new")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert SECRET not in written(git_repo, proc)
    proc = cachelint(git_repo, "report")  # the latest of this repository, not the one outside
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert SECRET not in written(git_repo, proc)
    page = proc.stdout.strip().splitlines()[-1]
    assert "/eval-results/" in page and "zz-linked" not in page
    proc = cachelint(git_repo, "report", "--execution", "zz-linked")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "zz-linked" in proc.stderr and "symbolic link" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and SECRET not in written(git_repo, proc)
    assert not (elsewhere / "report.html").exists()  # nothing written outside either


# ---- the report's reader itself, whatever checked the execution before it ------------------------


def _summary(results: Path) -> dict[str, object]:
    document = json.loads((results / "old/run.json").read_text(encoding="utf-8"))
    assert isinstance(document, dict)
    return document


def test_the_report_reads_no_results_file_through_a_link(git_repo: Path, tmp_path: Path) -> None:
    """A results file swapped for a link after `verified` read it: the link's target, a record
    holding the secret, is never read."""
    results = replayed(git_repo, tmp_path / "outside")
    document = json.loads((results / "old" / RECORD).read_text(encoding="utf-8"))
    document["trials"][0]["error"] = SECRET
    (tmp_path / "outside/record.json").write_text(json.dumps(document), encoding="utf-8")
    (results / "old" / RECORD).unlink()
    (results / "old" / RECORD).symlink_to(tmp_path / "outside/record.json")
    with pytest.raises(CachelintError, match="symbolic link") as raised:
        load_execution(results / "old", "scripted-v1", {}, _summary(results))
    assert SECRET not in str(raised.value)


def test_the_report_reads_no_fifo(git_repo: Path, tmp_path: Path) -> None:
    results = replayed(git_repo, tmp_path / "outside")
    (results / "old" / RECORD).unlink()
    os.mkfifo(results / "old" / RECORD)
    unblock = threading.Timer(5, _open_writer, [results / "old" / RECORD])
    unblock.daemon = True
    unblock.start()
    with pytest.raises(CachelintError, match="FIFO"):
        load_execution(results / "old", "scripted-v1", {}, _summary(results))
    unblock.cancel()


@pytest.mark.parametrize("damage", ["deep", "oversized"])
def test_the_report_reads_no_deep_or_oversized_results_file(
    git_repo: Path, tmp_path: Path, damage: str
) -> None:
    results = replayed(git_repo, tmp_path / "outside")
    path = results / "old" / RECORD
    if damage == "deep":  # deep enough for the decoder's stack, or only for the renderers'
        path.write_text("[" * 200_000, encoding="utf-8")
        with pytest.raises(CachelintError, match="nested too deeply"):
            load_execution(results / "old", "scripted-v1", {}, _summary(results))
        nested: object = SECRET
        for _ in range(MAX_DEPTH + 5):
            nested = [nested]
        document = {"scenario": "support/acme/refund", "trials": [], "nested": nested}
        path.write_text(json.dumps(document), encoding="utf-8")
        match = f"nested deeper than {MAX_DEPTH}"
    else:
        with open(path, "r+b") as fh:  # sparse: no disk used
            fh.truncate(RECORD_MAX_BYTES + 1)
        match = "above the limit"
    with pytest.raises(CachelintError, match=match):
        load_execution(results / "old", "scripted-v1", {}, _summary(results))
