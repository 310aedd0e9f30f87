"""Sharding on the CI's own matrix: `run --shard I/N`, and merging the shards' results.

A scenario's shard is a hash of its identity, not its position, so adding a scenario elsewhere never
moves the others between shards (a CI re-run of one shard replays the same scenarios). The merge
copies each shard's per-scenario results files into one execution and writes one `run.json` in
dataset order, which every report and `cachelint green --from-results` then reads.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cachelint.display import json_dumps
from cachelint.errors import CachelintError
from cachelint.fsutil import atomic_write
from cachelint.runner.cost import Spend
from cachelint.runner.reports.model import (
    RUN_FILE,
    RunReport,
    ScenarioReport,
    checked,
)

if TYPE_CHECKING:
    from cachelint.runner.evidence import Summary

_SHARD = re.compile(r"([1-9][0-9]{0,3})/([1-9][0-9]{0,3})")


def parse_shard(text: str) -> tuple[int, int]:
    match = _SHARD.fullmatch(text)
    if not match or int(match.group(1)) > int(match.group(2)):
        raise CachelintError(
            f"--shard {text!r}: expected I/N with 1 <= I <= N (e.g. --shard 2/3 for the second "
            "of three CI jobs)"
        )
    return int(match.group(1)), int(match.group(2))


def shard_of(identity: str, count: int) -> int:
    """The 1-based shard of a scenario among `count`."""
    import hashlib  # only a sharded run: loading OpenSSL costs every other run ~3 ms

    digest = hashlib.sha256(identity.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def in_shard(identities: Sequence[Any], shard: tuple[int, int]) -> list[Any]:
    index, count = shard
    return [s for s in identities if shard_of(s.identity, count) == index]


def merge(sources: Sequence[Path], dest: Path, *, order: Sequence[str]) -> dict[str, Any]:
    """Copy the shards' results into `dest` (already claimed, empty) and return its run summary.

    Every shard is validated before a byte is written (`runner.evidence`: its run summary and each
    results file read as regular files below the shard, never through a link, bounded, agreeing
    with each other); `run.json` is written last, so a merge that stops half way leaves no
    execution a report or `green` would read. `order` is the dataset order of every scenario; a
    scenario found in two shards is an error (the shards were not of one split)."""
    from cachelint.runner.evidence import read_summary

    summaries = [(source, read_summary(source)) for source in sources]
    owner: dict[str, Path] = {}
    for source, summary in summaries:
        for listed in summary.scenarios:
            if listed.identity in owner:
                raise CachelintError(
                    f"{source}: scenario {listed.identity} is also in {owner[listed.identity]}; "
                    "merge the shards of one `--shard I/N` split"
                )
            owner[listed.identity] = source
    report = _copy(summaries, dest)
    rank = {identity: i for i, identity in enumerate(order)}
    scenarios = sorted(
        (dict(listed.entry) for _, summary in summaries for listed in summary.scenarios),
        key=lambda e: (rank.get(e["scenario"], len(rank)), e["scenario"]),
    )
    mutations = [dict(m) for _, summary in summaries for m in summary.mutations]
    modes = {summary.mode for _, summary in summaries}
    started = [str(summary.document.get("started") or "") for _, summary in summaries]
    merged = {
        "format": 1,
        "execution": dest.name,
        "mode": modes.pop() if len(modes) == 1 else "mixed",
        "passed": not mutations and all(e["passed"] for e in scenarios),
        "summary": report.counts(),
        "by_agent": report.group_counts(by_tenant=False),
        "by_tenant": report.group_counts(by_tenant=True),
        "scenarios": scenarios,
        "mutations": mutations,
        "merged_from": [s.name for s in sources],
        # Shards of part of the suite are no whole-suite run: the trend leaves them out.
        "filtered": {e["scenario"] for e in scenarios} != set(order),
        "started": max(started, default="") or None,
    }
    data = json_dumps(merged, compact=True)
    atomic_write(dest / RUN_FILE, (data + "\n").encode("utf-8"))
    return merged


def _copy(summaries: Sequence[tuple[Path, Summary]], dest: Path) -> RunReport:
    """Copy each shard's results files into `dest`, each read as evidence and of a shape the
    reports read; the report of what they hold (slim), for the merged run's counts."""
    from cachelint.resultsink import write_file
    from cachelint.runner.evidence import read_record
    from cachelint.runner.reports.held import slim_record

    made: set[str] = set()
    counted: list[ScenarioReport] = []
    for source, summary in summaries:
        for listed in summary.scenarios:
            raw, record = read_record(source, listed)
            record = checked(record, source / f"{listed.identity}.json")
            counted.append(ScenarioReport(slim_record(record), Spend(), (0, 0)))
            try:
                write_file(f"{dest}/{listed.identity}.json", raw, made)
            except OSError as exc:
                raise CachelintError(
                    f"{dest}/{listed.identity}.json: cannot write it ({exc.strerror}); check "
                    "that the results directory is writable"
                ) from None
    return RunReport(dest.name, "", None, counted)
