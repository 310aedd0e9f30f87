"""Key normalisers (issue 43, item 5): `normalise` rules rewrite each request before it is keyed,
through `cachelint run` and the pytest plugin on entries recorded through the fake provider; the
stamp carries their digest, so `check` reports a tree stamped under other rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import run_cachelint
from tests.helpers import (
    DEAD,
    RUN_NOW,
    do_run,
    record,
    recorded_entries,
    write_datasets,
    write_repo,
)

PINS = "[project]\nname = 'x'\nversion = '0'\ndependencies = ['cachelint==0.1.0']\n"
SCRIPT: dict[str, Any] = {"rules": [], "default": {"content": "refunds within 30 days"}}
DATE_RULE = (
    "normalise = [\n"
    "  { name = \"today\", regex = 'Today is \\d{4}-\\d{2}-\\d{2}', "
    'replace = "Today is <DATE>" },\n'
    '  { name = "user", path = "$.options.user" },\n'
    "]\n"
)


def scenario(day: str, user: str) -> dict[str, Any]:
    return {
        "input": f"Today is 2026-12-{day}. How do refunds work?",
        "options": {"user": user, "temperature": 0},
        "assert": [{"type": "contains", "value": "refunds within"}],
    }


def repo_with(repo: Path, rules: str) -> None:
    write_repo(repo, DEAD, {"support/acme/refund": scenario("02", "u-1")})
    pyproject = repo / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    rules = "[tool.cachelint]\n" + rules
    pyproject.write_text(PINS + text.replace("[tool.cachelint]\n", rules), "utf-8")


def test_a_date_and_a_user_id_normalised_hit_the_same_entry(git_repo: Path) -> None:
    repo_with(git_repo, DATE_RULE)
    recorded, calls = record(git_repo, SCRIPT)
    assert recorded.rc == 0 and calls == 1, recorded.out + recorded.err
    (entry,) = recorded_entries(git_repo)
    stored = json.dumps(entry)
    assert "Today is <DATE>. How do refunds work?" in stored and "2026-12-02" not in stored
    assert "u-1" not in stored and '"temperature": 0' in stored

    write_datasets(git_repo, {"support/acme/refund": scenario("03", "u-2")}, None)
    replay = do_run(git_repo, execution="next-day")
    assert replay.rc == 0, replay.out + replay.err
    assert "[cache hit]" in replay.out

    # Without the rules the next day's request is another key: a miss.
    pyproject = git_repo / "pyproject.toml"
    pyproject.write_text(pyproject.read_text("utf-8").replace(DATE_RULE, ""), "utf-8")
    missed = do_run(git_repo, execution="unnormalised")
    assert missed.rc == 1 and "cache miss in replay mode" in missed.out


def test_a_normaliser_change_makes_the_stamp_stale(git_repo: Path) -> None:
    repo_with(git_repo, DATE_RULE)
    recorded, _ = record(git_repo, SCRIPT)
    assert recorded.rc == 0, recorded.out + recorded.err
    env = {"CACHELINT_NOW": RUN_NOW}
    assert run_cachelint(git_repo, "stamp", env=env).returncode == 0
    stamp = json.loads((git_repo / "eval-cache/.eval-cache-stamp.json").read_text("utf-8"))
    assert len(stamp["normalisers"]) == 64
    clean = run_cachelint(git_repo, "stamp", "--check", env=env)
    assert "eval-cache-normalisers-changed" not in clean.stdout, clean.stdout

    pyproject = git_repo / "pyproject.toml"
    text = pyproject.read_text("utf-8")
    pyproject.write_text(text.replace("Today is <DATE>", "Today is <DAY>"), "utf-8")
    stale = run_cachelint(git_repo, "stamp", "--check", env=env)
    assert stale.returncode == 1, stale.stdout + stale.stderr
    assert "eval-cache-normalisers-changed" in stale.stdout
    assert "the key normalisers changed since `cachelint stamp`" in stale.stdout

    pyproject.write_text(text.replace(DATE_RULE, ""), "utf-8")  # removing them is a change too
    removed = run_cachelint(git_repo, "stamp", "--check", env=env)
    assert "eval-cache-normalisers-changed" in removed.stdout


def test_a_bad_rule_is_one_line(git_repo: Path) -> None:
    cases = [
        ('normalise = [{ name = "x", regex = "(" }]\n', "not a valid RE2 pattern"),
        ('normalise = [{ name = "x", path = "options.user" }]\n', "starting with $"),
        ('normalise = [{ name = "x", regex = "a", path = "$.a" }]\n', "exactly one of"),
        ('normalise = [{ name = "x", regex = "a", replace = "\\\\9" }]\n', "'replace'"),
    ]
    for rules, message in cases:
        repo_with(git_repo, rules)
        done = run_cachelint(git_repo, "run")
        assert done.returncode == 2, (rules, done.stdout + done.stderr)
        assert done.stderr.count("\n") == 1 and "'normalise'" in done.stderr, done.stderr
        assert message in done.stderr, done.stderr


EVAL_TEST = """
import openai
import pytest

TODAY = "@DATE@"


@pytest.mark.eval
def test_refund(cachelint):
    sdk = openai.OpenAI(base_url=cachelint.base_url, api_key=cachelint.api_key,
                        http_client=cachelint.http_client(), max_retries=0)
    answer = sdk.chat.completions.create(
        model="bot-model", user=@USER@,
        messages=[{"role": "user", "content": f"Today is {TODAY}. How do refunds work?"}])
    assert "refunds within" in answer.choices[0].message.content
"""


def test_the_pytest_plugin_hits_the_entry_recorded_on_another_day(git_repo: Path) -> None:
    """A test whose prompt holds today's date (and a fresh user id) replays, the next day, the
    entry recorded the day before, through the plugin's fixture and a real SDK."""
    from tests.fakes import fake_server
    from tests.test_pytest_plugin import inner_pytest

    pyproject = git_repo / "pyproject.toml"
    target = (
        f'[tool.cachelint.target]\nurl = "{DEAD}"\nprovider = "cachelint-fake"\n'
        'model = "scripted-v1"\napi-key-env = "CACHELINT_TEST_KEY"\n'
    )
    pyproject.write_text("[tool.cachelint]\n" + DATE_RULE + target, encoding="utf-8")
    (git_repo / "tests").mkdir()
    source = git_repo / "tests/test_bot.py"

    def write_test(day: str, user: str) -> None:
        source.write_text(EVAL_TEST.replace("@DATE@", day).replace("@USER@", repr(user)), "utf-8")

    write_test("2026-12-02", "u-1")
    text = pyproject.read_text("utf-8")
    with fake_server(SCRIPT) as fake:
        pyproject.write_text(text.replace(DEAD, fake.url), encoding="utf-8")
        recorded = inner_pytest(git_repo, "-m", "eval", "--cachelint-cache", "auto")
        pyproject.write_text(text, encoding="utf-8")
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert len(fake.bodies) == 1
    (entry,) = recorded_entries(git_repo)
    stored = json.dumps(entry)
    assert "Today is <DATE>. How do refunds work?" in stored and "2026-12-02" not in stored
    assert "u-1" not in stored

    write_test("2026-12-03", "u-2")
    replay = inner_pytest(git_repo, "-m", "eval")
    assert replay.returncode == 0, replay.stdout + replay.stderr

    # Without the rules the next day's request is another key: the test fails on a miss.
    pyproject.write_text(text.replace(DATE_RULE, ""), "utf-8")
    missed = inner_pytest(git_repo, "-m", "eval")
    assert missed.returncode == 1 and "cache miss in replay mode" in missed.stdout
