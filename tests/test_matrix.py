"""A target matrix: each scenario against several targets in one run, recorded and replayed per
(scenario, target) pair, gated per pair, reported per target in every format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cachelint.errors import CachelintError
from tests.helpers import DEAD, do_run, network_blocked, record, result
from tests.helpers import RUN_NOW as NOW
from tests.helpers import write_targets_repo as write_repo

# The big model answers the refund question right; the small one does not.
SCRIPT: dict[str, Any] = {
    "rules": [
        {"match": {"model": "small-model"}, "reply": {"content": "Ask the shop, it takes days."}},
    ],
    "default": {"content": "Refunds take 30 days."},
}


def targets(compare: str = "") -> str:
    return f"""
        {compare}
        [tool.cachelint.target]
        url = "{DEAD}"
        provider = "cachelint-fake"
        model = "big-model"
        api-key-env = "CACHELINT_TEST_KEY"

        [tool.cachelint.targets.small]
        url = "{DEAD}"
        provider = "cachelint-fake"
        model = "small-model"
        api-key-env = "CACHELINT_TEST_KEY"
        """


REFUND = {"input": "How do refunds work?", "assert": [{"type": "contains", "value": "30 days"}]}
SHIPPING = {"input": "Do you ship?", "assert": [{"type": "contains", "value": "days"}]}
SCENARIOS = {"support/acme/refund": REFUND, "support/acme/shipping": SHIPPING}
COMPARE = 'compare = ["default", "small"]'


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CACHELINT_TEST_KEY", raising=False)
    monkeypatch.setenv("CACHELINT_NOW", NOW)


def _entry_models(repo: Path, scenario: str) -> list[str]:
    found = (repo / "eval-cache" / "cache" / scenario).rglob("entry.json")
    return sorted(json.loads(p.read_text(encoding="utf-8"))["model"] for p in found)


def test_compare_records_and_replays_each_pair_and_gates_per_pair(git_repo: Path) -> None:
    write_repo(git_repo, targets=targets(COMPARE), scenarios=SCENARIOS)
    recorded, calls = record(git_repo, SCRIPT)
    assert calls == 4, recorded.out  # 2 scenarios x 2 targets
    assert recorded.rc == 1, recorded.out  # the small model fails the refund pair
    # Each pair is its own entry in its scenario's cache directory, keyed by its target's model.
    assert _entry_models(git_repo, "support/acme/refund") == ["big-model", "small-model"]

    with network_blocked() as attempts:
        replay = do_run(git_repo, fmt="json")
    assert attempts == [] and replay.rc == 1, replay.err
    report = json.loads(replay.out)
    assert {s["scenario"]: s["passed"] for s in report["scenarios"]} == {
        "support/acme/refund": True,
        "support/acme/refund@small": False,
        "support/acme/shipping": True,
        "support/acme/shipping@small": True,
    }
    matrix = report["matrix"]
    assert matrix["primary"] == "default"
    columns = {c["target"]: (c["model"], c["passed"], c["total"]) for c in matrix["targets"]}
    assert columns == {"default": ("big-model", 2, 2), "small": ("small-model", 1, 2)}
    row = matrix["scenarios"][0]
    assert row["scenario"] == "support/acme/refund"
    assert row["targets"]["small"]["passed"] is False
    assert set(row["targets"]["small"]) >= {"cost_usd", "latency_s", "tokens", "judges"}
    pair = result(git_repo, "support/acme/refund@small")
    assert (pair["origin"], pair["target"]) == ("support/acme/refund", "small")
    run_json = json.loads(next((git_repo / "eval-results").glob("*/run.json")).read_text())
    assert run_json["matrix"]["targets"][1]["pass_rate"] == 0.5


def test_the_text_report_shows_one_column_per_target(git_repo: Path) -> None:
    write_repo(git_repo, targets=targets(COMPARE), scenarios=SCENARIOS)
    record(git_repo, SCRIPT)
    replay = do_run(git_repo)
    assert "target matrix (2 targets, primary default):" in replay.out
    assert "default (big-model): 2/2 passed (100%)" in replay.out
    assert "small (small-model): 1/2 passed (50%)" in replay.out
    assert "    small    FAIL  " in replay.out


def test_the_matrix_shows_cost_only_when_some_call_is_priced(git_repo: Path) -> None:
    # With no prices every cost is unknown: no `at least $0.0000` per pair, in any format.
    write_repo(git_repo, targets=targets(COMPARE), scenarios=SCENARIOS)
    record(git_repo, SCRIPT)
    text = do_run(git_repo).out
    matrix = text.split("target matrix", 1)[1].split("summary by agent", 1)[0]
    assert "$" not in matrix and "cost" not in matrix
    markdown = do_run(git_repo, fmt="markdown").out
    table = markdown.split("### Target matrix", 1)[1].split("\n\n", 1)[0]
    assert "$" not in table and "cost" not in table
    pyproject = git_repo / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text(encoding="utf-8")
        + '\n[tool.cachelint.prices]\n"big-model" = { input = 2.5, output = 10 }\n',
        encoding="utf-8",
    )
    priced = do_run(git_repo).out
    assert "default (big-model): 2/2 passed (100%), cost $0." in priced
    assert (
        "small (small-model): 1/2 passed (50%), cost at least $0.0000 (2 calls unpriced" in priced
    )


def test_cli_targets_choose_the_primary_and_replay_the_same_entries(git_repo: Path) -> None:
    write_repo(git_repo, targets=targets(COMPARE), scenarios={"support/acme/shipping": SHIPPING})
    recorded, _ = record(git_repo, SCRIPT)
    assert recorded.rc == 0, recorded.out
    with network_blocked():
        replay = do_run(git_repo, targets=["small"])
    assert replay.rc == 0, replay.out + replay.err
    trial = result(git_repo, "support/acme/shipping")["trials"][0]
    assert trial["cache_hit"] is True and trial["calls"][0]["model"] == "small-model"
    assert "green record not updated" in replay.err  # --target is not the config's matrix


def test_a_dataset_lists_its_targets_and_a_miss_names_the_pair(git_repo: Path) -> None:
    matrixed = {**SHIPPING, "targets": ["small", "default"]}
    write_repo(git_repo, targets=targets(), scenarios={"support/acme/shipping": matrixed})
    replay = do_run(git_repo)
    assert replay.rc == 1
    error = result(git_repo, "support/acme/shipping@default")["trials"][0]["error"]
    assert "cachelint run --scenario support/acme/shipping --target default --refresh-cache" in (
        error
    )
    assert result(git_repo, "support/acme/shipping")["target"] == "small"  # the first is primary


def test_a_green_matrix_records_the_primary_identities(git_repo: Path) -> None:
    from tests.conftest import commit_all

    write_repo(git_repo, targets=targets(COMPARE), scenarios={"support/acme/shipping": SHIPPING})
    recorded, _ = record(git_repo, SCRIPT)
    assert recorded.rc == 0, recorded.out
    commit_all(git_repo)
    assert do_run(git_repo).rc == 0
    green = json.loads((git_repo / ".eval-green.json").read_text(encoding="utf-8"))
    assert "support/acme/shipping@small" not in json.dumps(green)


@pytest.mark.parametrize(
    ("compare", "scenario", "expected"),
    [
        ('compare = ["nope"]', SHIPPING, "compare: target = 'nope' names no target"),
        ('compare = ["small", "small"]', SHIPPING, "compare: a target is listed twice"),
        ("", {**SHIPPING, "targets": ["small"], "target": "small"}, "'target' (one target) or"),
        ("", {**SHIPPING, "targets": ["nope"]}, "field 'target' = 'nope' names no target"),
    ],
)
def test_a_bad_matrix_is_one_clear_error(
    git_repo: Path, compare: str, scenario: dict[str, Any], expected: str
) -> None:
    write_repo(git_repo, targets=targets(compare), scenarios={"support/acme/shipping": scenario})
    with pytest.raises(CachelintError) as err:
        do_run(git_repo)
    assert expected in str(err.value)


def test_two_targets_with_one_model_and_params_are_refused(git_repo: Path) -> None:
    same = targets(COMPARE).replace('model = "small-model"', 'model = "big-model"')
    write_repo(git_repo, targets=same, scenarios={"support/acme/shipping": SHIPPING})
    with pytest.raises(CachelintError) as err:
        do_run(git_repo)
    assert "have the same provider, model and params" in str(err.value)


def test_markdown_and_html_show_one_column_per_target(git_repo: Path) -> None:
    write_repo(git_repo, targets=targets(COMPARE), scenarios=SCENARIOS)
    record(git_repo, SCRIPT)
    page = git_repo / "eval-results" / "page.html"
    replay = do_run(git_repo, fmt="markdown", html=page)
    assert "### Target matrix (primary: default)" in replay.out
    assert "| scenario | default \\(big\\-model\\) | small \\(small\\-model\\) |" in replay.out
    assert "| **pass rate** | **2/2 (100%)** | **1/2 (50%)** |" in replay.out
    assert "| support/acme/refund | ✅ " in replay.out, replay.out and " | ❌ " in replay.out
    html = page.read_text(encoding="utf-8")
    assert 'data-testid="matrix"' in html and "<th>small (small-model)</th>" in html
    assert '<a href="#s-support/acme/refund@small"><span class="fail">FAIL' in html
    assert 'id="s-support/acme/refund@small"' in html
