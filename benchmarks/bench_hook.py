"""Benchmark both hooks on a commit that touches no watched or cache path.

    python benchmarks/bench_hook.py [--runs 30] [--files 2000]

Builds a repository configured like a real user's (cache root, datasets, watch globs in
pyproject.toml, a committed cache), stages an unrelated change, and times, in rounds, the same
interpreter's `python -c pass`, `hooks/pre-commit` (exactly what `git commit` runs with
core.hooksPath=hooks), and the entries of the pre-commit framework's two hooks, which run on
every commit: `python -I -m cachelint.hook check` (`cachelint-check`) and `python -I -m
cachelint.hook watch` (`cachelint-watch`). Each hook's figure is the median of its per-round
ratios to `python -c pass`. Goal: each hook within 1.5x of `python -c pass`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
HOOK = PROJECT / "hooks" / "pre-commit"
CONFIG = """[project]
name = "team-evals"
version = "1.0"

[tool.cachelint]
cache = "eval-cache"
datasets = "eval-datasets"
watch = ["prompts/**", "src/**/*.prompty", "models.json"]
"""


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def build_repo(repo: Path, files: int) -> None:
    git(repo.parent, "init", "-q", repo.name)
    (repo / "pyproject.toml").write_text(CONFIG)
    (repo / "prompts").mkdir()
    (repo / "prompts" / "system.txt").write_text("You are terse.\n")
    (repo / "models.json").write_text('{"model": "gpt-4o-mini"}\n')
    (repo / ".gitattributes").write_text("eval-cache/** -text\n")
    for i in range(files):
        entry = repo / "eval-cache" / "cache" / f"s{i % 20}" / f"{i:016x}"
        entry.mkdir(parents=True)
        (entry / "entry.json").write_text("{}\n")
        (entry / "contents.data").write_text(f'"answer {i}"\n')
    (repo / "src").mkdir()
    (repo / "src" / "app.py").write_text("print('v1')\n")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "init")
    (repo / "src" / "app.py").write_text("print('v2')\n")  # the unrelated change
    git(repo, "add", "src/app.py")


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{cmd} failed: {proc.stderr.decode()}")
    return seconds


def paired(runs: int, commands: dict[str, list[str]], cwd: Path, env: dict[str, str]) -> dict:
    """Each command once per round, in order: times by name."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, cmd in commands.items():
            times[name].append(timed(cmd, cwd, env))
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--files", type=int, default=2000, help="cache entries in the repo")
    args = parser.parse_args()
    python = sys.executable
    # As a developer has it: the venv's bin first on PATH, so the hook finds `cachelint` there.
    env = {**os.environ, "PATH": f"{Path(python).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("CACHELINT_PYTHON", None)
    base = Path(tempfile.mkdtemp(prefix="cachelint-bench-hook-"))
    try:
        repo = base / "repo"
        build_repo(repo, args.files)
        times = paired(
            args.runs,
            {
                "pass": [python, "-c", "pass"],
                "plain": ["sh", str(HOOK)],
                "check": [python, "-I", "-m", "cachelint.hook", "check"],
                "watch": [python, "-I", "-m", "cachelint.hook", "watch"],
            },
            repo,
            env,
        )
        t_pass = statistics.median(times["pass"])
        print(f"python -c pass                   {t_pass * 1000:7.1f} ms (median)")
        ratios = {}
        for name, label in (
            ("plain", "hooks/pre-commit"),
            ("check", "cachelint.hook check (framework)"),
            ("watch", "cachelint.hook watch (framework)"),
        ):
            ratio = statistics.median(
                t / p for t, p in zip(times[name], times["pass"], strict=True)
            )
            ratios[name] = ratio
            print(
                f"{label:<32} {statistics.median(times[name]) * 1000:7.1f} ms (median) "
                f"= {ratio:.2f}x python -c pass (median of {args.runs} paired rounds)"
            )
        verdict = "OK" if max(ratios.values()) <= 1.5 else "SLOWER THAN GOAL"
        print(f"goal: each hook within 1.5x python -c pass: {verdict}")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
