"""`cachelint run --failed [EXECUTION]` and `--resume EXECUTION` (issue 43, item 4), through the
CLI on entries recorded through the fake provider: only what failed or missed runs again, an
interrupted (kill -9) recording run is finished keeping what it had done, and neither refreshes
the green record or counts as the full pass prune needs."""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.conftest import PROJECT, run_cachelint
from tests.fakes import fake_server
from tests.helpers import BASIC, DEAD, SCRIPT, refund, write_datasets, write_repo
from tests.helpers import RUN_NOW as NOW

GLOBEX = "support/globex/refund"
ACME = "support/acme/refund"


@contextmanager
def provider(repo: Path, script: dict[str, Any]) -> Iterator[Any]:
    """The target pointed at the fake provider for the duration, then back at a dead URL."""
    pyproject = repo / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    with fake_server(script) as fake:
        pyproject.write_text(text.replace(DEAD, fake.url), encoding="utf-8")
        try:
            yield fake
        finally:
            pyproject.write_text(text, encoding="utf-8")


def killed_at_globex(repo: Path, *args: str) -> None:
    """`cachelint run ARGS` killed (SIGKILL) while the fake provider holds Globex's answer."""
    script = copy.deepcopy(SCRIPT)
    for rule in script["rules"]:
        if rule.get("match", {}).get("system_contains") == "Globex":
            rule["delay_ms"] = 30_000
    with provider(repo, script) as fake:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cachelint", "run", *args],
            cwd=repo,
            env={**os.environ, "PYTHONPATH": str(PROJECT), "CACHELINT_NOW": NOW},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while not any("Globex" in json.dumps(body) for body in fake.bodies):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the run never reached the held answer"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)


def cachelint(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cachelint(repo, *args, env={"CACHELINT_NOW": NOW})


def recorded(repo: Path) -> None:
    write_repo(repo, DEAD, BASIC)
    with provider(repo, SCRIPT):
        done = cachelint(repo, "run", "--refresh-cache", "--execution", "rec")
    assert done.returncode == 0, done.stdout + done.stderr


def run_json(repo: Path, execution: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (repo / "eval-results" / execution / "run.json").read_text("utf-8")
    )
    return data


def ran(repo: Path, execution: str) -> list[str]:
    return [s["scenario"] for s in run_json(repo, execution)["scenarios"]]


def test_failed_runs_only_what_failed_or_missed_and_leaves_the_green_record(
    git_repo: Path,
) -> None:
    recorded(git_repo)
    ok = cachelint(git_repo, "run", "--execution", "all")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    green = (git_repo / ".eval-green.json").read_bytes()
    # Globex's assertion now fails on its recorded answer.
    failing = refund(
        {"assert": [{"type": "contains", "value": "never said"}]}, prompt="prompts/globex.md"
    )
    write_datasets(git_repo, {GLOBEX: failing}, None)
    red = cachelint(git_repo, "run", "--execution", "red")
    assert red.returncode == 1, red.stdout + red.stderr

    again = cachelint(git_repo, "run", "--failed", "--execution", "again")
    assert again.returncode == 1, again.stdout + again.stderr
    assert ran(git_repo, "again") == [GLOBEX]
    assert "FAIL  support/globex/refund" in again.stdout and ACME not in again.stdout

    write_datasets(git_repo, {GLOBEX: refund(prompt="prompts/globex.md")}, None)
    fixed = cachelint(git_repo, "run", "--failed", "red", "--execution", "fixed")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert ran(git_repo, "fixed") == [GLOBEX]
    assert run_json(git_repo, "fixed")["filtered"] is True
    assert "green record not updated" in fixed.stderr
    assert (git_repo / ".eval-green.json").read_bytes() == green
    usage = json.loads((git_repo / "eval-results/entries-used.json").read_text("utf-8"))
    assert usage["execution"] == "fixed" and usage["filtered"] is True

    # The newest finished execution ("fixed") failed nothing: nothing runs, and that passes.
    nothing = cachelint(git_repo, "run", "--failed", "--execution", "nothing")
    assert nothing.returncode == 0, nothing.stdout + nothing.stderr
    assert ran(git_repo, "nothing") == []


def test_failed_picks_up_a_miss(git_repo: Path) -> None:
    recorded(git_repo)
    prompt = git_repo / "prompts/acme.md"
    prompt.write_text(prompt.read_text("utf-8") + "Be kind.\n", encoding="utf-8")
    missed = cachelint(git_repo, "run", "--execution", "missed")
    assert missed.returncode == 1 and "cache miss in replay mode" in missed.stdout
    with provider(git_repo, SCRIPT) as fake:
        again = cachelint(git_repo, "run", "--failed", "--cache", "auto", "--execution", "again")
        bodies = [json.dumps(b) for b in fake.bodies]
    assert again.returncode == 0, again.stdout + again.stderr
    assert ran(git_repo, "again") == [ACME]
    assert len(bodies) == 1 and "Acme" in bodies[0]


def test_resume_finishes_a_killed_recording_run_keeping_what_it_did(git_repo: Path) -> None:
    recorded(git_repo)
    for who in ("acme", "globex"):  # both need recording again
        prompt = git_repo / f"prompts/{who}.md"
        prompt.write_text(prompt.read_text("utf-8") + "Be kind.\n", encoding="utf-8")
    killed_at_globex(git_repo, "--cache", "auto", "--execution", "cut")
    cut = git_repo / "eval-results/cut"
    kept = (cut / f"{ACME}.json").read_bytes()
    assert not (cut / "run.json").exists() and not (cut / f"{GLOBEX}.json").exists()

    wrong_mode = cachelint(git_repo, "run", "--resume", "cut")
    assert wrong_mode.returncode == 2 and "resume it with --cache auto" in wrong_mode.stderr
    with provider(git_repo, SCRIPT) as fake:
        done = cachelint(git_repo, "run", "--resume", "cut", "--cache", "auto")
        bodies = [json.dumps(b) for b in fake.bodies]
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(bodies) == 1 and "Globex" in bodies[0]  # Acme's scenario was not run again
    assert ran(git_repo, "cut") == [ACME, GLOBEX]
    assert (cut / f"{ACME}.json").read_bytes() == kept
    assert "2 scenarios: 2 passed" in done.stdout
    assert run_json(git_repo, "cut")["filtered"] is True
    assert "green record not updated" in done.stderr
    # Not a full pass: the recording marker stands, so prune still refuses.
    assert (git_repo / "eval-results/run-recording.json").exists()
    prune = cachelint(git_repo, "prune", "--yes")
    assert prune.returncode == 2 and "--failed or --resume" in prune.stderr, prune.stderr

    finished = cachelint(git_repo, "run", "--resume", "cut", "--cache", "auto")
    assert finished.returncode == 2, finished.stdout + finished.stderr
    assert "that execution finished" in finished.stderr and "--failed cut" in finished.stderr


def test_bad_rerun_options_are_one_line(git_repo: Path) -> None:
    recorded(git_repo)
    cases = [
        (["--failed", "--resume", "rec"], "contradict each other"),
        (["--resume", "rec", "--execution", "x"], "drop --execution x"),
        (["--resume", "nowhere"], "is not an execution directory"),
        (["--failed", "nowhere"], "does not exist"),
        (["--failed", "../eval-cache"], "not a plain directory name"),
    ]
    for args, message in cases:
        done = cachelint(git_repo, "run", *args)
        assert done.returncode == 2, (args, done.stdout + done.stderr)
        assert done.stderr.count("\n") == 1 and message in done.stderr, (args, done.stderr)
