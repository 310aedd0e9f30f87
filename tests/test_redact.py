"""Redaction (issue 43, item 6): `redact` rules applied before an entry is written, through
`cachelint run` and the pytest plugin on entries recorded through the fake provider; `check`
reports an entry recorded before a rule; a rule change makes the stamp stale."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import PROJECT, run_cachelint
from tests.fakes import fake_server
from tests.helpers import DEAD, RUN_NOW, do_run, record, write_datasets, write_repo

PINS = "[project]\nname = 'x'\nversion = '0'\ndependencies = ['cachelint==0.1.0']\n"
ANSWER = "Refunds within 30 days; write to desk.lead@acme.example for help."
SCRIPT: dict[str, Any] = {"rules": [], "default": {"content": ANSWER}}
RULES = (
    "[[tool.cachelint.redact]]\n"
    'name = "email"\n'
    "regex = '[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[A-Za-z]{2,}'\n"
    'replace = "[email]"\n'
    "[[tool.cachelint.redact]]\n"
    'name = "customer"\n'
    'path = "$.options.user"\n'
    'replace = "[customer]"\n'
    'in = "request"\n'
)


def scenario(email: str, user: str) -> dict[str, Any]:
    return {
        "input": f"I am {email}. How do refunds work?",
        "options": {"user": user},
        "assert": [{"type": "contains", "value": "write to [email] for help"}],
    }


def repo_with(repo: Path, rules: str) -> None:
    write_repo(repo, DEAD, {"support/acme/refund": scenario("jane.doe@corp.example", "c-1")})
    pyproject = repo / "pyproject.toml"
    text = pyproject.read_text("utf-8")
    pyproject.write_text(PINS + text + rules, "utf-8")


def cache_text(repo: Path) -> str:
    files = sorted(p for p in (repo / "eval-cache").rglob("*") if p.is_file())
    return "".join(p.read_text("utf-8") for p in files)


def results_text(repo: Path) -> str:
    files = sorted(p for p in (repo / "eval-results").rglob("*") if p.is_file())
    return "".join(p.read_text("utf-8", "replace") for p in files)


def test_recorded_entries_never_hold_a_redacted_value_and_replay_hits(git_repo: Path) -> None:
    repo_with(git_repo, RULES)
    recorded, calls = record(git_repo, SCRIPT)
    assert recorded.rc == 0 and calls == 1, recorded.out + recorded.err
    stored = cache_text(git_repo)
    assert "jane.doe@corp.example" not in stored and "desk.lead@acme.example" not in stored
    assert "I am [email]. How do refunds work?" in stored and "write to [email] for help" in stored
    assert '"[customer]"' in stored and "c-1" not in stored
    # What the target got and what the reports show is the redacted answer, in record mode too.
    assert "desk.lead@acme.example" not in results_text(git_repo)

    # Another customer's email and id are redacted to the same request: the same key, a hit.
    write_datasets(git_repo, {"support/acme/refund": scenario("bob@else.example", "c-2")}, None)
    replay = do_run(git_repo, execution="replayed")
    assert replay.rc == 0, replay.out + replay.err
    assert "[cache hit]" in replay.out
    assert "desk.lead@acme.example" not in results_text(git_repo)

    clean = run_cachelint(git_repo, "check", "--no-cache", env={"CACHELINT_NOW": RUN_NOW})
    assert "eval-cache-unredacted" not in clean.stdout, clean.stdout


def test_check_reports_an_entry_recorded_before_the_rule_masked(git_repo: Path) -> None:
    repo_with(git_repo, "")
    recorded, calls = record(git_repo, SCRIPT)  # recorded; its assertion fails unredacted
    assert recorded.rc == 1 and calls == 1, recorded.out + recorded.err
    pyproject = git_repo / "pyproject.toml"
    pyproject.write_text(pyproject.read_text("utf-8") + RULES, "utf-8")
    checked = run_cachelint(git_repo, "check", "--no-cache", env={"CACHELINT_NOW": RUN_NOW})
    out = checked.stdout
    assert checked.returncode == 1, out + checked.stderr
    assert out.count("eval-cache-unredacted") == 3, out  # the email twice, the customer id once
    assert "entry.json" in out and "contents.data" in out
    assert "redaction rule 'email' removes (ja… (21 characters))" in out, out
    assert "the value at $.options.user" in out
    assert "jane.doe@corp.example" not in out and "desk.lead@acme.example" not in out


def test_a_redaction_rule_change_makes_the_stamp_stale(git_repo: Path) -> None:
    repo_with(git_repo, RULES)
    recorded, _ = record(git_repo, SCRIPT)
    assert recorded.rc == 0, recorded.out + recorded.err
    env = {"CACHELINT_NOW": RUN_NOW}
    assert run_cachelint(git_repo, "stamp", env=env).returncode == 0
    stamp = json.loads((git_repo / "eval-cache/.eval-cache-stamp.json").read_text("utf-8"))
    assert len(stamp["redactions"]) == 64 and "normalisers" not in stamp
    clean = run_cachelint(git_repo, "stamp", "--check", env=env)
    assert "eval-cache-normalisers-changed" not in clean.stdout, clean.stdout

    pyproject = git_repo / "pyproject.toml"
    pyproject.write_text(pyproject.read_text("utf-8").replace('"[email]"', '"<email>"'), "utf-8")
    stale = run_cachelint(git_repo, "stamp", "--check", env=env)
    assert stale.returncode == 1, stale.stdout + stale.stderr
    assert "the redaction rules changed since `cachelint stamp`" in stale.stdout


def test_a_bad_redaction_rule_is_one_line(git_repo: Path) -> None:
    cases = [
        ('redact = [{ name = "x", regex = "[a-z]+", replace = "mask" }]\n', "its own 'replace'"),
        ('redact = [{ name = "x", path = "$.a", in = "reply" }]\n', "'in' must be one of"),
        ('redact = [{ name = "x", regex = "(" }]\n', "not a valid RE2 pattern"),
    ]
    for rules, message in cases:
        repo_with(git_repo, "")
        pyproject = git_repo / "pyproject.toml"
        text = pyproject.read_text("utf-8")
        pyproject.write_text(text.replace("[tool.cachelint]\n", "[tool.cachelint]\n" + rules))
        done = run_cachelint(git_repo, "run")
        assert done.returncode == 2, (rules, done.stdout + done.stderr)
        assert done.stderr.count("\n") == 1 and "'redact'" in done.stderr, done.stderr
        assert message in done.stderr, done.stderr


EVAL_TEST = """
import openai
import pytest


@pytest.mark.eval
def test_refund(cachelint):
    sdk = openai.OpenAI(base_url=cachelint.base_url, api_key=cachelint.api_key,
                        http_client=cachelint.http_client(), max_retries=0)
    answer = sdk.chat.completions.create(
        model="bot-model", messages=[{"role": "user", "content": "I am EMAIL. Refunds?"}])
    assert "write to [email] for help" in answer.choices[0].message.content
"""


def inner_pytest(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    quiet = ["-p", "no:cacheprovider", "-p", "no:langsmith_plugin", "-p", "no:hypothesispytest"]
    return subprocess.run(
        [sys.executable, "-m", "pytest", *quiet, "-q", "-m", "eval", *args],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(PROJECT), "CACHELINT_NOW": RUN_NOW},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_pytest_plugin_records_redacted_and_replays(git_repo: Path) -> None:
    pyproject = git_repo / "pyproject.toml"
    pyproject.write_text(
        "[tool.cachelint]\n[tool.cachelint.target]\n"
        f'url = "{DEAD}"\nprovider = "cachelint-fake"\nmodel = "scripted-v1"\n'
        'api-key-env = "CACHELINT_TEST_KEY"\n' + RULES,
        encoding="utf-8",
    )
    (git_repo / "tests").mkdir()
    source = git_repo / "tests/test_bot.py"
    source.write_text(EVAL_TEST.replace("EMAIL", "jane.doe@corp.example"), "utf-8")
    text = pyproject.read_text("utf-8")
    with fake_server(SCRIPT) as fake:
        pyproject.write_text(text.replace(DEAD, fake.url), encoding="utf-8")
        recorded = inner_pytest(git_repo, "--cachelint-cache", "auto")
        pyproject.write_text(text, encoding="utf-8")
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    stored = cache_text(git_repo)
    assert "I am [email]. Refunds?" in stored and "write to [email] for help" in stored
    assert "@corp.example" not in stored and "@acme.example" not in stored

    source.write_text(EVAL_TEST.replace("EMAIL", "bob@else.example"), "utf-8")
    replay = inner_pytest(git_repo)
    assert replay.returncode == 0, replay.stdout + replay.stderr
