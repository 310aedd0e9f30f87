"""Which cache entries the last run reached, so unused ones can be listed and pruned.

Every `cachelint run` writes `<results>/entries-used.json` (outside the cache tree, like all
results): the entry directories its scenarios (and their judges) read or recorded, and whether the
run can vouch for the whole suite. Only a run of every scenario, at the datasets' own trial
counts, that passed can: a filtered run never reaches the other scenarios' entries, and a failing
scenario may stop before the calls it would make when it passes.

    {"format": 1, "execution": "20261130T101500Z", "mode": "replay", "root": "eval-cache",
     "filtered": false, "passed": true, "entries": ["eval-cache/cache/a/t/s/0123456789abcdef"]}

`eval-cache-unused`, `cachelint check --unused` and `cachelint prune` read it; an entry of the
run's cache root that is not in `entries` is unused.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cachelint.config import Config, Layout
from cachelint.errors import CachelintError
from cachelint.fsutil import atomic_write
from cachelint.store import CACHE_DIR, Entry

FILE = "entries-used.json"
FORMAT = 1


@dataclass(frozen=True)
class Usage:
    execution: str
    mode: str
    root: str  # the cache root the run read and recorded into
    filtered: bool
    passed: bool
    entries: frozenset[str]  # repo-relative entry directories

    def refusal(self, results: str) -> str | None:
        """Why this run cannot tell which entries are unused, or None when it can."""
        where = f"{results}/{FILE} (execution {self.execution})"
        if self.mode == "off":
            return f"the last run did not read the cache (mode off, {where}); run `cachelint run`"
        if self.filtered:
            return (
                f"the last run was filtered ({where}): it reached only some scenarios' entries; "
                "run `cachelint run` with no --agent, --tenant, --scenario or --trials first"
            )
        if not self.passed:
            return (
                f"the last run failed ({where}): a failing scenario may stop before entries it "
                "needs; make `cachelint run` pass first"
            )
        return None


def path(config: Config) -> Path:
    return config.repo / config.results / FILE


def write_usage(
    config: Config,
    *,
    execution: str,
    mode: str,
    filtered: bool,
    passed: bool,
    calls: Iterable[Any],
) -> None:
    """Record the entries `calls` (CallRecords of targets and judges) reached."""
    record = {
        "format": FORMAT,
        "execution": execution,
        "mode": mode,
        "root": config.cache[0],
        "filtered": filtered,
        "passed": passed,
        "entries": sorted({c.entry for c in calls}),
    }
    text = json.dumps(record, sort_keys=True, ensure_ascii=False, indent=1)
    try:
        atomic_write(path(config), (text + "\n").encode("utf-8"))
    except OSError as exc:
        raise CachelintError(
            f"{path(config)}: cannot write the entries this run used ({exc.strerror or exc}); "
            "check that the results directory is writable"
        ) from None


def record_run(config: Config, report: Any, *, filtered: bool) -> None:
    """`write_usage` for a finished run (`report` is its RunReport)."""
    write_usage(
        config,
        execution=report.execution,
        mode=report.mode,
        filtered=filtered,
        passed=report.passed,
        calls=(c for r in report.results for t in r.trials for c in (*t.calls, *t.judge_calls)),
    )


def read_usage(config: Config) -> Usage | None:
    """The last run's usage record; None when there is none; CachelintError when unreadable."""
    file = path(config)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise CachelintError(
            f"{file}: cannot read the last run's entry list ({exc}); run `cachelint run` again"
        ) from None
    entries = data.get("entries") if isinstance(data, dict) else None
    if (
        not isinstance(data, dict)
        or data.get("format") != FORMAT
        or not isinstance(entries, list)
        or not all(isinstance(e, str) for e in entries)
    ):
        raise CachelintError(
            f"{file}: not an entry list this cachelint writes; run `cachelint run` again"
        )
    return Usage(
        execution=str(data.get("execution")),
        mode=str(data.get("mode")),
        root=str(data.get("root")),
        filtered=data.get("filtered") is not False,
        passed=data.get("passed") is True,
        entries=frozenset(entries),
    )


def unused_entries(entries: Sequence[Entry], usage: Usage) -> list[Entry]:
    """Native entries under the run's cache root that the run did not reach, by directory."""
    prefix = f"{usage.root}/{CACHE_DIR}/"
    return sorted(
        (
            e
            for e in entries
            if e.layout is Layout.CACHELINT
            and e.directory.startswith(prefix)
            and e.directory not in usage.entries
        ),
        key=lambda e: e.directory,
    )
