"""Benchmark both hooks on a commit that touches no watched or cache path.

    python benchmarks/bench_hook.py [--runs 30] [--files 2000] [--install wheel|editable|both]

Builds a repository configured like a real user's (cache root, datasets, watch globs in
pyproject.toml, a committed cache), stages an unrelated change, and times, in rounds, the same
interpreter's `python -c pass`, `hooks/pre-commit` (exactly what `git commit` runs with
core.hooksPath=hooks), and the entries of the pre-commit framework's two hooks, which run on
every commit, as `.pre-commit-hooks.yaml` names them (`cachelint-check` and `cachelint-watch`).
Each hook runs once untimed first (it must exit 0; the first run after a config change parses the
config and keeps the gate's part in .git/cachelint/hook-config). Each hook's figure is the median of
its per-round ratios to `python -c pass` run by the same interpreter. Goal: each hook within 1.5x
of `python -c pass`.

Two installs, timed in the same rounds: `editable` is this interpreter (the dev venv's editable
install, whose .pth finder imports pathlib, re and importlib.util into every start-up, `python -c
pass` included, which flatters the ratio); `wheel` is a fresh venv (`--without-pip`) with the
package laid out in site-packages as its wheel installs it (files copied, bytecode compiled, a
`cachelint` script on PATH), what a user or the pre-commit framework runs.
"""

from __future__ import annotations

import argparse
import compileall
import os
import shlex
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


def framework_entries() -> dict[str, list[str]]:
    """The pre-commit framework's entries by hook id, as `.pre-commit-hooks.yaml` gives them."""
    entries: dict[str, list[str]] = {}
    hook_id = ""
    for line in (PROJECT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8").splitlines():
        key, _, value = line.strip().removeprefix("- ").partition(": ")
        if key == "id":
            hook_id = value.strip()
        elif key == "entry":
            entries[hook_id] = shlex.split(value)
    return entries


def wheel_install(base: Path) -> Path:
    """A fresh venv with the package where its wheel puts it (no .pth finder); its python."""
    venv = base / "wheel-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    target = Path(site) / "cachelint"
    shutil.copytree(PROJECT / "cachelint", target, ignore=shutil.ignore_patterns("__pycache__"))
    compileall.compile_dir(str(target), quiet=1)
    script = venv / "bin" / "cachelint"  # what pip writes: the hook takes python from its #!
    script.write_text(f"#!{python}\nimport sys\nfrom cachelint.cli import main\nsys.exit(main())\n")
    script.chmod(0o755)
    return python


def commands(python: str, entries: dict[str, list[str]]) -> dict[str, list[str]]:
    def framework(hook_id: str) -> list[str]:
        entry = entries[hook_id]
        return [python if entry[0] == "python" else entry[0], *entry[1:]]

    return {
        "pass": [python, "-c", "pass"],
        "plain": ["sh", str(HOOK)],
        "check": framework("cachelint-check"),
        "watch": framework("cachelint-watch"),
    }


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{cmd} failed: {proc.stderr.decode()}")
    return seconds


Runs = dict[tuple[str, str], tuple[list[str], dict[str, str]]]


def paired(runs: int, commands: Runs, cwd: Path) -> dict[tuple[str, str], list[float]]:
    """Each command once untimed, then once per round, in order: times by (install, name)."""
    for cmd, env in commands.values():
        timed(cmd, cwd, env)
    times: dict[tuple[str, str], list[float]] = {key: [] for key in commands}
    for _ in range(runs):
        for key, (cmd, env) in commands.items():
            times[key].append(timed(cmd, cwd, env))
    return times


def report(install: str, times: dict[tuple[str, str], list[float]], runs: int) -> float:
    """Print one install's lines; its worst ratio."""
    t_pass = times[install, "pass"]
    print(f"{install} install: python -c pass {statistics.median(t_pass) * 1000:.1f} ms (median)")
    worst = 0.0
    for name, label in (
        ("plain", "hooks/pre-commit"),
        ("check", "cachelint-check (framework)"),
        ("watch", "cachelint-watch (framework)"),
    ):
        t_hook = times[install, name]
        ratio = statistics.median(t / p for t, p in zip(t_hook, t_pass, strict=True))
        worst = max(worst, ratio)
        print(
            f"  {label:<28} {statistics.median(t_hook) * 1000:7.1f} ms (median) "
            f"= {ratio:.2f}x python -c pass (median of {runs} paired rounds)"
        )
    return worst


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--files", type=int, default=2000, help="cache entries in the repo")
    parser.add_argument("--install", choices=("wheel", "editable", "both"), default="both")
    args = parser.parse_args()
    installs = ("wheel", "editable") if args.install == "both" else (args.install,)
    entries = framework_entries()
    base = Path(tempfile.mkdtemp(prefix="cachelint-bench-hook-"))
    try:
        repo = base / "repo"
        build_repo(repo, args.files)
        runs: Runs = {}
        for install in installs:
            python = str(wheel_install(base) if install == "wheel" else Path(sys.executable))
            # As a user has it: the venv's bin first on PATH, so the hook finds `cachelint` there.
            path = f"{Path(python).parent}{os.pathsep}{os.environ['PATH']}"
            env = {**os.environ, "PATH": path}
            env.pop("CACHELINT_PYTHON", None)
            for name, cmd in commands(python, entries).items():
                runs[install, name] = (cmd, env)
        times = paired(args.runs, runs, repo)
        worst = max(report(install, times, args.runs) for install in installs)
        verdict = "OK" if worst <= 1.5 else "SLOWER THAN GOAL"
        print(f"goal: each hook within 1.5x python -c pass: {verdict}")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
