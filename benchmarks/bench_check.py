"""How much slower than git's own plumbing (and hashing) is `cachelint check`?

Builds a synthetic committed cache (native layout, 2 files per entry, valid entries with a sealed
stamp), then times N rounds of:

- the plumbing floor: the three listings any integrity check of the tree needs, back to back
  (`ls-files --stage`, `ls-files --others --exclude-standard`, `ls-files | check-attr text`);
- the content floor: `b3sum` over every file of the tree (what verifying content must read);
- `cachelint check` as a subprocess, three ways: cold (`--no-cache`: every entry read and
  verified), first (no entry cache yet, as on a fresh clone in CI: every entry read and verified,
  and the entry cache in .git/cachelint/ written) and warm (entries whose files git holds
  unchanged come from the entry cache, as for a pre-commit hook after its first run);
- with `--baseline DIR`, the same three runs of the cachelint in another checkout (say a
  `git worktree` of the commit before a change), paired with this one's in each round, the two
  taking turns at going first, both as `python -m cachelint` with their checkout on PYTHONPATH.

Cold and first are compared with plumbing + b3sum of the same round, warm with the plumbing floor
alone. Peak memory is what cachelint held at once: the larger of its own peak RSS (wait4) and its
proportional set size (PSS) sampled every 5 ms on two untimed runs, cold and first. "+git" adds
the git processes it runs at the same time (`git check-attr` alone holds ~90 MB at 100,000
entries, as it does in the floor).

    python benchmarks/bench_check.py [--entries 10000 100000] [--repeat 5] [--keep DIR [--reuse]]
                                     [--args ARGS] [--baseline DIR [--baseline-args ARGS]]

Goals (issue 12, at 100,000 entries): first and cold <= 1.5x (plumbing + b3sum), warm <= 1.5x
plumbing (the median of the per-round ratios), peak memory < 300 MB. Smaller trees are timed to
show the cost grows no faster than the entries; start-up dominates them.
cachelint's bytecode (this checkout's and --baseline's) is compiled first, as a pip install
leaves it. Temporary trees are removed unless --keep is given; --reuse times trees a previous
--keep run left in DIR instead of rebuilding them (building 100,000 entries takes minutes, timing
them seconds).
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

import blake3

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from cachelint.canonical import cache_key, dump_pretty  # noqa: E402
from cachelint.stamp import Stamp  # noqa: E402
from cachelint.store import (  # noqa: E402
    CONTENTS_FILE,
    ENTRY_FILE,
    FORMAT,
    entry_digest,
    format_time,
)

sys.path.insert(0, str(PROJECT / "benchmarks"))
from procmem import git_split_pss_kib  # noqa: E402

ROOT = "eval-cache"
AGENTS = ("support", "billing", "triage", "search")
TENANTS = ("acme", "globex", "initech", "umbrella", "hooli")
PER_SCENARIO = 25
CREATED = datetime(2025, 6, 1, tzinfo=timezone.utc)
TTL_DAYS = 730
# A fixed "now" inside every entry's lifetime, so the run measures a clean tree, not expiry noise.
NOW = "2025-07-01T00:00:00Z"
GOAL_RATIO = 1.5
GOAL_MB = 300.0
# The size issue 12 sets the goals at; smaller trees are timed to show the cost is linear.
GOAL_ENTRIES = 100_000
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
    digests: list[tuple[str, str]] = []
    for index in range(entries):
        scenario, key, entry, contents = _entry(index)
        directory = cache / scenario / key[:16]
        directory.mkdir(parents=True, exist_ok=True)
        # Direct writes, not Store.put: a fixture needs no atomic rename per file.
        (directory / CONTENTS_FILE).write_bytes(contents)
        (directory / ENTRY_FILE).write_bytes(entry)
        digests.append((f"cache/{scenario}/{key[:16]}", entry_digest(entry, contents)))
        files += 2
    # A pin file and a matching stamp, so the tree is clean and check does its full work.
    (repo / "requirements.txt").write_bytes(b"cachelint==0.1.0\n")
    stamp = Stamp(
        pinned_at=CREATED.date(),
        ttl_days=TTL_DAYS,
        packages={"cachelint": "0.1.0"},
        pin_files={"cachelint": "requirements.txt"},
        entries=entries,
        # The seal as cachelint/stamp.py documents it: one "<directory>\0<digest>\n" per entry.
        seal=blake3.blake3("".join(f"{d}\0{g}\n" for d, g in sorted(digests)).encode()).hexdigest(),
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


def hash_floor(repo: Path) -> None:
    """`b3sum` over every file of the tree, in as few processes as xargs makes."""
    listing = subprocess.Popen(
        ["git", "ls-files", "-z", "--", ROOT], cwd=repo, stdout=subprocess.PIPE, env=_env()
    )
    hashed = subprocess.run(
        ["xargs", "-0", "b3sum", "--no-names"],
        cwd=repo,
        stdin=listing.stdout,
        stdout=subprocess.DEVNULL,
        env=_env(),
    )
    assert listing.stdout is not None
    listing.stdout.close()
    if listing.wait() != 0 or hashed.returncode != 0:
        raise BenchError("git ls-files | b3sum failed (Debian: apt-get install b3sum)")


# The checkout whose cachelint a run times: this one, or --baseline's.
_CHECKOUT: dict[str, Path | None] = {"baseline": None}
# Arguments every check of this checkout (--args) and of the baseline (--baseline-args) gets
# besides the run's own.
_ARGS: list[str] = []
_BASELINE_ARGS: list[str] = []


def _check_command(*extra: str, baseline: bool = False) -> list[str]:
    """The installed `cachelint` script alone; beside a baseline, both checkouts the same way:
    `python -m cachelint` with the checkout on PYTHONPATH (`_check_env`)."""
    if baseline:
        return [sys.executable, "-m", "cachelint", "check", *extra, *_BASELINE_ARGS]
    script = Path(sys.executable).parent / "cachelint"
    if script.is_file() and _CHECKOUT["baseline"] is None:
        return [str(script), "check", *extra, *_ARGS]
    return [sys.executable, "-m", "cachelint", "check", *extra, *_ARGS]


def _check_env(*, baseline: bool = False) -> dict[str, str]:
    """PYTHONPATH names the checkout beside a baseline: it is searched before the editable
    install's finder, so each side imports its own cachelint."""
    env = _env()
    if _CHECKOUT["baseline"] is not None:
        env["PYTHONPATH"] = str(_CHECKOUT["baseline"] if baseline else PROJECT)
    return env


@dataclass
class CheckRun:
    seconds: float
    peak_mb: float  # the largest process of its tree (wait4), not their sum
    exit_code: int
    last_line: str


def run_check(repo: Path, *extra: str, baseline: bool = False) -> CheckRun:
    """One `cachelint check`; its peak RSS comes from wait4: the largest of its process tree,
    not their sum (RUSAGE_CHILDREN would also count the git processes of the floor)."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(
            _check_command(*extra, baseline=baseline),
            cwd=repo,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=_check_env(baseline=baseline),
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
            _check_command(*extra),
            cwd=repo,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=_check_env(),
        )
        deadline = time.monotonic() + TIMEOUT_S
        forked: set[int] = set()
        while proc.poll() is None and time.monotonic() < deadline:
            own, git = git_split_pss_kib(proc.pid, forked)
            peak = [max(peak[0], own), max(peak[1], own + git)]
            time.sleep(0.005)
        proc.kill()
        proc.wait()
    return peak[0] / 1024, peak[1] / 1024


@dataclass
class Row:
    entries: int
    files: int
    build_s: float
    floors: list[float]  # the plumbing floor
    hashes: list[float]  # b3sum over the same files, timed right after floors[i]
    colds: list[float]  # --no-cache, each timed right after hashes[i]
    firsts: list[float]  # no entry cache: reads everything and writes the cache
    warms: list[float]  # timed right after firsts[i]
    peak_mb: float  # cachelint at once
    with_git_mb: float  # and the git processes it runs
    exit_code: int
    last_line: str
    baseline: dict[str, list[float]] = field(default_factory=dict)  # --baseline's runs, paired
    baseline_lines: list[str] = field(default_factory=list)  # the baseline's last lines

    @staticmethod
    def ratios(times: list[float], floors: list[float]) -> list[float]:
        """Each run against the floor timed just before it: on a shared machine whose speed
        drifts within a minute, pairs compare like with like where best-of-N each would pair a
        fast floor with a slow check, or the reverse."""
        return sorted(t / f for t, f in zip(times, floors, strict=True))

    def runs(self) -> list[tuple[str, list[float], list[float]]]:
        """(name, times, the floor each is compared with)."""
        content = [f + h for f, h in zip(self.floors, self.hashes, strict=True)]
        return [
            ("cold", self.colds, content),
            ("first", self.firsts, content),
            ("warm", self.warms, self.floors),
        ]

    def summary(self, times: list[float], floors: list[float]) -> tuple[float, float, float]:
        """(median, lowest, highest) ratio to the floor."""
        ratios = self.ratios(times, floors)
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
    """Time cachelint as pip installs it, with its bytecode compiled: this checkout's and the
    baseline's alike. Where PYTHONDONTWRITEBYTECODE is set (the development machine sets it), a
    checkout would otherwise compile every module from source on every run: ~90 ms of each
    check, on one side only when only one side is compiled."""
    import cachelint

    packages = [Path(cachelint.__file__).parent]
    if _CHECKOUT["baseline"] is not None:
        packages.append(_CHECKOUT["baseline"] / "cachelint")
    for package in packages:
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
    sides = [False, True] if _CHECKOUT["baseline"] is not None else [False]
    floor(repo)  # warm the page cache and git's index for both sides alike
    hash_floor(repo)
    for baseline in sides:
        run_check(repo, "--no-cache", baseline=baseline)
    # Interleaved, so a slow spell of a shared machine hits every column alike; the two
    # checkouts take turns at going first.
    times: dict[str, list[float]] = {
        k: [] for k in ("floor", "hash", "cold", "first", "warm", "b-cold", "b-first", "b-warm")
    }
    runs: list[CheckRun] = []
    baseline_runs: list[CheckRun] = []
    for i in range(repeat):
        got = _round(repo, times, sides if i % 2 == 0 else sides[::-1])
        runs += got[False]
        baseline_runs += got.get(True, [])
    last = runs[-1]
    if {r.last_line for r in runs} != {last.last_line}:
        raise BenchError("cold, first and warm checks disagree; the entry cache is wrong")
    cold_mb = tree_peak_mb(repo, "--no-cache")
    shutil.rmtree(repo / ".git" / "cachelint", ignore_errors=True)
    first_mb = tree_peak_mb(repo)
    peak = max(cold_mb[0], first_mb[0], *(r.peak_mb for r in runs))
    with_git = max(peak, cold_mb[1], first_mb[1])
    row = Row(
        entries,
        files,
        build_s,
        times["floor"],
        times["hash"],
        times["cold"],
        times["first"],
        times["warm"],
        peak,
        with_git,
        last.exit_code,
        last.last_line,
    )
    if baseline_runs:
        row.baseline = {k: times["b-" + k] for k in ("cold", "first", "warm")}
        row.baseline_lines = sorted({r.last_line for r in baseline_runs})
    return row


def _round(
    repo: Path, times: dict[str, list[float]], sides: Sequence[bool]
) -> dict[bool, list[CheckRun]]:
    """One round: the two floors, then cold, first and warm checks of each side in turn (False:
    this checkout, True: the baseline); each side's first check starts with no entry cache."""
    times["floor"].append(_timed(lambda: floor(repo)))
    times["hash"].append(_timed(lambda: hash_floor(repo)))
    got: dict[bool, list[CheckRun]] = {}
    for baseline in sides:
        cold = run_check(repo, "--no-cache", baseline=baseline)
        shutil.rmtree(repo / ".git" / "cachelint", ignore_errors=True)
        first = run_check(repo, baseline=baseline)
        warm = run_check(repo, baseline=baseline)
        prefix = "b-" if baseline else ""
        for name, done in (("cold", cold), ("first", first), ("warm", warm)):
            times[prefix + name].append(done.seconds)
        got[baseline] = [cold, first, warm]
    shutil.rmtree(repo / ".git" / "cachelint", ignore_errors=True)
    return got


def _timed(work: Callable[[], None]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def table(rows: Sequence[Row]) -> str:
    head = (
        f"{'entries':>8} {'floor s':>8} {'b3sum s':>8} {'cold s':>7} {'first s':>8} "
        f"{'warm s':>7} {'cold ratio':>17} {'first ratio':>17} {'warm ratio':>17} "
        f"{'peak MB':>8} {'+git MB':>8}  goal (ratio <= {GOAL_RATIO}, peak < {GOAL_MB:.0f} MB)"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        ratios = [(name, r.summary(times, floors)) for name, times, floors in r.runs()]
        verdicts = [
            f"{name} {'met' if ratio[0] <= GOAL_RATIO and r.peak_mb < GOAL_MB else 'MISSED'}"
            for name, ratio in ratios
        ]
        if r.entries < GOAL_ENTRIES:
            verdicts = [f"no goal below {GOAL_ENTRIES:,} entries (start-up dominates)"]
        lines.append(
            f"{r.entries:>8,} {statistics.median(r.floors):>8.3f} "
            f"{statistics.median(r.hashes):>8.3f} {statistics.median(r.colds):>7.3f} "
            f"{statistics.median(r.firsts):>8.3f} {statistics.median(r.warms):>7.3f} "
            + " ".join(f"{m:>5.2f} ({lo:.2f}-{hi:.2f})" for _, (m, lo, hi) in ratios)
            + f" {r.peak_mb:>8.1f} {r.with_git_mb:>8.1f}  {', '.join(verdicts)}"
        )
        for name, times in r.baseline.items():
            mine = dict((n, t) for n, t, _ in r.runs())[name]
            m, lo, hi = r.summary(mine, times)
            lines.append(
                f"{'':>8} {name} vs baseline: {m:.2f} ({lo:.2f}-{hi:.2f}) "
                f"(baseline median {statistics.median(times):.3f} s)"
            )
        if r.baseline_lines and r.baseline_lines != [r.last_line]:
            lines.append(f"{'':>8} NOTE: the baseline's checks ended {r.baseline_lines}")
    lines.append(
        "seconds: medians; ratio: the median of each run over the floor of its own round "
        "(cold and first: plumbing + b3sum; warm: plumbing), lowest-highest in brackets"
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--entries", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument(
        "--repeat", "--rounds", type=int, default=5, help="paired rounds of every run (default 5)"
    )
    parser.add_argument("--keep", type=Path, metavar="DIR", help="build trees here and keep them")
    parser.add_argument(
        "--reuse", action="store_true", help="time the trees already built in --keep DIR"
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="DIR",
        help="also time the cachelint of this checkout (e.g. a git worktree of an older commit)",
    )
    parser.add_argument(
        "--args",
        default="",
        metavar="ARGS",
        help="extra check arguments for this checkout's runs, e.g. --args '--ignore CODE,...' "
        "leaves out rules the baseline lacks",
    )
    parser.add_argument(
        "--baseline-args",
        default="",
        metavar="ARGS",
        help="extra check arguments for the baseline runs, e.g. --baseline . --baseline-args "
        "'--jobs 1' times one reading process against the default",
    )
    args = parser.parse_args(argv)
    _ARGS.extend(args.args.split())
    _BASELINE_ARGS.extend(args.baseline_args.split())
    if args.baseline is not None:
        if not (args.baseline / "cachelint" / "__init__.py").is_file():
            parser.error(f"--baseline {args.baseline}: no cachelint package there")
        _CHECKOUT["baseline"] = args.baseline.resolve()
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
