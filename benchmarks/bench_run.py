"""Benchmark `cachelint run` replaying a hot cache: cases/s, ms/case, peak memory.

    python benchmarks/bench_run.py                 # 200 and 2,000 scenarios
    python benchmarks/bench_run.py --sizes 200 2000 20000
    python benchmarks/bench_run.py --promptfoo     # also time promptfoo's cached replay (npm)

For each size it builds a temp git repository with that many scenarios (10 agents x 10 tenants x
N/100 names, a system-file prompt, two assertions each), records the cache through the caching
client against the in-process scripted fake provider (no HTTP: `FakeProvider.respond`), then times
`cachelint run` replaying it offline as a subprocess (what CI runs, interpreter start included)
and in process (the per-case cost alone). The goal is ~0.3 ms/case, flat from 200 to 20,000
(promptfoo's cached replay measured 6.6 ms/case).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cachelint.commands.run import run  # noqa: E402
from cachelint.config import Config  # noqa: E402
from cachelint.runner.fake_provider import FakeProvider, parse_script  # noqa: E402

SCRIPT = {"rules": [{"match": {}, "reply": {"echo": True}}]}


@dataclass(frozen=True)
class InProcessCompletion:
    response: Any
    latency_s: float
    attempts: int = 1


class InProcessFake:
    """The scripted fake without a socket, shaped like the HTTP transport."""

    def __init__(self) -> None:
        self.provider = FakeProvider(parse_script(dict(SCRIPT), source="<bench>"))

    def complete(self, body: Mapping[str, Any]) -> InProcessCompletion:
        raw = json.dumps(dict(body)).encode("utf-8")
        status, _, data = self.provider.respond("POST", "/v1/chat/completions", {}, raw)
        assert status == 200, data
        return InProcessCompletion(json.loads(data), 0.0)


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def build(repo: Path, size: int) -> None:
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    (repo / "pyproject.toml").write_text(
        '[tool.cachelint]\n[tool.cachelint.target]\nprovider = "cachelint-fake"\n'
        'model = "scripted-v1"\n',
        encoding="utf-8",
    )
    (repo / "prompts").mkdir()
    (repo / "prompts/support.md").write_text(
        "You are a support agent.\nAnswer briefly.\n", encoding="utf-8"
    )
    per_tenant = max(1, size // 100)
    made = 0
    for a in range(10):
        for t in range(10):
            base = repo / "eval-datasets" / f"agent{a}" / f"tenant{t}"
            base.mkdir(parents=True)
            for n in range(per_tenant):
                if made == size:
                    return
                question = f"question {a}-{t}-{n} about refunds"
                scenario = {
                    "system-file": "prompts/support.md",
                    "input": question,
                    "options": {"temperature": 0},
                    "assert": [
                        {"type": "contains", "value": question},
                        {"type": "not-contains", "value": "I don't know"},
                    ],
                }
                (base / f"case{n:04d}.json").write_text(json.dumps(scenario), encoding="utf-8")
                made += 1


def _args(**kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "config_path": None,
        "mode": None,
        "refresh": False,
        "agents": [],
        "tenants": [],
        "scenarios": [],
        "trials": None,
        "jobs": 1,
        "fmt": "text",
        "execution": "bench",
        "junit": None,
        "html": None,
    }
    base.update(kw)
    return base


def record(repo: Path) -> float:
    started = time.perf_counter()

    def factory(config: Config) -> InProcessFake:
        return InProcessFake()

    rc = run(
        repo,
        out=io.StringIO(),
        err=io.StringIO(),
        transport_factory=factory,
        **_args(refresh=True, execution="record"),
    )
    assert rc == 0, "recording failed"
    return time.perf_counter() - started


def replay_subprocess(repo: Path) -> tuple[float, int]:
    """Wall time and peak RSS (KiB) of `python -m cachelint run` (best of 3)."""
    best = float("inf")
    peak = 0
    for i in range(3):
        started = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "cachelint", "run", "--execution", f"sub{i}"],
            cwd=repo,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        took = time.perf_counter() - started
        assert proc.returncode == 0, proc.stderr.read() if proc.stderr else b""
        best = min(best, took)
        peak = max(peak, usage.ru_maxrss)
    return best, peak


def replay_in_process(repo: Path) -> float:
    best = float("inf")
    for i in range(3):
        started = time.perf_counter()
        rc = run(repo, out=io.StringIO(), err=io.StringIO(), **_args(execution=f"inproc{i}"))
        best = min(best, time.perf_counter() - started)
        assert rc == 0
    return best


def startup() -> float:
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "cachelint", "--version"], capture_output=True, check=True
        )
        best = min(best, time.perf_counter() - started)
    return best


def promptfoo(work: Path, size: int) -> float | None:
    """Seconds for promptfoo's cached replay of an equivalent suite, or None if unavailable."""
    npm = shutil.which("npm")
    if npm is None:
        return None
    tool = work / "promptfoo-tool"
    tool.mkdir(exist_ok=True)
    binary = tool / "node_modules/.bin/promptfoo"
    if not binary.exists():
        done = subprocess.run(
            [npm, "install", "--silent", "--no-audit", "--no-fund", "promptfoo"],
            cwd=tool,
            capture_output=True,
        )
        if done.returncode != 0 or not binary.exists():
            print("  promptfoo: npm install failed, skipped", file=sys.stderr)
            return None
    suite = work / f"promptfoo-{size}"
    suite.mkdir(exist_ok=True)
    tests = [
        {
            "vars": {"question": f"question {i} about refunds"},
            "assert": [
                {"type": "contains", "value": f"question {i} about refunds"},
                {"type": "not-contains", "value": "I don't know"},
            ],
        }
        for i in range(size)
    ]
    config = {
        "prompts": ["You are a support agent. Answer briefly.\n{{question}}"],
        "providers": ["echo"],
        "tests": tests,
    }
    (suite / "promptfooconfig.json").write_text(json.dumps(config), encoding="utf-8")
    env = dict(
        os.environ, PROMPTFOO_CACHE_PATH=str(suite / "cache"), PROMPTFOO_DISABLE_TELEMETRY="1"
    )
    env["PROMPTFOO_DISABLE_UPDATE"] = "1"
    cmd = [str(binary), "eval", "-c", "promptfooconfig.json", "--no-table", "--no-progress-bar"]
    subprocess.run(cmd, cwd=suite, env=env, capture_output=True)  # warm the cache
    started = time.perf_counter()
    subprocess.run(cmd, cwd=suite, env=env, capture_output=True)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 2000])
    parser.add_argument("--promptfoo", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the temp directory")
    ns = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cachelint-bench-run-"))
    base = startup()
    print(f"interpreter + cachelint startup: {base * 1000:.0f} ms")
    try:
        for size in ns.sizes:
            repo = work / f"repo-{size}"
            build(repo, size)
            took = record(repo)
            wall, peak = replay_subprocess(repo)
            inproc = replay_in_process(repo)
            print(
                f"{size:>6} scenarios: record {took:.1f} s; replay `cachelint run` {wall:.2f} s "
                f"({size / wall:,.0f} cases/s, {wall / size * 1000:.3f} ms/case incl. startup, "
                f"peak RSS {peak / 1024:.0f} MiB); in process {inproc:.2f} s "
                f"({inproc / size * 1000:.3f} ms/case)"
            )
            if ns.promptfoo:
                pf = promptfoo(work, size)
                if pf is None:
                    print("        promptfoo: not available, skipped")
                else:
                    print(
                        f"        promptfoo cached replay: {pf:.2f} s ({pf / size * 1000:.3f} "
                        f"ms/case); cachelint is {pf / wall:.1f}x faster"
                    )
    finally:
        if ns.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
        _ = resource  # ru_maxrss comes from os.wait4; resource documents the unit (KiB on Linux)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
