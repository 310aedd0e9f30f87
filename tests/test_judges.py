"""Judge prompts (rubric + conversation + response, byte-stable) and reading the judge's score."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cachelint.canonical import cache_key
from cachelint.runner.dataset import Scenario, load_scenarios
from cachelint.runner.judges import JUDGE_OPTIONS, METRICS, judge_messages, parse_score, rubric
from cachelint.runner.output import Output, ToolCall
from cachelint.runner.request import build_request
from tests.conftest import RUN_NOW, commit_all, run_cachelint
from tests.helpers import DEAD, record, refund, result, write_repo


def make_scenario() -> Scenario:
    return Scenario(
        identity="support/acme/refund",
        path="eval-datasets/support/acme/refund.json",
        agent="support",
        tenant="acme",
        messages=(
            {"role": "system", "content": "You are Acme's support agent."},
            {"role": "user", "content": "Can I get a refund for order 42?"},
        ),
        system_source=None,
        options={},
        tools=(),
        assertions=({"type": "contains", "value": "refund"},),
        judges=("relevance",),
        trials=1,
        tags=(),
        description=None,
    )


OUTPUT = Output("Yes, order 42 is refundable within 30 days.", (ToolCall("lookup", {"id": 42}),))


@pytest.mark.parametrize("metric", sorted(METRICS))
def test_messages_hold_rubric_conversation_and_response(metric: str) -> None:
    messages = judge_messages(metric, make_scenario(), OUTPUT)
    assert [m["role"] for m in messages] == ["system", "user"]
    system, user = messages[0]["content"], messages[1]["content"]
    assert rubric(metric) in system
    assert '{"score": <integer 1-5>' in system
    assert "You are Acme's support agent." in user
    assert "Can I get a refund for order 42?" in user
    assert "Yes, order 42 is refundable within 30 days." in user
    assert '[tool call] lookup({"id": 42})' in user
    assert f"Metric: {metric}" in user


def test_metrics_get_distinct_prompts_and_stable_keys() -> None:
    def key(metric: str) -> str:
        return cache_key(
            build_request(
                provider="openai",
                model="judge",
                scenario="support/acme/refund",
                messages=judge_messages(metric, make_scenario(), OUTPUT),
                options=JUDGE_OPTIONS,
            )
        )

    keys = {m: key(m) for m in METRICS}
    assert len(set(keys.values())) == len(METRICS)
    assert keys == {m: key(m) for m in METRICS}  # no clock or randomness in the prompt
    other = judge_messages("relevance", make_scenario(), Output("No."))
    assert other != judge_messages("relevance", make_scenario(), OUTPUT)


def test_judge_options_are_deterministic() -> None:
    assert JUDGE_OPTIONS["temperature"] == 0


def test_empty_response_is_named() -> None:
    user = judge_messages("coherence", make_scenario(), Output(""))[1]["content"]
    assert "(empty response)" in user


def test_unknown_metric() -> None:
    with pytest.raises(ValueError, match="unknown judge metric 'vibes'; allowed: coherence"):
        judge_messages("vibes", make_scenario(), OUTPUT)


def test_judge_messages_from_a_loaded_scenario(tmp_path: Path) -> None:
    path = tmp_path / "eval-datasets/support/acme/refund.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"input": "Refund?", "system": "Be kind.", "judge": ["completeness"]}')
    [scenario] = load_scenarios(tmp_path, "eval-datasets")
    user = judge_messages(scenario.judges[0], scenario, Output("Sure"))[1]["content"]
    assert "<system>\nBe kind.\n</system>\n<user>\nRefund?\n</user>" in user


@pytest.mark.parametrize(
    ("text", "score", "reason"),
    [
        ('{"score": 4, "reason": "Answers the question."}', 4, "Answers the question."),
        ('```json\n{"score": 5, "reason": "Complete."}\n```', 5, "Complete."),
        ('Here is my rating: {"reason": "ok", "score": "3"} done.', 3, "ok"),
        ('{"score": 2.0, "explanation": "thin"}', 2, "thin"),
        ("Score: 3\nReason: Partly on topic.", 3, "Partly on topic."),
        ("**Score:** 4/5\nThe answer is clear.", 4, "The answer is clear."),
        ("The response is fine.\nscore = 5", 5, "The response is fine."),
    ],
)
def test_parse_score_reads_a_score(text: str, score: int, reason: str) -> None:
    assert parse_score(text) == (score, reason)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('{"score": 7, "reason": "great"}', "score 7 out of range 1-5; great"),
        ('{"score": 0}', "score 0 out of range 1-5"),
        ('{"score": 3.5}', "score 3.5 is not a whole number"),
        ('{"score": "high"}', 'score "high" is not a number'),
        ('{"score": true}', "score true is not a number"),
        ("Score: 9", "score 9 out of range 1-5"),
        ("Score: 8/10", "score given out of 10, expected out of 5"),
        ("I would rather not say.", 'no score found in judge reply (first 80 chars: "I would'),
        ("", "no score found"),
    ],
)
def test_parse_score_explains_a_missing_score(text: str, fragment: str) -> None:
    score, reason = parse_score(text)
    assert score is None
    assert fragment in reason


# ---- a judge call the cache cannot answer (issue 36.3) -----------------------------------------


def test_a_judge_miss_in_replay_fails_its_scenario_with_the_miss_explanation(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The target's answer replays, the judge asked of it was never recorded (a judge added to
    the dataset after the recording): the scenario fails with the miss, not "no score"."""
    monkeypatch.delenv("CACHELINT_TEST_KEY", raising=False)
    monkeypatch.setenv("CACHELINT_NOW", RUN_NOW)
    write_repo(git_repo, DEAD, {"support/acme/refund": refund(prompt="prompts/acme.md")})
    recorded, requests = record(git_repo)
    assert recorded.rc == 0 and requests == 1, recorded.out
    dataset = git_repo / "eval-datasets/support/acme/refund.json"
    data = json.loads(dataset.read_text(encoding="utf-8"))
    dataset.write_text(json.dumps({**data, "judge": ["relevance"]}), encoding="utf-8")
    commit_all(git_repo, "recorded, then a judge added")
    proc = run_cachelint(git_repo, "run", "--execution", "replay", env={"CACHELINT_NOW": RUN_NOW})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "judge relevance: cache miss in replay mode: scenario support/acme/refund" in proc.stdout
    trial = result(git_repo, "support/acme/refund", "replay")["trials"][0]
    assert trial["passed"] is False
    assert trial["error"].startswith("judge relevance: cache miss in replay mode")
    assert "to re-record: cachelint run" in trial["error"]
    assert [a["passed"] for a in trial["assertions"]] == [True]  # the answer itself passed
    assert trial["judges"][0]["score"] is None
