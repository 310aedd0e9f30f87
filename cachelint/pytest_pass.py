"""What a pytest session proves about the cache: a full pass of the eval tests, or not.

The pytest plugin is a front door of its own (`cachelint.frontdoors`): after a session that ran
every eval test, it writes which entries each test reached (`usage.write_pytest_usage`) and, when
every one passed, its part of the green record (`green.record_green_pytest`).

A session is a full pass when nothing kept an eval test from running (the eval tests are those
marked `eval` and, marked for them, every test that uses the `cachelint` fixture):

- none was deselected (`-k`, `-m` other than one selecting them all, `--deselect`, `--lf`,
  `--sw`), none of the paths pytest collects was left out (`--ignore`, a path or node id on the
  command line that covers less than `testpaths`, or the rootdir without it), and collection
  raised no error;
- every collected eval test ran to its end: `-x`, `--maxfail` and Ctrl-C stop a pass short;
- it ran in this process: under pytest-xdist each worker sees part of the suite, so none vouches
  for the whole (run `pytest -m eval -p no:xdist` for the record).

It passed when every eval test passed (a skipped or xfailed eval test did not show its entries
are needed or enough, so it leaves the pass unproven). A full pass that failed is written too:
it replaces the last record, and prune refuses until the eval tests pass again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class PassState:
    """What the session saw, filled in by the plugin's hooks."""

    eval_ids: list[str] = field(default_factory=list)  # collected eval tests, in order
    deselected: int = 0  # eval tests deselected
    collect_errors: int = 0
    outcomes: dict[str, str] = field(default_factory=dict)  # node id -> passed/failed/skipped
    finished: set[str] = field(default_factory=set)  # node ids whose teardown was reported
    reached: dict[str, set[str]] = field(default_factory=dict)  # node id -> entry directories
    used_fixture: bool = False
    notes: list[str] = field(default_factory=list)  # what the terminal summary says

    def report(self, nodeid: str, when: str, outcome: str) -> None:
        """One phase's report of a test (pytest's `TestReport.when` and `.outcome`)."""
        before = self.outcomes.get(nodeid)
        if outcome == "failed" or before == "failed":
            self.outcomes[nodeid] = "failed"
        elif outcome == "skipped" or before == "skipped":
            self.outcomes[nodeid] = "skipped"
        elif when == "call":
            self.outcomes[nodeid] = "passed"
        if when == "teardown":
            self.finished.add(nodeid)


def _covers(start: Path, path: Path) -> bool:
    return start == path or start in path.parents


def _uncovered(
    args: Sequence[str], invocation: Path, rootpath: Path, testpaths: Sequence[str]
) -> str | None:
    """Why the collection's starting points leave part of the suite out, or None."""
    if any("::" in a for a in args):
        return "node ids were given on the command line"
    starts = [(invocation / a).resolve() for a in args]
    required: list[Path] = []
    for pattern in testpaths:
        found = sorted(rootpath.glob(pattern)) if any(c in pattern for c in "*?[") else []
        required.extend(found or [rootpath / pattern])
    for path in [p.resolve() for p in required] or [rootpath.resolve()]:
        if not any(_covers(s, path) for s in starts):
            return f"the paths given on the command line leave out {path}"
    return None


def partial_reason(config: Any, state: PassState, *, interrupted: bool) -> str | None:
    """Why this session is not a full pass of the eval tests (see the module docstring)."""
    option = config.option
    if hasattr(config, "workerinput"):
        return "a pytest-xdist worker runs only part of the suite"
    if interrupted:
        return "the session was interrupted"
    if getattr(option, "collectonly", False):
        return "--collect-only runs no test"
    for name, flag in (("lf", "--lf"), ("stepwise", "--sw"), ("stepwise_skip", "--sw-skip")):
        if getattr(option, name, False):
            return f"{flag} runs only some tests"
    if getattr(option, "ignore", None) or getattr(option, "ignore_glob", None):
        return "--ignore leaves test files out"
    if state.collect_errors:
        return f"{state.collect_errors} error(s) during collection"
    if state.deselected:
        return f"{state.deselected} eval test(s) deselected (-k, -m, --deselect)"
    testpaths = list(config.getini("testpaths") or ())
    why = _uncovered(
        list(config.args), Path(config.invocation_params.dir), Path(config.rootpath), testpaths
    )
    if why is not None:
        return why
    unfinished = [n for n in state.eval_ids if n not in state.finished]
    if unfinished:
        return f"{len(unfinished)} eval test(s) did not run (first: {unfinished[0]})"
    return None


def tests_of(state: PassState) -> dict[str, dict[str, Any]]:
    """Each eval test's outcome and the entries it reached, for `usage.write_pytest_usage`."""
    return {
        nodeid: {
            "outcome": state.outcomes.get(nodeid, "failed"),
            "entries": sorted(state.reached.get(nodeid, ())),
        }
        for nodeid in state.eval_ids
    }


def conclude(
    settings: Any, state: PassState, *, session: str, mode: str, now: Any, why: str | None
) -> None:
    """Write the usage record and the green part after the session (errors: CachelintError)."""
    from cachelint.frontdoors import FrontDoor
    from cachelint.green import record_green_pytest
    from cachelint.usage import FILES, write_pytest_usage

    where = f"{settings.results}/{FILES[FrontDoor.PYTEST]}"
    if why is not None:
        state.notes.append(
            f"not a full pass of the eval tests ({why}): {where} and the green record are left "
            "as they were; `pytest -m eval` runs them all"
        )
        return
    tests = tests_of(state)
    write_pytest_usage(settings, session=session, mode=mode, tests=tests, finished=now)
    failed = [n for n, t in tests.items() if t["outcome"] != "passed"]
    if failed:
        state.notes.append(
            f"full pass of {len(tests)} eval test(s), {len(failed)} not passed (first: "
            f"{failed[0]}): recorded in {where}; the green record is left as it was"
        )
        return
    green = record_green_pytest(settings, session=session, mode=mode, tests=list(tests), now=now)
    rel = green.relative_to(settings.repo).as_posix()
    state.notes.append(
        f"full pass of {len(tests)} eval test(s): entries recorded in {where}, green record {rel}"
    )


def eval_items(items: Iterable[Any]) -> list[Any]:
    return [i for i in items if i.get_closest_marker("eval") is not None]
