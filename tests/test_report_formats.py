"""Pure parts of the CI reports: Markdown escaping, annotation encoding, shard assignment, cost."""

from __future__ import annotations

from typing import cast

import pytest

from cachelint.errors import CachelintError
from cachelint.runner.cost import Price, Spend, call_spend, cost, tokens
from cachelint.runner.reports.model import RunReport, scenario_report
from cachelint.runner.reports.prformats import md, render_github
from cachelint.runner.shards import parse_shard, shard_of
from cachelint.settings import ReportSettings


def record(identity: str, *, passed: bool, reason: str, path: str) -> dict[str, object]:
    agent, tenant, _ = identity.split("/")
    return {
        "scenario": identity,
        "agent": agent,
        "tenant": tenant,
        "path": path,
        "passed": passed,
        "trials": [
            {
                "trial": 0,
                "passed": passed,
                "error": None,
                "assertions": [{"type": "contains", "passed": passed, "reason": reason}],
                "judges": [],
                "usage": {"prompt_tokens": 1000, "completion_tokens": 100},
                "calls": [],
            }
        ],
    }


def test_markdown_text_cannot_make_links_html_or_cells() -> None:
    text = md("<b>hi</b> [x](https://e.invalid) | ![i](y) `code`\nnext")
    assert "<b>" not in text and "&lt;b&gt;" in text
    assert "\\[x\\]\\(https:\u2060//e\\.invalid\\)" in text
    assert "\\|" in text and "\n" not in text


def test_annotations_encode_newlines_and_property_separators() -> None:
    view = RunReport(
        name="x",
        mode="replay",
        started=None,
        scenarios=[
            scenario_report(
                record(
                    "a/t/s", passed=False, reason="line one\nline two 100%", path="d/a,b:c.json"
                ),
                "m",
                {},
            )
        ],
    )
    first = render_github(view, ReportSettings()).splitlines()[0]
    assert first.startswith("::error file=d/a%2Cb%3Ac.json,title=cachelint%3A a/t/s::")
    assert "line one%0Aline two 100%25" in first


def test_shards_split_every_scenario_once_and_do_not_move_when_others_are_added() -> None:
    names = [f"agent/tenant/case-{i}" for i in range(200)]
    shards = {name: shard_of(name, 3) for name in names}
    assert set(shards.values()) == {1, 2, 3}
    more = [*names, *(f"agent/other/new-{i}" for i in range(50))]
    assert all(shard_of(name, 3) == shards[name] for name in more[:200])
    assert parse_shard("2/3") == (2, 3)
    for bad in ("0/3", "4/3", "1-3", "x"):
        with pytest.raises(CachelintError, match="expected I/N"):
            parse_shard(bad)


def test_cost_reads_both_usage_spellings_and_needs_a_price() -> None:
    price = Price(input=2.5, output=10.0)
    assert tokens({"input_tokens": 7, "output_tokens": 3}) == (7, 3)
    assert cost({"prompt_tokens": 1_000_000, "completion_tokens": 0}, price) == 2.5
    unpriced = call_spend({"prompt_tokens": 10}, "unpriced", None, "m", {"m": price})
    assert unpriced == Spend(0.0, (("model unpriced", 1),))
    assert unpriced.text() == "at least $0.0000 (1 call unpriced: model unpriced)"


def test_each_call_is_priced_at_the_model_it_asked_for() -> None:
    """A two-model agent and its judge: every call at its own model's price, a dated snapshot at
    its family's, and a lower bound that names the unpriced calls (never too low a figure shown
    as the cost) when a call's model has none."""
    from cachelint.runner.reports.model import scenario_report

    prices = {"small": Price(input=1.0, output=0.0), "large": Price(input=10.0, output=0.0)}
    million = {"prompt_tokens": 1_000_000, "completion_tokens": 0}
    trial = {
        "calls": [{"usage": million, "model": "small"}, {"usage": million, "model": "large-2026"}],
        "judge_calls": [{"usage": million, "model": None}],  # priced at the default model
    }
    view = scenario_report({"trials": [trial]}, "small", prices)
    assert view.cost == 1.0 + 10.0 + 1.0
    assert view.tokens == (3_000_000, 0)
    trial["calls"].append({"usage": million, "model": "unpriced"})
    partial = scenario_report({"trials": [trial]}, "small", prices)
    assert partial.cost is None
    assert partial.spend == Spend(12.0, (("model unpriced", 1),))
    assert partial.spend.text() == "at least $12.0000 (1 call unpriced: model unpriced)"
    # A call that recorded no usage is not free either, but a token count answers with none.
    trial["calls"] = [{"usage": None, "model": "small", "response": {"choices": []}}]
    assert scenario_report({"trials": [trial]}, "small", prices).spend.gap() == (
        "1 call unpriced: no usage recorded"
    )
    trial["calls"] = [{"usage": None, "model": "small", "response": {"input_tokens": 12}}]
    assert scenario_report({"trials": [trial]}, "small", prices).spend.text() == "$1.0000"


def test_the_cost_check_and_the_reports_price_a_call_alike() -> None:
    """The model asked for when priced, else the model that answered (an Azure deployment name
    answers with the model behind it), else unpriced under the asked-for name."""
    prices = {"gpt-4o-mini": Price(input=1.0, output=0.0)}
    million = {"prompt_tokens": 1_000_000, "completion_tokens": 0}
    snapshot = {"model": "gpt-4o-mini-2024-07-18"}
    assert call_spend(million, "my-deployment", snapshot, "x", prices) == Spend(1.0)
    assert call_spend(million, None, {}, "gpt-4o-mini", prices) == Spend(1.0)
    assert call_spend(million, "other", {"model": "other-2"}, "x", prices).unpriced == (
        ("model other", 1),
    )


HOSTILE = "a&b <c> \"d\" 'e'\tf\ng\rh \x1b[31m \u202e \ufffe"


def test_junit_written_in_pieces_is_what_elementtree_writes() -> None:
    """The JUnit report is written in pieces by hand: the bytes are those ElementTree writes
    (parsed back and indented again, nothing changes), for hostile text in every attribute and
    body, a failed run, the canary's findings, an unpriced call and an empty run."""
    import xml.etree.ElementTree as ET

    from cachelint.findings import Finding
    from cachelint.runner.reports.junit import junit_chunks

    failing = record(f"a/t/{HOSTILE[:3]}", passed=False, reason=HOSTILE, path=f"d/{HOSTILE}.json")
    trial = cast(list[dict[str, object]], failing["trials"])[0]
    trial["error"] = f"{HOSTILE}\nsecond line"
    trial["judges"] = [{"metric": "m", "score": None, "reason": HOSTILE}]
    passing = record("a/u/ok", passed=True, reason="fine", path="d/ok.json")
    scenarios = [
        scenario_report(failing, "m", {}),
        scenario_report(passing, "m", {"x": Price(1, 1)}),
    ]
    mutated = (Finding(path=f"eval-cache/{HOSTILE}", code="eval-cache-mutated", message=HOSTILE),)
    run = RunReport("x", "replay", None, scenarios, mutated, failures=(f"over: {HOSTILE}",))
    for report in (run, RunReport("x", "replay", None, [])):
        head, _, body = "".join(junit_chunks(report)).partition("\n")
        again = ET.fromstring(body)
        ET.indent(again)
        assert head == '<?xml version="1.0" encoding="UTF-8"?>'
        assert body == ET.tostring(again, encoding="unicode") + "\n"
    root = ET.fromstring("".join(junit_chunks(run)).partition("\n")[2])
    assert (root.get("tests"), root.get("failures")) == ("4", "3")
    assert [s.get("name") for s in root] == ["a/t", "a/u", "eval-cache-mutated", "cachelint-run"]


def test_a_group_spend_is_the_sum_of_its_scenarios_spends_added_in_order() -> None:
    """The same dollars (floats added in the scenarios' order, so the same last digits) and the
    same unpriced calls by why, sorted, as adding each scenario's Spend in turn."""
    from cachelint.runner.reports.model import ScenarioReport, group_spend

    spends = [
        Spend(0.1),
        Spend(0.2, (("model b", 1),)),
        Spend(1e16),
        Spend(-1e16, (("model a", 2), ("no usage recorded", 1))),
        Spend(0.3, (("model b", 4),)),
        Spend(-0.0),
    ]
    members = [ScenarioReport({}, spend, (0, 0)) for spend in spends]
    for n in range(len(members) + 1):
        expected = sum(spends[:n], Spend())
        assert group_spend(members[:n]) == expected
        assert repr(group_spend(members[:n]).dollars) == repr(expected.dollars)
