"""Benchmark `cachelint guard`'s snapshot against b3sum and plain reads over the same files.

    python benchmarks/bench_guard.py [--entries 100000] [--runs 3] [--dir PATH] [--keep]

Builds a cache tree of N entries (2N small files, MEAI-like nesting) in a fresh git repository,
warms the page cache, then reports the best of --runs for:
  cat     find ... -print0 | xargs -0 cat > /dev/null   (the floor: open + read)
  b3sum   find ... -print0 | xargs -0 b3sum > /dev/null (the goal: snapshot within 1.2x)
  snapshot  cachelint.hashing.snapshot in-process
  guard     `python -m cachelint guard -- true` (two snapshots plus startup)
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def build_tree(repo: Path, entries: int) -> int:
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    root = repo / "eval-cache" / "cache"
    files = 0
    for i in range(entries):
        scenario = f"agent-{i % 7}/tenant-{i % 13}/scenario-{i // 500:04d}"
        key = f"{i:016x}"
        entry = root / scenario / key
        entry.mkdir(parents=True, exist_ok=True)
        meta = {
            "format": 1,
            "key": key * 4,
            "scenario": scenario,
            "created": "2026-01-01T00:00:00Z",
        }
        (entry / "entry.json").write_text(json.dumps(meta, indent=2) + "\n")
        body = {"choices": [{"message": {"content": f"answer {i} " * (1 + i % 9)}}]}
        (entry / "contents.data").write_text(json.dumps(body, indent=2) + "\n")
        files += 2
    return files


def best(runs: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def shell(cmd: str, cwd: Path) -> Callable[[], object]:
    return lambda: subprocess.run(cmd, shell=True, cwd=cwd, check=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", type=Path, help="build the tree here (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the tree afterwards")
    args = parser.parse_args()
    if shutil.which("b3sum") is None:
        print("b3sum not found; install it (apt-get install -y b3sum)", file=sys.stderr)
        return 2

    from cachelint.hashing import snapshot

    base = args.dir or Path(tempfile.mkdtemp(prefix="cachelint-bench-guard-"))
    repo = base / "repo"
    try:
        if not (repo / "eval-cache").is_dir():
            start = time.perf_counter()
            files = build_tree(repo, args.entries)
            print(
                f"built {args.entries} entries ({files} files) "
                f"in {time.perf_counter() - start:.1f}s"
            )
        listing = "find eval-cache -type f -print0 | xargs -0"
        shell(f"{listing} cat > /dev/null", repo)()  # warm the page cache for every contender
        t_cat = best(args.runs, shell(f"{listing} cat > /dev/null", repo))
        t_b3 = best(args.runs, shell(f"{listing} b3sum > /dev/null", repo))
        count = len(snapshot(repo, ["eval-cache"]))
        t_snap = best(args.runs, lambda: snapshot(repo, ["eval-cache"]))
        guard = [sys.executable, "-m", "cachelint", "guard", "--", "true"]
        t_guard = best(args.runs, lambda: subprocess.run(guard, cwd=repo, check=True))
        print(f"files hashed by snapshot: {count}")
        print(f"cat      {t_cat:7.3f}s")
        print(f"b3sum    {t_b3:7.3f}s")
        print(f"snapshot {t_snap:7.3f}s  = {t_snap / t_b3:.2f}x b3sum, {t_snap / t_cat:.2f}x cat")
        print(
            f"guard    {t_guard:7.3f}s  = {t_guard / t_b3:.2f}x b3sum "
            f"({t_guard / (2 * t_b3):.2f}x two b3sum passes)"
        )
        verdict = "OK" if t_snap <= 1.2 * t_b3 else "SLOWER THAN GOAL"
        print(f"goal: snapshot within 1.2x b3sum: {verdict}")
    finally:
        if not args.keep and args.dir is None:
            shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
