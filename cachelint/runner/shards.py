"""Sharding on the CI's own matrix: `run --shard I/N`, and merging the shards' results.

A scenario's shard is a hash of its identity, not its position, so adding a scenario elsewhere never
moves the others between shards (a CI re-run of one shard replays the same scenarios). The merge
copies each shard's per-scenario results files into one execution and writes one `run.json` in
dataset order, which every report and `cachelint green --from-results` then reads.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cachelint.display import json_dumps
from cachelint.errors import CachelintError
from cachelint.fsutil import atomic_write
from cachelint.runner.views import RUN_FILE, listed_scenario, read_run

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
    digest = hashlib.sha256(identity.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def in_shard(identities: Sequence[Any], shard: tuple[int, int]) -> list[Any]:
    index, count = shard
    return [s for s in identities if shard_of(s.identity, count) == index]


def merge(sources: Sequence[Path], dest: Path, *, order: Sequence[str]) -> dict[str, Any]:
    """Copy the shards' results into `dest` (already claimed, empty) and return its run summary.

    `order` is the dataset order of every scenario; a scenario found in two shards is an error
    (the shards were not of one split)."""
    rank = {identity: i for i, identity in enumerate(order)}
    entries: dict[str, dict[str, Any]] = {}
    mutations: list[Any] = []
    modes: set[str] = set()
    started: list[str] = []
    for source in sources:
        summary = read_run(source)
        modes.add(str(summary.get("mode")))
        started.append(str(summary.get("started") or ""))
        mutations.extend(summary.get("mutations") or ())
        for entry in summary["scenarios"]:
            identity = listed_scenario(entry, source / RUN_FILE)
            if identity in entries:
                raise CachelintError(
                    f"{source}: scenario {identity} is also in another merged directory; merge "
                    "the shards of one `--shard I/N` split"
                )
            entries[identity] = entry
            target = dest / f"{identity}.json"
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source / f"{identity}.json", target)
            except OSError as exc:
                raise CachelintError(
                    f"{source / identity}.json: cannot copy it into {dest} ({exc.strerror}); "
                    "pass execution directories written by `cachelint run`, whole"
                ) from None
    scenarios = sorted(
        entries.values(), key=lambda e: (rank.get(e["scenario"], len(rank)), e["scenario"])
    )
    merged = {
        "format": 1,
        "execution": dest.name,
        "mode": modes.pop() if len(modes) == 1 else "mixed",
        "passed": not mutations and all(e.get("passed") for e in scenarios),
        "scenarios": scenarios,
        "mutations": mutations,
        "merged_from": [s.name for s in sources],
        "started": max(started, default="") or None,
    }
    data = json_dumps(merged, compact=True)
    atomic_write(dest / RUN_FILE, (data + "\n").encode("utf-8"))
    return merged
