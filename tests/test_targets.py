"""Named targets in the config: per-agent targets, the judges' target and custom judge metrics."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from cachelint.config import from_table
from cachelint.errors import ConfigError
from tests.fakes import fake_server
from tests.helpers import DEAD, do_run, network_blocked, result
from tests.helpers import RUN_NOW as NOW
from tests.helpers import write_targets_repo as write_repo

SCRIPT = {
    "rules": [
        {
            "match": {"any_contains": "Metric: politeness", "model": "judge-model"},
            "reply": {"json": {"score": 4, "reason": "courteous"}},
        },
        {
            "match": {"any_contains": "Metric: relevance", "model": "judge-model"},
            "reply": {"json": {"score": 5, "reason": "on topic"}},
        },
    ],
    "default": {"content": "Refunds take 30 days."},
}

CONFIG = f"""
    [tool.cachelint.target]
    url = "{DEAD}"
    provider = "cachelint-fake"
    model = "agent-model"
    api-key-env = "CACHELINT_TEST_KEY"

    [tool.cachelint.targets.judge-model]
    url = "{DEAD}"
    provider = "cachelint-fake"
    model = "judge-model"
    api-key-env = "CACHELINT_TEST_KEY"

    [tool.cachelint.judge]
    target = "judge-model"
    [tool.cachelint.judge.metrics]
    politeness = "Politeness: is the reply courteous?\\n5 = warm\\n1 = rude"
"""


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CACHELINT_TEST_KEY", raising=False)
    monkeypatch.setenv("CACHELINT_NOW", NOW)


def test_judges_run_on_their_own_target_with_custom_metrics(git_repo: Path) -> None:
    scenario = {
        "input": "How do refunds work?",
        "assert": [{"type": "contains", "value": "30 days"}],
        "judge": ["relevance", "politeness"],
    }
    write_repo(git_repo, targets=CONFIG, scenarios={"support/acme/refund": scenario})
    pyproject = git_repo / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    with fake_server(SCRIPT) as fake:
        pyproject.write_text(text.replace(DEAD, fake.url), encoding="utf-8")
        recorded = do_run(git_repo, refresh=True)
        pyproject.write_text(text, encoding="utf-8")
    assert recorded.rc == 0, recorded.out + recorded.err
    assert [b["model"] for b in fake.bodies] == ["agent-model", "judge-model", "judge-model"]
    assert "Politeness: is the reply courteous?" in fake.bodies[2]["messages"][0]["content"]
    with network_blocked() as attempts:
        replay = do_run(git_repo)
    assert replay.rc == 0 and attempts == [], replay.out
    judges = result(git_repo, "support/acme/refund")["trials"][0]["judges"]
    assert [(j["metric"], j["score"]) for j in judges] == [("relevance", 5), ("politeness", 4)]


def test_a_dataset_judge_metric_must_be_built_in_or_configured(git_repo: Path) -> None:
    scenario = {"input": "q", "assert": [{"type": "contains", "value": "x"}], "judge": ["tone"]}
    write_repo(git_repo, targets=CONFIG, scenarios={"support/acme/refund": scenario})
    from cachelint.errors import CachelintError

    with pytest.raises(CachelintError) as err:
        do_run(git_repo)
    assert "field 'judge[0]': unknown metric 'tone'" in str(err.value)
    assert "[tool.cachelint.judge.metrics]" in str(err.value)


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        ('[targets.default]\nmodel = "m"', "[targets.default]: target name 'default' is reserved"),
        ('[targets.a]\ncolour = "red"', "[targets.a]: unknown key 'colour'"),
        ('[targets.a]\ntype = "command"', "type 'command' needs command = ["),
        ('[agents.support]\ntarget = "nope"', "[agents.support]: target = 'nope' names no target"),
        ('[agents.support]\nmodel = "m"', 'expected exactly one key, target = "NAME"'),
        ('[judge]\ntarget = "nope"', "[judge]: target = 'nope' names no target"),
        ('[judge.metrics]\nrelevance = "x"', "metric 'relevance' is a built-in"),
        ("[judge.metrics]\ntone = 3", "metric 'tone': expected its rubric text"),
    ],
)
def test_bad_target_tables_are_one_line_config_errors(toml: str, expected: str) -> None:
    import tomli  # test extra; the stdlib's tomllib is 3.11+ only

    table = tomli.loads(textwrap.dedent(toml))
    with pytest.raises(ConfigError) as err:
        from_table(Path("."), table, "cachelint.toml")
    assert expected in str(err.value)
    assert str(err.value).startswith("cachelint.toml")
