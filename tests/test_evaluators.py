"""Custom Python evaluators: `cachelint.Metric`, ratings, gating, config interpretations, and
every way an evaluator can go wrong; then the recorded-call checks (latency-ms, cost) and the
bundled example's word-count evaluator."""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import FrozenInstanceError
from pathlib import Path
from typing import Any

import pytest

import cachelint
from cachelint.runner.metrics import Metric, Rating, interpret, metric_from
from cachelint.settings import parse_interpretations
from tests.conftest import PROJECT, commit_all, run_cachelint
from tests.helpers import DEAD, do_run, record, refund, result, write_repo
from tests.helpers import RUN_NOW as NOW


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CACHELINT_TEST_KEY", raising=False)
    monkeypatch.delenv("CACHELINT_EXECUTION", raising=False)
    monkeypatch.setenv("CACHELINT_NOW", NOW)


# ---- the Metric type ----------------------------------------------------------------------------


def test_metric_is_exported_frozen_and_validated() -> None:
    assert cachelint.Metric is Metric and cachelint.Rating is Rating
    metric = Metric("words", 12, "twelve words", "good")
    assert metric.rating is Rating.GOOD and metric.gating and not metric.failed
    with pytest.raises(FrozenInstanceError):
        metric.value = 3  # type: ignore[misc]
    with pytest.raises(ValueError, match="'rating' must be one of unknown, unacceptable"):
        Metric("words", 1, rating="fine")
    with pytest.raises(ValueError, match="'value' must be a number, a boolean or a string"):
        Metric("words", [1])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("returned", "message"),
    [
        ([1], "returned list; return a cachelint.Metric or a dict"),
        ({"name": "x"}, "returned a dict without 'value'"),
        ({"name": "x", "value": 1, "score": 2}, "returned unknown key(s) 'score'"),
        ({"name": "x", "value": 1, "failed": "yes"}, "'failed' must be true or false"),
        ({"name": "", "value": 1}, "'name' must be a non-empty string"),
    ],
)
def test_malformed_returns_say_what_is_wrong(returned: Any, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        metric_from(returned)


def test_config_interpretation_rates_an_unrated_numeric_metric() -> None:
    rules = parse_interpretations(
        {"words": {"exceptional": [6, 50], "good": [1, 100], "fail-at": "poor"}}
    )
    rated = interpret(Metric("words", 30), rules)
    assert rated.rating is Rating.EXCEPTIONAL and not rated.failed
    assert rated.reason == "rated exceptional by interpretations.words in the config"
    assert interpret(Metric("words", 80), rules).rating is Rating.GOOD
    outside = interpret(Metric("words", 500, "long"), rules)
    assert outside.rating is Rating.UNACCEPTABLE and outside.failed
    # The evaluator's own rating wins; other metric names and non-numbers are left alone.
    assert interpret(Metric("words", 500, rating="good"), rules).rating is Rating.GOOD
    assert interpret(Metric("other", 500), rules).rating is Rating.UNKNOWN
    assert interpret(Metric("words", True), rules).rating is Rating.UNKNOWN


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"words": {"great": [1, 2]}}, "a rating (unacceptable, poor"),
        ({"words": {"good": [5, 1]}}, "min 5 is above max 1"),
        ({"words": {"good": 3}}, "an inclusive range [min, max]"),
        ({"words": {"fail-at": "poor"}}, "at least one rating range"),
        ({"words": {"good": [1, 2], "fail-at": "unknown"}}, "fail-at: one of unacceptable"),
    ],
)
def test_bad_interpretations_are_config_errors(
    git_repo: Path, table: dict[str, Any], message: str
) -> None:
    lines = ["[tool.cachelint.interpretations.words]"]
    for key, value in table["words"].items():
        lines.append(f"{key} = {json.dumps(value)}")
    (git_repo / "pyproject.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (git_repo / "eval-datasets").mkdir()
    proc = run_cachelint(git_repo, "run")
    assert proc.returncode == 2
    assert "key 'interpretations'" in proc.stderr and message in proc.stderr
    assert proc.stderr.count("\n") == 1


# ---- evaluators in a run ------------------------------------------------------------------------

EVALUATORS = """
from cachelint import Metric


def words(scenario, output, options):
    count = len(output.text.split())
    limit = options.get("max", 100)
    return Metric("words", count, f"{count} words", "good" if count <= limit else "poor",
                  count > limit, options.get("gating", True))


def plain(scenario, output, options):
    return {"name": "chars", "value": len(output.text), "reason": scenario.identity}


def boom(scenario, output, options):
    raise RuntimeError("the evaluator broke\\nsecond line")


def nothing(scenario, output, options):
    return None


def parsed(scenario, output, options):
    return {"name": "json", "value": output.json is not None, "rating": "good"}
"""


def with_asserts(*extra: Mapping[str, Any]) -> dict[str, Any]:
    return {"support/acme/refund": refund({"assert": list(extra)}, prompt="prompts/acme.md")}


def run_with(repo: Path, *asserts: Mapping[str, Any], config: str = "") -> Any:
    write_repo(repo, DEAD, with_asserts(*asserts), files={"myevals.py": EVALUATORS})
    if config:
        pyproject = repo / "pyproject.toml"
        text = pyproject.read_text(encoding="utf-8")
        pyproject.write_text(
            text.replace("[tool.cachelint.target]", config + "\n[tool.cachelint.target]"),
            encoding="utf-8",
        )
    recorded, _ = record(repo)
    return recorded


def test_a_rated_metric_is_reported_in_every_format(git_repo: Path) -> None:
    recorded = run_with(git_repo, {"type": "python", "function": "myevals:words", "max": 10})
    assert recorded.rc == 0, recorded.out
    replay = do_run(git_repo, junit=git_repo / "out/j.xml", html=git_repo / "out/r.html")
    assert replay.rc == 0, replay.out
    assert "    metric words = 5 (good)  5 words" in replay.out
    as_json = json.loads(do_run(git_repo, fmt="json").out)
    (trial,) = as_json["scenarios"][0]["trials"]
    assert trial["metrics"] == [
        {
            "name": "words",
            "value": 5,
            "reason": "5 words",
            "rating": "good",
            "failed": False,
            "gating": True,
        }
    ]
    assert trial["assertions"][0] == {
        "type": "python",
        "passed": True,
        "reason": "python myevals:words: words = 5 (good): 5 words",
    }
    assert result(git_repo, "support/acme/refund")["trials"][0]["metrics"][0]["rating"] == "good"
    out = ET.parse(git_repo / "out/j.xml").getroot().find(".//system-out")
    assert out is not None and "metric words = 5 (good) - 5 words" in (out.text or "")
    html = (git_repo / "out/r.html").read_text(encoding="utf-8")
    assert "<td>metric words</td><td>good</td><td>words = 5 (good): 5 words</td>" in html


def test_a_failed_metric_gates_unless_it_is_reported_only(git_repo: Path) -> None:
    failing = run_with(git_repo, {"type": "python", "function": "myevals:words", "max": 2})
    assert failing.rc == 1
    assert "FAIL  support/acme/refund" in failing.out
    assert "python: python myevals:words: words = 5 (poor, failed): 5 words" in failing.out
    reported = run_with(
        git_repo,
        {"type": "contains", "value": "refunds"},
        {"type": "python", "function": "myevals:words", "max": 2, "gating": False},
    )
    assert reported.rc == 0, reported.out
    assert "metric words = 5 (poor, failed, reported only)" in reported.out


def test_a_dict_return_with_defaults_and_the_parsed_json(git_repo: Path) -> None:
    outcome = run_with(
        git_repo,
        {"type": "python", "function": "myevals:plain"},
        {"type": "python", "function": "myevals:parsed"},
    )
    assert outcome.rc == 0, outcome.out
    assert "metric chars = 28 (unknown)  support/acme/refund" in outcome.out
    assert "metric json = false (good)" in outcome.out  # the answer is text, not JSON


def test_config_interpretation_rates_and_gates_in_a_run(git_repo: Path) -> None:
    config = "[tool.cachelint.interpretations.chars]\ngood = [1, 10]\n"
    outcome = run_with(git_repo, {"type": "python", "function": "myevals:plain"}, config=config)
    assert outcome.rc == 1
    assert (
        "chars = 28 (unacceptable, failed): support/acme/refund; rated unacceptable by "
        "interpretations.chars in the config" in outcome.out
    )


@pytest.mark.parametrize(
    ("function", "reason"),
    [
        (
            "myevals:boom",
            "python myevals:boom: the evaluator raised RuntimeError: the evaluator broke",
        ),
        ("myevals:nothing", "python myevals:nothing: returned NoneType; return a cachelint.Metric"),
    ],
)
def test_an_evaluator_that_raises_or_returns_junk_fails_the_scenario(
    git_repo: Path, function: str, reason: str
) -> None:
    outcome = run_with(git_repo, {"type": "python", "function": function})
    assert outcome.rc == 1
    assert f"    python: {reason}" in outcome.out
    assert "Traceback" not in outcome.out + outcome.err


@pytest.mark.parametrize(
    ("function", "message"),
    [
        ("nosuchmodule:f", "cannot import module 'nosuchmodule'"),
        ("myevals:missing", "module 'myevals' has no callable 'missing'"),
    ],
)
def test_an_evaluator_that_cannot_be_loaded_is_a_usage_error(
    git_repo: Path, function: str, message: str
) -> None:
    write_repo(
        git_repo,
        DEAD,
        with_asserts({"type": "python", "function": function}),
        files={"myevals.py": EVALUATORS},
    )
    proc = run_cachelint(git_repo, "run")
    assert proc.returncode == 2
    assert proc.stderr.startswith(
        "cachelint: error: eval-datasets/support/acme/refund.json: assert[0]: function"
    )
    assert message in proc.stderr and proc.stderr.count("\n") == 1


# ---- latency-ms and cost against the recorded calls ---------------------------------------------


def test_cost_from_recorded_usage_and_the_price_table(git_repo: Path) -> None:
    prices = '[tool.cachelint.prices]\n"scripted-v1" = { input = 1000.0, output = 2000.0 }\n'
    within = run_with(git_repo, {"type": "cost", "max": 1}, config=prices)
    assert within.rc == 0, within.out
    replay = do_run(git_repo, fmt="json")
    (assertion,) = json.loads(replay.out)["scenarios"][0]["trials"][0]["assertions"]
    assert assertion["passed"], assertion
    assert assertion["reason"].startswith("cost (max $1): $0.")
    over = run_with(git_repo, {"type": "cost", "max": 0.0001}, config=prices)
    assert over.rc == 1 and ", over" in over.out
    unpriced = run_with(git_repo, {"type": "cost", "max": 1})
    assert unpriced.rc == 1
    assert (
        "no price for model 'scripted-v1' in [tool.cachelint.prices] (priced: none)" in unpriced.out
    )


def test_latency_is_checked_on_live_calls_and_not_measured_on_replay(git_repo: Path) -> None:
    spec = {"type": "latency-ms", "max": 50}
    write_repo(git_repo, DEAD, with_asserts({"type": "contains", "value": "refunds"}, spec))
    script = {
        "rules": [],
        "default": {"reply": {"content": "Acme refunds within 30 days."}, "delay_ms": 300},
    }
    slow, _ = record(git_repo, script)
    assert slow.rc == 1 and "latency-ms (max 50): " in slow.out and ", over" in slow.out
    replay = do_run(git_repo)
    assert replay.rc == 0, replay.out  # only the latency check failed, and a hit has none
    replay_json = json.loads(do_run(git_repo, fmt="json").out)
    reasons = [a["reason"] for a in replay_json["scenarios"][0]["trials"][0]["assertions"]]
    assert "latency-ms (max 50): not measured, every call was replayed from the cache" in reasons


# ---- the bundled example ------------------------------------------------------------------------


def bundled_copy(repo: Path) -> None:
    for name in ("pyproject.toml", "evals.py", ".gitattributes", ".eval-green.json"):
        shutil.copy2(PROJECT / name, repo / name)
    for name in ("eval-cache", "eval-datasets", "prompts", "examples"):
        shutil.copytree(PROJECT / name, repo / name, ignore=shutil.ignore_patterns("__pycache__"))
    (repo / ".gitignore").write_text("/eval-results/\n__pycache__/\n", encoding="utf-8")
    commit_all(repo, "the bundled example")


def test_the_bundled_word_count_evaluator_rates_every_scenario_and_gates(git_repo: Path) -> None:
    bundled_copy(git_repo)
    proc = run_cachelint(git_repo, "run", "--format", "json", env={"CACHELINT_NOW": ""})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    scenarios = json.loads(proc.stdout)["scenarios"]
    # One scenario per dataset and target: the triage datasets run as a two-target matrix.
    pairs = sum(
        len(json.loads(f.read_bytes()).get("targets") or [None])
        for f in (PROJECT / "eval-datasets").rglob("*.json")
    )
    assert len(scenarios) == pairs
    for s in scenarios:
        (metric,) = s["trials"][0]["metrics"]
        assert metric["name"] == "words" and metric["rating"] == "good", s["scenario"]
    # Tighten one bound: the evaluator rates the answer unacceptable and the scenario fails.
    path = git_repo / "eval-datasets/support/acme/refund.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["assert"][-1]["max"] = 10
    path.write_text(json.dumps(data), encoding="utf-8")
    failing = run_cachelint(git_repo, "run")
    assert failing.returncode == 1
    assert "FAIL  support/acme/refund" in failing.stdout
    assert (
        "words = 34 (unacceptable, failed): the response has 34 words, not between 6 and 10"
        in failing.stdout
    )
