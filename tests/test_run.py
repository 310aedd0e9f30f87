"""`cachelint run` end to end: record through the fake provider over real HTTP, replay offline."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from pathlib import Path

import pytest

from tests.conftest import commit_all
from tests.helpers import (
    ACME_PROMPT,
    BASIC,
    DEAD,
    cli,
    do_run,
    entry_files,
    network_blocked,
    record,
    refund,
    result,
    write_repo,
)
from tests.helpers import RUN_NOW as NOW


@pytest.fixture(autouse=True)
def _no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CACHELINT_TEST_KEY", raising=False)
    monkeypatch.delenv("CACHELINT_EXECUTION", raising=False)
    monkeypatch.setenv("CACHELINT_NOW", NOW)


# ---- record, then replay offline ----------------------------------------------------------------


def test_record_then_replay_offline_opens_no_socket(git_repo: Path) -> None:
    write_repo(git_repo, DEAD, BASIC)
    recorded, requests = record(git_repo)
    assert recorded.rc == 0, recorded.out
    assert requests == 2
    entries = entry_files(git_repo)
    assert len(entries) == 4 and all(
        e.startswith(("eval-cache/cache/support/acme/refund/", "eval-cache/cache/support/globex/"))
        for e in entries
    )
    commit_all(git_repo)
    with network_blocked() as attempts:
        replayed = do_run(git_repo)
    assert attempts == []
    assert replayed.rc == 0, replayed.out
    assert "PASS  support/acme/refund  [cache hit]" in replayed.out
    assert "PASS  support/globex/refund  [cache hit]" in replayed.out
    assert "2 scenarios: 2 passed, 0 failed; 2 model calls, 2 cache hits" in replayed.out


def test_same_name_in_two_tenants_gets_its_own_answer(git_repo: Path) -> None:
    write_repo(git_repo, DEAD, BASIC)
    assert record(git_repo)[0].rc == 0
    with network_blocked():
        assert do_run(git_repo).rc == 0
    acme, globex = (
        result(git_repo, "support/acme/refund"),
        result(git_repo, "support/globex/refund"),
    )
    assert acme["trials"][0]["output"]["text"] == "Acme refunds within 30 days."
    assert globex["trials"][0]["output"]["text"] == "Globex refunds within 14 days."
    assert acme["trials"][0]["keys"] != globex["trials"][0]["keys"]


def test_results_land_outside_the_cache_tree_with_every_field(git_repo: Path) -> None:
    write_repo(git_repo, DEAD, BASIC)
    assert record(git_repo)[0].rc == 0
    with network_blocked():
        assert do_run(git_repo, execution="ci-42").rc == 0
    data = result(git_repo, "support/acme/refund", "ci-42")
    trial = data["trials"][0]
    assert data["scenario"] == "support/acme/refund" and data["execution"] == "ci-42"
    assert trial["messages"][0]["role"] == "system" and "Acme" in trial["messages"][0]["content"]
    assert trial["response"]["object"] == "chat.completion"
    assert trial["assertions"] == [
        {"type": "contains", "passed": True, "reason": trial["assertions"][0]["reason"]}
    ]
    assert trial["cache_hit"] is True and trial["trial"] == 0
    assert len(trial["keys"][0]) == 64
    assert trial["usage"]["total_tokens"] > 0
    assert isinstance(trial["latency_s"], float)
    assert (git_repo / "eval-results/ci-42/report.html").is_file()
    assert not any("eval-results" in p for p in entry_files(git_repo))


def test_execution_name_from_environment(git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_repo(git_repo, DEAD, BASIC)
    assert record(git_repo)[0].rc == 0
    monkeypatch.setenv("CACHELINT_EXECUTION", "from-env")
    assert do_run(git_repo, execution=None).rc == 0
    assert (git_repo / "eval-results/from-env/support/acme/refund.json").is_file()


# ---- the replay miss ----------------------------------------------------------------------------


def test_replay_miss_message_word_by_word(git_repo: Path) -> None:
    write_repo(git_repo, DEAD, BASIC)
    assert record(git_repo)[0].rc == 0
    recorded_dir = entry_files(git_repo)[0].rsplit("/", 1)[0]
    (git_repo / "prompts/acme.md").write_text(
        ACME_PROMPT.replace("Be brief.", "Be concise."), encoding="utf-8"
    )
    with network_blocked() as attempts:
        outcome = do_run(git_repo)
    assert attempts == []
    assert outcome.rc == 1
    data = result(git_repo, "support/acme/refund")
    error = data["trials"][0]["error"]
    key = error.split("key ")[1].split()[0]
    assert len(key) == 64
    assert error.splitlines() == [
        "cache miss in replay mode: scenario support/acme/refund has no recorded answer for "
        f"key {key}",
        f"  looked for: eval-cache/cache/support/acme/refund/{key[:16]}/entry.json",
        "  closest recorded request (1 recorded for this scenario): "
        f"{recorded_dir}/entry.json, recorded {NOW}",
        "  what changed (recorded -> now):",
        "    messages[0] (system): line 3: '- Be brief.' -> '+ Be concise.'",
        "  to re-record: cachelint run --scenario support/acme/refund --refresh-cache",
        "  it calls http://127.0.0.1:9/v1 as provider 'cachelint-fake', model 'scripted-v1', "
        "reading the API key from $CACHELINT_TEST_KEY (else the credential file .env.eval)",
    ]
    assert "FAIL  support/acme/refund" in outcome.out
    assert "PASS  support/globex/refund" in outcome.out
    assert "    to re-record: cachelint run --scenario support/acme/refund --refresh-cache" in (
        outcome.out
    )


def test_miss_with_nothing_recorded_is_a_failure_not_a_skip(git_repo: Path) -> None:
    write_repo(git_repo, DEAD, {"support/acme/refund": refund(prompt="prompts/acme.md")})
    with network_blocked() as attempts:
        outcome = do_run(git_repo)
    assert attempts == [] and outcome.rc == 1
    assert "  closest recorded request: none, nothing is recorded for this scenario" in outcome.out
    assert not (git_repo / "eval-cache").exists()


def test_changed_model_names_the_model_in_the_miss(git_repo: Path) -> None:
    write_repo(git_repo, DEAD, BASIC)
    assert record(git_repo)[0].rc == 0
    text = (git_repo / "pyproject.toml").read_text(encoding="utf-8")
    (git_repo / "pyproject.toml").write_text(text.replace("scripted-v1", "scripted-v2"))
    outcome = do_run(git_repo, scenarios=["support/acme/*"])
    assert outcome.rc == 1
    assert "    model: 'scripted-v1' -> 'scripted-v2'" in outcome.out


# ---- modes --------------------------------------------------------------------------------------


def test_auto_records_only_misses(git_repo: Path) -> None:
    write_repo(git_repo, DEAD, BASIC)
    first, requests = record(git_repo, refresh=False, mode="auto", scenarios=["support/acme/*"])
    assert first.rc == 0 and requests == 1
    second, requests = record(git_repo, refresh=False, mode="auto")
    assert second.rc == 0 and requests == 1  # globex only: acme was a hit
    assert "PASS  support/acme/refund  [cache hit]" in second.out
    assert "PASS  support/globex/refund  [1 live, 0 cache hits]" in second.out
    third, requests = record(git_repo, refresh=False, mode="auto")
    assert third.rc == 0 and requests == 0


def test_live_rerecords_everything(git_repo: Path) -> None:
    write_repo(git_repo, DEAD, BASIC)
    assert record(git_repo)[0].rc == 0
    again, requests = record(git_repo, refresh=False, mode="live")
    assert again.rc == 0 and requests == 2
    assert len(entry_files(git_repo)) == 4


def test_off_calls_live_and_writes_nothing(git_repo: Path) -> None:
    write_repo(git_repo, DEAD, BASIC)
    outcome, requests = record(git_repo, refresh=False, mode="off")
    assert outcome.rc == 0 and requests == 2
    assert not (git_repo / "eval-cache").exists()


def test_refresh_rerecords_only_the_selected_scenario(git_repo: Path) -> None:
    write_repo(git_repo, DEAD, BASIC)
    assert record(git_repo)[0].rc == 0
    before = (git_repo / entry_files(git_repo)[0]).read_bytes()
    outcome, requests = record(git_repo, scenarios=["support/globex/refund"])
    assert outcome.rc == 0 and requests == 1
    assert "support/acme" not in outcome.out
    assert (git_repo / entry_files(git_repo)[0]).read_bytes() == before


def test_bad_mode_and_conflicting_flags_are_one_line_usage_errors(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_repo(git_repo, DEAD, BASIC)
    bad = cli(git_repo, monkeypatch, capsys, "--cache", "replay-only")
    assert bad.rc == 2
    assert bad.err == (
        "cachelint: error: --cache 'replay-only' is not a cache mode; "
        "use one of replay, auto, live, off\n"
    )
    both = cli(git_repo, monkeypatch, capsys, "--cache", "replay", "--refresh-cache")
    assert both.rc == 2 and both.err.count("\n") == 1
    assert "contradicts --cache replay" in both.err


def test_no_scenario_selected_is_exit_2(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_repo(git_repo, DEAD, BASIC)
    outcome = cli(git_repo, monkeypatch, capsys, "--agent", "billing")
    assert outcome.rc == 2
    assert outcome.err == (
        "cachelint: error: no scenarios selected: none of the 2 scenarios in eval-datasets/ "
        "match --agent billing; identities look like support/acme/refund\n"
    )


def test_tenant_selection(git_repo: Path) -> None:
    write_repo(git_repo, DEAD, BASIC)
    assert record(git_repo)[0].rc == 0
    outcome = do_run(git_repo, tenants=["globex"])
    assert outcome.rc == 0
    assert "support/acme" not in outcome.out and "PASS  support/globex/refund" in outcome.out


# ---- gating -------------------------------------------------------------------------------------


def test_scenario_without_deterministic_assertion_checks_nothing(git_repo: Path) -> None:
    write_repo(
        git_repo,
        DEAD,
        {"support/acme/vague": {"input": "Hello", "judge": ["relevance"]}},
    )
    outcome, requests = record(git_repo)
    assert outcome.rc == 1 and requests == 0
    assert (
        "scenario support/acme/vague checks nothing: it has no deterministic assertion, and judges "
        "never gate; add one (e.g. contains, regex, json-valid, tool-called) to the 'assert' list "
        "in eval-datasets/support/acme/vague.json"
    ) in outcome.out


def test_judges_are_reported_and_never_gate(git_repo: Path) -> None:
    scenarios = {"support/acme/refund": refund({"judge": ["relevance"]}, prompt="prompts/acme.md")}
    write_repo(git_repo, DEAD, scenarios)
    recorded, requests = record(git_repo)
    assert recorded.rc == 0 and requests == 2  # the answer and its judge
    with network_blocked() as attempts:
        outcome = do_run(git_repo)
    assert attempts == [] and outcome.rc == 0
    assert "    judge relevance: 2/5  partly on topic" in outcome.out
    judge = result(git_repo, "support/acme/refund")["trials"][0]["judges"][0]
    assert judge["metric"] == "relevance" and judge["score"] == 2
    # A judge that cannot replay is a miss: its score never gates, its miss fails the scenario.
    for path in list((git_repo / "eval-cache").rglob("entry.json")):
        if "Metric: relevance" in path.read_text(encoding="utf-8"):
            for f in path.parent.iterdir():
                f.unlink()
            path.parent.rmdir()
    outcome = do_run(git_repo, execution="missing-judge")
    assert outcome.rc == 1
    assert "    judge relevance: no score  not judged: cache miss in replay mode" in outcome.out
    assert "judge relevance: cache miss in replay mode: scenario support/acme/refund" in outcome.out


def test_failed_assertion_exits_1_with_reason(git_repo: Path) -> None:
    scenarios = {
        "support/acme/refund": refund(
            {"assert": [{"type": "contains", "value": "60 days"}]}, prompt="prompts/acme.md"
        )
    }
    write_repo(git_repo, DEAD, scenarios)
    outcome, _ = record(git_repo)
    assert outcome.rc == 1
    assert "FAIL  support/acme/refund  [1 live, 0 cache hits]" in outcome.out
    assert "    contains: contains '60 days': not found" in outcome.out


def test_trials_rekey_and_report_a_pass_rate(git_repo: Path) -> None:
    script = {
        "rules": [
            {"match": {"contains": "refund"}, "reply": {"content": "nope"}, "times": 1},
            {"match": {"contains": "refund"}, "reply": {"content": "Acme refunds within 30 days."}},
        ]
    }
    write_repo(git_repo, DEAD, {"support/acme/refund": refund(prompt="prompts/acme.md")})
    outcome, requests = record(git_repo, script, trials=3)
    assert requests == 3 and outcome.rc == 1
    assert (
        "FAIL  support/acme/refund  2/3 trials (67%; pass all: FAIL pass pass)  "
        "[3 live, 0 cache hits]" in outcome.out
    )
    assert len(entry_files(git_repo)) == 6
    report = json.loads(do_run(git_repo, trials=3, fmt="json").out)
    assert report["scenarios"][0]["pass_rate"] == pytest.approx(2 / 3)
    assert len({t["keys"][0] for t in report["scenarios"][0]["trials"]}) == 3
    miss = do_run(git_repo, trials=4)
    assert (
        "to re-record: cachelint run --scenario support/acme/refund --refresh-cache --trials 4"
        in (miss.out)
    )


def test_corrupt_entry_fails_and_is_never_called_live(git_repo: Path) -> None:
    write_repo(git_repo, DEAD, BASIC)
    assert record(git_repo)[0].rc == 0
    entry = next((git_repo / "eval-cache").rglob("entry.json"))
    entry.write_text("{not json", encoding="utf-8")
    outcome, requests = record(git_repo, refresh=False, mode="auto")
    assert requests == 0 and outcome.rc == 1
    assert "entry.json is not valid JSON" in outcome.out


# ---- concurrency --------------------------------------------------------------------------------


def test_output_is_in_dataset_order_under_jobs(git_repo: Path) -> None:
    names = [f"q{i}" for i in range(8)]
    rules = [
        {
            "match": {"contains": f"question {n}"},
            "reply": {"content": f"answer {n}"},
            "delay_ms": 100 * (8 - i),  # the first scenario is the slowest
        }
        for i, n in enumerate(names)
    ]
    scenarios = {
        f"faq/acme/{n}": {
            "input": f"question {n}",
            "assert": [{"type": "contains", "value": f"answer {n}"}],
        }
        for n in names
    }
    write_repo(git_repo, DEAD, scenarios)
    outcome, requests = record(git_repo, {"rules": rules}, jobs=8, fmt="json")
    assert outcome.rc == 0 and requests == 8
    order = [s["scenario"] for s in json.loads(outcome.out)["scenarios"]]
    assert order == [f"faq/acme/{n}" for n in names]
    replay = do_run(git_repo, jobs=8)
    lines = [line for line in replay.out.splitlines() if line.startswith("PASS")]
    assert lines == [f"PASS  faq/acme/{n}  [cache hit]" for n in names]


# ---- the canary ---------------------------------------------------------------------------------

MUTATOR = """
from pathlib import Path


def answer(scenario, client):
    reply = client.chat(scenario.messages)
    if client.mode.value == "replay":
        root = Path(__file__).parent / "eval-cache" / "cache" / "support" / "acme"
        entries = sorted(p for p in root.rglob("contents.data"))
        entries[0].write_text("{}\\n")
        (entries[0].parent / "entry.json").unlink()
        (root / "stray.json").write_text("{}")
    return reply
"""


@pytest.mark.parametrize("settled", [False, True], ids=["by-content", "by-stat"])
def test_canary_names_each_written_deleted_and_added_file(
    git_repo: Path, settled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Files recorded just before the run are compared by content; older ones by stat (ctime).
    if settled:
        monkeypatch.setattr("cachelint.canary.RACY_NS", 0)
    write_repo(
        git_repo,
        DEAD,
        {"support/acme/refund": refund(prompt="prompts/acme.md")},
        target='type = "python"\nfunction = "mutator_agent:answer"\n',
        files={"mutator_agent.py": MUTATOR},
    )
    assert record(git_repo)[0].rc == 0
    entry_dir = entry_files(git_repo)[0].rsplit("/", 1)[0]
    outcome = do_run(git_repo, fmt="json")
    assert outcome.rc == 1
    report = json.loads(outcome.out)
    assert report["scenarios"][0]["passed"] is True  # the scenario itself passed
    found = {(m["path"], m["message"].split(";")[0]) for m in report["mutations"]}
    assert found == {
        (f"{entry_dir}/contents.data", "changed by `cachelint run` (mode replay)"),
        (f"{entry_dir}/entry.json", "removed by `cachelint run` (mode replay)"),
        ("eval-cache/cache/support/acme/stray.json", "added by `cachelint run` (mode replay)"),
    }
    assert all(m["code"] == "eval-cache-mutated" for m in report["mutations"])


GC_PROBE = """
import gc


def answer(scenario, client):
    client.chat(scenario.messages)
    return f"young collections every {gc.get_threshold()[0]} allocations"
"""


def test_a_run_collects_cyclic_garbage_less_often_and_then_as_before(git_repo: Path) -> None:
    import gc

    every = {"assert": [{"type": "contains", "value": "young collections every 100000 "}]}
    write_repo(
        git_repo,
        DEAD,
        {"support/acme/refund": refund(every, prompt="prompts/acme.md")},
        target='type = "python"\nfunction = "gc_probe:answer"\n',
        files={"gc_probe.py": GC_PROBE},
    )
    before = gc.get_threshold()
    assert record(git_repo)[0].rc == 0
    replay = do_run(git_repo)
    assert replay.rc == 0, replay.out + replay.err
    assert gc.isenabled() and gc.get_threshold() == before


# ---- python target ------------------------------------------------------------------------------

AGENT = """
import json

TOOLS = [{"type": "function", "function": {"name": "lookup_order", "description": "Find an order",
          "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}}}]
ORDERS = {"A-1": "shipped"}


def answer(scenario, client):
    messages = [dict(m) for m in scenario.messages]
    first = client.chat(messages, tools=TOOLS)
    message = first["choices"][0]["message"]
    messages.append(message)
    for call in message.get("tool_calls") or []:
        args = json.loads(call["function"]["arguments"])
        messages.append({"role": "tool", "tool_call_id": call["id"],
                         "content": json.dumps({"status": ORDERS[args["order_id"]]})})
    return client.chat(messages, tools=TOOLS)
"""


def test_python_target_with_two_calls_and_a_tool_round_trip(git_repo: Path) -> None:
    write_repo(
        git_repo,
        DEAD,
        {
            "orders/acme/status": {
                "input": "Where is order A-1?",
                "assert": [{"type": "contains", "value": "shipped"}],
            }
        },
        target='type = "python"\nfunction = "order_agent:answer"\n',
        files={"order_agent.py": AGENT},
    )
    recorded, requests = record(git_repo)
    assert recorded.rc == 0 and requests == 2, recorded.out
    assert len(entry_files(git_repo)) == 4  # two calls, two entries
    with network_blocked() as attempts:
        outcome = do_run(git_repo)
    assert attempts == [] and outcome.rc == 0
    assert "PASS  orders/acme/status  [2 cache hits]" in outcome.out
    calls = result(git_repo, "orders/acme/status")["trials"][0]["calls"]
    assert [c["cache_hit"] for c in calls] == [True, True]
    assert calls[1]["messages"][-1]["role"] == "tool"


def test_python_target_that_cannot_import_is_exit_2(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_repo(git_repo, DEAD, BASIC, target='type = "python"\nfunction = "nowhere_x:answer"\n')
    outcome = cli(git_repo, monkeypatch, capsys)
    assert outcome.rc == 2 and outcome.err.count("\n") == 1
    assert "function = 'nowhere_x:answer': cannot import module 'nowhere_x'" in outcome.err


# ---- report files -------------------------------------------------------------------------------


def test_junit_and_html_files(git_repo: Path) -> None:
    scenarios = {
        "support/acme/refund": refund(
            {"assert": [{"type": "contains", "value": "<b>never</b>"}]}, prompt="prompts/acme.md"
        ),
        "support/globex/refund": refund(prompt="prompts/globex.md"),
    }
    write_repo(git_repo, DEAD, scenarios)
    junit, html = git_repo / "out/junit.xml", git_repo / "out/report.html"
    outcome, _ = record(git_repo, junit=junit, html=html)
    assert outcome.rc == 1
    root = ET.fromstring(junit.read_text(encoding="utf-8"))
    assert root.get("tests") == "2" and root.get("failures") == "1"
    failure = root.find(".//testcase[@name='refund'][@classname='support.acme']/failure")
    assert failure is not None and "<b>never</b>" in (failure.get("message") or "")
    page = html.read_text(encoding="utf-8")
    assert "&lt;b&gt;never&lt;/b&gt;" in page and "<b>never</b>" not in page
    stdout_junit = do_run(git_repo, fmt="junit").out
    assert ET.fromstring(stdout_junit).get("failures") == "1"


def test_green_run_writes_the_green_record(git_repo: Path) -> None:
    write_repo(git_repo, DEAD, BASIC)
    assert record(git_repo)[0].rc == 0
    (git_repo / ".eval-green.json").unlink()
    assert do_run(git_repo).rc == 0
    green = json.loads((git_repo / ".eval-green.json").read_text(encoding="utf-8"))
    assert green["run"]["scenarios"] == ["support/acme/refund", "support/globex/refund"]
    (git_repo / ".eval-green.json").unlink()
    (git_repo / "prompts/acme.md").write_text("changed\n", encoding="utf-8")
    assert do_run(git_repo).rc == 1
    assert not (git_repo / ".eval-green.json").exists()


def test_a_replay_of_an_unchanged_tree_leaves_the_green_record_untouched(git_repo: Path) -> None:
    write_repo(git_repo, DEAD, BASIC)
    assert record(git_repo)[0].rc == 0
    green = git_repo / ".eval-green.json"
    before = green.read_bytes()
    later = datetime(2026, 6, 1, tzinfo=timezone.utc)
    assert do_run(git_repo, execution="another", now=later).rc == 0
    assert green.read_bytes() == before
    (git_repo / "prompts/acme.md").write_text(ACME_PROMPT + "\n", encoding="utf-8")
    outcome, _ = record(git_repo, refresh=False, mode="auto", execution="rerecord", now=later)
    assert outcome.rc == 0
    assert green.read_bytes() != before
    assert json.loads(green.read_bytes())["recorded"] == "2026-06-01T00:00:00Z"


def test_a_green_subset_does_not_write_the_green_record(git_repo: Path) -> None:
    write_repo(git_repo, DEAD, BASIC)
    assert record(git_repo)[0].rc == 0
    (git_repo / ".eval-green.json").unlink()
    outcome = do_run(git_repo, scenarios=["support/acme/*"])
    assert outcome.rc == 0
    assert "green record not updated: this run was filtered (1 of 2 scenarios)" in outcome.err
    assert not (git_repo / ".eval-green.json").exists()
    # A filter that happens to select everything today still vouches for nothing more.
    assert do_run(git_repo, scenarios=["*"]).rc == 0
    assert not (git_repo / ".eval-green.json").exists()


def test_a_report_inside_the_cache_tree_is_refused(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_repo(git_repo, DEAD, BASIC)
    assert record(git_repo)[0].rc == 0
    outcome = cli(git_repo, monkeypatch, capsys, "--junit", "eval-cache/junit.xml")
    assert outcome.rc == 2
    assert outcome.err.startswith("cachelint: error: --junit eval-cache/junit.xml: inside cache")
    assert not (git_repo / "eval-cache/junit.xml").exists()
