"""A run's reports and results are the same bytes whether the run keeps every results document in
memory for the reports or reads each back from its file as the page is rendered (the path a large
suite takes to keep its memory flat): every file of `eval-results/<execution>/`, the `--junit` and
`--html` files and stdout, in text and in `--format json`, on a suite of a few hundred scenarios
recorded through the fake provider (passing, failing, judged, several trials, priced)."""

from __future__ import annotations

import hashlib
import shutil
import types
from pathlib import Path
from typing import Any

import pytest

from cachelint.runner import client, engine
from tests.helpers import DEAD, SCRIPT, do_run, record, refund, write_repo

NOW = "2026-01-31T12:00:00Z"
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
