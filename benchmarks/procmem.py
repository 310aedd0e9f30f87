"""Paired timing of a command and its memory across every process it starts (PSS, sampled).

`timed_tree(cmd)` runs a command and, while it runs, samples the proportional set size of the
process and of all of its descendants (children, grandchildren: `/proc/<pid>/task/*/children`)
from `/proc/<pid>/smaps_rollup`, every few milliseconds; the peak is the largest sum seen in one
sample. PSS, not RSS: pages a forked child shares with its parent count once, split between them,
so the sum is what the run really holds. A process that starts and ends between two samples is
missed; the interval is short against a run's children (the canary, the results writer, the HTML
page's fork live for most of a run).

`floor_command(repo)` is the floor of a verified replay (`../shared/tools/replay_floor.py`, run
from where it lives, never copied), or None when that file is not there. With a baseline checkout,
`replay_rounds` also runs that checkout's cachelint in each round, both as
`PYTHONPATH=<checkout> python -m cachelint run`, and `against_baseline` prints the paired ratios.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLOOR = ROOT.parent / "shared" / "tools" / "replay_floor.py"
SAMPLE_S = 0.01


@dataclass(frozen=True)
class TreeRun:
    """One command: wall seconds, exit code, CPU seconds (user + system, children included) and
    the peak PSS of all of its processes together (KiB; 0 where /proc has no smaps_rollup)."""

    wall: float
    rc: int
    cpu: float
    pss_kib: int


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", "rb") as f:
                found.extend(int(p) for p in f.read().split())
        except OSError:
            continue
    return found


def _pss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f.read().splitlines():
                if line.startswith(b"Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def tree_pss_kib(pid: int) -> int:
    """PSS of `pid` and all of its descendants now, in KiB."""
    total, todo, seen = 0, [pid], set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        total += _pss_kib(p)
        todo.extend(_children(p))
    return total


def git_split_pss_kib(root: int, forked: set[int]) -> tuple[int, int]:
    """PSS of `root` and its descendants but git, and of its git descendants (children of every
    thread: cachelint starts git and its helpers from a background thread).

    A child caught between vfork and exec still runs its parent's command line and shares its
    parent's memory, which its smaps would count a second time: it is left out. A child with its
    parent's command line still there one sample later was forked without exec, and its own
    pages (copies made on write) count: `forked` carries the pids seen so from sample to sample."""
    totals = {False: 0, True: 0}
    pending: list[tuple[int, bytes]] = [(root, b"")]
    seen: set[int] = set()
    while pending:
        pid, parent_command = pending.pop()
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                command = fh.read()
            if command == parent_command:
                seen.add(pid)
                if pid not in forked:
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
    forked.clear()
    forked.update(seen)
    return totals[False], totals[True]


def timed_tree(cmd: list[str], cwd: Path, env: Mapping[str, str], log: Path) -> TreeRun:
    """Run `cmd` (output to `log`), sampling its process tree's PSS on a thread until it ends."""
    peak = [0]
    done = threading.Event()
    started = time.perf_counter()
    with log.open("wb") as sink:
        proc = subprocess.Popen(cmd, cwd=cwd, env=dict(env), stdout=sink, stderr=subprocess.STDOUT)

        def sample() -> None:
            while not done.is_set():
                peak[0] = max(peak[0], tree_pss_kib(proc.pid))
                done.wait(SAMPLE_S)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        took = time.perf_counter() - started
        done.set()
        sampler.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    return TreeRun(took, proc.returncode, cpu, peak[0])


def floor_command(repo: Path) -> list[str] | None:
    """The floor's command line for `repo`, or None when replay_floor.py is not there."""
    if not FLOOR.is_file():
        return None
    return [sys.executable, str(FLOOR), str(repo)]


@dataclass(frozen=True)
class Round:
    """One paired round: `cachelint run` and, when they exist, the floor and the baseline
    checkout's `cachelint run`, on the same suite."""

    ours: TreeRun
    floor: TreeRun | None
    baseline: TreeRun | None = None


def compile_bytecode(checkouts: list[Path]) -> None:
    """Each checkout's cachelint compiled to bytecode first, as pip installs it, so that no
    round (the first of each side) pays for compiling its modules."""
    for checkout in checkouts:
        package = checkout / "cachelint"
        done = subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)])
        if done.returncode != 0:
            raise SystemExit(f"bench_run: could not compile {package} to bytecode")


def commit_of(checkout: Path) -> str:
    """The checkout's commit, and whether its cachelint/ has uncommitted changes."""
    head = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(checkout), "status", "--porcelain", "--", "cachelint"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    return f"{head or 'unknown commit'}{' + uncommitted changes in cachelint/' if dirty else ''}"


@dataclass(frozen=True)
class Baseline:
    """Another checkout whose cachelint runs in the same rounds, with its extra `run` arguments."""

    checkout: Path
    args: tuple[str, ...] = ()


def cachelint_env(env: Mapping[str, str], checkout: Path) -> dict[str, str]:
    """`env` with only `checkout` on PYTHONPATH: its cachelint is imported ahead of the
    editable install's finder (which sits after the path finder), whichever checkout that is."""
    return {**env, "PYTHONPATH": str(checkout)}


_SUMMARY = re.compile(rb"^[\d,]+ scenarios: .*$", re.MULTILINE)


def _summary(log: Path) -> str:
    """The run's summary line ("2000 scenarios: 2000 passed, ...; 2000 cache hits"), else the
    log's last line."""
    text = log.read_bytes()
    found = _SUMMARY.findall(text) or text.strip().splitlines()[-1:] or [b"no output"]
    return found[-1].decode(errors="replace")


def _counts(log: Path) -> list[str]:
    """The summary's numbers (scenarios, passed, failed, calls, cache hits): the same work."""
    return re.findall(r"\d[\d,]*", _summary(log))


def _commands(
    repo: Path, i: int, env: Mapping[str, str], baseline: Baseline | None
) -> dict[str, tuple[list[str], Mapping[str, str]]]:
    """Each side's command and environment for round `i`, in the order they run."""
    ours = [sys.executable, "-m", "cachelint", "run", "--execution", f"round{i}"]
    sides: dict[str, tuple[list[str], Mapping[str, str]]] = {
        "ours": (ours, cachelint_env(env, ROOT))
    }
    if baseline is not None:
        sides["baseline"] = ([*ours, *baseline.args], cachelint_env(env, baseline.checkout))
    floor = floor_command(repo)
    if floor is not None:
        sides["floor"] = (floor, env)
    order = list(sides) if i % 2 == 0 else list(reversed(sides))
    return {who: sides[who] for who in order}


def replay_rounds(
    repo: Path, rounds: int, env: Mapping[str, str], baseline: Baseline | None = None
) -> list[Round]:
    """`rounds` paired rounds of `python -m cachelint run` (this checkout's and the baseline's)
    and the floor as subprocesses, start-up included, the order reversed every other round. Each
    run starts from an empty results directory, as CI does (earlier executions would add their
    trend to the report). The baseline must end with the same summary line as this checkout."""
    import shutil

    out: list[Round] = []
    for i in range(rounds):
        got: dict[str, TreeRun] = {}
        for who, (cmd, side_env) in _commands(repo, i, env, baseline).items():
            shutil.rmtree(repo / "eval-results", ignore_errors=True)
            log = repo.parent / f"{repo.name}-{who}-{i}.log"
            done = timed_tree(cmd, repo, side_env, log)
            if done.rc != 0:
                raise SystemExit(
                    f"{who} exited {done.rc} (round {i + 1}): {_summary(log)}; see {log}"
                )
            got[who] = done
        if baseline is not None:
            logs = [repo.parent / f"{repo.name}-{who}-{i}.log" for who in ("ours", "baseline")]
            if _counts(logs[0]) != _counts(logs[1]):
                raise SystemExit(
                    f"round {i + 1}: this checkout ended {_summary(logs[0])!r}, the baseline "
                    f"{_summary(logs[1])!r}: not the same work; see {logs[0]} and {logs[1]}"
                )
        out.append(Round(got["ours"], got.get("floor"), got.get("baseline")))
    return out


def _spread(values: list[float], fmt: str) -> str:
    """The median and the range: "1.23 (1.10-1.40)"."""
    mid, low, high = (fmt.format(v) for v in (statistics.median(values), min(values), max(values)))
    return f"{mid} ({low}-{high})"


def describe(size: int, rounds: list[Round]) -> str:
    """The size's line: cachelint's wall, CPU and peak PSS, and the floor's column."""
    walls = [r.ours.wall for r in rounds]
    cpus = [r.ours.cpu for r in rounds]
    peaks = [r.ours.pss_kib / 1024 for r in rounds]
    wall = statistics.median(walls)
    line = (
        f"{size:>7} scenarios, {len(rounds)} rounds: `cachelint run` {_spread(walls, '{:.2f}')} s "
        f"= {wall / size * 1000:.3f} ms/case, cpu {_spread(cpus, '{:.2f}')} s, peak PSS of all "
        f"processes {_spread(peaks, '{:.0f}')} MiB"
    )
    floors = [r.floor for r in rounds if r.floor is not None]
    if len(floors) != len(rounds):
        return line + f"; floor: not measured ({FLOOR} is not there)"
    ratios = [r.ours.wall / f.wall for r, f in zip(rounds, floors, strict=True)]
    cpu_ratios = [r.ours.cpu / f.cpu for r, f in zip(rounds, floors, strict=True)]
    return line + (
        f"; floor {statistics.median(f.wall for f in floors):.2f} s: cachelint/floor "
        f"{_spread(ratios, '{:.1f}x')} wall, {_spread(cpu_ratios, '{:.1f}x')} cpu (medians of "
        "the rounds' ratios)"
    )


def growth(by_size: Mapping[int, list[Round]], startup_s: float) -> str | None:
    """The per-case time's growth from 2,000 (else the smallest size) to the largest, and the
    peak PSS's growth from 20,000 to the largest when both were measured (medians of the rounds,
    as every figure is: the size's line gives their range)."""
    if len(by_size) < 2:
        return None
    small = 2000 if 2000 in by_size else min(by_size)
    large = max(by_size)
    if small == large:
        return None

    def per_case(n: int, minus: float) -> float:
        return (statistics.median(r.ours.wall for r in by_size[n]) - minus) / n * 1000

    raw = {n: per_case(n, 0.0) for n in (small, large)}
    net = {n: per_case(n, startup_s) for n in (small, large)}
    text = (
        f"growth {small:,} -> {large:,}: {raw[small]:.3f} -> {raw[large]:.3f} ms/case = "
        f"{raw[large] / raw[small]:.2f}x ({net[small]:.3f} -> {net[large]:.3f} ms/case = "
        f"{net[large] / net[small]:.2f}x with start-up subtracted; goal <= 1.1x)"
    )
    if 20000 in by_size and large != 20000:
        peak = {
            n: statistics.median(r.ours.pss_kib for r in by_size[n]) / 1024 for n in (20000, large)
        }
        text += (
            f"; peak PSS {peak[20000]:.0f} -> {peak[large]:.0f} MiB = "
            f"{peak[large] / peak[20000]:.2f}x (goal <= 1.2x and <= 300 MB)"
        )
    return text


def against_baseline(rounds: list[Round]) -> list[str]:
    """This checkout against the baseline, one line per figure as bench_check prints them: the
    median of the per-round ratios (this checkout / the baseline), lowest-highest in brackets."""
    pairs = [(r.ours, r.baseline) for r in rounds if r.baseline is not None]
    if not pairs:
        return []
    figures = [
        ("wall", [(o.wall, b.wall) for o, b in pairs], "{:.3f} s"),
        ("cpu", [(o.cpu, b.cpu) for o, b in pairs], "{:.3f} s"),
    ]
    if all(o.pss_kib and b.pss_kib for o, b in pairs):
        figures.append(
            ("peak PSS", [(o.pss_kib / 1024, b.pss_kib / 1024) for o, b in pairs], "{:.0f} MiB")
        )
    lines = []
    for name, values, unit in figures:
        ratios = sorted(o / b for o, b in values)
        theirs = unit.format(statistics.median(b for _, b in values))
        lines.append(
            f"{'':>8} {name} vs baseline: {statistics.median(ratios):.2f} "
            f"({ratios[0]:.2f}-{ratios[-1]:.2f}) (baseline median {theirs})"
        )
    return lines
