"""Shards merged by `cachelint report --merge` and `cachelint green --from-results` (issues 36.4
and 37.3): the configured suite is read exactly as `cachelint run` reads it (custom judge
metrics, python evaluators, per-agent targets), the merged verdicts are the unsharded run's, and
only a complete execution whose per-scenario results agree with its summary is acted on."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import PROJECT, commit_all, git, run_cachelint
from tests.helpers import BASIC, DEAD, RUN_NOW, record, write_repo, write_targets_repo

# A suite on three targets (the default chat target, a python agent, a judge model), with a
# custom judge metric and a custom python evaluator; `support/globex/refund` fails its evaluator.
SUITE_CONFIG = f"""
    [tool.cachelint.target]
    url = "{DEAD}"
    provider = "cachelint-fake"
    model = "agent-model"
    api-key-env = "CACHELINT_TEST_KEY"

    [tool.cachelint.targets.orders-bot]
    type = "python"
    function = "orders_agent:answer"
    url = "{DEAD}"
    provider = "cachelint-fake"
    model = "orders-model"
    api-key-env = "CACHELINT_TEST_KEY"

    [tool.cachelint.targets.judge-model]
    url = "{DEAD}"
    provider = "cachelint-fake"
    model = "judge-model"
    api-key-env = "CACHELINT_TEST_KEY"

    [tool.cachelint.agents.orders]
    target = "orders-bot"

    [tool.cachelint.judge]
    target = "judge-model"
    [tool.cachelint.judge.metrics]
    politeness = "Politeness: is the reply courteous?\\n5 = warm\\n1 = rude"
"""

SUITE_SCRIPT: dict[str, Any] = {
    "rules": [
        {
            "match": {"any_contains": "Metric: politeness"},
            "reply": {"json": {"score": 4, "reason": "courteous"}},
        },
        {"match": {"model": "orders-model"}, "reply": {"content": "Order A-1 has shipped today."}},
        {"match": {"contains": "Globex"}, "reply": {"content": "No."}},
    ],
    "default": {"content": "Refunds take 30 days from the day of delivery."},
}

ORDERS_AGENT = """
from cachelint.runner.output import output_from_completion


def answer(scenario, client):
    return output_from_completion(client.chat(list(scenario.messages)))
"""

EVALS = """
from cachelint import Metric


def words(scenario, output, options):
    count = len(output.text.split())
    return Metric("words", count, f"{count} words", "good" if count >= 3 else "poor", count < 3)
"""


def _scenario(question: str, expected: str, **extra: Any) -> dict[str, Any]:
    return {
        "input": question,
        "assert": [
            {"type": "contains", "value": expected},
            {"type": "python", "function": "suite_evals:words"},
        ],
        **extra,
    }


SUITE = {
    "support/acme/refund": _scenario("How do refunds work?", "30 days", judge=["politeness"]),
    "support/acme/delivery": _scenario("When is delivery?", "days"),
    "support/globex/refund": _scenario("Globex refunds?", "No", judge=["politeness"]),
    "orders/acme/track": _scenario("Where is my order?", "shipped", judge=["politeness"]),
    "orders/globex/track": _scenario("Where is order B?", "shipped"),
    "triage/acme/route": _scenario("Route this refund", "30 days"),
}


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CACHELINT_TEST_KEY", raising=False)
    monkeypatch.delenv("CACHELINT_EXECUTION", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.setenv("CACHELINT_NOW", RUN_NOW)


def make_suite(repo: Path, suite: dict[str, dict[str, Any]] = SUITE) -> Path:
    """The suite, recorded through the fake provider and committed."""
    write_targets_repo(
        repo,
        targets=SUITE_CONFIG,
        scenarios=suite,
        files={"orders_agent.py": ORDERS_AGENT, "suite_evals.py": EVALS},
    )
    (repo / ".gitignore").write_text("__pycache__/\n", encoding="utf-8")
    recorded, _ = record(repo, SUITE_SCRIPT)
    assert recorded.rc in (0, 1), recorded.out + recorded.err
    (repo / "eval-results" / "test").rename(repo / "eval-results" / "recording")
    commit_all(repo, "suite")
    return repo


def cli(repo: Path, *args: str) -> Any:
    return run_cachelint(repo, *args, env={"CACHELINT_NOW": RUN_NOW})


def run_json(repo: Path, execution: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (repo / "eval-results" / execution / "run.json").read_text(encoding="utf-8")
    )
    return data


def verdicts(summary: dict[str, Any]) -> dict[str, Any]:
    """What a run decided: overall, per scenario and per trial, and the counts."""
    return {
        "passed": summary["passed"],
        "summary": summary.get("summary"),
        "by_agent": summary.get("by_agent"),
        "by_tenant": summary.get("by_tenant"),
        "scenarios": [
            (
                s["scenario"],
                s["passed"],
                s["pass_rate"],
                [
                    (
                        t["passed"],
                        t["error"],
                        [(a["type"], a["passed"]) for a in t["assertions"]],
                        [(j["metric"], j["score"]) for j in t["judges"]],
                        [(m["name"], m["value"], m["failed"]) for m in t["metrics"]],
                    )
                    for t in s["trials"]
                ],
            )
            for s in summary["scenarios"]
        ],
    }


def sharded(repo: Path, count: int = 2) -> list[str]:
    """Run the suite as `count` CI shards; each passes or fails on its own scenarios."""
    names = []
    for i in range(1, count + 1):
        proc = cli(repo, "run", "--shard", f"{i}/{count}", "--execution", f"shard-{i}")
        assert proc.returncode in (0, 1), proc.stderr
        names.append(f"shard-{i}")
    return names


def test_merged_shards_of_a_configured_suite_give_the_unsharded_verdicts(git_repo: Path) -> None:
    repo = make_suite(git_repo)
    whole = cli(repo, "run", "--execution", "whole")
    assert whole.returncode == 1, whole.stdout + whole.stderr  # globex's refund fails `words`
    shards = sharded(repo)
    merged = cli(
        repo, "report", "--merge", *(f"eval-results/{s}" for s in shards), "--execution", "m"
    )
    assert merged.returncode == 1, merged.stderr  # the merged execution failed, as the whole did
    assert "unknown metric" not in merged.stderr
    assert verdicts(run_json(repo, "m")) == verdicts(run_json(repo, "whole"))
    judged = {s["scenario"]: s["trials"][0]["judges"] for s in run_json(repo, "m")["scenarios"]}
    assert judged["orders/acme/track"] == [
        {"metric": "politeness", "score": 4, "reason": "courteous"}
    ]
    green = cli(repo, "green", "--from-results", "m")
    assert green.returncode == 1, green.stderr
    assert "1 failed (first: support/globex/refund)" in green.stderr


def test_green_from_merged_shards_of_a_configured_suite_equals_the_unsharded_record(
    tmp_path: Path,
) -> None:
    suite = {k: v for k, v in SUITE.items() if k != "support/globex/refund"}
    records = []
    for name in ("whole", "sharded"):
        repo = tmp_path / name
        repo.mkdir()
        git(repo, "init", "-q", "-b", "main")
        make_suite(repo, suite)
        (repo / ".eval-green.json").unlink(missing_ok=True)
        if name == "whole":
            proc = cli(repo, "run", "--execution", "full")
            assert proc.returncode == 0, proc.stdout + proc.stderr
        else:
            shards = sharded(repo)
            merged = cli(
                repo,
                "report",
                "--merge",
                *(f"eval-results/{s}" for s in shards),
                "--execution",
                "full",
            )
            assert merged.returncode == 0, merged.stderr
            green = cli(repo, "green", "--from-results", "full")
            assert green.returncode == 0, green.stderr
        records.append((repo / ".eval-green.json").read_bytes())
    assert records[0] == records[1]


# ---- evidence, not claims (issue 37.3) ---------------------------------------------------------


def small_suite(repo: Path) -> Path:
    """Two scenarios on the default target, recorded through the fake provider and committed."""
    write_repo(repo, DEAD, BASIC)
    recorded, _ = record(repo)
    assert recorded.rc == 0, recorded.out + recorded.err
    commit_all(repo, "recorded")
    return repo


def fail_acme(repo: Path) -> None:
    """Make support/acme/refund fail offline: its assertion changes, its request does not."""
    path = repo / "eval-datasets/support/acme/refund.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**data, "assert": [{"type": "contains", "value": "60 days"}]}))


def edit_json(path: Path, change: Any) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def one_error_line(proc: Any) -> str:
    """The single error line a refused input gives: exit 2, no traceback."""
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("cachelint: error: "), proc.stderr
    return str(proc.stderr)


def _say_false_as_a_string(data: dict[str, Any]) -> None:
    data["scenarios"][0]["passed"] = "false"


def _say_everything_passed(data: dict[str, Any]) -> None:
    data["passed"] = True
    for entry in data["scenarios"]:
        entry["passed"] = True
        for trial in entry["trials"]:
            trial["passed"] = True


@pytest.mark.parametrize(
    ("tamper", "expected"),
    [
        (_say_false_as_a_string, "'passed' is 'false', not true or false"),
        (_say_everything_passed, "disagrees with run.json on the verdict of support/acme/refund"),
    ],
    ids=["string-verdict", "summary-contradicts-results"],
)
def test_green_acts_only_on_verdicts_its_results_files_back(
    git_repo: Path, tamper: Any, expected: str
) -> None:
    repo = small_suite(git_repo)
    green_before = (repo / ".eval-green.json").read_bytes()
    fail_acme(repo)
    commit_all(repo, "acme now fails")
    assert cli(repo, "run", "--execution", "e").returncode == 1
    edit_json(repo / "eval-results/e/run.json", tamper)
    line = one_error_line(cli(repo, "green", "--from-results", "e"))
    assert expected in line
    assert (repo / ".eval-green.json").read_bytes() == green_before


def _shard_holding(repo: Path, identity: str, shards: list[str]) -> Path:
    return next(
        repo / "eval-results" / s
        for s in shards
        if (repo / "eval-results" / s / f"{identity}.json").is_file()
    )


@pytest.mark.parametrize("linked", ["support/acme/refund.json", "support"])
def test_merge_never_follows_a_link_inside_a_shard(
    git_repo: Path, tmp_path: Path, linked: str
) -> None:
    """A shard artifact holding a link (to a file or a directory) is refused: the file it points
    at is never copied into eval-results/, and nothing of the merge stays behind."""
    repo = small_suite(git_repo)
    shards = sharded(repo)
    shard = _shard_holding(repo, "support/acme/refund", shards)
    # Outside the artifact: a copy of its `support` tree whose acme record is another file.
    outside = tmp_path / "outside"
    shutil.copytree(shard / "support", outside)
    secret = outside / "acme" / "refund.json"
    secret.write_text(
        secret.read_text(encoding="utf-8").replace("Refunds", "SECRET-OUTSIDE Refunds"),
        encoding="utf-8",
    )
    link = shard / linked
    if link.is_dir():
        shutil.rmtree(link)
        link.symlink_to(outside, target_is_directory=True)
    else:
        link.unlink()
        link.symlink_to(secret)
    proc = cli(
        repo, "report", "--merge", *(f"eval-results/{s}" for s in shards), "--execution", "m"
    )
    assert "is a symbolic link, never followed" in one_error_line(proc)
    assert not (repo / "eval-results/m").exists()
    copied = [p for p in (repo / "eval-results").rglob("*.json") if not p.is_symlink()]
    assert not any("SECRET-OUTSIDE" in p.read_text(encoding="utf-8") for p in copied)


def test_a_failed_merge_leaves_no_execution_for_green_to_accept(git_repo: Path) -> None:
    """A shard whose results file is of the wrong shape fails the merge after the files are
    copied; the half-merged execution is removed, so `green --from-results` finds nothing."""
    repo = small_suite(git_repo)
    (repo / ".eval-green.json").unlink()
    commit_all(repo, "no green record yet")
    shards = sharded(repo)
    shard = _shard_holding(repo, "support/globex/refund", shards)
    edit_json(
        shard / "support/globex/refund.json",
        lambda d: d["trials"][0].__setitem__("calls", "not a list"),
    )
    proc = cli(
        repo, "report", "--merge", *(f"eval-results/{s}" for s in shards), "--execution", "m"
    )
    assert "'trials[0].calls' is not a list" in one_error_line(proc)
    assert not (repo / "eval-results/m").exists()
    one_error_line(cli(repo, "green", "--from-results", "m"))
    assert not (repo / ".eval-green.json").exists()


def _fifo(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path)


def _huge(path: Path) -> None:
    with open(path, "wb") as fh:
        fh.truncate(HUGE)  # sparse: two gibibytes on paper, nothing on disk


def _deep(path: Path) -> None:
    path.write_text("[" * 200_000, encoding="utf-8")


HOSTILE = {"fifo": _fifo, "huge": _huge, "deep": _deep}
HUGE = 2 << 30
# The address space each command may use: a file read whole at HUGE bytes cannot fit.
MEMORY = 1 << 30


def limited(repo: Path, *args: str) -> Any:
    """`cli`, in a process that cannot allocate more than MEMORY (an OS edge: rlimit)."""
    import resource

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))

    return subprocess.run(
        [sys.executable, "-m", "cachelint", *args],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(PROJECT), "CACHELINT_NOW": RUN_NOW},
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=cap,  # noqa: PLW1509 - a plain fork, before any thread of the test runs
    )


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_hostile_results_file_is_one_error_line_for_merge_green_and_baselines(
    git_repo: Path, kind: str
) -> None:
    """A shard's run.json, an execution's run.json and eval-baselines.json that are a FIFO, two
    gibibytes, or nested too deeply: one error line and exit 2 each, never a hang, a read of the
    whole file, a RecursionError or a traceback."""
    repo = small_suite(git_repo)
    shards = sharded(repo)
    HOSTILE[kind](repo / "eval-results" / shards[0] / "run.json")
    sources = [f"eval-results/{s}" for s in shards]
    merge = limited(repo, "report", "--merge", *sources, "--execution", "m")
    assert f"eval-results/{shards[0]}/run.json: " in one_error_line(merge)
    assert not (repo / "eval-results/m").exists()
    green = limited(repo, "green", "--from-results", shards[0])
    assert f"eval-results/{shards[0]}/run.json: " in one_error_line(green)
    HOSTILE[kind](repo / "eval-baselines.json")
    for args in (["run", "--baseline", "main"], ["report", "--baseline", "main"]):
        assert "eval-baselines.json: " in one_error_line(limited(repo, *args))


def test_a_merge_of_part_of_the_suite_is_filtered_and_of_all_of_it_is_not(tmp_path: Path) -> None:
    # The trend draws whole-suite replays only: a merge of one shard of two is not one.
    import io

    from cachelint.commands.report import report
    from tests.example import make_example_repo

    repo = make_example_repo(tmp_path / "example")
    for i in (1, 2):
        assert (
            run_cachelint(repo, "run", "--shard", f"{i}/2", "--execution", f"s{i}").returncode == 0
        )
    results = repo / "eval-results"
    report(repo, out=io.StringIO(), merge=[results / "s1"], execution="half")
    report(repo, out=io.StringIO(), merge=[results / "s1", results / "s2"], execution="whole")
    half = json.loads((results / "half/run.json").read_bytes())
    whole = json.loads((results / "whole/run.json").read_bytes())
    assert half["filtered"] is True
    assert whole["filtered"] is False


def test_listing_executions_skips_a_run_summary_it_must_not_read(tmp_path: Path) -> None:
    # `cachelint report` with no --execution picks the latest: a deep, linked or special run.json
    # in a results directory is no execution, never a crash or a hang.
    from cachelint.runner.reports.model import list_executions

    for name, started in (("good", "2026-11-30T12:00:00Z"), ("older", "2026-11-29T12:00:00Z")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "run.json").write_text(json.dumps({"started": started}))
    (tmp_path / "deep").mkdir()
    (tmp_path / "deep/run.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked/run.json").symlink_to(tmp_path / "good/run.json")
    (tmp_path / "fifo").mkdir()
    os.mkfifo(tmp_path / "fifo/run.json")
    assert list_executions(tmp_path) == ["older", "good"]
