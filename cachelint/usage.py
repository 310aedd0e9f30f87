"""Which cache entries each front door's last full pass reached, so unused ones can be pruned.

Two front doors record and replay one cache (`cachelint.frontdoors`), and each proves a different
set of entries needed. Each writes, outside the tree, the entries its last pass reached:

- `cachelint run`: `<results>/entries-used.json`, after every run (a filtered or failing one
  says so, and cannot vouch for anything).

      {"format": 1, "execution": "20261130T101500Z", "mode": "replay", "root": "eval-cache",
       "filtered": false, "passed": true, "finished": "2026-11-30T10:15:42Z",
       "entries": ["eval-cache/cache/a/t/s/0123456789abcdef"]}

- the pytest plugin: `<results>/entries-used-pytest.json`, after a full pass of the eval tests
  only (`pytest_plugin`), with every test's outcome and the entries it reached.

An entry is unused only when its owner's last full pass passed and did not reach it (no other
front door's either). Nothing is taken on the record's word (`Judgement`): a run's record must
agree with the execution's own results under `<results>/<execution>/` (run.json and each
scenario's file: every scenario of the datasets, each passed, the same entries), a pytest
record with itself; an entry recorded after the pass finished is one the pass never saw (an
interrupted or partial re-record); and a run or a pytest session that may record leaves a
marker, `<results>/run-recording.json` or `<results>/pytest-recording.json`, from before its
first entry until a full pass of its front door finishes, so a killed re-record (Ctrl-C,
SIGTERM, kill -9, a cancelled job) stops prune and `green --from-results` whatever the entries'
dates say. An owner with entries and no usable pass makes prune refuse, naming its command.
"""

from __future__ import annotations

import itertools
import os
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from cachelint.config import Config, Layout
from cachelint.display import escape_json_unsafe
from cachelint.errors import CachelintError
from cachelint.frontdoors import FrontDoor, dataset_probe, owner, scenario_identity, scenario_of
from cachelint.fsutil import atomic_write_chunks
from cachelint.store import CACHE_DIR, Entry, decode_json, format_time, parse_time

# A recording under way, or one that died: left until a full pass of its front door finishes.
_RECORDING = {FrontDoor.RUN: "run-recording.json", FrontDoor.PYTEST: "pytest-recording.json"}
FORMAT = 1
MAX_BYTES = 256 * 1024 * 1024  # a record or results file above it is not read (not evidence)
# Each front door's record of the entries its last pass reached.
FILES = {FrontDoor.RUN: "entries-used.json", FrontDoor.PYTEST: "entries-used-pytest.json"}


@dataclass(frozen=True)
class Usage:
    execution: str
    mode: str
    root: str  # the cache root the pass read and recorded into
    filtered: bool
    passed: bool
    entries: frozenset[str]  # repo-relative entry directories
    front_door: FrontDoor = FrontDoor.RUN
    finished: datetime | None = None
    # pytest: node id -> {"outcome": "passed", "entries": [...]} for every eval test of the pass
    tests: Mapping[str, Any] = field(default_factory=dict)

    def where(self, results: str) -> str:
        return f"{results}/{FILES[self.front_door]} (execution {self.execution})"

    def refusal(self, results: str) -> str | None:
        """Why this pass cannot tell which entries are unused, or None when it can."""
        where = self.where(results)
        command = self.front_door.command
        if self.mode == "off":
            return f"the last run did not read the cache (mode off, {where}); run `{command}`"
        if self.filtered:
            return (
                f"the last run was filtered ({where}): it reached only some scenarios' entries; "
                "run `cachelint run` with no --agent, --tenant, --scenario, --trials, --failed or "
                "--resume first"
            )
        if not self.passed:
            return (
                f"the last run failed ({where}): a failing scenario may stop before entries it "
                f"needs; make `{command}` pass first"
            )
        if self.finished is None:
            return f"{where} does not say when the pass finished; run `{command}` again"
        return None


def path(config: Config, door: FrontDoor = FrontDoor.RUN) -> str:
    return os.path.join(config.repo, config.results, FILES[door])


def _write_json(target: str, record: Mapping[str, Any], what: str, command: str) -> None:
    """`record` as `json_dumps` writes it (file names reach it: bidi and controls written as
    escapes), and a newline, in pieces: a run of 100,000 scenarios lists as many entries."""
    from cachelint.canonical import pretty_text  # json_dumps's encoding, a piece at a time

    chunks = (escape_json_unsafe(text).encode("utf-8") for text in pretty_text(record))
    try:
        atomic_write_chunks(Path(target), chunks)
    except OSError as exc:
        raise CachelintError(
            f"{target}: cannot write {what} ({exc.strerror or exc}); check that the results "
            f"directory is writable and run `{command}` again"
        ) from None


def sorted_unique(values: Iterable[str]) -> list[str]:
    """`sorted(set(values))` without the set: a large run's entries are held once."""
    return [value for value, _ in itertools.groupby(sorted(values))]


def record_run(config: Config, report: Any, *, filtered: bool) -> None:
    """Record the cache entries a finished `cachelint run`'s calls (targets' and judges')
    reached (`report` is its `RunReport`); a full run (passed or not) ends what a recording
    run's marker stood for."""
    from cachelint import clock

    record = {
        "format": FORMAT,
        "execution": report.name,
        "mode": report.mode,
        "root": config.cache[0],
        "filtered": filtered,
        "passed": report.passed,
        "finished": format_time(clock.now()),
        "entries": sorted_unique(report.entries()),
    }
    _write_json(path(config), record, "the entries this run used", "cachelint run")
    if not filtered:
        clear_recording(config, FrontDoor.RUN)


def write_pytest_usage(
    config: Config,
    *,
    session: str,
    mode: str,
    tests: Mapping[str, Mapping[str, Any]],
    finished: datetime,
) -> None:
    """Record a full pass of the eval tests (every one collected ran): each test's outcome and
    the entries it reached; then the session's recording marker is done with."""
    passed = bool(tests) and all(t["outcome"] == "passed" for t in tests.values())
    record = {
        "format": FORMAT,
        "front_door": FrontDoor.PYTEST.value,
        "execution": session,
        "mode": mode,
        "root": config.cache[0],
        "filtered": False,
        "passed": passed,
        "finished": format_time(finished),
        "tests": {
            nodeid: {"outcome": t["outcome"], "entries": sorted(set(t["entries"]))}
            for nodeid, t in sorted(tests.items())
        },
        "entries": sorted({e for t in tests.values() for e in t["entries"]}),
    }
    command = FrontDoor.PYTEST.command
    _write_json(path(config, FrontDoor.PYTEST), record, "the entries the eval tests used", command)
    clear_recording(config, FrontDoor.PYTEST)


# ---- the recording marker: a front door's recording that no full pass has followed yet ----------


def recording_path(config: Config, door: FrontDoor) -> str:
    return os.path.join(config.repo, config.results, _RECORDING[door])


def mark_recording(config: Config, door: FrontDoor, *, execution: str, mode: str) -> None:
    """Before a run or a pytest session that may record writes its first entry: until a full
    pass of the same front door finishes (`record_run`, `write_pytest_usage`), prune and
    `green --from-results` refuse. A kill -9 leaves it, as it should."""
    from cachelint import clock

    record = {
        "format": FORMAT,
        "front_door": door.value,
        "execution": execution,
        "mode": mode,
        "pid": os.getpid(),
        "started": format_time(clock.now()),
    }
    _write_json(recording_path(config, door), record, "the recording marker", door.command)


def mark_run_recording(config: Config, mode: Any, execution: str) -> None:
    """`mark_recording` for a `cachelint run` in `mode` (a runner.client.Mode), if it records."""
    if mode.records:
        mark_recording(config, FrontDoor.RUN, execution=execution, mode=mode.value)


def clear_recording(config: Config, door: FrontDoor) -> None:
    try:
        os.unlink(recording_path(config, door))
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise CachelintError(
            f"{recording_path(config, door)}: cannot remove the recording marker "
            f"({exc.strerror}); remove it after a full `{door.command}` passed"
        ) from None


def recording_refusal(config: Config, door: FrontDoor) -> str | None:
    """Why the front door's recordings are not proven by a full pass (its marker stands), or
    None. The marker is not trusted for more than naming the run: its presence is the fact."""
    marker = f"{config.results}/{_RECORDING[door]}"
    if not os.path.lexists(recording_path(config, door)):
        return None
    try:
        data = decode_json(_read(config, marker, "the recording marker"))
    except (CachelintError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    name = data.get("execution", data.get("session"))
    facts = ", ".join(
        f"{key} {data[key]}"
        for key in ("mode", "pid", "started")
        if isinstance(data.get(key), (str, int))
    )
    which = f"{name if isinstance(name, str) else '?'}{f' ({facts})' if facts else ''}"
    if door is FrontDoor.PYTEST:
        what = (
            f"a pytest session that records (session {which}) did not end in a full pass of "
            "the eval tests (interrupted, killed, a part of them, or still running)"
        )
        then = "run `pytest -m eval` (every eval test) first"
    else:
        what = (
            f"a recording `cachelint run` (execution {which}) was not followed by a full run "
            "(interrupted, killed, filtered, or still running)"
        )
        then = "run `cachelint run` (every scenario) first"
    return f"{marker}: {what}; what it recorded is not borne out by a full pass: {then}"


def recording_refusals(config: Config) -> list[str]:
    """`recording_refusal` of every front door whose marker stands."""
    return [why for door in FrontDoor if (why := recording_refusal(config, door)) is not None]


# ---- reading the records back -------------------------------------------------------------------


def _read(config: Config, rel: str, what: str) -> bytes:
    """A results file, read confined to the repository and bounded (`confine.read_inside`)."""
    from cachelint.confine import read_inside

    try:
        return read_inside(config.repo, rel, what, MAX_BYTES)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise CachelintError(f"{rel}: cannot read {what} ({exc.strerror or exc})") from None


def read_usage(config: Config, door: FrontDoor = FrontDoor.RUN) -> Usage | None:
    """The front door's last usage record; None when there is none; CachelintError when
    unreadable or not one this cachelint writes."""
    rel = f"{config.results}/{FILES[door]}"
    again = f"run `{door.command}` again"
    try:
        data = decode_json(_read(config, rel, "the last run's entry list"))
    except FileNotFoundError:
        return None
    except CachelintError as exc:
        raise CachelintError(f"{exc}; {again}") from None
    except ValueError as exc:
        raise CachelintError(
            f"{rel}: cannot read the last run's entry list ({exc}); {again}"
        ) from None
    usage = _parse(data, door)
    if usage is None:
        raise CachelintError(f"{rel}: not an entry list this cachelint writes; {again}")
    return usage


def _strings(value: Any) -> list[str] | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    return None


def _parse(data: Any, door: FrontDoor) -> Usage | None:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return None
    entries = _strings(data.get("entries"))
    tests = data.get("tests", {})
    if entries is None or not isinstance(tests, dict):
        return None
    if data.get("front_door", FrontDoor.RUN.value) != door.value:
        return None
    finished = data.get("finished")
    try:
        moment = parse_time(finished) if finished is not None else None
    except ValueError:
        return None
    return Usage(
        execution=str(data.get("execution")),
        mode=str(data.get("mode")),
        root=str(data.get("root")),
        filtered=data.get("filtered") is not False,
        passed=data.get("passed") is True,
        entries=frozenset(entries),
        front_door=door,
        finished=moment,
        tests=tests,
    )


# ---- evidence: a record agrees with what its pass left behind -----------------------------------


def evidence_problem(config: Config, usage: Usage) -> str | None:
    """Why the record is not borne out by its pass (None when it is)."""
    if usage.root != config.cache[0]:
        return (
            f"{usage.where(config.results)} is of cache root {usage.root!r}, not "
            f"{config.cache[0]!r}; run `{usage.front_door.command}` again"
        )
    if usage.front_door is FrontDoor.PYTEST:
        return _pytest_evidence(config, usage)
    return _run_evidence(config, usage)


def _pytest_evidence(config: Config, usage: Usage) -> str | None:
    where = usage.where(config.results)
    reached: set[str] = set()
    for nodeid, test in usage.tests.items():
        entries = _strings(test.get("entries")) if isinstance(test, dict) else None
        if entries is None or test.get("outcome") != "passed":
            return f"{where}: test {nodeid} did not pass; make `pytest -m eval` pass first"
        head = f"{config.cache[0]}/{CACHE_DIR}/{scenario_identity(nodeid)}/"
        if any(not e.startswith(head) or "/" in e[len(head) :] for e in entries):
            return f"{where}: lists entries of other tests under {nodeid}; run `pytest -m eval`"
        reached.update(entries)
    if not usage.tests or reached != usage.entries:
        return f"{where}: its tests do not account for its entries; run `pytest -m eval` again"
    return None


def dataset_identities(config: Config) -> list[str]:
    """Every scenario the datasets define now (`runner.dataset` reads them the same way)."""
    base = os.path.join(config.repo, config.datasets)
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        relative = os.path.relpath(dirpath, base).replace(os.sep, "/")
        for name in filenames:
            if name.endswith(".json") and not name.startswith("."):
                rel = name if relative == "." else f"{relative}/{name}"
                found.append(unicodedata.normalize("NFC", rel[: -len(".json")]))
    return sorted(found)


def _run_evidence(config: Config, usage: Usage) -> str | None:
    where = f"{usage.where(config.results)}"
    execution = f"{config.results}/{usage.execution}"
    again = "run `cachelint run` (every scenario) again"
    if usage.execution in ("", ".", "..") or "/" in usage.execution or "\\" in usage.execution:
        return f"{where}: names no execution; {again}"
    try:
        summary = decode_json(_read(config, f"{execution}/run.json", "the run summary"))
    except (FileNotFoundError, NotADirectoryError):
        return f"{where}: its execution left no {execution}/run.json (it never ran); {again}"
    except (CachelintError, ValueError) as exc:
        return f"{where}: {exc}; {again}"
    listed = summary.get("scenarios") if isinstance(summary, dict) else None
    if (
        not isinstance(listed, list)
        or summary.get("execution") != usage.execution
        or summary.get("passed") is not True
    ):
        return f"{where}: {execution}/run.json does not show this execution passing; {again}"
    identities = [s.get("scenario") if isinstance(s, dict) else None for s in listed]
    missing = sorted(set(dataset_identities(config)) - {i for i in identities if i})
    if missing:
        return f"{where}: its execution did not run scenario {missing[0]} of the datasets; {again}"
    reached: set[str] = set()
    for identity in identities:
        problem = _scenario_evidence(config, execution, identity, reached)
        if problem is not None:
            return f"{where}: {problem}; {again}"
    if reached != usage.entries:
        return f"{where}: {execution}'s results reached other entries than it lists; {again}"
    return None


def _scenario_evidence(
    config: Config, execution: str, identity: Any, reached: set[str]
) -> str | None:
    """Add the entries one scenario's results file shows its calls reached; a problem or None."""
    parts = identity.split("/") if isinstance(identity, str) else []
    if len(parts) != 3 or any(p in ("", ".", "..") or "\\" in p for p in parts):
        return f"{execution}/run.json lists {identity!r}, not a scenario identity"
    rel = f"{execution}/{identity}.json"
    try:
        record = decode_json(_read(config, rel, "a scenario's results"))
    except (FileNotFoundError, NotADirectoryError):
        return f"{rel} is missing"
    except (CachelintError, ValueError) as exc:
        return str(exc)
    trials = record.get("trials") if isinstance(record, dict) else None
    if record.get("passed") is not True or not isinstance(trials, list):
        return f"{rel} does not show the scenario passing"
    for trial in trials:
        calls = [*trial.get("calls", ()), *trial.get("judge_calls", ())] if trial else []
        for call in calls:
            entry = call.get("entry") if isinstance(call, dict) else None
            if not isinstance(entry, str):
                return f"{rel}: a call without its entry"
            reached.add(entry)
    return None


# ---- the judgement: per owner, which entries are unused -----------------------------------------


@dataclass(frozen=True)
class Judgement:
    unused: tuple[Entry, ...]  # sorted by directory
    owners: Mapping[str, FrontDoor]  # directory -> owner, of the unused entries
    refusals: Mapping[FrontDoor, str]  # owners with entries whose last full pass cannot vouch
    passes: Mapping[FrontDoor, Usage]  # the usable passes
    errors: Sequence[tuple[str, str]] = ()  # (record path, why) of unreadable records
    present: frozenset[FrontDoor] = frozenset()  # the owners of the tree's entries

    def executions(self) -> str:
        """The passes that vouch, as the messages name them."""
        return ", ".join(
            f"{'execution' if d is FrontDoor.RUN else 'pytest session'} {self.passes[d].execution}"
            for d in FrontDoor
            if d in self.passes and d in self.present
        )


def _usable(config: Config, door: FrontDoor) -> tuple[Usage | None, str | None, str | None]:
    """(the usable pass, why there is none, a read error)."""
    try:
        usage = read_usage(config, door)
    except CachelintError as exc:
        return None, str(exc), str(exc)
    if usage is None:
        return (
            None,
            (
                f"{config.results}/{FILES[door]} not found: no full pass of {door.shown} has "
                f"recorded which entries it reached; run `{door.command}` (every "
                f"{'scenario' if door is FrontDoor.RUN else 'eval test'}) first"
            ),
            None,
        )
    # The marker names the recording no full pass followed, whatever the entries' dates say.
    why = (
        usage.refusal(config.results)
        or recording_refusal(config, door)
        or evidence_problem(config, usage)
    )
    return (None, why, None) if why is not None else (usage, None, None)


def _owned(config: Config, entries: Sequence[Entry]) -> dict[FrontDoor, list[Entry]]:
    """The native entries of the first cache root by owner, in their order; each scenario's
    owner is asked once (it may look for the scenario's dataset file), not once per entry."""
    root = config.cache[0]
    is_dataset = dataset_probe(config)
    owned: dict[FrontDoor, list[Entry]] = {}
    by_scenario: dict[str, list[Entry]] = {}
    for entry in entries:
        scenario = scenario_of(entry.directory, root) if entry.layout is Layout.CACHELINT else None
        if scenario is None:
            continue
        mine = by_scenario.get(scenario)
        if mine is None:
            mine = by_scenario[scenario] = owned.setdefault(owner(scenario, is_dataset), [])
        mine.append(entry)
    return owned


def judge(config: Config, entries: Sequence[Entry], *, vouched_only: bool = False) -> Judgement:
    """Which native entries of the first cache root are unused, deciding per owner.
    `vouched_only`: when no front door has a pass that can vouch (so none is unused), the
    entries are not sorted by owner, and `refusals` and `present` are left empty (the check's
    rule reads neither)."""
    passes: dict[FrontDoor, Usage] = {}
    reasons: dict[FrontDoor, str] = {}
    errors: list[tuple[str, str]] = []
    for door in FrontDoor:
        usage, why, error = _usable(config, door)
        if usage is not None:
            passes[door] = usage
        elif why is not None:
            reasons[door] = why
        if error is not None:
            errors.append((f"{config.results}/{FILES[door]}", error))
    if vouched_only and not passes:
        return Judgement((), {}, {}, passes, tuple(errors))
    owned = _owned(config, entries)
    reached = frozenset().union(*(u.entries for u in passes.values()))
    unused: list[Entry] = []
    owners: dict[str, FrontDoor] = {}
    refusals: dict[FrontDoor, str] = {}
    for door, mine in owned.items():
        if door not in passes:
            refusals[door] = _owner_refusal(door, len(mine), reasons[door])
            continue
        candidates = [e for e in mine if e.directory not in reached]
        finished = passes[door].finished
        newer = [e for e in candidates if finished and e.created and e.created > finished]
        if newer:
            refusals[door] = _newer_refusal(door, newer, passes[door], config.results)
        else:
            unused.extend(candidates)
            owners.update((e.directory, door) for e in candidates)
    ordered = tuple(sorted(unused, key=lambda e: e.directory))
    return Judgement(ordered, owners, refusals, passes, tuple(errors), frozenset(owned))


def _owner_refusal(door: FrontDoor, count: int, why: str) -> str:
    noun = "entry" if count == 1 else "entries"
    return f"{door.shown} owns {count} {noun} of the tree, and {why}"


def _newer_refusal(door: FrontDoor, newer: Sequence[Entry], usage: Usage, results: str) -> str:
    first = min(newer, key=lambda e: e.directory)
    when = format_time(usage.finished) if usage.finished else "?"
    return (
        f"{first.directory} ({len(newer)} entr{'y' if len(newer) == 1 else 'ies'} in all) was "
        f"recorded after the last full pass of {door.shown} finished ({usage.where(results)}, "
        f"{when}): an interrupted or partial re-record; run `{door.command}` (all of it) first"
    )
