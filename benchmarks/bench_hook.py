"""Benchmark the plain git hook on a commit that touches no watched or cache path.

    python benchmarks/bench_hook.py [--runs 30] [--files 2000]

Builds a repository configured like a real user's (cache root, datasets, watch globs in
pyproject.toml, a committed cache), stages an unrelated change, and times `hooks/pre-commit`
(exactly what `git commit` runs with core.hooksPath=hooks) against the same interpreter's
`python -c pass`, best of --runs each. Goal: the hook within 3x of `python -c pass`.
"""

from __future__ import annotations

import argparse
import os
import shutil
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


def best(runs: int, cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True)
        times.append(time.perf_counter() - start)
        if proc.returncode != 0:
            raise SystemExit(f"{cmd} failed: {proc.stderr.decode()}")
    return min(times)


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
        t_pass = best(args.runs, [python, "-c", "pass"], repo, env)
        t_hook = best(args.runs, ["sh", str(HOOK)], repo, env)
        t_commit = best(
            max(3, args.runs // 5),
            ["git", "-c", f"core.hooksPath={HOOK.parent}", "commit", "-q", "--dry-run", "-m", "x"],
            repo,
            env,
        )
        print(f"python -c pass        {t_pass * 1000:7.1f} ms")
        print(
            f"hooks/pre-commit      {t_hook * 1000:7.1f} ms  "
            f"= {t_hook / t_pass:.2f}x python -c pass"
        )
        print(f"(git commit --dry-run {t_commit * 1000:7.1f} ms, for scale; it runs no hook)")
        verdict = "OK" if t_hook <= 3 * t_pass else "SLOWER THAN GOAL"
        print(f"goal: hook within 3x python -c pass: {verdict}")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
