"""The HTML report shows what was recorded, and its trend what the suite did (issue 36 item 7).

Every recorded message of every call is on the page (a single-call python target's own SYSTEM
turn was missing); the trend is drawn over unfiltered replays of the whole suite only (a
`--agent` re-record at 0/N showed as a dip of the suite), with labelled axes and the values.
Entries are recorded through the fake provider; replays and reports go through the real CLI.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cachelint
from tests.fakes import fake_server
from tests.helpers import DEAD, SCRIPT, do_run, python_target, write_targets_repo


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CACHELINT_TEST_KEY", raising=False)
    monkeypatch.delenv("CACHELINT_EXECUTION", raising=False)
    monkeypatch.setenv("CACHELINT_NOW", "2026-01-15T10:00:00Z")


class Page(HTMLParser):
    """Each message's role and text, each element's data-testid, and the SVG texts."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[tuple[str, str]] = []
        self.testids: list[str] = []
        self.svg_text: list[str] = []
        self._role: str | None = None
        self._in_svg_text = False
        self._in_pre = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("data-testid"):
            self.testids.append(str(a["data-testid"]))
        if tag == "div" and a.get("data-role"):
            self._role = a["data-role"]
        if tag == "pre" and self._role is not None:
            self.messages.append((self._role, ""))
            self._in_pre = True
        self._in_svg_text = tag == "text"

    def handle_endtag(self, tag: str) -> None:
        if tag == "pre":
            self._role, self._in_pre = None, False
        if tag == "text":
            self._in_svg_text = False

    def handle_data(self, data: str) -> None:
        if self._in_svg_text:
            self.svg_text.append(data)
        if self._in_pre:
            role, text = self.messages[-1]
            self.messages[-1] = (role, text + data)


def parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


# An agent that sends its own system prompt (the scenario has none) in one call.
OWN_SYSTEM = """
def answer(scenario, client):
    messages = [{"role": "system", "content": "You are the Acme refunds desk. Be brief."}]
    messages += [dict(m) for m in scenario.messages]
    return client.chat(messages)
"""
SCENARIO = {"input": "How do refunds work?", "assert": [{"type": "contains", "value": "refunds"}]}


def _record(repo: Path, script: dict[str, Any] = SCRIPT, **kw: Any) -> None:
    pyproject = repo / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    with fake_server(script) as fake:
        pyproject.write_text(text.replace(DEAD, fake.url), encoding="utf-8")
        try:
            recorded = do_run(repo, refresh=True, **kw)
        finally:
            pyproject.write_text(text, encoding="utf-8")
    assert recorded.rc == 0, recorded.out + recorded.err


def test_a_single_call_targets_own_system_turn_is_on_the_page(git_repo: Path) -> None:
    write_targets_repo(
        git_repo,
        targets=python_target("agent:answer"),
        scenarios={"support/acme/refund": SCENARIO},
        files={"agent.py": OWN_SYSTEM},
    )
    _record(git_repo, execution="recorded")
    replay = run_cachelint(git_repo, "run", "--execution", "replay")
    assert replay.returncode == 0, replay.stdout + replay.stderr
    page = parse(git_repo / "eval-results/replay/report.html")
    assert ("system", "You are the Acme refunds desk. Be brief.") in page.messages
    assert ("user", "How do refunds work?") in page.messages
    assert ("assistant", "Acme refunds within 30 days.") in page.messages
    assert page.testids.count("call") == 1


LONG = "".join(
    f"Step {i}: keep the receipt; refunds reach the card in 5 days.\n" for i in range(80)
)


def test_a_long_answer_is_cut_with_a_count_and_is_on_the_page_once(git_repo: Path) -> None:
    write_targets_repo(
        git_repo,
        targets=python_target("agent:answer"),
        scenarios={"support/acme/refund": SCENARIO},
        files={"agent.py": OWN_SYSTEM},
    )
    _record(git_repo, {"rules": [], "default": {"content": LONG}}, execution="recorded")
    assert run_cachelint(git_repo, "run", "--execution", "replay").returncode == 0
    html = (git_repo / "eval-results/replay/report.html").read_text(encoding="utf-8")
    cut = re.search(
        r"<div data-role=assistant><pre>(.*?)</pre><details class=more><summary>… ([\d,]+) "
        r"more characters</summary><pre>(.*?)</pre></details></div>",
        html,
        re.S,
    )
    assert cut, html[html.find("data-role=assistant") - 200 :][:800]
    head, count, rest = cut.groups()
    assert len(LONG) > 1500 and head == LONG[:1500] and head + rest == LONG
    assert count == f"{len(LONG) - 1500:,}"
    assert html.count("Step 79:") == 1  # the whole text once, nowhere repeated


# A tool round trip on two models, then a judge: three calls and a judge call, all recorded.
TOOLS_SCENARIO = {
    "system": "You look orders up.",
    "input": "Where is order A-1?",
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "lookup_order",
                "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
            },
        }
    ],
    "assert": [{"type": "contains", "value": "shipped"}],
    "judge": ["relevance"],
}
ROUND_TRIP = """
import json

def answer(scenario, client):
    messages = [dict(m) for m in scenario.messages]
    first = client.chat(messages, tools=scenario.tools, model="planner-model")
    call = first["choices"][0]["message"]["tool_calls"][0]
    messages.append(first["choices"][0]["message"])
    messages.append({"role": "tool", "tool_call_id": call["id"],
                     "content": json.dumps({"status": "shipped"})})
    return client.chat(messages, model="writer-model")
"""


def test_every_message_of_every_call_is_on_the_page(git_repo: Path) -> None:
    write_targets_repo(
        git_repo,
        targets=python_target("agent:answer"),
        scenarios={"support/acme/order": TOOLS_SCENARIO},
        files={"agent.py": ROUND_TRIP},
    )
    _record(git_repo, execution="recorded")
    assert run_cachelint(git_repo, "run", "--execution", "replay").returncode == 0
    page = parse(git_repo / "eval-results/replay/report.html")
    roles = [role for role, _ in page.messages]
    # call 1: system, user -> a tool call; call 2 repeats those three (folded), adds the tool's
    # result -> the answer; then the judge's call, its prompt and its verdict.
    assert page.testids.count("call") == 3
    assert roles[:5] == ["system", "user", "tool call", "tool", "assistant"], roles
    assert ("tool", '{"status": "shipped"}') in page.messages
    assert ("assistant", "Order A-1 has shipped.") in page.messages
    judge_prompt = [text for role, text in page.messages[5:] if "Metric: relevance" in text]
    assert judge_prompt, page.messages[5:]
    html = (git_repo / "eval-results/replay/report.html").read_text(encoding="utf-8")
    assert "call 1 of 2: model planner-model, cache hit" in html
    assert "call 2 of 2: model writer-model, cache hit; the first 3 message(s) as above" in html
    assert "judge call 1 of 1: model configured-model, cache hit" in html


def _trend_repo(repo: Path) -> None:
    from tests.helpers import ACME_PROMPT, GLOBEX_PROMPT, refund

    agents = {f"{agent}/acme/refund": refund(prompt="prompts/acme.md") for agent in "abc"}
    agents["triage/acme/refund"] = refund(prompt="prompts/acme.md")
    write_targets_repo(
        repo,
        targets=f"""
            [tool.cachelint.target]
            url = "{DEAD}"
            provider = "cachelint-fake"
            model = "scripted-v1"
            api-key-env = "CACHELINT_TEST_KEY"
        """,
        scenarios=agents,
        files={"prompts/acme.md": ACME_PROMPT, "prompts/globex.md": GLOBEX_PROMPT},
    )


def test_the_trend_is_drawn_over_whole_suite_replays_only(git_repo: Path) -> None:
    _trend_repo(git_repo)
    _record(git_repo, execution="r0")
    for name in ("r1", "r2"):
        assert run_cachelint(git_repo, "run", "--execution", name).returncode == 0
    # A re-record of one agent that fails (the provider answers nonsense): 0/1, not the suite's.
    pyproject = git_repo / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    with fake_server({"rules": [], "default": {"content": "no idea"}}) as fake:
        pyproject.write_text(text.replace(DEAD, fake.url), encoding="utf-8")
        try:
            bad = do_run(git_repo, refresh=True, agents=["triage"], execution="rerecord")
        finally:
            pyproject.write_text(text, encoding="utf-8")
    assert bad.rc == 1
    # A filtered replay (one agent, one shard) is no point of the suite either.
    assert run_cachelint(git_repo, "run", "--agent", "a", "--execution", "f1").returncode == 0
    shard = run_cachelint(git_repo, "run", "--shard", "1/2", "--execution", "f2")
    assert shard.returncode in (0, 1)
    # Restore the triage entry's answer by re-recording it with the usual script.
    _record(git_repo, agents=["triage"], execution="fixed")
    assert run_cachelint(git_repo, "run", "--execution", "r3").returncode == 0

    report = git_repo / "eval-results/r3/report.html"
    page = parse(report)
    html = report.read_text(encoding="utf-8")
    (chart,) = re.findall(r'<svg class="trend" data-testid="trend-chart" data-points="(\d+)"', html)
    assert chart == "3", chart  # r1, r2, r3: not r0 (recording), rerecord, f1, f2, fixed
    values = re.findall(r"<tr><td>\d+</td><td>([^<]+)</td><td>(\d+/\d+)</td>", html)
    assert values == [("r1", "4/4"), ("r2", "4/4"), ("r3", "4/4")]
    assert "pass rate" in page.svg_text and "0%" in page.svg_text and "100%" in page.svg_text
    assert any(t.startswith("execution") for t in page.svg_text)
    assert page.svg_text.count("4/4") == 3  # each point's value beside it
    assert {"trend", "trend-chart", "trend-values"} <= set(page.testids)
    # A filtered run's own page still shows the suite's trend, and says it is not a point of it.
    filtered = (git_repo / "eval-results/f1/report.html").read_text(encoding="utf-8")
    assert "this execution is one of them" in filtered
    summary = json.loads((git_repo / "eval-results/f1/run.json").read_text(encoding="utf-8"))
    assert summary["filtered"] is True
