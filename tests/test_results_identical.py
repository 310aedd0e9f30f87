"""A run's reports and results are the same bytes whether the run keeps every results document in
memory for the reports or reads each back from its file as the page is rendered (the path a large
suite takes to keep its memory flat), and the same bytes as the golden digests in
tests/data/golden-run.json, taken before the replay-at-scale work reshaped how they are written:
every file of `eval-results/<execution>/`, the `--junit` and `--html` files and stdout, in text and
in `--format json`, on a suite of a few hundred scenarios recorded through the fake provider
(passing, failing, judged, several trials, priced). A change meant to alter a report rewrites the
golden file with CACHELINT_WRITE_GOLDEN=1 and says so in its commit."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import types
from pathlib import Path
from typing import Any

import pytest

from cachelint.errors import CachelintError
from cachelint.runner import client, engine
from cachelint.runner.reports import held, model
from tests.conftest import run_cachelint
from tests.helpers import DEAD, SCRIPT, do_run, record, refund, write_repo

NOW = "2026-01-31T12:00:00Z"
GOLDEN = Path(__file__).parent / "data" / "golden-run.json"
PRICED = '[tool.cachelint.prices]\n"scripted-v1" = { input = 2.5, output = 10.0 }\n'


def _suite() -> dict[str, dict[str, Any]]:
    """About 200 scenarios in 2 agents and 3 tenants: most pass, every fifth fails an assertion,
    every seventh is judged, every eleventh runs 2 trials."""
    scenarios: dict[str, dict[str, Any]] = {}
    for i in range(210):
        agent = ("support", "sales")[i % 2]
        tenant = ("acme", "globex", "initech")[i % 3]
        prompt = "prompts/globex.md" if tenant == "globex" else "prompts/acme.md"
        extra: dict[str, Any] = {"input": f"How do refunds work? (case {i})"}
        if i % 5 == 0:
            extra["assert"] = [{"type": "contains", "value": "never said"}]
        if i % 7 == 0:
            extra["judge"] = ["relevance"]
        if i % 11 == 0:
            extra["trials"] = 2
        scenarios[f"{agent}/{tenant}/case-{i:03d}"] = refund(extra, prompt=prompt)
    return scenarios


def _digests(repo: Path, execution: str, stdout: str) -> dict[str, str]:
    found = {
        path.relative_to(repo).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted((repo / "eval-results" / execution).rglob("*"))
        if path.is_file()
    }
    for extra in ("reports/junit.xml", "reports/page.html"):
        if (repo / extra).is_file():
            found[extra] = hashlib.sha256((repo / extra).read_bytes()).hexdigest()
    found["stdout"] = hashlib.sha256(stdout.encode("utf-8")).hexdigest()
    return found


def _replay(repo: Path, fmt: str, execution: str) -> dict[str, str]:
    (repo / "reports").mkdir(exist_ok=True)
    outcome = do_run(
        repo,
        execution=execution,
        fmt=fmt,
        junit=repo / "reports/junit.xml",
        html=repo / "reports/page.html",
    )
    assert outcome.rc == 1, outcome.err  # every fifth scenario fails
    digests = _digests(repo, execution, outcome.out)
    # Out of the results root and the repository, so the next run's trend does not draw it.
    shutil.move(repo / "eval-results" / execution, repo.parent / f"{execution}-{len(digests)}")
    shutil.rmtree(repo / "reports")
    return digests


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_reports_are_identical_held_or_read_back(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    write_repo(git_repo, DEAD, _suite(), target=PRICED)
    recorded, _ = record(git_repo, SCRIPT)
    assert recorded.rc == 1, recorded.err
    shutil.rmtree(git_repo / "eval-results")
    monkeypatch.setenv("CACHELINT_NOW", NOW)
    # A hit's latency is its lookup time, written to the results files: a clock, pinned here.
    monkeypatch.setattr(client, "time", types.SimpleNamespace(perf_counter=lambda: 0.0))
    held = _replay(git_repo, fmt, "same")
    monkeypatch.setattr(engine, "HOLD_MAX_SCENARIOS", 0)
    read_back = _replay(git_repo, fmt, "same")
    assert len(held) > 200
    assert read_back == held
    _compare_with_golden(fmt, held)


def _compare_with_golden(fmt: str, digests: dict[str, str]) -> None:
    golden = json.loads(GOLDEN.read_text(encoding="utf-8")) if GOLDEN.is_file() else {}
    if os.environ.get("CACHELINT_WRITE_GOLDEN") == "1":
        golden[fmt] = digests
        GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    differ = sorted(
        name
        for name in golden[fmt].keys() | digests.keys()
        if golden[fmt].get(name) != digests.get(name)
    )
    assert differ == [], f"not the golden bytes ({fmt}): {differ[:10]}"


def _judged_suite(repo: Path) -> None:
    judged = refund({"judge": ["relevance"]}, prompt="prompts/acme.md")
    write_repo(repo, DEAD, {f"support/acme/case-{i}": judged for i in range(3)})
    recorded, _ = record(repo, SCRIPT)
    assert recorded.rc == 0, recorded.err
    shutil.rmtree(repo / "eval-results")


def test_the_page_is_the_same_bytes_whatever_the_string_hash_seed(git_repo: Path) -> None:
    """A judged scenario first sends two texts the page shares (its prompt and the judge's):
    they are listed in the order sent, never in the order of a set, which PYTHONHASHSEED
    changes from one process to the next."""
    _judged_suite(git_repo)
    pages = []
    for seed in ("1", "4"):  # the two orders of the set before the fix
        env = {"PYTHONHASHSEED": seed, "CACHELINT_NOW": NOW}
        done = run_cachelint(git_repo, "run", "--execution", "seeded", env=env)
        assert done.returncode == 0, done.stderr
        pages.append((git_repo / "eval-results/seeded/report.html").read_bytes())
        shutil.rmtree(git_repo / "eval-results")  # no trend of the run before
    assert pages[0].count(b"sent by several scenarios") == 2
    assert pages[0] == pages[1]


def test_a_large_run_reads_each_results_file_back_once(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the page shares of the scenarios' system texts is gathered as the files are written:
    the page opens each results file once, to draw its scenario."""
    _judged_suite(git_repo)
    monkeypatch.setattr(engine, "HOLD_MAX_SCENARIOS", 0)
    opened: list[str] = []
    real_open = os.open

    def counted(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if not flags & (os.O_WRONLY | os.O_RDWR) and "eval-results" in str(path):
            opened.append(Path(path).name)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", counted)  # an OS edge: counting the files opened
    outcome = do_run(git_repo, execution="once")
    assert outcome.rc == 0, outcome.err
    assert sorted(opened) == ["case-0.json", "case-1.json", "case-2.json"]


def test_a_results_file_changed_since_the_run_wrote_it_is_read_as_evidence(
    git_repo: Path,
) -> None:
    """The read-back takes a results file as the run's own only while it holds the bytes the run
    wrote; changed since, it is checked as a file from elsewhere is (here nested too deep: one
    error line)."""
    _judged_suite(git_repo)
    assert do_run(git_repo, execution="kept").rc == 0
    directory = git_repo / "eval-results" / "kept"
    path = directory / "support/acme/case-0.json"
    data = path.read_bytes()
    record = json.loads(data)
    source = held.Sources(directory).of(record, data)
    view = model.scenario_report(record, "scripted-v1", {}, source=source)
    assert view.whole().record == record
    path.write_bytes(b"[" * 150 + b"]" * 150)
    with pytest.raises(CachelintError, match="nested deeper than 100 levels"):
        view.whole()
