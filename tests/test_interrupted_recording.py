"""Issue 37, "Evidence, not claims": an interrupted re-record (Ctrl-C, SIGTERM or kill -9 of a
recording `cachelint run`, or of a pytest session with `--cachelint-cache auto|live`) leaves a
marker in the results directory that stops `prune` and `green --from-results` until a full pass
of its front door finishes, so the fresh, paid-for recording is never pruned as unused. Real
processes are killed mid-recording while the fake provider holds an answer back; every clock
reads the same second, so the entries' dates cannot give the interruption away."""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import PROJECT, run_cachelint
from tests.fakes import fake_server
from tests.helpers import BASIC, DEAD, SCRIPT, write_repo
from tests.helpers import RUN_NOW as NOW

HELD_MS = 30_000  # the fake provider holds Globex's answer back this long: the window to kill in
RUN_MARKER = "eval-results/run-recording.json"
PYTEST_MARKER = "eval-results/pytest-recording.json"
PINS = "[project]\nname = 'x'\nversion = '0'\ndependencies = ['cachelint==0.1.0']\n"


def held_script() -> dict[str, Any]:
    """The shared script, with the answer to Globex's prompt held back."""
    script = copy.deepcopy(SCRIPT)
    for rule in script["rules"]:
        if rule.get("match", {}).get("system_contains") == "Globex":
            rule["delay_ms"] = HELD_MS
    return script


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


def cachelint(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cachelint(repo, *args, env={"CACHELINT_NOW": NOW})


def ok(proc: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def entries(repo: Path, under: str = "") -> set[str]:
    base = repo / "eval-cache/cache"
    return {
        p.parent.relative_to(repo).as_posix()
        for p in base.rglob("entry.json")
        if p.parent.relative_to(base).as_posix().startswith(under)
    }


def recorded_and_replayed(repo: Path) -> set[str]:
    """Datasets recorded, then a full offline replay (execution `full`): the last full pass."""
    write_repo(repo, DEAD, BASIC)
    pyproject = repo / "pyproject.toml"
    pyproject.write_text(PINS + pyproject.read_text(encoding="utf-8"), encoding="utf-8")
    (repo / ".gitattributes").write_text("eval-cache/** -text\n", encoding="utf-8")
    (repo / ".gitignore").write_text("/eval-results/\n", encoding="utf-8")
    with provider(repo, SCRIPT):
        ok(cachelint(repo, "run", "--refresh-cache"))
    ok(cachelint(repo, "stamp"))
    ok(cachelint(repo, "run", "--execution", "full"))
    for who in ("acme", "globex"):
        prompt = repo / f"prompts/{who}.md"
        prompt.write_text(prompt.read_text(encoding="utf-8") + "Be kind.\n", encoding="utf-8")
    return entries(repo)


def kill_when(
    proc: subprocess.Popen[str], ready: Callable[[], bool], sig: signal.Signals
) -> tuple[int, str]:
    """Send `sig` to `proc` once `ready()` holds; its exit code and stderr."""
    deadline = time.monotonic() + 60
    while not ready():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the recording never reached the held answer"
        time.sleep(0.05)
    proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=HELD_MS / 1000 + 30)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    return proc.returncode, err


def ctrl_c_delivered() -> None:
    """In the child, before it starts: SIGINT back to its default, so Python installs its Ctrl-C
    handler even when the tests run under a shell that ignores SIGINT (a background job)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def waiting_for_globex(fake: Any) -> Callable[[], bool]:
    return lambda: any("Globex" in json.dumps(body) for body in fake.bodies)


def refused_naming(proc: subprocess.CompletedProcess[str], marker: str, command: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("cachelint: error: ")
    assert f"{marker}: a " in proc.stderr, proc.stderr
    assert f"run `{command}` (every " in proc.stderr, proc.stderr


SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGKILL]


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
@pytest.mark.parametrize("mode", ["--cache=auto", "--refresh-cache"])
def test_a_recording_run_killed_midway_stops_prune_and_green(
    git_repo: Path, sig: signal.Signals, mode: str
) -> None:
    before = recorded_and_replayed(git_repo)
    with provider(git_repo, held_script()) as fake:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cachelint", "run", mode],
            cwd=git_repo,
            env={**os.environ, "PYTHONPATH": str(PROJECT), "CACHELINT_NOW": NOW},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=ctrl_c_delivered,
        )
        code, _ = kill_when(proc, waiting_for_globex(fake), sig)
    assert code != 0
    fresh = entries(git_repo) - before
    assert len(fresh) == 1 and "support/acme/refund/" in next(iter(fresh))  # paid for, kept
    for args in (("prune", "--yes"), ("prune",), ("check", "--unused")):
        refused = cachelint(git_repo, *args)
        assert entries(git_repo) == before | fresh, refused.stdout
        refused_naming(refused, RUN_MARKER, "cachelint run")
        marker = json.loads((git_repo / RUN_MARKER).read_text(encoding="utf-8"))
        assert marker["front_door"] == "run" and marker["mode"] in ("auto", "live")
        assert f"(execution {marker['execution']} (mode {marker['mode']}" in refused.stderr
    refused_naming(
        cachelint(git_repo, "green", "--from-results", "full"), RUN_MARKER, "cachelint run"
    )

    # A filtered run does not clear it; a full run does, and then prune keeps the fresh entry.
    ok(cachelint(git_repo, "run", "--scenario", "support/acme/*"))
    assert (git_repo / RUN_MARKER).exists()
    with provider(git_repo, SCRIPT):
        ok(cachelint(git_repo, "run", "--cache", "auto"))
    assert not (git_repo / RUN_MARKER).exists()
    pruned = ok(cachelint(git_repo, "prune", "--yes"))
    assert sorted(line.split()[1] for line in pruned.stdout.splitlines()[:-1]) == sorted(before)
    assert fresh <= entries(git_repo)
    ok(cachelint(git_repo, "stamp"))
    ok(cachelint(git_repo, "run", "--execution", "after"))
    ok(cachelint(git_repo, "green", "--from-results", "after"))


def test_a_recording_run_that_finishes_leaves_no_marker(git_repo: Path) -> None:
    recorded_and_replayed(git_repo)
    with provider(git_repo, SCRIPT):
        ok(cachelint(git_repo, "run", "--cache", "auto"))
    assert not (git_repo / RUN_MARKER).exists()
    ok(cachelint(git_repo, "prune"))
    ok(cachelint(git_repo, "run", "--execution", "replayed"))
    ok(cachelint(git_repo, "green", "--from-results", "replayed"))


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=lambda s: s.name)
def test_a_recording_pytest_session_killed_midway_stops_prune_and_green(
    git_repo: Path, sig: signal.Signals
) -> None:
    from tests.test_front_doors import both_front_doors, change_acme_prompt, inner_pytest

    pytest.importorskip("openai")
    both_front_doors(git_repo)
    ok(cachelint(git_repo, "stamp"))
    ok(cachelint(git_repo, "run", "--execution", "full"))
    ok(inner_pytest(git_repo, "-m", "eval"))
    before = entries(git_repo)
    change_acme_prompt(git_repo)
    quiet = ["-p", "no:cacheprovider", "-p", "no:langsmith_plugin", "-p", "no:hypothesispytest"]
    with provider(git_repo, held_script()) as fake:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytest", *quiet, "-q", "-m", "eval"]
            + ["--cachelint-cache", "live"],
            cwd=git_repo,
            env={**os.environ, "PYTHONPATH": str(PROJECT), "CACHELINT_NOW": NOW},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=ctrl_c_delivered,
        )
        code, _ = kill_when(proc, waiting_for_globex(fake), sig)
    assert code != 0
    fresh = entries(git_repo) - before
    assert len(fresh) == 1 and "tests/test_bot.py/test_refund/acme/" in next(iter(fresh))
    refused = cachelint(git_repo, "prune", "--yes")
    assert entries(git_repo) == before | fresh, refused.stdout
    refused_naming(refused, PYTEST_MARKER, "pytest -m eval")
    refused_naming(
        cachelint(git_repo, "green", "--from-results", "full"), PYTEST_MARKER, "pytest -m eval"
    )
