"""How much slower than git's own plumbing is `cachelint check`?

Builds a synthetic committed cache (native layout, 2 files per entry, entries that
store.read_entry accepts), then times N rounds of:

- the plumbing floor: the three listings any integrity check of the tree needs, back to back
  (`ls-files --stage`, `ls-files --others --exclude-standard`, `ls-files | check-attr text`);
- `cachelint check` as a subprocess, three ways: cold (`--no-cache`: every entry read from disk),
  first (no entry cache yet, as on a fresh clone in CI: every entry read from disk, and the
  entry cache in .git/cachelint/ written) and warm (entries git reports unchanged come from the
  entry cache, as for a pre-commit hook after its first run).

Peak memory is what cachelint's processes (itself and its helper processes) held at once: the
larger of its own peak RSS (wait4) and their proportional set size (PSS: a page shared by N
processes counts 1/N) summed every 5 ms on two untimed runs, cold and first, as sampling costs
CPU. "+git" adds the git processes it runs at the same time (`git check-attr` alone holds ~90 MB
at 100,000 entries, as it does in the floor).

    python benchmarks/bench_check.py [--entries 10000 100000] [--repeat 5] [--keep DIR [--reuse]]

Goal: check/floor <= 2.0 at 100k entries (the median of the per-round ratios), peak RSS < 300 MB.
cachelint's bytecode is compiled first, as a pip install leaves it. Temporary trees are removed
unless --keep is given; --reuse times trees a previous --keep run left in DIR instead of
rebuilding them (building 100,000 entries takes minutes, timing them seconds).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import blake3

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from cachelint.canonical import cache_key, dump_pretty  # noqa: E402
from cachelint.stamp import Stamp  # noqa: E402
from cachelint.store import CONTENTS_FILE, ENTRY_FILE, FORMAT, format_time  # noqa: E402

ROOT = "eval-cache"
AGENTS = ("support", "billing", "triage", "search")
TENANTS = ("acme", "globex", "initech", "umbrella", "hooli")
PER_SCENARIO = 25
CREATED = datetime(2025, 6, 1, tzinfo=timezone.utc)
TTL_DAYS = 730
# A fixed "now" inside every entry's lifetime, so the run measures a clean tree, not expiry noise.
NOW = "2025-07-01T00:00:00Z"
GOAL_RATIO = 2.0
GOAL_MB = 300.0
TIMEOUT_S = 1800.0

GIT_ENV = {
    "GIT_AUTHOR_NAME": "cachelint bench",
    "GIT_AUTHOR_EMAIL": "bench@cachelint.invalid",
    "GIT_COMMITTER_NAME": "cachelint bench",
    "GIT_COMMITTER_EMAIL": "bench@cachelint.invalid",
    "GIT_AUTHOR_DATE": "2025-06-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2025-06-01T00:00:00Z",
    # The developer's own git config (autocrlf, hooks, fsmonitor) must not change the figures.
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


# After a 200k-object commit git starts `gc --auto` detached: it would repack during the timed
# runs and race the final rmtree, so the fixture turns it off.
GIT = ("git", "-c", "core.autocrlf=false", "-c", "gc.auto=0", "-c", "maintenance.auto=false")


class BenchError(Exception):
    """Something the benchmark needs failed; the message is the one line to show."""


def _env() -> dict[str, str]:
    return {**os.environ, **GIT_ENV, "CACHELINT_NOW": NOW}


def _git(repo: Path, *args: str, stdin: bytes | None = None) -> bytes:
    proc = subprocess.run(
        [*GIT, *args],
        cwd=repo,
        input=stdin,
        capture_output=True,
        env=_env(),
    )
    if proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip().splitlines()
        raise BenchError(f"git {' '.join(args)} exited {proc.returncode}: {' / '.join(err[-3:])}")
    return proc.stdout


# ---- the fixture --------------------------------------------------------------------------------


def _entry(index: int) -> tuple[str, str, bytes, bytes]:
    """(scenario, key, entry.json bytes, contents.data bytes) of the index-th synthetic entry."""
    scenario_no, turn = divmod(index, PER_SCENARIO)
    agent = AGENTS[scenario_no % len(AGENTS)]
    tenant = TENANTS[(scenario_no // len(AGENTS)) % len(TENANTS)]
    scenario = f"{agent}/{tenant}/case-{scenario_no:05d}"
    request = {
        "model": "gpt-4o-mini",
        "temperature": 0,
        "messages": [
            {"role": "system", "content": f"You are the {agent} assistant for {tenant}."},
            {
                "role": "user",
                "content": f"Case {scenario_no}, turn {turn}: where is order {index}?",
            },
        ],
    }
    response = {
        "id": f"chatcmpl-{index:08d}",
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {
                    "role": "assistant",
                    "content": f"Order {index} shipped on day {index % 28 + 1}; tracking follows.",
                },
            }
        ],
        "usage": {"prompt_tokens": 31 + turn, "completion_tokens": 14, "total_tokens": 45 + turn},
    }
    contents = dump_pretty(response)
    key = cache_key(request)
    entry = {
        "format": FORMAT,
        "key": key,
        "scenario": scenario,
        "provider": "openai",
        "model": "gpt-4o-mini",
        "created": format_time(CREATED),
        "expires": format_time(CREATED + timedelta(days=TTL_DAYS)),
        "contents": blake3.blake3(contents).hexdigest(),
        "request": request,
    }
    return scenario, key, dump_pretty(entry), contents


def build(repo: Path, entries: int) -> int:
    """Write and commit `entries` entries under repo/eval-cache; return the number of files."""
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    (repo / ".gitattributes").write_bytes(f"{ROOT}/** -text\n".encode())
    cache = repo / ROOT / "cache"
    files = 0
    for index in range(entries):
        scenario, key, entry, contents = _entry(index)
        directory = cache / scenario / key[:16]
        directory.mkdir(parents=True, exist_ok=True)
        # Direct writes, not Store.put: a fixture needs no atomic rename per file.
        (directory / CONTENTS_FILE).write_bytes(contents)
        (directory / ENTRY_FILE).write_bytes(entry)
        files += 2
    # A pin file and a matching stamp, so the tree is clean and check does its full work.
    (repo / "requirements.txt").write_bytes(b"cachelint==0.1.0\n")
    stamp = Stamp(
        pinned_at=CREATED.date(),
        ttl_days=TTL_DAYS,
        packages={"cachelint": "0.1.0"},
        pin_files={"cachelint": "requirements.txt"},
    ).to_json()
    (repo / ROOT / ".eval-cache-stamp.json").write_bytes(dump_pretty(stamp))
    files += 1
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "--no-gpg-sign", "--no-verify", "-m", f"{entries} entries")
    return files


# ---- measurements -------------------------------------------------------------------------------


def floor(repo: Path) -> None:
    """The three listings, back to back: what no tree check can avoid."""
    _git(repo, "ls-files", "-z", "--stage", "--", ROOT)
    _git(repo, "ls-files", "-z", "--others", "--exclude-standard", "--", ROOT)
    listing = subprocess.Popen(
        ["git", "ls-files", "-z", "--", ROOT], cwd=repo, stdout=subprocess.PIPE, env=_env()
    )
    attrs = subprocess.run(
        ["git", "check-attr", "-z", "--stdin", "text"],
        cwd=repo,
        stdin=listing.stdout,
        capture_output=True,
        env=_env(),
    )
    assert listing.stdout is not None
    listing.stdout.close()
    if listing.wait() != 0 or attrs.returncode != 0:
        raise BenchError("git ls-files | git check-attr failed")


def _check_command(*extra: str) -> list[str]:
    script = Path(sys.executable).parent / "cachelint"
    if script.is_file():
        return [str(script), "check", *extra]
    return [sys.executable, "-m", "cachelint", "check", *extra]


@dataclass
class CheckRun:
    seconds: float
    peak_mb: float  # the largest process of its tree (wait4), not their sum
    exit_code: int
    last_line: str


def run_check(repo: Path, *extra: str) -> CheckRun:
    """One `cachelint check`; its peak RSS comes from wait4: the largest of its process tree,
    not their sum (RUSAGE_CHILDREN would also count the git processes of the floor)."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(
            _check_command(*extra), cwd=repo, stdout=out, stderr=subprocess.STDOUT, env=_env()
        )
        timer = threading.Timer(TIMEOUT_S, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        lines = out.read().decode(errors="replace").strip().splitlines()
    last = lines[-1] if lines else ""
    if proc.returncode not in (0, 1):
        raise BenchError(f"cachelint check exited {proc.returncode}: {last}")
    # Linux reports ru_maxrss in KiB.
    return CheckRun(seconds, usage.ru_maxrss / 1024, proc.returncode, last)


def tree_peak_mb(repo: Path, *extra: str) -> tuple[float, float]:
    """The most memory (PSS) one `cachelint check` held at once without and with the git
    processes it runs, from /proc every 5 ms (Linux 4.14+); zeros where there is no such /proc."""
    if not Path("/proc/self/smaps_rollup").is_file():
        return 0.0, 0.0
    peak = [0, 0]
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(
            _check_command(*extra), cwd=repo, stdout=out, stderr=subprocess.STDOUT, env=_env()
        )
        deadline = time.monotonic() + TIMEOUT_S
        while proc.poll() is None and time.monotonic() < deadline:
            own, git = _tree_pss_kib(proc.pid)
            peak = [max(peak[0], own), max(peak[1], own + git)]
            time.sleep(0.005)
        proc.kill()
        proc.wait()
    return peak[0] / 1024, peak[1] / 1024


def _tree_pss_kib(root: int) -> tuple[int, int]:
    """PSS of `root` and its descendants but git, and of its git descendants (children of every
    thread: cachelint starts git and its helpers from a background thread).

    A child caught between vfork and exec still runs its parent's command line and shares its
    parent's memory, which its smaps would count a second time: it is left out."""
    totals = {False: 0, True: 0}
    pending: list[tuple[int, bytes]] = [(root, b"")]
    while pending:
        pid, parent_command = pending.pop()
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                command = fh.read()
            if command == parent_command:
                continue
            with open(f"/proc/{pid}/comm") as fh:
                is_git = fh.read().strip() == "git"
            with open(f"/proc/{pid}/smaps_rollup") as fh:
                pss = next(int(line.split()[1]) for line in fh if line.startswith("Pss:"))
            totals[is_git] += pss
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as fh:
                    pending += [(int(child), command) for child in fh.read().split()]
        except (OSError, ValueError, StopIteration):
            continue  # it ended meanwhile
    return totals[False], totals[True]


@dataclass
class Row:
    entries: int
    files: int
    build_s: float
    floors: list[float]
    colds: list[float]  # --no-cache, each timed right after floors[i]
    firsts: list[float]  # no entry cache: reads everything and writes the cache
    warms: list[float]  # timed right after colds[i]
    peak_mb: float  # cachelint and its helpers at once
    with_git_mb: float  # and the git processes it runs
    exit_code: int
    last_line: str

    @staticmethod
    def ratios(times: list[float], floors: list[float]) -> list[float]:
        """Each run against the floor timed just before it: on a shared machine whose speed
        drifts by 30% within a minute, pairs compare like with like where best-of-N each would
        pair a fast floor with a slow check, or the reverse."""
        return sorted(t / f for t, f in zip(times, floors, strict=True))

    def runs(self) -> list[tuple[str, list[float]]]:
        return [("cold", self.colds), ("first", self.firsts), ("warm", self.warms)]

    def summary(self, times: list[float]) -> tuple[float, float, float]:
        """(median, lowest, highest) ratio to the floor."""
        ratios = self.ratios(times, self.floors)
        return statistics.median(ratios), ratios[0], ratios[-1]


def _built(repo: Path) -> int:
    """The number of committed files of a tree a previous --keep run built (0 if unusable)."""
    if not (repo / ".git").is_dir():
        return 0
    try:
        return _git(repo, "ls-files", "-z", "--", ROOT).count(b"\0")
    except BenchError:
        return 0


def compile_bytecode() -> None:
    """Time cachelint as pip installs it, with its bytecode compiled. Where
    PYTHONDONTWRITEBYTECODE is set (the development machine sets it), an editable install would
    otherwise compile every module from source on every run: ~90 ms of each check."""
    import cachelint

    package = Path(cachelint.__file__).parent
    done = subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], env=_env())
    if done.returncode != 0:
        raise BenchError(f"could not compile {package} to bytecode")


def measure(base: Path, entries: int, repeat: int, *, reuse: bool = False) -> Row:
    repo = base / f"entries-{entries}"
    files = _built(repo) if reuse else 0
    build_s = 0.0
    if not files:
        if repo.exists():
            raise BenchError(f"{repo} exists; remove it, pick another --keep directory or --reuse")
        start = time.perf_counter()
        files = build(repo, entries)
        build_s = time.perf_counter() - start
    floor(repo)  # warm the page cache and git's index for both sides alike
    run_check(repo, "--no-cache")
    # Interleaved, so a slow spell of a shared machine hits every column alike.
    floors: list[float] = []
    cold: list[CheckRun] = []
    first: list[CheckRun] = []
    warm: list[CheckRun] = []
    for _ in range(repeat):
        start = time.perf_counter()
        floor(repo)
        floors.append(time.perf_counter() - start)
        cold.append(run_check(repo, "--no-cache"))
        shutil.rmtree(repo / ".git" / "cachelint", ignore_errors=True)
        first.append(run_check(repo))
        warm.append(run_check(repo))
    last = warm[-1]
    if {r.last_line for r in (*cold, *first, *warm)} != {last.last_line}:
        raise BenchError("cold, first and warm checks disagree; the entry cache is wrong")
    cold_mb = tree_peak_mb(repo, "--no-cache")
    shutil.rmtree(repo / ".git" / "cachelint", ignore_errors=True)
    first_mb = tree_peak_mb(repo)
    peak = max(cold_mb[0], first_mb[0], *(r.peak_mb for r in [*cold, *first, *warm]))
    with_git = max(peak, cold_mb[1], first_mb[1])
    return Row(
        entries,
        files,
        build_s,
        floors,
        [r.seconds for r in cold],
        [r.seconds for r in first],
        [r.seconds for r in warm],
        peak,
        with_git,
        last.exit_code,
        last.last_line,
    )


def table(rows: Sequence[Row]) -> str:
    head = (
        f"{'entries':>8} {'files':>8} {'floor s':>8} {'cold s':>7} {'first s':>8} {'warm s':>7} "
        f"{'cold ratio':>17} {'first ratio':>17} {'warm ratio':>17} {'peak MB':>8} "
        f"{'+git MB':>8}  goal (ratio <= {GOAL_RATIO}, peak < {GOAL_MB:.0f} MB)"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        ratios = [(name, r.summary(times)) for name, times in r.runs()]
        verdicts = [
            f"{name} {'met' if ratio[0] <= GOAL_RATIO and r.peak_mb < GOAL_MB else 'MISSED'}"
            for name, ratio in ratios
        ]
        lines.append(
            f"{r.entries:>8,} {r.files:>8,} {min(r.floors):>8.3f} {min(r.colds):>7.3f} "
            f"{min(r.firsts):>8.3f} {min(r.warms):>7.3f} "
            + " ".join(f"{m:>5.2f} ({lo:.2f}-{hi:.2f})" for _, (m, lo, hi) in ratios)
            + f" {r.peak_mb:>8.1f} {r.with_git_mb:>8.1f}  {', '.join(verdicts)}"
        )
    lines.append(
        "seconds: the fastest run of each; ratio: the median of each run over the floor timed "
        "just before it (lowest-highest)"
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--entries", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=5, help="runs of each (default 5)")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="build trees here and keep them")
    parser.add_argument(
        "--reuse", action="store_true", help="time the trees already built in --keep DIR"
    )
    args = parser.parse_args(argv)
    if any(n < 1 for n in args.entries) or args.repeat < 1:
        parser.error("--entries and --repeat must be positive")
    if args.reuse and args.keep is None:
        parser.error("--reuse needs --keep DIR")
    base = args.keep or Path(tempfile.mkdtemp(prefix="cachelint-bench-"))
    base.mkdir(parents=True, exist_ok=True)
    rows: list[Row] = []
    try:
        compile_bytecode()
        for entries in args.entries:
            row = measure(base, entries, args.repeat, reuse=args.reuse)
            rows.append(row)
            print(
                f"{f'built in {row.build_s:.1f} s' if row.build_s else 'reused'}: "
                f"{row.entries:,} entries ({row.files:,} files); "
                f"check exit {row.exit_code}: {row.last_line}",
                flush=True,
            )
    except BenchError as exc:
        print(f"bench_check: error: {exc}", file=sys.stderr)
        return 2
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)
            if base.exists():
                print(f"bench_check: could not remove {base}", file=sys.stderr)
    print(f"cachelint check vs git plumbing floor, {args.repeat} runs ({_check_command()[0]})")
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
