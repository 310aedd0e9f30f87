"""The `pass` policy of a scenario's trials, through `cachelint run` on entries recorded through
the fake provider (three trials: two right answers, one wrong)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cachelint
from tests.fakes import fake_server
from tests.helpers import DEAD, write_datasets, write_repo
from tests.test_pytest_plugin import inner_pytest

SCRIPT: dict[str, Any] = {
    "rules": [{"match": {}, "reply": {"content": "yes"}, "times": 2}],
    "default": {"content": "no"},
}


def _scenario(policy: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "input": "Ok?",
        "trials": 3,
        "assert": [{"type": "contains", "value": "yes"}],
    }
    return {**data, "pass": policy} if policy is not None else data


@pytest.fixture
def recorded(git_repo: Path) -> Path:
    write_repo(git_repo, DEAD, {"a/b/c": _scenario({"at-least": 2})})
    pyproject = git_repo / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    with fake_server(SCRIPT) as fake:
        pyproject.write_text(text.replace(DEAD, fake.url), encoding="utf-8")
        try:
            done = run_cachelint(git_repo, "run", "--refresh-cache", "--execution", "record")
        finally:
            pyproject.write_text(text, encoding="utf-8")
    assert done.returncode == 0, done.stdout + done.stderr
    return git_repo


@pytest.mark.parametrize(
    ("policy", "rc", "shown"),
    [
        ({"at-least": 2}, 0, "PASS  a/b/c  2/3 trials (67%; pass at least 2: pass pass FAIL)"),
        ({"rate": 0.6}, 0, "pass rate 0.6: pass pass FAIL"),
        ({"rate": 0.8}, 1, "FAIL  a/b/c  2/3 trials (67%; pass rate 0.8: pass pass FAIL)"),
        ("all", 1, "pass all: pass pass FAIL"),
        (None, 1, "pass all: pass pass FAIL"),
    ],
)
def test_the_policy_decides_the_scenario_and_the_report_shows_each_trial(
    recorded: Path, policy: Any, rc: int, shown: str
) -> None:
    write_datasets(recorded, {"a/b/c": _scenario(policy)}, None)
    done = run_cachelint(recorded, "run", "--execution", "replay")
    assert done.returncode == rc, done.stdout + done.stderr
    assert shown in done.stdout
    assert "trial 2: contains: contains 'yes': not found" in done.stdout
    record = json.loads((recorded / "eval-results/replay/a/b/c.json").read_text("utf-8"))
    assert [t["passed"] for t in record["trials"]] == [True, True, False]
    assert record["passed"] is (rc == 0)
    green = run_cachelint(recorded, "green", "--from-results", "eval-results/replay")
    assert "disagrees" not in green.stdout + green.stderr


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ({"at-least": 4}, "at-least 4 is more than the 3 trial(s)"),
        ({"at-least": 0}, 'expected "all", {"at-least": k}'),
        ({"rate": 1.5}, "(0 < r <= 1)"),
        ("most", 'expected "all"'),
    ],
)
def test_a_bad_policy_is_one_line_naming_the_field(
    recorded: Path, policy: Any, message: str
) -> None:
    write_datasets(recorded, {"a/b/c": _scenario(policy)}, None)
    done = run_cachelint(recorded, "run")
    assert done.returncode == 2
    assert "eval-datasets/a/b/c.json: field 'pass'" in done.stderr and message in done.stderr


def _default(repo: Path, line: str) -> None:
    """`line` (a `trials-pass = ...`) under [tool.cachelint]."""
    pyproject = repo / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    pyproject.write_text(text.replace("[tool.cachelint]\n", f"[tool.cachelint]\n{line}\n", 1))


@pytest.mark.parametrize(
    ("line", "policy", "rc", "shown"),
    [
        ("trials-pass = { at-least = 2 }", None, 0, "pass at least 2: pass pass FAIL"),
        ("trials-pass = { rate = 0.6 }", None, 0, "pass rate 0.6: pass pass FAIL"),
        ('trials-pass = "all"', None, 1, "pass all: pass pass FAIL"),
        # The dataset's own `pass` overrides the config's default, either way.
        ("trials-pass = { at-least = 2 }", "all", 1, "pass all: pass pass FAIL"),
        ("trials-pass = { rate = 0.8 }", {"at-least": 2}, 0, "pass at least 2: pass pass FAIL"),
    ],
)
def test_the_configs_trials_pass_is_the_default_a_datasets_pass_overrides(
    recorded: Path, line: str, policy: Any, rc: int, shown: str
) -> None:
    _default(recorded, line)
    write_datasets(recorded, {"a/b/c": _scenario(policy)}, None)
    done = run_cachelint(recorded, "run", "--execution", "replay", "--format", "text")
    assert done.returncode == rc, done.stdout + done.stderr
    assert shown in done.stdout
    record = json.loads((recorded / "eval-results/replay/a/b/c.json").read_text("utf-8"))
    assert record["pass_policy"] == shown.split(":")[0].removeprefix("pass ")
    as_json = run_cachelint(recorded, "run", "--execution", "again", "--format", "json")
    [scenario] = json.loads(as_json.stdout)["scenarios"]
    assert scenario["pass_policy"] == record["pass_policy"]
    green = run_cachelint(recorded, "green", "--from-results", "eval-results/replay")
    assert "disagrees" not in green.stdout + green.stderr


def test_a_default_of_at_least_k_asks_fewer_trials_for_every_one(recorded: Path) -> None:
    """A suite-wide at-least 2 over a one-trial run (`--trials 1`, or a one-trial dataset) asks
    for that trial, and the reports name the policy applied: all."""
    _default(recorded, "trials-pass = { at-least = 2 }")
    write_datasets(recorded, {"a/b/c": _scenario(None)}, None)
    done = run_cachelint(recorded, "run", "--execution", "one", "--trials", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    record = json.loads((recorded / "eval-results/one/a/b/c.json").read_text("utf-8"))
    assert record["pass_policy"] == "all" and record["passed"] is True


@pytest.mark.parametrize(
    "line",
    ['trials-pass = "most"', "trials-pass = { at-least = 0 }", "trials-pass = { rate = 1.5 }"],
)
def test_a_bad_trials_pass_is_one_config_line(recorded: Path, line: str) -> None:
    _default(recorded, line)
    done = run_cachelint(recorded, "run")
    assert done.returncode == 2, done.stdout + done.stderr
    [message] = done.stderr.strip().splitlines()
    assert "pyproject.toml [tool.cachelint]: key 'trials-pass'" in message
    assert 'expected "all", { at-least = k }' in message


# ---- through the pytest plugin: `@pytest.mark.eval(trials=n, pass_=...)` ----------------------

EVAL_TEST = """
import pytest


@pytest.mark.eval(MARKER)
def test_ok(cachelint):
    answer = cachelint.chat([{"role": "user", "content": "Ok?"}], model="bot-model")
    assert "yes" in answer["choices"][0]["message"]["content"], "not a yes"
"""


def _plugin_repo(repo: Path, marker: str) -> Path:
    (repo / "pyproject.toml").write_text(
        f'[tool.cachelint]\n[tool.cachelint.target]\nurl = "{DEAD}"\nprovider = "cachelint-fake"'
        '\nmodel = "scripted-v1"\napi-key-env = "CACHELINT_TEST_KEY"\n',
        encoding="utf-8",
    )
    (repo / "tests").mkdir(exist_ok=True)
    (repo / "tests/test_ok.py").write_text(EVAL_TEST.replace("MARKER", marker), "utf-8")
    return repo


@pytest.fixture
def plugin_recorded(git_repo: Path) -> Path:
    _plugin_repo(git_repo, 'trials=3, pass_={"at-least": 2}')
    pyproject = git_repo / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    with fake_server(SCRIPT) as fake:
        pyproject.write_text(text.replace(DEAD, fake.url), encoding="utf-8")
        done = inner_pytest(git_repo, "-m", "eval", "--cachelint-cache", "auto")
        pyproject.write_text(text, encoding="utf-8")
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(fake.bodies) == 3  # one call per trial, each its own key
    assert "2/3 trials (67%; pass at least 2: pass pass FAIL)" in done.stdout
    return git_repo


@pytest.mark.parametrize(
    ("line", "marker", "rc", "shown"),
    [
        ("", "trials=3", 1, "pass all: pass pass FAIL"),
        ("trials-pass = { at-least = 2 }", "trials=3", 0, "pass at least 2: pass pass FAIL"),
        ("trials-pass = { rate = 0.6 }", "trials=3", 0, "pass rate 0.6: pass pass FAIL"),
        # The marker's own `pass_` overrides the config's default.
        ("trials-pass = { at-least = 2 }", 'trials=3, pass_="all"', 1, "pass all: pass"),
        ('trials-pass = "all"', 'trials=3, pass_={"rate": 0.6}', 0, "pass rate 0.6: pass"),
    ],
)
def test_the_pytest_plugin_runs_a_tests_trials_under_the_policy(
    plugin_recorded: Path, line: str, marker: str, rc: int, shown: str
) -> None:
    _plugin_repo(plugin_recorded, marker)
    if line:
        _default(plugin_recorded, line)
    done = inner_pytest(plugin_recorded, "-m", "eval")
    assert done.returncode == rc, done.stdout + done.stderr
    assert f"tests/test_ok.py::test_ok: 2/3 trials (67%; {shown}" in done.stdout
    if rc:
        assert "trial 2: AssertionError: not a yes" in done.stdout or "trial 2: not a yes" in (
            done.stdout
        )


def test_a_trial_that_misses_fails_the_test_whatever_the_policy(plugin_recorded: Path) -> None:
    _plugin_repo(plugin_recorded, 'trials=4, pass_={"at-least": 2}')
    done = inner_pytest(plugin_recorded, "-m", "eval")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "cache miss in replay mode" in done.stdout and "trial: 1 -> 3" in done.stdout
    assert "During handling" not in done.stdout


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        ("trials=0", "trials=0: expected an integer, 1 to 100"),
        ('trials=3, pass_={"at-least": 4}', "at-least 4 is more than the 3 trial(s)"),
        ('trials=3, pass_="most"', 'expected "all", {"at-least": k}'),
        ("trial=3", "unknown argument 'trial'"),
    ],
)
def test_a_bad_eval_marker_fails_its_test_with_one_line(
    plugin_recorded: Path, marker: str, message: str
) -> None:
    _plugin_repo(plugin_recorded, marker)
    done = inner_pytest(plugin_recorded, "-m", "eval")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "tests/test_ok.py::test_ok: @pytest.mark.eval" in done.stdout
    assert message in done.stdout and "Traceback" not in done.stdout
