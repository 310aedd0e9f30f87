"""Helpers shared by several test modules: repositories built for one purpose, and the values
they are built with. Tests import from here (or use conftest fixtures), never from each other."""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import textwrap
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from cachelint.canonical import cache_key
from cachelint.cli import main
from cachelint.collect import collect
from cachelint.config import load
from cachelint.facts import TreeFacts
from cachelint.findings import Finding
from cachelint.green import record_green_run
from cachelint.rules import Rule, all_rules
from cachelint.runner.dataset import Scenario
from cachelint.runner.options import RunOptions
from cachelint.runner.pipeline import run
from cachelint.store import Store
from tests.conftest import PROJECT, commit_all, git
from tests.conftest import RUN_NOW as RUN_NOW  # CACHELINT_NOW for the run tests
from tests.fakes import ReceivedRequest, fake_server
from tests.meai_tree import stj_indented

# The moment tree checks run at: entries recorded at it are fresh, stamps a year old are not.
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
TREE_CODES = [r.code for r in all_rules() if r.group == "tree"]

# ---- a cache entry --------------------------------------------------------------------------


def put(
    repo: Path, scenario: str = "agent/tenant/hello", text: str = "hi", root: str = "eval-cache"
) -> Path:
    store = Store(repo / root, clock=lambda: NOW)
    request = {"messages": [{"role": "user", "content": text}]}
    return store.put(
        scenario, cache_key(request), request, {"text": text}, provider="openai", model="m"
    )


def stage_listing(repo: Path) -> bytes:
    """The `git ls-files -z -v --stage` listing of `eval-cache`, as a check asks for it."""
    return subprocess.run(
        ["git", "ls-files", "-z", "-v", "--stage", "--", "eval-cache"],
        cwd=repo,
        capture_output=True,
        check=True,
    ).stdout


# ---- the one-line rule harness ----------------------------------------------------------------


def rule(code: str) -> Rule:
    return {r.code: r for r in all_rules()}[code]


def facts_of(repo: Path) -> TreeFacts:
    return collect(load(repo), now=NOW)


def findings(repo: Path, code: str) -> list[Finding]:
    """The rule's findings on the tree, which must be the same read from disk (`--no-cache`),
    on the check that writes the entry cache, and on a warm check that reads it: every rule
    test is also an equivalence test of the two read paths."""
    check = rule(code).check
    cold = list(check(collect(load(repo), now=NOW, entry_cache=False)))
    first = list(check(collect(load(repo), now=NOW)))
    warm = list(check(collect(load(repo), now=NOW)))
    assert cold == first == warm, (cold, first, warm)
    return warm


def assert_findings(repo: Path, code: str) -> list[Finding]:
    found = findings(repo, code)
    assert found, f"expected {code} findings"
    assert {f.code for f in found} == {code}
    return found


def assert_no_findings(repo: Path, code: str) -> None:
    assert findings(repo, code) == []


MEAI_KEY = "0123456789ABCDEF" * 6  # 96 uppercase hex characters, like a SHA-384 key


def write_meai(repo: Path, *, key: str = MEAI_KEY, scenario: str = "Scenario") -> Path:
    directory = repo / "eval-cache" / "cache" / scenario / "1" / key
    directory.mkdir(parents=True)
    # As MEAI 10.9.0 writes it: no fraction on a whole second, indented, no final newline.
    entry = {
        "scenarioName": scenario,
        "iterationName": "1",
        "creation": "2026-01-01T00:00:00Z",
        "expiration": "2027-01-01T00:00:00Z",
    }
    (directory / "entry.json").write_bytes(stj_indented(entry).encode())
    (directory / "contents.data").write_text('{\n  "messages": []\n}')
    return directory


# ---- a repository gated by `cachelint watch` ---------------------------------------------------

GREEN_NOW = datetime(2026, 1, 31, 12, 0, tzinfo=timezone.utc)
CONFIG = '[tool.cachelint]\nwatch = ["prompts/**", "models.json"]\n'


def make_gated_repo(repo: Path, config: str = CONFIG) -> Path:
    """A repository with watched prompts, a dataset, a cache entry and a committed green record."""
    (repo / "pyproject.toml").write_text(config)
    (repo / "prompts").mkdir()
    (repo / "prompts" / "system.txt").write_text("You are terse.\n")
    (repo / "models.json").write_text('{"model": "gpt-4o-mini"}\n')
    (repo / "README.md").write_text("docs\n")
    dataset = repo / "eval-datasets" / "agent" / "tenant"
    dataset.mkdir(parents=True)
    (dataset / "s1.json").write_text('{"input": "hi"}\n')
    entry = repo / "eval-cache" / "cache" / "agent" / "tenant" / "s1" / "0123456789abcdef"
    entry.mkdir(parents=True)
    (entry / "entry.json").write_text("{}\n")
    (entry / "contents.data").write_text('"hello"\n')
    (repo / ".gitattributes").write_text("eval-cache/** -text\n")
    commit_all(repo, "evals")
    record_green(repo)
    commit_all(repo, "green")
    return repo


def record_green(repo: Path) -> Path:
    return record_green_run(
        load(repo), execution="e1", mode="replay", scenarios=["agent/tenant/s1"], now=GREEN_NOW
    )


# ---- a repository the commit hooks accept ------------------------------------------------------


def make_checked_repo(repo: Path, *, attributes: bool) -> Path:
    """A valid recorded cache with a stamp and a pin, optionally missing `-text`."""
    store = Store(repo / "eval-cache")
    request: dict[str, list[str]] = {"messages": []}
    store.put("agent/t/s1", cache_key(request), request, {"text": "hi"}, provider="p", model="m")
    (repo / "requirements.txt").write_text("cachelint==0.1.0\n")
    if attributes:
        (repo / ".gitattributes").write_text("eval-cache/** -text\n")
    subprocess.run(
        [sys.executable, "-m", "cachelint", "stamp"], cwd=repo, check=True, capture_output=True
    )
    git(repo, "add", "-A")
    return repo


# ---- the commit hooks, plain and through the pre-commit framework ------------------------------

HOOKS = PROJECT / "hooks"
VENV_BIN = Path(sys.executable).parent


def hook_env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}"}
    env.pop("CACHELINT_PYTHON", None)
    env.update(extra)
    return env


def outside_site_packages(tmp_path: Path) -> tuple[Path, str]:
    """An interpreter whose own site-packages is empty, and the PYTHONPATH that gives it
    cachelint and its dependencies, as `pip install --target` leaves them (a `pip install
    --user` is outside the interpreter's site-packages likewise): `python -I` sees neither."""
    bare = tmp_path / "bare-venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True, timeout=120
    )
    python = bare / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    paths = sysconfig.get_paths()
    found = dict.fromkeys([str(PROJECT), paths["purelib"], paths["platlib"]])
    return python, os.pathsep.join(found)


def hook_commit(
    repo: Path, message: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """A real commit with the plain hook enabled the way a team would (core.hooksPath)."""
    return subprocess.run(
        ["git", "-c", f"core.hooksPath={HOOKS}", "commit", "-q", "--no-gpg-sign", "-m", message],
        cwd=repo,
        capture_output=True,
        text=True,
        env=env or hook_env(),
    )


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").strip()


def framework_env(pre_commit_home: Path) -> dict[str, str]:
    return {**os.environ, "PRE_COMMIT_HOME": str(pre_commit_home)}


def pre_commit(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
    )


def framework_commit(
    repo: Path, env: dict[str, str], message: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "commit", "-q", "--no-gpg-sign", "-m", message],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
    )


# ---- `cachelint run` repositories, recorded through the fake provider --------------------------


# A child program (the standard library only, so any python runs it) asking the cache endpoint
# in OPENAI_BASE_URL for a chat completion and printing the answer. With SNEAK set it first
# reaches for another port than the endpoint's and swallows the error: nothing listens on
# 127.0.0.2:443, so a recording goes on at once, and a replay must refuse it.
def sneak(variable: str) -> str:
    """A program's start that, with `variable` set, reaches for 127.0.0.2:443 and swallows the
    error."""
    return f"""
import os, socket
if os.environ.get("{variable}"):
    try:
        socket.create_connection(("127.0.0.2", 443), timeout=3)
    except OSError as exc:
        print("ignored:", exc)
"""


ENDPOINT_CHILD = (
    sneak("SNEAK")
    + """
import json, urllib.request
body = {"model": "child-model", "messages": [{"role": "user", "content": "refunds?"}]}
request = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    data=json.dumps(body).encode(),
    headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
             "Content-Type": "application/json"},
)
with urllib.request.urlopen(request, timeout=30) as reply:
    print(json.load(reply)["choices"][0]["message"]["content"])
"""
)
# A scenario a child's answer passes, and the fake provider's script that gives that answer.
CHILD_ANSWER = {"input": "refunds?", "assert": [{"type": "contains", "value": "30 days"}]}
CHILD_SCRIPT: dict[str, Any] = {"rules": [], "default": {"content": "Refunds take 30 days."}}

DEAD = "http://127.0.0.1:9/v1"  # port 9 (discard): nothing listens; swapped in while recording

SCRIPT: dict[str, Any] = {
    "rules": [
        {
            "match": {"any_contains": "Metric: relevance"},
            "reply": {"json": {"score": 2, "reason": "partly on topic"}},
        },
        {
            "match": {"contains": "refund", "system_contains": "Acme"},
            "reply": {"content": "Acme refunds within 30 days."},
        },
        {
            "match": {"contains": "refund", "system_contains": "Globex"},
            "reply": {"content": "Globex refunds within 14 days."},
        },
        {
            "match": {"has_tool_result": True},
            "reply": {"content": "Order A-1 has shipped."},
        },
        {
            "match": {"has_tools": True},
            "reply": {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A-1"}}]},
        },
    ],
    "default": {"content": "I don't know."},
}

ACME_PROMPT = "You are the Acme support agent.\nAnswer refund questions.\nBe brief.\n"
GLOBEX_PROMPT = "You are the Globex support agent.\nAnswer refund questions.\nBe brief.\n"


def refund(extra: Mapping[str, Any] | None = None, *, prompt: str) -> dict[str, Any]:
    data: dict[str, Any] = {
        "system-file": prompt,
        "input": "How do refunds work?",
        "assert": [{"type": "contains", "value": "refunds within"}],
    }
    data.update(extra or {})
    return data


def write_datasets(
    repo: Path, scenarios: Mapping[str, Mapping[str, Any]], files: Mapping[str, str] | None
) -> None:
    """Each scenario as `eval-datasets/<identity>.json`, and any other `files` by path."""
    for identity, data in scenarios.items():
        path = repo / "eval-datasets" / f"{identity}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    for name, text in (files or {}).items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text, encoding="utf-8")


def write_repo(
    repo: Path,
    url: str,
    scenarios: Mapping[str, Mapping[str, Any]],
    *,
    target: str = "",
    files: Mapping[str, str] | None = None,
) -> None:
    (repo / "pyproject.toml").write_text(
        "[tool.cachelint]\n"
        'cache = "eval-cache"\n'
        "[tool.cachelint.target]\n"
        f'url = "{url}"\n'
        'provider = "cachelint-fake"\n'
        'model = "scripted-v1"\n'
        'api-key-env = "CACHELINT_TEST_KEY"\n'
        'env-file = ".env.eval"\n' + target,
        encoding="utf-8",
    )
    (repo / "prompts").mkdir(exist_ok=True)
    (repo / "prompts/acme.md").write_text(ACME_PROMPT, encoding="utf-8")
    (repo / "prompts/globex.md").write_text(GLOBEX_PROMPT, encoding="utf-8")
    write_datasets(repo, scenarios, files)


BASIC = {
    "support/acme/refund": refund(prompt="prompts/acme.md"),
    "support/globex/refund": refund(prompt="prompts/globex.md"),
}


class Outcome:
    def __init__(self, rc: int, out: str, err: str) -> None:
        self.rc, self.out, self.err = rc, out, err


def do_run(repo: Path, **kw: Any) -> Outcome:
    out, err = io.StringIO(), io.StringIO()
    rc = run(repo, RunOptions(**{"execution": "test", **kw}), out=out, err=err)
    return Outcome(rc, out.getvalue(), err.getvalue())


def cli(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str
) -> Outcome:
    monkeypatch.chdir(repo)
    capsys.readouterr()  # only what this command prints
    rc = main(["run", *args])
    captured = capsys.readouterr()
    return Outcome(rc, captured.out, captured.err)


@contextmanager
def network_blocked() -> Iterator[list[Any]]:
    """Refuse and count every outgoing connection attempt (an OS edge, so mock.patch is fine)."""
    attempts: list[Any] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        attempts.append(args)
        raise OSError("network blocked by the test")

    with (
        mock.patch.object(socket.socket, "connect", refuse),
        mock.patch.object(socket.socket, "connect_ex", refuse),
        mock.patch.object(socket, "create_connection", refuse),
    ):
        yield attempts


def record(repo: Path, script: Mapping[str, Any] = SCRIPT, **kw: Any) -> tuple[Outcome, int]:
    pyproject = repo / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    kw.setdefault("refresh", True)
    with fake_server(script) as fake:
        pyproject.write_text(text.replace(DEAD, fake.url), encoding="utf-8")
        try:
            outcome = do_run(repo, **kw)
        finally:
            # Back to the dead URL: replay must not depend on a server, and messages stay stable.
            pyproject.write_text(text, encoding="utf-8")
        count = len(fake.requests)
    return outcome, count


def record_requests(
    repo: Path, script: Mapping[str, Any], **kw: Any
) -> tuple[Outcome, list[ReceivedRequest]]:
    """`record`, and every request the fake provider received."""
    pyproject = repo / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    with fake_server(script) as fake:
        pyproject.write_text(text.replace(DEAD, fake.url), encoding="utf-8")
        try:
            outcome = do_run(repo, refresh=True, **kw)
        finally:
            pyproject.write_text(text, encoding="utf-8")
        requests = list(fake.requests)
    return outcome, requests


# A small model asked with tools by a system prompt about orders calls `lookup_order`; with the
# tool's result in the conversation, a model answers from it: a tool round trip, on any API.
ROUND_TRIP_SCRIPT: dict[str, Any] = {
    "rules": [
        {"match": {"has_tool_result": True}, "reply": {"content": "Order A-1 has shipped."}},
        {
            "match": {"has_tools": True, "system_contains": "orders"},
            "reply": {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A-1"}}]},
        },
    ],
    "default": {"content": "Refunds take 30 days."},
}


def direct_client(root: Path, mode: Any, transport: Any, endpoint: Any = None) -> Any:
    """A `CachingClient` for scenario support/acme/refund, trial 1, on the cache at `root`: what
    the endpoint answers for, without a run around it."""
    from cachelint.runner.client import CachingClient, Recorder

    return CachingClient(
        store=Store(root),
        scenario="support/acme/refund",
        trial=1,
        mode=mode,
        transport=transport,
        provider="cachelint-fake",
        model="configured-model",
        recorder=Recorder("cachelint run --refresh-cache", DEAD, "CACHELINT_TEST_KEY", None),
        endpoint=endpoint,
    )


def recorded_entries(repo: Path) -> list[dict[str, Any]]:
    """Every entry.json of the repository's cache, in path order."""
    entries = sorted((repo / "eval-cache").rglob("entry.json"))
    return [json.loads(p.read_text(encoding="utf-8")) for p in entries]


def edit_module(path: Path, old: str, new: str) -> None:
    """Replace `old` by `new` in the Python module at `path` and drop its bytecode: a process
    that imports it next must see the edit, even one of the same size within the same second
    (which the bytecode's timestamp check takes for unchanged)."""
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new), encoding="utf-8")
    shutil.rmtree(path.parent / "__pycache__", ignore_errors=True)


def python_target(function: str, *, name: str = "", url: str = DEAD) -> str:
    """A `type = "python"` target running `function` (module:name), recording from `url` (DEAD,
    or a path under it, which `record_requests` points at the fake provider)."""
    table = f"targets.{name}" if name else "target"
    return f"""
        [tool.cachelint.{table}]
        type = "python"
        function = "{function}"
        url = "{url}"
        provider = "cachelint-fake"
        model = "configured-model"
        api-key-env = "CACHELINT_TEST_KEY"
    """


def command_target(command: Sequence[str]) -> str:
    """A `type = "command"` target running `command` per scenario, recording from DEAD."""
    return f"""
        [tool.cachelint.target]
        type = "command"
        command = {json.dumps(list(command))}
        url = "{DEAD}"
        provider = "cachelint-fake"
        model = "configured-model"
        api-key-env = "CACHELINT_TEST_KEY"
    """


def entry_files(repo: Path) -> list[str]:
    base = repo / "eval-cache"
    return sorted(p.relative_to(repo).as_posix() for p in base.rglob("*") if p.is_file())


def latest(repo: Path, execution: str = "test") -> str:
    """The directory the newest run named `execution` claimed (`NAME`, `NAME-2`, ...)."""
    root = repo / "eval-results"
    taken = [
        n for n in range(1, 1000) if (root / (execution if n == 1 else f"{execution}-{n}")).is_dir()
    ]
    return execution if max(taken) == 1 else f"{execution}-{max(taken)}"


def result(repo: Path, identity: str, execution: str = "test") -> dict[str, Any]:
    path = repo / "eval-results" / latest(repo, execution) / f"{identity}.json"
    return json.loads(path.read_text(encoding="utf-8"))


def scenario_with(assertions: Sequence[Mapping[str, Any]]) -> Scenario:
    return Scenario(
        identity="a/t/s",
        path="eval-datasets/a/t/s.json",
        agent="a",
        tenant="t",
        messages=({"role": "user", "content": "hi"},),
        system_source=None,
        options={},
        tools=(),
        assertions=tuple(assertions),
        judges=(),
        trials=1,
        tags=(),
        description=None,
    )


def write_targets_repo(
    repo: Path,
    *,
    targets: str,
    scenarios: Mapping[str, Mapping[str, Any]],
    files: Mapping[str, str] | None = None,
) -> None:
    """A repository whose pyproject.toml holds `targets` (TOML, dedented) and the scenarios."""
    (repo / "pyproject.toml").write_text(
        '[tool.cachelint]\ncache = "eval-cache"\n' + textwrap.dedent(targets), encoding="utf-8"
    )
    write_datasets(repo, scenarios, files)


def replayed_offline(
    repo: Path, scenario: str, *, calls: int, in_process: bool = True
) -> dict[str, Any]:
    """Replay `repo`, in process with every socket connect refused (else over the loopback
    socket), and return the trial of `scenario` once the run passed with its `calls` model calls
    all cache hits."""
    if in_process:  # no socket at all
        with network_blocked() as attempts:
            replay = do_run(repo)
        assert attempts == [], attempts
    else:
        replay = do_run(repo)
    assert replay.rc == 0, replay.out + replay.err
    trial: dict[str, Any] = result(repo, scenario)["trials"][0]
    assert trial["cache_hit"] is True and len(trial["calls"]) == calls, trial
    return trial


def replayed_miss(repo: Path, agent: str) -> dict[str, Any]:
    """Replay scenario support/acme/refund with an empty cache, its python target the function
    `answer` of `agent` (module source): the run must fail on the miss with the miss explanation,
    whatever the agent did with its SDK's error. The trial, for what else to assert of it."""
    scenario = {"input": "How do refunds work?", "assert": [{"type": "contains", "value": "s"}]}
    write_targets_repo(
        repo,
        targets=python_target("miss_agent:answer"),
        scenarios={"support/acme/refund": scenario},
        files={"miss_agent.py": agent},
    )
    replay = do_run(repo)
    assert replay.rc == 1, replay.out + replay.err
    trial: dict[str, Any] = result(repo, "support/acme/refund")["trials"][0]
    miss = "cache miss in replay mode: scenario support/acme/refund"
    assert trial["error"].startswith(miss), trial["error"]
    return trial


def node_or_skip() -> str:
    """The `node` on PATH; without one a test skips, and fails under CI=true, whose machines
    have Node.js, so CI cannot pass by skipping."""
    found = shutil.which("node")
    if found is not None:
        return found
    if os.environ.get("CI"):
        pytest.fail("CI needs Node.js; .ci/run's machines have it")
    pytest.skip("needs node")


# Modules a pull request could add at the top of the repository to run in place of the real ones.
SHADOWED = ("json", "orjson", "blake3")


def plant_shadows(directory: Path, marker: Path) -> None:
    """A module for each of `SHADOWED` in `directory`, which notes in `marker` that it ran."""
    for name in SHADOWED:
        (directory / f"{name}.py").write_text(f"open({str(marker)!r}, 'a').write('{name}\\n')\n")
