"""The cache's lifecycle: a tree recorded with the defaults outlives every branch, expiry advice
names the fix that works, and entries no scenario reaches any more are found and pruned."""

from __future__ import annotations

from pathlib import Path

import pytest

from cachelint.findings import Severity
from tests.conftest import commit_all, run_cachelint
from tests.helpers import BASIC, DEAD, assert_findings, assert_no_findings, record, write_repo
from tests.helpers import RUN_NOW as NOW

PINS = "[project]\nname = 'x'\nversion = '0'\ndependencies = ['cachelint==0.1.0']\n"


@pytest.fixture(autouse=True)
def _clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CACHELINT_EXECUTION", raising=False)
    monkeypatch.setenv("CACHELINT_NOW", NOW)


def recorded_with_defaults(repo: Path) -> None:
    """BASIC recorded through the fake provider with no ttl-days anywhere, stamped, committed."""
    write_repo(repo, DEAD, BASIC)
    pyproject = repo / "pyproject.toml"
    pyproject.write_text(PINS + pyproject.read_text(encoding="utf-8"), encoding="utf-8")
    (repo / ".gitattributes").write_text("eval-cache/** -text\n", encoding="utf-8")
    (repo / ".gitignore").write_text("/eval-results/\n", encoding="utf-8")
    outcome, _ = record(repo)
    assert outcome.rc == 0, outcome.out
    commit_all(repo, "record")
    stamped = run_cachelint(repo, "stamp")
    assert stamped.returncode == 0, stamped.stdout + stamped.stderr
    commit_all(repo, "stamp")


def test_a_tree_recorded_with_the_defaults_is_green_nine_years_later(git_repo: Path) -> None:
    recorded_with_defaults(git_repo)
    later = run_cachelint(git_repo, "check", env={"CACHELINT_NOW": "2035-01-15T10:00:00Z"})
    assert later.returncode == 0, later.stdout + later.stderr
    assert "0 findings" in later.stdout
    expiry = run_cachelint(
        git_repo, "check", "--strict", env={"CACHELINT_NOW": "2035-12-20T10:00:00Z"}
    )
    # Ten years after recording, the warning names the fix: the TTL was already the default.
    assert expiry.returncode == 1
    assert "raise ttl-days (now 3650; the default 3650 outlives every branch)" in expiry.stdout
    assert "re-record them with `cachelint run --refresh-cache`" in expiry.stdout


# ---- unused entries and prune -------------------------------------------------------------------


def entry_dirs(repo: Path, identity: str) -> set[str]:
    base = repo / "eval-cache/cache" / identity
    return {p.relative_to(repo).as_posix() for p in base.iterdir()} if base.is_dir() else set()


def rerecord_after_a_prompt_change(repo: Path) -> str:
    """Change the Acme prompt and re-record everything; return the old Acme entry directory."""
    (old,) = entry_dirs(repo, "support/acme/refund")
    prompt = repo / "prompts/acme.md"
    prompt.write_text(prompt.read_text(encoding="utf-8") + "Be kind.\n", encoding="utf-8")
    outcome, _ = record(repo)
    assert outcome.rc == 0, outcome.out
    assert len(entry_dirs(repo, "support/acme/refund")) == 2  # the new entry beside the old
    return old


def test_prune_after_a_prompt_change_and_a_rerecord(git_repo: Path) -> None:
    recorded_with_defaults(git_repo)
    assert run_cachelint(git_repo, "check", "--unused").returncode == 0
    old = rerecord_after_a_prompt_change(git_repo)
    assert run_cachelint(git_repo, "stamp").returncode == 0
    commit_all(git_repo, "re-record")

    unused = run_cachelint(git_repo, "check", "--unused")
    assert unused.returncode == 1, unused.stdout + unused.stderr
    (line, _summary) = unused.stdout.splitlines()
    # The re-record is the second run named "test": its results took the name "test-2".
    assert line == (
        f"{old}/entry.json: eval-cache-unused: warning: unused: no scenario reached this entry "
        "in the last full run (execution test-2); `cachelint prune --yes` deletes it"
    )
    plain = run_cachelint(git_repo, "check")
    assert plain.returncode == 0 and "eval-cache-unused" in plain.stdout  # a warning only

    dry = run_cachelint(git_repo, "prune")
    assert dry.returncode == 0 and f"would delete {old}\n" in dry.stdout
    assert "run `cachelint prune --yes` to delete them" in dry.stdout
    assert (git_repo / old).is_dir()

    pruned = run_cachelint(git_repo, "prune", "--yes")
    assert pruned.returncode == 0, pruned.stderr
    assert f"deleted {old}\n" in pruned.stdout
    assert (
        "now re-stamp, replay and commit: `cachelint stamp && cachelint run && git add -A -- "
        "eval-cache .eval-green.json` then `git commit`"
    ) in pruned.stdout
    assert not (git_repo / old).exists()
    assert len(entry_dirs(git_repo, "support/acme/refund")) == 1

    # The stamp sealed the entry set with the old entry in it: re-stamping is the last step.
    commit_all(git_repo, "prune")
    before = run_cachelint(git_repo, "check")
    assert before.returncode == 1 and "eval-cache-unstamped" in before.stdout
    assert run_cachelint(git_repo, "stamp").returncode == 0
    commit_all(git_repo, "re-stamp")
    after = run_cachelint(git_repo, "check", "--strict")
    assert after.returncode == 0, after.stdout + after.stderr
    assert "0 findings" in after.stdout


def test_an_expired_unused_entry_says_prune_it(git_repo: Path) -> None:
    recorded_with_defaults(git_repo)
    old = rerecord_after_a_prompt_change(git_repo)
    commit_all(git_repo, "re-record")
    later = run_cachelint(
        git_repo,
        "check",
        "--select",
        "eval-cache-expiring",
        env={"CACHELINT_NOW": "2036-06-01T00:00:00Z"},
    )
    assert later.returncode == 1
    lines = later.stdout.splitlines()
    assert any(
        line.startswith(f"{old}/entry.json: eval-cache-expiring: 1 entry expired")
        and "unused: prune it" in line
        for line in lines
    ), later.stdout
    # The entries still in use get the advice to re-record, never to prune.
    assert any("2 entries expired" in line and "prune" not in line for line in lines), lines


def test_prune_and_check_unused_refuse_a_filtered_failed_or_missing_run(git_repo: Path) -> None:
    recorded_with_defaults(git_repo)
    filtered, _ = record(git_repo, scenarios=["support/acme/*"])
    assert filtered.rc == 0
    for args in (("prune", "--yes"), ("check", "--unused")):
        proc = run_cachelint(git_repo, *args)
        assert proc.returncode == 2
        assert proc.stderr.startswith("cachelint: error: `cachelint run` owns 2 entries of the")
        assert "the last run was filtered" in proc.stderr
        assert (
            "run `cachelint run` with no --agent, --tenant, --scenario, --trials, --failed or "
            "--resume" in proc.stderr
        )
    # Only a usable record drives the rule: plain check stays silent about unused entries.
    assert "eval-cache-unused" not in run_cachelint(git_repo, "check").stdout
    # Overriding the datasets' trial counts reaches other entries than the suite does.
    trials, _ = record(git_repo, trials=1)
    assert trials.rc == 0
    proc = run_cachelint(git_repo, "prune")
    assert proc.returncode == 2 and "the last run was filtered" in proc.stderr

    (git_repo / "eval-datasets/support/acme/refund.json").write_text(
        '{"input": "How do refunds work?", "system-file": "prompts/acme.md",'
        ' "assert": [{"type": "contains", "value": "never said"}]}',
        encoding="utf-8",
    )
    failed = run_cachelint(git_repo, "run")
    assert failed.returncode == 1
    proc = run_cachelint(git_repo, "prune")
    assert proc.returncode == 2 and "the last run failed" in proc.stderr

    (git_repo / "eval-results/entries-used.json").unlink()
    proc = run_cachelint(git_repo, "prune")
    assert proc.returncode == 2
    assert "eval-results/entries-used.json not found" in proc.stderr


# ---- the rule on its own ------------------------------------------------------------------------


def test_the_rule_lists_only_entries_the_last_full_run_did_not_reach(git_repo: Path) -> None:
    recorded_with_defaults(git_repo)
    assert_no_findings(git_repo, "eval-cache-unused")  # every entry reached
    old = rerecord_after_a_prompt_change(git_repo)
    commit_all(git_repo)
    (finding,) = assert_findings(git_repo, "eval-cache-unused")
    assert finding.path == f"{old}/entry.json"
    assert finding.severity is Severity.WARNING
    filtered, _ = record(git_repo, scenarios=["support/acme/*"])
    assert filtered.rc == 0
    assert_no_findings(git_repo, "eval-cache-unused")  # a filtered run vouches for nothing
    assert record(git_repo)[0].rc == 0
    assert_findings(git_repo, "eval-cache-unused")
    (git_repo / "eval-results/entries-used.json").write_text("{not json")
    (broken,) = assert_findings(git_repo, "eval-cache-unused")
    assert broken.path == "eval-results/entries-used.json"
    assert "cannot read the last run's entry list" in broken.message
