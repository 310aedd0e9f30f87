"""Benchmark `cachelint run` replaying a hot cache: cases/s, ms/case, peak memory; vs promptfoo.

    python benchmarks/bench_run.py                          # 200, 2,000 and 20,000 scenarios
    python benchmarks/bench_run.py --sizes 200 2000
    python benchmarks/bench_run.py --promptfoo              # also time promptfoo's cached replay
    python benchmarks/bench_run.py --sizes 2000 20000 100000 --matrix 0   # growth and memory
    python benchmarks/bench_run.py --sizes 2000 --matrix 0 --baseline ../old  # paired, old commit

For each size it builds a temp git repository with that many scenarios (10 agents x 10 tenants x
N/100 names, a system-file prompt, two assertions each), records the cache once through the
caching client against the in-process scripted fake provider (no HTTP: `FakeProvider.respond`),
then times `cachelint run` replaying it offline as a subprocess (what CI runs, interpreter start
included), paired in the same rounds with the floor of a verified replay
(`../shared/tools/replay_floor.py REPO`, run where it lives; the column is skipped with a note when
that file is not there), and in process (the per-case cost alone, up to `--in-process-max`). Each
round samples the peak PSS of all of the run's processes, children included (`procmem`). The end
line gives the per-case time's growth from 2,000 (else the smallest size) to the largest, and the
peak PSS's from 20,000 to the largest (the issue's goals: <= 1.1x, <= 1.2x and <= 300 MB).

`--baseline DIR` also replays each suite with the cachelint of another checkout (say a `git
worktree` of an older commit) in the same rounds, the order reversed every other round; both run
as `PYTHONPATH=<checkout> python -m cachelint run` (`--baseline-args` adds arguments to the
baseline's runs only), with their bytecode compiled first, and must end with the same summary
counts. Per size it prints this checkout's wall, CPU and peak PSS over the baseline's: the median
of the per-round ratios, lowest-highest in brackets. The suite is built and recorded by this
checkout; the baseline replays that cache.

`--promptfoo` takes promptfoo from `.ci/promptfoo` when `.ci/run` installed it there, else installs
the same pinned set (its package.json and lockfile, `npm ci` without optional packages) into a
directory under /tmp (never the repo). It records the same suite (same system prompt, questions and
`contains`/`not-contains` assertions; 2,000 cases by default) through promptfoo's openai provider
against `cachelint fake-provider` on 127.0.0.1 and stops the fake. One untimed promptfoo replay
then writes its JSON results, which must show every case passed and answered from its cache
(PROMPTFOO_CACHE_PATH). Then paired rounds time both tools replaying the same suite as
subprocesses, start-up included, inside `unshare -n` with only loopback up where the machine allows
it; each tool's output is kept in a log beside the suite. It prints the median of each and the
median of the rounds' ratios. promptfoo runs without its debug and error log files: with them,
0.121.20 now and then crashes at exit (exit 1, "write after end" from its file logger, after the
eval completed). When promptfoo cannot be installed or run, it says why (with the end of its log)
and compares against the issue's reference figure (6.6 ms/case, promptfoo 0.121), labelled as such.
Goal: >= 10x faster, ms/case flat from 200 to 20,000.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cachelint.config import TargetConfig  # noqa: E402
from cachelint.devtools.fake_provider import FakeProvider, parse_script  # noqa: E402
from cachelint.runner.options import RunOptions  # noqa: E402
from cachelint.runner.pipeline import run  # noqa: E402

sys.path.insert(0, str(ROOT / "benchmarks"))
from procmem import (  # noqa: E402
    Baseline,
    Round,
    against_baseline,
    cachelint_env,
    commit_of,
    compile_bytecode,
    describe,
    growth,
    replay_rounds,
)

SCRIPT = {"rules": [{"match": {}, "reply": {"echo": True}}]}
# cachelint's subprocesses keep their compiled bytecode, as an installed package does (pip writes
# it at install time); with PYTHONDONTWRITEBYTECODE set, every run would compile its modules anew.
CACHELINT_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


@dataclass(frozen=True)
class InProcessCompletion:
    response: Any
    latency_s: float
    attempts: int = 1


class InProcessFake:
    """The scripted fake without a socket, shaped like the HTTP transport."""

    def __init__(self) -> None:
        self.provider = FakeProvider(parse_script(dict(SCRIPT), source="<bench>"))

    def complete(
        self,
        body: Mapping[str, Any],
        route: str = "chat/completions",
        headers: Mapping[str, str] | None = None,
    ) -> InProcessCompletion:
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


@contextlib.contextmanager
def _no_fsync() -> Iterator[None]:
    """Recording 20,000 entries with an fsync per file takes minutes here; the bytes written are
    the same without it, and a benchmark's temp cache needs no crash safety."""
    real = os.fsync
    os.fsync = lambda fd: None
    try:
        yield
    finally:
        os.fsync = real


def record(repo: Path) -> float:
    started = time.perf_counter()

    def factory(target: TargetConfig) -> InProcessFake:
        return InProcessFake()

    with _no_fsync():
        options = RunOptions(transport_factory=factory, refresh=True, execution="record")
        rc = run(repo, options, out=io.StringIO(), err=io.StringIO())
    assert rc == 0, "recording failed"
    return time.perf_counter() - started


def replay_in_process(repo: Path) -> float:
    times: list[float] = []
    for i in range(3):
        started = time.perf_counter()
        rc = run(repo, RunOptions(execution=f"inproc{i}"), out=io.StringIO(), err=io.StringIO())
        times.append(time.perf_counter() - started)
        assert rc == 0
    return statistics.median(times)


def matrix_pairs(work: Path, size: int, rounds: int) -> None:
    """A target matrix multiplies cases, not overhead: `size` scenarios replayed against one
    target (`--target default`) and against two (`--target default --target mini`), in process,
    alternating; the median of the paired ratios (both runs are filtered alike)."""
    repo = work / f"matrix-{size}"
    build(repo, size)
    with (repo / "pyproject.toml").open("a", encoding="utf-8") as f:
        f.write('[tool.cachelint.targets.mini]\nprovider = "cachelint-fake"\nmodel = "mini"\n')
    with _no_fsync():
        options = RunOptions(
            transport_factory=lambda target: InProcessFake(),
            refresh=True,
            targets=("default", "mini"),
            execution="matrix-record",
        )
        rc = run(repo, options, out=io.StringIO(), err=io.StringIO())
    assert rc == 0, "recording the matrix failed"
    ratios, ones, twos = [], [], []
    for i in range(rounds):
        timed = []
        for chosen in (["default"], ["default", "mini"]):
            started = time.perf_counter()
            names = "-".join(chosen)
            options = RunOptions(targets=chosen, execution=f"m{i}-{names}")
            rc = run(repo, options, out=io.StringIO(), err=io.StringIO())
            timed.append(time.perf_counter() - started)
            assert rc == 0
        ones.append(timed[0])
        twos.append(timed[1])
        ratios.append(timed[1] / timed[0])
    print(
        f"matrix {size:,} x 2 vs {size:,} x 1 (in process, {rounds} paired rounds): "
        f"{statistics.median(twos):.2f} s vs {statistics.median(ones):.2f} s, "
        f"paired median ratio {statistics.median(ratios):.2f}x (limit 2.2x)"
    )


def startup() -> float:
    times: list[float] = []
    for _ in range(3):
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "cachelint", "--version"],
            capture_output=True,
            check=True,
            env=cachelint_env(CACHELINT_ENV, ROOT),
        )
        times.append(time.perf_counter() - started)
    return statistics.median(times)


PROMPTFOO_CI = ROOT / ".ci" / "promptfoo"  # pinned and installed by .ci/run (issue 42)
PROMPTFOO_VERSION = json.loads((PROMPTFOO_CI / "package.json").read_text(encoding="utf-8"))[
    "dependencies"
]["promptfoo"]
PROMPTFOO_REFERENCE_MS = 6.6  # issue: 2,000 cached cases with a `contains` assertion in 13.2 s
SYSTEM_PROMPT = "You are a support agent.\nAnswer briefly.\n"


class Unavailable(Exception):
    """promptfoo could not be installed or run; the message says why."""


def _promptfoo_binary(tool: Path) -> Path:
    """.ci/promptfoo's install, else the same lockfile installed into `tool` the way .ci/run
    does it: without promptfoo's optional packages (about 1.4 GB of cloud SDKs and browsers)."""
    for base in (PROMPTFOO_CI, tool):
        binary = base / "node_modules" / ".bin" / "promptfoo"
        if binary.exists():
            return binary
    npm = shutil.which("npm")
    if npm is None:
        raise Unavailable("npm is not on PATH (install Node.js 20+)")
    tool.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(PROMPTFOO_CI / name, tool / name)
    done = subprocess.run(
        [npm, "ci", "--omit=optional", "--omit=dev", "--ignore-scripts", "--no-audit", "--no-fund"],
        cwd=tool,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0 or not binary.exists():
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise Unavailable(f"npm ci of promptfoo@{PROMPTFOO_VERSION} in {tool} failed: {tail[0]}")
    return binary


def _start_fake(work: Path) -> tuple[subprocess.Popen[bytes], str]:
    script = work / "fake-script.json"
    script.write_text(json.dumps(SCRIPT), encoding="utf-8")
    log = work / "fake-provider.log"
    command = [sys.executable, "-m", "cachelint", "fake-provider", "--script", str(script)]
    # Output goes to a file, not a pipe: the fake logs every request, and a pipe nobody reads
    # fills up after ~64 KiB and blocks it (and promptfoo with it) mid-recording.
    with log.open("wb") as sink:
        proc = subprocess.Popen([*command, "--port", "0"], stdout=sink, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and proc.poll() is None:
        first = log.read_text(encoding="utf-8", errors="replace").partition("\n")
        if first[1] and first[0].startswith("listening on "):
            return proc, first[0].split()[-1]
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    raise Unavailable(f"cachelint fake-provider did not start; see {log}")


def _promptfoo_suite(suite: Path, size: int, base_url: str) -> None:
    """The bench's cachelint suite in promptfoo's words: same prompts, questions and checks."""
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": "{{question}}"},
    ]
    per_tenant = max(1, size // 100)
    questions = [
        f"question {a}-{t}-{n} about refunds"
        for a in range(10)
        for t in range(10)
        for n in range(per_tenant)
    ][:size]
    config = {
        "prompts": [json.dumps(messages)],
        "providers": [
            {
                "id": "openai:chat:scripted-v1",
                "config": {"apiBaseUrl": base_url, "apiKey": "not-a-key", "temperature": 0},
            }
        ],
        "tests": [
            {
                "vars": {"question": q},
                "assert": [
                    {"type": "contains", "value": q},
                    {"type": "not-contains", "value": "I don't know"},
                ],
            }
            for q in questions
        ],
    }
    suite.mkdir(parents=True, exist_ok=True)
    (suite / "promptfooconfig.json").write_text(json.dumps(config), encoding="utf-8")


def offline_prefix() -> list[str]:
    """`unshare -n` with only loopback up, when this machine allows it (root or user namespaces):
    both tools then replay with no network at all, not merely with the provider stopped."""
    probe = ["unshare", "-n", "sh", "-c", "ip link set lo up"]
    try:
        ok = subprocess.run(probe, capture_output=True).returncode == 0
    except OSError:
        ok = False
    return ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh"] if ok else []


@dataclass(frozen=True)
class Timed:
    """One command: wall seconds, exit code, peak RSS (KiB) and CPU seconds (user + system)."""

    wall: float
    rc: int
    rss: int
    cpu: float


def _timed(cmd: list[str], cwd: Path, env: Mapping[str, str], log: Path) -> Timed:
    """Run one command, its output going to `log`. CPU time is reported beside wall time: on a
    shared machine another process can stall or pause a run, which shows in wall time only."""
    started = time.perf_counter()
    with log.open("wb") as sink:
        proc = subprocess.Popen(cmd, cwd=cwd, env=dict(env), stdout=sink, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
    took = time.perf_counter() - started
    cpu = usage.ru_utime + usage.ru_stime
    return Timed(took, os.waitstatus_to_exitcode(status), usage.ru_maxrss, cpu)


def _tail(log: Path, lines: int = 6) -> str:
    """The last lines of a log that say something (Node's experimental-API warnings do not)."""
    text = log.read_text(encoding="utf-8", errors="replace").splitlines()
    said = [t for t in text if t.strip() and "ExperimentalWarning" not in t and "--trace-" not in t]
    # A Node crash prints its error's name above a stack trace: show it, then the end.
    named = [t.strip() for t in said if re.match(r"\s*\w*Error\b", t)][:1]
    return " | ".join(named + said[-lines:]) or "no output"


@dataclass
class Promptfoo:
    """A promptfoo suite recorded into its own cache: how to replay it and where it lives."""

    suite: Path
    env: dict[str, str]
    cmd: list[str]
    size: int


def promptfoo_record(work: Path, size: int, tool: Path) -> Promptfoo:
    """Install promptfoo, write the suite and record it through the fake provider, then stop the
    fake: from here on a case can only be answered from promptfoo's cache."""
    binary = _promptfoo_binary(tool)
    suite = work / f"promptfoo-{size}"
    env = dict(
        os.environ,
        PROMPTFOO_CACHE_PATH=str(suite / "cache"),
        PROMPTFOO_CONFIG_DIR=str(suite / "home"),  # keep ~/.promptfoo untouched
        PROMPTFOO_DISABLE_TELEMETRY="1",
        PROMPTFOO_DISABLE_UPDATE="1",
        # No debug/error log files: promptfoo 0.121.20 ends its file logger at exit while a
        # write is still draining, and the unhandled "write after end" crashes the process with
        # exit 1 after "Eval complete" (now and then: one replay in three here), or waits out
        # a 1 s shutdown timeout. Neither is replay work; cachelint writes no debug log either.
        PROMPTFOO_DISABLE_DEBUG_LOG="1",
        PROMPTFOO_DISABLE_ERROR_LOG="1",
    )
    cmd = [str(binary), "eval", "-c", "promptfooconfig.json", "--no-table", "--no-progress-bar"]
    fake, base_url = _start_fake(work)
    try:
        _promptfoo_suite(suite, size, base_url)
        log = work / "promptfoo-record.log"
        done = _timed(cmd, suite, env, log)
        if done.rc != 0:
            raise Unavailable(f"recording through promptfoo exited {done.rc}: {_tail(log)} ({log})")
        print(f"        promptfoo: recorded {size} cases against the fake in {done.wall:.1f} s")
    finally:
        fake.terminate()
        fake.wait()
    return Promptfoo(suite, env, cmd, size)


def promptfoo_verify(pf: Promptfoo, prefix: list[str]) -> None:
    """One untimed replay writing promptfoo's JSON results: every case passed, none errored, and
    every response came from its cache (the timed runs do not pay for writing this file)."""
    out = pf.suite / "verify.json"
    log = pf.suite / "verify.log"
    rc = _timed([*prefix, *pf.cmd, "-o", str(out)], pf.suite, pf.env, log).rc
    if rc != 0:
        raise Unavailable(f"cached replay exited {rc}: {_tail(log)} ({log})")
    results = json.loads(out.read_text(encoding="utf-8"))["results"]
    stats, cases = results["stats"], results["results"]
    cached = sum(1 for c in cases if (c.get("response") or {}).get("cached"))
    if (stats["successes"], stats["failures"], stats["errors"], cached) != (pf.size, 0, 0, pf.size):
        raise Unavailable(
            f"cached replay: {stats['successes']} passed, {stats['failures']} failed, "
            f"{stats['errors']} errors, {cached} of {pf.size} from the cache ({out})"
        )


def paired(repo: Path, pf: Promptfoo, prefix: list[str], pairs: int) -> list[tuple[Timed, Timed]]:
    """`pairs` rounds of (cachelint, promptfoo) replays as subprocesses, start-up included; the
    order inside a round alternates so neither tool always runs on a warmer machine."""
    ours_cmd = [*prefix, sys.executable, "-m", "cachelint", "run"]
    rounds: list[tuple[Timed, Timed]] = []
    for i in range(pairs):
        times: dict[str, Timed] = {}
        for who in ("cachelint", "promptfoo") if i % 2 == 0 else ("promptfoo", "cachelint"):
            log = repo.parent / f"{who}-pair{i}.log"
            if who == "cachelint":
                ours = [*ours_cmd, "--execution", f"pair{i}"]
                done = _timed(ours, repo, CACHELINT_ENV, log)
            else:
                done = _timed([*prefix, *pf.cmd], pf.suite, pf.env, log)
            if done.rc != 0:
                why = f"{_tail(log)} ({log})"
                raise Unavailable(f"{who}'s replay (round {i + 1}) exited {done.rc}: {why}")
            times[who] = done
        rounds.append((times["cachelint"], times["promptfoo"]))
    return rounds


def compare_promptfoo(work: Path, size: int, tool: Path, pairs: int) -> None:
    """Build, record and replay the same suite with both tools; print the paired figures, or the
    issue's reference figure (labelled as such) when promptfoo cannot run here."""
    repo = work / f"repo-{size}"
    if not repo.exists():
        build(repo, size)
        record(repo)
    prefix = offline_prefix()
    where = "offline (unshare -n, loopback only)" if prefix else "with the fake provider stopped"
    try:
        pf = promptfoo_record(work, size, tool)
        promptfoo_verify(pf, prefix)
        rounds = paired(repo, pf, prefix, pairs)
    except Unavailable as exc:
        ours = statistics.median(r.ours.wall for r in replay_rounds(repo, pairs, CACHELINT_ENV))
        ref = PROMPTFOO_REFERENCE_MS * size / 1000
        print(f"  promptfoo: not measured: {exc}")
        print(
            f"  promptfoo (issue's reference figure, NOT measured here): "
            f"{PROMPTFOO_REFERENCE_MS} ms/case -> {ref:.1f} s for {size:,}; "
            f"ratio promptfoo/cachelint = {ref / ours:.1f}x"
        )
        return
    ours = statistics.median(c.wall for c, _ in rounds)
    theirs = statistics.median(p.wall for _, p in rounds)
    ratio = statistics.median(p.wall / c.wall for c, p in rounds)
    cpu_ratio = statistics.median(p.cpu / c.cpu for c, p in rounds)
    print(
        f"  {size:,} cases replayed {where}, {pairs} paired rounds, both as subprocesses "
        f"including start-up; promptfoo {PROMPTFOO_VERSION} verified: every case passed and "
        "came from its cache"
    )
    print(
        f"  wall: cachelint {ours:.2f} s ({ours / size * 1000:.3f} ms/case), promptfoo "
        f"{theirs:.2f} s ({theirs / size * 1000:.3f} ms/case): promptfoo/cachelint = {ratio:.1f}x "
        "(median of the rounds' ratios; rounds: "
        + ", ".join(f"{p.wall / c.wall:.1f}x" for c, p in rounds)
        + ")"
    )
    print(
        f"  cpu (user+system): cachelint {statistics.median(c.cpu for c, _ in rounds):.2f} s, "
        f"promptfoo {statistics.median(p.cpu for _, p in rounds):.2f} s: {cpu_ratio:.1f}x "
        "(median of the rounds' ratios)"
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 2000, 20000])
    parser.add_argument("--promptfoo", action="store_true", help="also time promptfoo")
    parser.add_argument("--promptfoo-size", type=int, default=2000)
    parser.add_argument(
        "--promptfoo-runs", type=int, default=3, help="paired rounds, the median (default 3)"
    )
    parser.add_argument(
        "--promptfoo-dir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "cachelint-bench-promptfoo",
        help="npm install dir when .ci/promptfoo has none, reused (default: under the temp dir)",
    )
    parser.add_argument(
        "--matrix", type=int, default=2000, help="scenarios of the 2-target matrix (0: skip)"
    )
    parser.add_argument("--matrix-rounds", type=int, default=5)
    parser.add_argument(
        "--rounds", type=int, default=3, help="paired rounds of cachelint and the floor (3)"
    )
    parser.add_argument(
        "--in-process-max", type=int, default=20000, help="largest size also timed in process"
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="DIR",
        help="also replay with the cachelint of this checkout (e.g. a git worktree of an older "
        "commit), paired in the same rounds",
    )
    parser.add_argument(
        "--baseline-args",
        default="",
        metavar="ARGS",
        help="extra run arguments for the baseline runs only",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temp directory")
    return parser


def _baseline(parser: argparse.ArgumentParser, ns: argparse.Namespace) -> Baseline | None:
    """--baseline's checkout, announced with both commits; None without one."""
    if ns.baseline is None:
        return None
    if not (ns.baseline / "cachelint" / "__init__.py").is_file():
        parser.error(f"--baseline {ns.baseline}: no cachelint package there")
    baseline = Baseline(ns.baseline.resolve(), tuple(ns.baseline_args.split()))
    print(
        f"this checkout {ROOT} at {commit_of(ROOT)} against the baseline {baseline.checkout} at "
        f"{commit_of(baseline.checkout)}; 'vs baseline': this checkout / the baseline, the median "
        "of the per-round ratios, lowest-highest in brackets"
    )
    return baseline


def main() -> int:
    parser = _parser()
    ns = parser.parse_args()
    baseline = _baseline(parser, ns)
    compile_bytecode([ROOT] + ([baseline.checkout] if baseline else []))
    work = Path(tempfile.mkdtemp(prefix="cachelint-bench-run-"))
    base = startup()
    print(f"interpreter + cachelint startup: {base * 1000:.0f} ms")
    by_size: dict[int, list[Round]] = {}
    try:
        for size in ns.sizes:
            repo = work / f"repo-{size}"
            build(repo, size)
            took = record(repo)
            by_size[size] = replay_rounds(repo, ns.rounds, CACHELINT_ENV, baseline)
            print(f"{describe(size, by_size[size])}; recorded in {took:.1f} s", flush=True)
            for line in against_baseline(by_size[size]):
                print(line, flush=True)
            if size <= ns.in_process_max:
                inproc = replay_in_process(repo)
                print(f"{'':>8}in process {inproc:.2f} s = {inproc / size * 1000:.3f} ms/case")
        summary = growth(by_size, base)
        if summary is not None:
            print(summary)
        if ns.matrix:
            matrix_pairs(work, ns.matrix, ns.matrix_rounds)
        if ns.promptfoo:
            compare_promptfoo(work, ns.promptfoo_size, ns.promptfoo_dir, ns.promptfoo_runs)
    finally:
        if ns.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
