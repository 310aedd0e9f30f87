"""One cache, two front doors: `cachelint run` (datasets) and the pytest plugin (eval tests) in one
repository, recorded through the fake provider, with real git, real inner pytest sessions and
real `cachelint` processes. Prune, `eval-cache-unused`, the green record and the watch gate must
see both; nothing either front door's next offline full pass needs is ever deleted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import PROJECT, commit_all, git, run_cachelint
from tests.fakes import fake_server
from tests.helpers import BASIC, DEAD, SCRIPT, write_repo
from tests.helpers import RUN_NOW as NOW

pytest.importorskip("openai")

LATER = "2026-01-15T11:00:00Z"  # a later session's clock

EVAL_TESTS = """
import os
import signal

import openai
import pytest


@pytest.mark.eval
@pytest.mark.parametrize("who", ["acme", "globex"])
def test_refund(cachelint, who):
    sdk = openai.OpenAI(base_url=cachelint.base_url, api_key=cachelint.api_key,
                        http_client=cachelint.http_client(), max_retries=0)
    with open(f"prompts/{who}.md", encoding="utf-8") as fh:
        system = fh.read()
    answer = sdk.chat.completions.create(model="bot-model", messages=[
        {"role": "system", "content": system},
        {"role": "user", "content": "How do refunds work?"}])
    if os.environ.get("KILL_AFTER_RECORDING") == who:
        os.kill(os.getpid(), signal.SIGKILL)  # a cancelled CI job, an OOM kill
    assert "refunds within" in answer.choices[0].message.content


def test_not_an_eval():
    assert True
"""

PINS = "[project]\nname = 'x'\nversion = '0'\ndependencies = ['cachelint==0.1.0']\n"


def inner_pytest(
    repo: Path, *args: str, now: str = NOW, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    quiet = ["-p", "no:cacheprovider", "-p", "no:langsmith_plugin", "-p", "no:hypothesispytest"]
    return subprocess.run(
        [sys.executable, "-m", "pytest", *quiet, "-q", *args],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(PROJECT), "CACHELINT_NOW": now, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


def cachelint(repo: Path, *args: str, now: str = NOW) -> subprocess.CompletedProcess[str]:
    return run_cachelint(repo, *args, env={"CACHELINT_NOW": now})


@contextmanager
def recording(repo: Path) -> Iterator[None]:
    """The target pointed at the fake provider for the duration, then back at a dead URL."""
    pyproject = repo / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    with fake_server(SCRIPT) as fake:
        pyproject.write_text(text.replace(DEAD, fake.url), encoding="utf-8")
        try:
            yield
        finally:
            pyproject.write_text(text, encoding="utf-8")


def ok(proc: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def both_front_doors(repo: Path) -> None:
    """Datasets and eval tests over the same prompts, each recorded through its front door."""
    write_repo(repo, DEAD, BASIC)
    pyproject = repo / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    text = text.replace('cache = "eval-cache"\n', 'cache = "eval-cache"\nwatch = ["prompts/**"]\n')
    pyproject.write_text(PINS + text, encoding="utf-8")
    (repo / ".gitattributes").write_text("eval-cache/** -text\n", encoding="utf-8")
    (repo / ".gitignore").write_text("/eval-results/\n__pycache__/\n", encoding="utf-8")
    (repo / "tests").mkdir()
    (repo / "tests/test_bot.py").write_text(EVAL_TESTS, encoding="utf-8")
    with recording(repo):
        ok(inner_pytest(repo, "-m", "eval", "--cachelint-cache", "auto"))
        ok(cachelint(repo, "run", "--refresh-cache"))


def entries(repo: Path, under: str = "") -> set[str]:
    base = repo / "eval-cache/cache"
    return {
        p.parent.relative_to(repo).as_posix()
        for p in base.rglob("entry.json")
        if p.parent.relative_to(base).as_posix().startswith(under)
    }


def change_acme_prompt(repo: Path) -> None:
    prompt = repo / "prompts/acme.md"
    prompt.write_text(prompt.read_text(encoding="utf-8") + "Be kind.\n", encoding="utf-8")


# ---- prune and the unused rule decide per front door ---------------------------------------------


def test_prune_keeps_what_the_pytest_plugin_recorded(git_repo: Path) -> None:
    """The issue's first failure: `pytest -m eval --cachelint-cache auto; cachelint run; prune
    --yes` deleted every pytest entry, and the next offline `pytest -m eval` missed."""
    both_front_doors(git_repo)
    assert len(entries(git_repo, "tests/")) == 2 and len(entries(git_repo, "support/")) == 2
    checked = cachelint(git_repo, "check", "--unused")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "eval-cache-unused" not in cachelint(git_repo, "check").stdout
    pruned = ok(cachelint(git_repo, "prune", "--yes"))
    assert "every entry was reached by the last full run" in pruned.stdout, pruned.stdout
    assert len(entries(git_repo)) == 4
    ok(cachelint(git_repo, "stamp"))
    ok(inner_pytest(git_repo, "-m", "eval"))
    ok(cachelint(git_repo, "run"))


def test_prune_after_a_rerecord_of_both_deletes_only_what_neither_needs(git_repo: Path) -> None:
    both_front_doors(git_repo)
    before = entries(git_repo)
    change_acme_prompt(git_repo)
    with recording(git_repo):
        ok(inner_pytest(git_repo, "-m", "eval", "--cachelint-cache", "auto", now=LATER))
        ok(cachelint(git_repo, "run", "--cache", "auto", now=LATER))
    old_acme = {e for e in before if "/acme" in e}
    assert len(old_acme) == 2 and len(entries(git_repo)) == 6

    dry = cachelint(git_repo, "check", "--unused", now=LATER)
    assert dry.returncode == 1, dry.stdout + dry.stderr
    assert "no eval test reached this entry in the last full `pytest -m eval`" in dry.stdout
    assert "no scenario reached this entry in the last full run" in dry.stdout
    pruned = ok(cachelint(git_repo, "prune", "--yes", now=LATER))
    assert sorted(line.split()[1] for line in pruned.stdout.splitlines()[:-1]) == sorted(old_acme)
    assert (
        "now re-stamp, replay and commit: `cachelint stamp && cachelint run && pytest -m eval && "
        "git add -A -- eval-cache .eval-green.json` then `git commit`"
    ) in pruned.stdout
    assert entries(git_repo) == (before - old_acme) | (entries(git_repo) - before)
    ok(cachelint(git_repo, "stamp", now=LATER))
    # Both front doors' next offline full passes find every entry they need.
    ok(inner_pytest(git_repo, "-m", "eval", now=LATER))
    ok(cachelint(git_repo, "run", now=LATER))


def test_prune_refuses_while_the_pytest_plugin_never_passed_in_full(git_repo: Path) -> None:
    both_front_doors(git_repo)
    (git_repo / "eval-results/entries-used-pytest.json").unlink()
    for args in (("prune", "--yes"), ("prune",), ("check", "--unused")):
        refused = cachelint(git_repo, *args)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert refused.stderr.startswith("cachelint: error: the pytest plugin owns 2 entries")
        assert "run `pytest -m eval` (every eval test) first" in refused.stderr
    assert len(entries(git_repo)) == 4
    # A part of the eval tests is no full pass: -k, one file, one node id.
    parts: list[tuple[str, ...]] = [("-m", "eval", "-k", "acme"), ("tests/test_bot.py",)]
    for part in [*parts, ("-m", "eval", "--co")]:
        partial = ok(inner_pytest(git_repo, *part))
        assert "cachelint: not a full pass of the eval tests" in partial.stdout, part
    assert not (git_repo / "eval-results/entries-used-pytest.json").exists()
    assert cachelint(git_repo, "prune").returncode == 2
    full = ok(inner_pytest(git_repo, "-m", "eval"))
    assert "cachelint: full pass of 2 eval test(s)" in full.stdout
    assert ok(cachelint(git_repo, "prune")).stdout.startswith("cachelint prune: every entry")


def test_a_failing_full_pytest_pass_stops_prune(git_repo: Path) -> None:
    both_front_doors(git_repo)
    source = git_repo / "tests/test_bot.py"
    source.write_text(EVAL_TESTS.replace('"refunds within"', '"never said"'), encoding="utf-8")
    failed = inner_pytest(git_repo, "-m", "eval")
    assert failed.returncode == 1
    assert "2 not passed" in failed.stdout
    refused = cachelint(git_repo, "prune", "--yes")
    assert refused.returncode == 2
    assert "the last run failed" in refused.stderr and "`pytest -m eval` pass" in refused.stderr


def test_a_killed_pytest_rerecord_stops_prune(git_repo: Path) -> None:
    """Issue 37: after an interrupted re-record, prune deleted the fresh recording as unused."""
    both_front_doors(git_repo)
    change_acme_prompt(git_repo)
    with recording(git_repo):
        killed = inner_pytest(
            git_repo,
            "-m",
            "eval",
            "--cachelint-cache",
            "auto",
            now=LATER,
            env={"KILL_AFTER_RECORDING": "acme"},
        )
    assert killed.returncode < 0  # SIGKILL: no sessionfinish, no cleanup
    fresh = entries(git_repo, "tests/test_bot.py/test_refund/acme")
    assert len(fresh) == 2  # the new recording beside the old one
    refused = cachelint(git_repo, "prune", "--yes", now=LATER)
    assert refused.returncode == 2
    assert "eval-results/pytest-recording.json: a pytest session that records" in refused.stderr
    assert entries(git_repo, "tests/test_bot.py/test_refund/acme") == fresh
    # Without the marker the entry's date still gives it away.
    (git_repo / "eval-results/pytest-recording.json").unlink()
    refused = cachelint(git_repo, "prune", "--yes", now=LATER)
    assert refused.returncode == 2
    assert "was recorded after the last full pass of the pytest plugin finished" in (refused.stderr)
    assert entries(git_repo, "tests/test_bot.py/test_refund/acme") == fresh


def test_an_interrupted_run_rerecord_stops_prune(git_repo: Path) -> None:
    both_front_doors(git_repo)
    full_record = (git_repo / "eval-results/entries-used.json").read_bytes()
    change_acme_prompt(git_repo)
    with recording(git_repo):
        ok(cachelint(git_repo, "run", "--scenario", "support/acme/*", "--cache", "auto", now=LATER))
    # Killed before it wrote its own record: the last full run's record is the last word.
    (git_repo / "eval-results/entries-used.json").write_bytes(full_record)
    fresh = entries(git_repo, "support/acme")
    assert len(fresh) == 2
    refused = cachelint(git_repo, "prune", "--yes", now=LATER)
    assert refused.returncode == 2
    # The filtered recording run left its marker: no full run has followed it.
    assert "eval-results/run-recording.json: a recording `cachelint run`" in refused.stderr
    assert entries(git_repo, "support/acme") == fresh
    # Without the marker the entry's date still gives it away.
    (git_repo / "eval-results/run-recording.json").unlink()
    refused = cachelint(git_repo, "prune", "--yes", now=LATER)
    assert refused.returncode == 2
    assert "was recorded after the last full pass of `cachelint run` finished" in refused.stderr
    assert entries(git_repo, "support/acme") == fresh


def test_a_usage_record_is_evidence_only_when_its_execution_ran(git_repo: Path) -> None:
    both_front_doors(git_repo)
    record = git_repo / "eval-results/entries-used.json"
    data = json.loads(record.read_text(encoding="utf-8"))
    forged = {**data, "execution": "never-ran", "entries": []}
    record.write_text(json.dumps(forged), encoding="utf-8")
    refused = cachelint(git_repo, "prune", "--yes")
    assert refused.returncode == 2
    assert "its execution left no eval-results/never-ran/run.json (it never ran)" in refused.stderr
    record.write_text(json.dumps({**data, "entries": []}), encoding="utf-8")
    refused = cachelint(git_repo, "prune", "--yes")
    assert refused.returncode == 2
    assert "results reached other entries than it lists" in refused.stderr
    tests = git_repo / "eval-results/entries-used-pytest.json"
    record.write_text(json.dumps(data), encoding="utf-8")
    pytest_data = json.loads(tests.read_text(encoding="utf-8"))
    tests.write_text(json.dumps({**pytest_data, "entries": []}), encoding="utf-8")
    refused = cachelint(git_repo, "prune", "--yes")
    assert refused.returncode == 2
    assert "its tests do not account for its entries" in refused.stderr
    assert len(entries(git_repo)) == 4


def test_prune_never_deletes_through_a_directory_swapped_for_a_link(
    git_repo: Path, tmp_path: Path
) -> None:
    from cachelint.commands.prune import _remove
    from cachelint.errors import CachelintError

    outside = tmp_path / "outside"
    (outside / "0123456789abcdef").mkdir(parents=True)
    (outside / "0123456789abcdef/precious.txt").write_text("keep me\n")
    scenario = git_repo / "eval-cache/cache/support/acme/refund"
    (scenario / "0123456789abcdef").mkdir(parents=True)
    # Swapped after prune read the tree, before it deletes.
    (scenario / "0123456789abcdef").rmdir()
    scenario.rmdir()
    scenario.symlink_to(outside, target_is_directory=True)
    with pytest.raises(CachelintError) as info:
        _remove(git_repo, "eval-cache/cache/support/acme/refund/0123456789abcdef", 2)
    assert "prune never deletes through a link" in str(info.value)
    assert (outside / "0123456789abcdef/precious.txt").read_text() == "keep me\n"


# ---- the green record and the gate cover both front doors ----------------------------------------


def test_a_full_passing_pytest_session_refreshes_its_part_of_the_green_record(
    git_repo: Path,
) -> None:
    both_front_doors(git_repo)
    green = json.loads((git_repo / ".eval-green.json").read_text(encoding="utf-8"))
    assert green["run"]["count"] == 2
    part = green["pytest"]
    assert part["session"]["tests"] == [
        "tests/test_bot.py::test_refund[acme]",
        "tests/test_bot.py::test_refund[globex]",
    ]
    assert set(part["watched"]) == {"prompts/acme.md", "prompts/globex.md"}
    assert set(part["cache"]) == {"eval-cache"}
    # record -> stamp -> every front door's replay: the record is fresh, and a replay after it
    # leaves the committed record as it is.
    ok(cachelint(git_repo, "stamp"))
    ok(inner_pytest(git_repo, "-m", "eval"))
    ok(cachelint(git_repo, "run"))
    commit_all(git_repo, "recorded")
    ok(cachelint(git_repo, "watch"))
    ok(inner_pytest(git_repo, "-m", "eval"))
    ok(cachelint(git_repo, "run"))
    assert git(git_repo, "status", "--porcelain") == ""


def test_stamp_says_what_comes_next(git_repo: Path) -> None:
    both_front_doors(git_repo)
    stamped = ok(cachelint(git_repo, "stamp"))
    assert stamped.stdout.splitlines()[-1] == (
        "next: replay through every front door, so the green record and the entry lists "
        "describe the stamped tree: `cachelint run` and `pytest -m eval`; then commit "
        "(docs/workflow.md)"
    )
    # Stamping changed the tree: the record now lags behind it until the replays.
    assert cachelint(git_repo, "watch").returncode == 1


def test_watch_fails_when_only_cachelint_run_saw_a_prompt_change(git_repo: Path) -> None:
    """The issue's second failure: re-recorded and re-run only through `cachelint run`, a staged
    prompt change passed `watch --staged` while the offline `pytest -m eval` missed."""
    both_front_doors(git_repo)
    ok(cachelint(git_repo, "stamp"))
    ok(inner_pytest(git_repo, "-m", "eval"))
    ok(cachelint(git_repo, "run"))
    commit_all(git_repo, "green")
    change_acme_prompt(git_repo)
    with recording(git_repo):
        ok(cachelint(git_repo, "run", "--cache", "auto", now=LATER))
    ok(cachelint(git_repo, "stamp", now=LATER))
    ok(cachelint(git_repo, "run", now=LATER))
    git(git_repo, "add", "-A")
    staged = cachelint(git_repo, "watch", "--staged")
    assert staged.returncode == 1, staged.stdout + staged.stderr
    assert (
        "prompts/acme.md: eval-green-stale: watched file changed since the last green pytest "
        "session" in staged.stdout
    )
    assert "run the evals until they pass: `pytest -m eval`, then `git add" in staged.stdout
    assert "cachelint run" not in staged.stdout.splitlines()[-1]
    commit_all(git_repo, "only run")
    assert cachelint(git_repo, "watch", "--base", "HEAD~1").returncode == 1
    assert inner_pytest(git_repo, "-m", "eval").returncode == 1  # the miss the gate foresaw
