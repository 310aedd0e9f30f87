"""Reports people read in CI, over the bundled example: Markdown and annotations, baselines, cost
and budget, shards merged into one green record (issue 16)."""

from __future__ import annotations

import io
import json
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from cachelint.commands.green import green
from cachelint.commands.report import report
from cachelint.runner.options import RunOptions
from cachelint.runner.pipeline import run
from cachelint.runner.reports.publishing import Extras
from tests.conftest import commit_all, git, run_cachelint
from tests.example import EXAMPLE_SCENARIOS, make_example_repo

ALL = len(EXAMPLE_SCENARIOS)  # scenarios of the bundled example

PRICES = """
[reports]
judge-good = 4
judge-average = 3
[prices]
scripted-v1 = { input = 2.5, output = 10 }
scripted-mini = { input = 0.5, output = 2 }
scripted-large = { input = 5, output = 20 }
"""


def with_config(repo: Path, extra: str) -> None:
    path = repo / "cachelint.toml"
    path.write_text(path.read_text(encoding="utf-8") + extra, encoding="utf-8")


def go(repo: Path, **kw: Any) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    rc = run(repo, RunOptions(**kw), out=out, err=err)
    return rc, out.getvalue(), err.getvalue()


def break_refund(repo: Path) -> None:
    """Make support/acme/refund fail offline: the assertion changes, the request does not."""
    path = repo / "eval-datasets/support/acme/refund.json"
    path.write_text(
        path.read_text(encoding="utf-8").replace('"30 days"', '"60 days"'), encoding="utf-8"
    )


@pytest.fixture
def example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.delenv("CACHELINT_EXECUTION", raising=False)
    repo = make_example_repo(tmp_path / "example")
    with_config(repo, PRICES)
    git(repo, "commit", "-q", "--no-gpg-sign", "--no-verify", "-am", "prices")
    return repo


def test_markdown_summary_is_appended_to_the_step_summary(
    example: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = tmp_path / "step-summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    break_refund(example)
    rc, out, _ = go(example, execution="md", fmt="markdown")
    assert rc == 1
    written = summary.read_text(encoding="utf-8")
    assert written == "earlier step\n" + out
    assert "| support/acme | 1/2 |" in out
    assert "- ❌ **support/acme/refund** (eval\\-datasets/support/acme/refund\\.json)" in out
    assert "contains '60 days'" in out.replace("\\", "")
    assert f"<details><summary>{ALL - 1} passed scenarios</summary>" in out
    # Cost from the recorded usage at the configured price: 60 in + 9 out tokens.
    assert "| support/acme/order\\-status | 1 |  | 60/9 | $0.0002 | hit |" in out


def test_github_format_annotates_the_failing_dataset_and_warns_on_poor_judges(
    example: Path,
) -> None:
    path = example / "cachelint.toml"
    path.write_text(
        path.read_text(encoding="utf-8")
        .replace("judge-average = 3", "judge-average = 5.5")
        .replace("judge-good = 4", "judge-good = 6"),
        encoding="utf-8",
    )
    break_refund(example)
    rc, out, _ = go(example, execution="gh", fmt="github")
    assert rc == 1
    errors = [line for line in out.splitlines() if line.startswith("::error ")]
    assert errors == [
        "::error file=eval-datasets/support/acme/refund.json,title=cachelint%3A "
        "support/acme/refund::support/acme/refund failed:%0Acontains: contains '60 days': "
        + errors[0].split("contains '60 days': ", 1)[1]
    ]
    warnings = [line for line in out.splitlines() if line.startswith("::warning ")]
    assert len(warnings) == 1 and "judge relevance 5.0/5 (poor; average is 5.5)" in warnings[0]


def test_baseline_comparison_fails_on_a_regressed_scenario(example: Path) -> None:
    assert go(example, execution="base", extras=Extras(save_baseline="main"))[0] == 0
    saved = (example / "eval-baselines.json").read_bytes()
    assert go(example, execution="again", extras=Extras(save_baseline="main"))[0] == 0
    assert (example / "eval-baselines.json").read_bytes() == saved  # deterministic
    data = json.loads(saved)
    assert data["baselines"]["main"]["scenarios"]["support/acme/refund"]["passed"] is True
    assert go(example, execution="same", extras=Extras(baseline="main"))[0] == 0
    break_refund(example)
    rc, out, _ = go(example, execution="worse", extras=Extras(baseline="main"))
    assert rc == 1
    assert "baseline main: 1 regression(s)" in out
    assert "REGRESSED  support/acme/refund: passed in the baseline, fails now" in out


def test_an_unknown_baseline_is_a_usage_error_before_the_run(example: Path) -> None:
    from cachelint.errors import CachelintError

    with pytest.raises(CachelintError, match="no such baseline"):
        go(example, execution="x", extras=Extras(baseline="nope"))
    assert not (example / "eval-results/x").exists()


@pytest.mark.parametrize(
    ("baseline", "wrong"),
    [
        (5, "no 'scenarios' object"),
        ({"scenarios": [1, 2]}, "no 'scenarios' object"),
        ({"scenarios": {"support/acme/refund": "passed"}}, "is not an object"),
        ({"scenarios": {"support/acme/refund": {"passed": "yes"}}}, "'passed' is not true or"),
        (
            {"scenarios": {"support/acme/refund": {"passed": True, "judges": ["relevance", 5]}}},
            "'judges' is not an object of scores",
        ),
        (
            {"scenarios": {"support/acme/refund": {"passed": True, "judges": {"r": "high"}}}},
            "'judges' is not an object of scores",
        ),
        ({"scenarios": {"support/acme/refund": {"passed": True, "cost": "1"}}}, "'cost' is not"),
    ],
)
def test_a_malformed_baseline_is_one_error_line_before_the_run(
    example: Path, baseline: object, wrong: str
) -> None:
    """eval-baselines.json is committed and edited by hand (a merge conflict resolved, say): a
    baseline of the wrong shape was an internal error, or compared against silently."""
    document = {"format": 1, "baselines": {"main": baseline}}
    (example / "eval-baselines.json").write_text(json.dumps(document), encoding="utf-8")
    for args in (["run", "--execution", "x"], ["report", "--execution", "x"]):
        result = run_cachelint(example, *args[:1], "--baseline", "main", *args[1:])
        assert result.returncode == 2, result.stderr
        assert result.stderr.count("\n") == 1, result.stderr
        assert "eval-baselines.json: baseline 'main': " in result.stderr
        assert wrong in result.stderr
        assert "cachelint run --save-baseline main" in result.stderr
    assert not (example / "eval-results/x").exists()


def test_budget_fails_a_run_over_it_with_the_recorded_cost(example: Path) -> None:
    path = example / "cachelint.toml"
    path.write_text(
        path.read_text(encoding="utf-8").replace("[reports]\n", "[reports]\nbudget = 0.001\n"),
        encoding="utf-8",
    )
    rc, out, _ = go(example, execution="budget")
    assert rc == 1
    assert "FAIL  over budget: $0.0044 > $0.0010" in out
    assert f"{ALL} scenarios: {ALL} passed, 0 failed" in out


def test_three_shards_merge_into_the_green_record_of_an_unsharded_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = make_example_repo(tmp_path / "whole")
    sharded = make_example_repo(tmp_path / "sharded")
    for repo in (whole, sharded):
        (repo / ".eval-green.json").unlink()
    now = datetime(2026, 11, 30, 12, tzinfo=timezone.utc)
    assert go(whole, execution="full", now=now)[0] == 0
    counts = []
    for i in (1, 2, 3):
        rc, out, err = go(sharded, execution=f"shard-{i}", shard=f"{i}/3", now=now)
        assert rc == 0 and "green record not updated" in err
        counts.append(int(out.split("mode replay, ")[1].split()[0]))
    assert sum(counts) == ALL
    assert not (sharded / ".eval-green.json").exists()
    shards = [sharded / "eval-results" / f"shard-{i}" for i in (1, 2, 3)]
    assert report(sharded, out=io.StringIO(), merge=shards, execution="full") == 0
    merged = json.loads((sharded / "eval-results/full/run.json").read_text(encoding="utf-8"))
    whole_run = json.loads((whole / "eval-results/full/run.json").read_text(encoding="utf-8"))
    assert [s["scenario"] for s in merged["scenarios"]] == [
        s["scenario"] for s in whole_run["scenarios"]
    ]
    monkeypatch.setenv("CACHELINT_NOW", "2026-11-30T12:00:00Z")
    assert green(sharded, out=io.StringIO(), err=io.StringIO(), execution="full") == 0
    assert (sharded / ".eval-green.json").read_bytes() == (whole / ".eval-green.json").read_bytes()


def test_green_from_results_refuses_an_execution_missing_a_scenario(tmp_path: Path) -> None:
    repo = make_example_repo(tmp_path / "example")
    assert go(repo, execution="one", shard="1/3")[0] == 0
    err = io.StringIO()
    assert green(repo, out=io.StringIO(), err=err, execution="one") == 1
    assert "green record not updated: execution one:" in err.getvalue()
    assert "not in it" in err.getvalue()


def test_compare_two_executions_lists_the_regression(example: Path) -> None:
    assert go(example, execution="before")[0] == 0
    break_refund(example)
    assert go(example, execution="after")[0] == 1
    out = io.StringIO()
    assert report(example, out=out, compare=("before", "after")) == 1
    page = Path(out.getvalue().splitlines()[-1])
    assert page == example / "eval-results/after/compare-before.html"
    html = page.read_text(encoding="utf-8")
    assert "<h2>compare before → after</h2>" in html
    assert "<td>support/acme/refund</td>" in html and "<td>regressed</td>" in html


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("[reports]\nbudget = -1\n", "budget = -1"),
        ("[prices]\nm = { input = 1 }\n", "both keys"),
        ("[reports]\njudge-good = 2\njudge-average = 3\n", "judge-average must not exceed"),
        ("[reports]\ncolour = 1\n", "not 'colour'"),
    ],
)
def test_bad_reports_settings_are_one_line_config_errors(
    example: Path, table: str, message: str
) -> None:
    from cachelint.errors import ConfigError

    path = example / "cachelint.toml"
    kept = path.read_text(encoding="utf-8").split("\n[reports]")[0].split("\n[prices]")[0]
    path.write_text(kept + "\n" + table)
    with pytest.raises(ConfigError, match=r"key '(reports|prices)'") as caught:
        go(example, execution="bad")
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_cli_flow_from_a_fresh_clone_leaves_git_status_clean(tmp_path: Path) -> None:
    origin = make_example_repo(tmp_path / "origin")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    # Reports named on the command line stay inside the repository (issue 14); the results
    # root ignores everything in it, so the page leaves git status clean too.
    page = clone / "eval-results/report.html"
    saved = run_cachelint(clone, "run", "--save-baseline", "main", "--html", str(page))
    assert saved.returncode == 0, saved.stderr
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    # A non-terminal stdout got the scenarios one by one; the file is the whole text report.
    assert saved.stdout.count("\nPASS  ") == ALL
    commit_all(clone, "baseline main")
    compared = run_cachelint(clone, "run", "--baseline", "main", "--format", "json")
    assert compared.returncode == 0, compared.stderr
    assert json.loads(compared.stdout)["passed"] is True
    assert compared.stderr.count("cachelint: PASS  ") == ALL
    assert run_cachelint(clone, "report").returncode == 0
    assert git(clone, "status", "--porcelain", "--untracked-files=all") == ""


@pytest.mark.parametrize("listed", [{"scenario": "../../eval-cache/cache/evil"}, 5])
def test_a_results_summary_listing_no_scenario_identity_is_one_error_line(
    example: Path, tmp_path: Path, listed: object
) -> None:
    """A shard's results are a CI artifact, and its run.json names the per-scenario files the
    merge copies and the report reads. `../../eval-cache/cache/evil` made the merge copy a file
    from beside the artifact into the repository's cache tree; an entry that is no object was a
    traceback."""
    assert go(example, execution="s1", shard="1/2")[0] == 0
    artifact = tmp_path / "artifacts" / "deep" / "s1"
    shutil.copytree(example / "eval-results" / "s1", artifact)
    # What the hostile name points at from the artifact: the merge would copy this file.
    planted = tmp_path / "artifacts" / "eval-cache" / "cache" / "evil.json"
    planted.parent.mkdir(parents=True)
    planted.write_text("{}")
    for shard in (artifact, example / "eval-results" / "s1"):
        summary = json.loads((shard / "run.json").read_text(encoding="utf-8"))
        summary["scenarios"][0] = listed
        (shard / "run.json").write_text(json.dumps(summary), encoding="utf-8")
    before = sorted(p.name for p in (example / "eval-results").iterdir())
    for args in (["--merge", str(artifact), "--execution", "m"], ["--execution", "s1"]):
        result = run_cachelint(example, "report", *args)
        assert result.returncode == 2, result.stderr
        assert result.stderr.count("\n") == 1, result.stderr
        assert "run.json: lists " in result.stderr
        assert "not a scenario identity (agent/tenant/scenario)" in result.stderr
    assert not (example / "eval-cache" / "cache" / "evil.json").exists()
    assert git(example, "status", "--porcelain", "--untracked-files=all", "--", "eval-cache") == ""
    assert sorted(p.name for p in (example / "eval-results").iterdir()) == before


def _first_trial(record: dict[str, Any]) -> dict[str, Any]:
    trial: dict[str, Any] = record["trials"][0]
    return trial


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda r: r.clear(), "no 'scenario'"),
        (lambda r: r.pop("trials"), "no 'trials'"),
        (lambda r: r.update(trials=5), "'trials' is not a list"),
        (lambda r: r.update(pass_rate="high"), "'pass_rate' is not a number"),
        (lambda r: _first_trial(r).update(calls="x"), "'trials[0].calls' is not a list"),
        (lambda r: _first_trial(r).update(judges=[5]), "'trials[0].judges[0]' is not an object"),
        (lambda r: _first_trial(r).update(output="hi"), "'trials[0].output' is not an object"),
        (
            lambda r: _first_trial(r).update(calls=[{"latency_s": "fast"}]),
            "'trials[0].calls[0].latency_s' is not a number",
        ),
        (
            lambda r: _first_trial(r).update(
                calls=[{"messages": [{"role": "user", "tool_calls": ["f"]}]}]
            ),
            "'trials[0].calls[0].messages[0].tool_calls[0]' is not an object",
        ),
    ],
)
def test_a_results_file_of_the_wrong_shape_is_one_error_line(
    example: Path, damage: Any, said: str
) -> None:
    """Results may come from another machine (a shard's artifact): a scenario's results file
    whose values have the wrong JSON types made the report fail deep in its rendering, as an
    internal error. Now the loader says which value and where."""
    assert go(example, execution="r")[0] == 0
    path = example / "eval-results" / "r" / "support" / "acme" / "refund.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    damage(record)
    path.write_text(json.dumps(record), encoding="utf-8")
    result = run_cachelint(example, "report", "--execution", "r")
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert f"refund.json: {said}: not a results file this cachelint writes" in result.stderr


@pytest.mark.parametrize("document", ["null", "[]", "5"])
def test_a_results_file_that_is_no_object_is_one_error_line(example: Path, document: str) -> None:
    assert go(example, execution="r")[0] == 0
    path = example / "eval-results" / "r" / "support" / "acme" / "refund.json"
    path.write_text(document, encoding="utf-8")
    result = run_cachelint(example, "report", "--execution", "r")
    assert result.returncode == 2, result.stderr
    assert "refund.json: not an object: not a results file this cachelint writes" in result.stderr


def test_a_run_summary_with_mutations_of_the_wrong_shape_is_refused_before_a_merge(
    example: Path,
) -> None:
    assert go(example, execution="s1", shard="1/2")[0] == 0
    shard = example / "eval-results" / "s1"
    summary = json.loads((shard / "run.json").read_text(encoding="utf-8"))
    summary["mutations"] = "eval-cache changed"
    (shard / "run.json").write_text(json.dumps(summary), encoding="utf-8")
    before = sorted(p.name for p in (example / "eval-results").iterdir())
    result = run_cachelint(example, "report", "--merge", str(shard), "--execution", "m")
    assert result.returncode == 2, result.stderr
    assert "run.json: 'mutations' is not a list" in result.stderr
    assert sorted(p.name for p in (example / "eval-results").iterdir()) == before


def test_merged_shards_give_a_baseline_and_json_carries_the_cost(example: Path) -> None:
    for i in (1, 2):
        assert go(example, execution=f"s{i}", shard=f"{i}/2")[0] == 0
    shards = [example / "eval-results" / f"s{i}" for i in (1, 2)]
    out = io.StringIO()
    merged = report(
        example, out=out, merge=shards, execution="m", extras=Extras(save_baseline="main")
    )
    assert merged == 0 and "baseline main saved to eval-baselines.json" in out.getvalue()
    assert (
        len(
            json.loads((example / "eval-baselines.json").read_text())["baselines"]["main"][
                "scenarios"
            ]
        )
        == ALL
    )
    break_refund(example)
    rc, text, _ = go(example, execution="j", fmt="json", extras=Extras(baseline="main"))
    assert rc == 1
    data = json.loads(text)
    # Every call priced (the orders and returns agents' models, the triage matrix's mini model):
    # support 0.002425 + triage 0.000642 + orders 0.0006405 + returns 0.00066.
    assert data["cost"]["run"] == pytest.approx(0.0043675)
    assert data["cost"]["by_agent"]["triage"] == pytest.approx(0.000642)
    assert set(data["cost"]["scenarios"]) == {s["scenario"] for s in data["scenarios"]}


def test_junit_carries_each_scenario_cost(example: Path) -> None:
    import xml.etree.ElementTree as ET

    junit = example / "out/junit.xml"
    assert go(example, execution="junit", junit=junit)[0] == 0
    cases = ET.parse(junit).getroot().iter("testcase")
    costs = {c.get("name"): p.get("value") for c in cases for p in c.iter("property")}
    assert costs["order-status"] == "0.00024000"
