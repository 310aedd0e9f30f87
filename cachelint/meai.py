"""What Microsoft.Extensions.AI.Evaluation (MEAI) 10.9.0 puts in a storage root and how it reads it.

`DiskBasedReportingConfiguration.Create(storageRootPath, ...)` hands the same root to the response
cache (`<root>/cache/<scenario>/<iteration>/<key>/entry.json` + `contents.data`) and to the result
store (`DiskBasedResultStore`: `<root>/results/<execution>/<scenario>/<iteration>.json`, rewritten
on every run). The results are not cache: the linter, `guard` and `run`'s offline canary skip
them, and `eval-cache-results-in-root` recommends a storage root of their own.

MEAI reads `creation` and `expiration` with System.Text.Json, whose DateTime reader accepts one
ISO 8601 extended profile and nothing else (System.Text.Json's JsonHelpers.Date.cs):
`YYYY-MM-DD`, optionally `Thh:mm`, optionally `:ss`, optionally `.` and up to 16 digits (only the
first 7 count), then optionally `Z` or `+hh`/`-hh`/`+hh:mm`. The `T` and the `Z` are uppercase;
a space for `T`, a lowercase `z`, a 17th fraction digit or surrounding blanks make MEAI throw
`JsonException`, so `parse_time` refuses them too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from cachelint.config import Config, Layout

RESULTS_DIR = "results"
CACHE_DIR = "cache"
# What `packages` means for a MEAI tree when the config does not say: the library family whose
# version changes the cache key (Microsoft.Extensions.AI, .AI.Abstractions, .AI.Evaluation,
# .AI.Evaluation.Reporting, ...).
FAMILY = ("Microsoft.Extensions.AI*",)
NATIVE_FAMILY = ("cachelint",)

Matcher = Callable[[str], bool]

_STJ_TIME = re.compile(
    r"(?P<date>[0-9]{4}-[0-9]{2}-[0-9]{2})"
    r"(?:T(?P<hm>[0-9]{2}:[0-9]{2})"
    r"(?::(?P<s>[0-9]{2})(?:\.(?P<frac>[0-9]{0,16}))?)?"
    r"(?P<tz>Z|[+-][0-9]{2}(?::[0-9]{2})?)?)?",
    re.ASCII,
)
_MAX_OFFSET_HOURS = 14  # System.Text.Json's MaxDateTimeUtcOffsetHours


def parse_time(value: Any) -> datetime:
    """A `creation`/`expiration` value as MEAI's System.Text.Json reads it into a DateTime, as an
    aware UTC datetime; ValueError (with the reason) for anything it would throw on.

    A value without `Z` or an offset is DateTimeKind.Unspecified, which MEAI's `expiration <=
    DateTime.UtcNow` compares tick for tick, i.e. as UTC. A value with an offset becomes local
    time on the reading machine; taken here as the instant it names (what a UTC CI agent sees).
    Ticks beyond the microsecond are dropped (datetime's resolution)."""
    if not isinstance(value, str):
        raise ValueError(f"expected an ISO 8601 timestamp string, got {value!r}")
    match = _STJ_TIME.fullmatch(value)
    if match is None or (match["frac"] == "" and match["tz"] is None):
        raise ValueError(f"{value!r} is not a date System.Text.Json reads ({_PROFILE})")
    hour_minute = match["hm"] or "00:00"
    seconds = match["s"] or "00"
    fraction = (match["frac"] or "")[:6].ljust(6, "0")
    try:
        moment = datetime.fromisoformat(f"{match['date']}T{hour_minute}:{seconds}.{fraction}")
        offset = _offset(match["tz"])
    except ValueError as exc:
        raise ValueError(f"{value!r} is not a valid date: {exc}") from None
    return moment.replace(tzinfo=timezone.utc) - offset


_PROFILE = (
    "YYYY-MM-DDThh:mm:ss with an optional .fraction of up to 16 digits and an optional Z or "
    "+hh:mm; T and Z uppercase"
)


def _offset(tz: str | None) -> timedelta:
    if tz is None or tz == "Z":
        return timedelta(0)
    hours, minutes = int(tz[1:3]), int(tz[4:6] or 0)
    if hours > _MAX_OFFSET_HOURS or minutes > 59 or (hours == _MAX_OFFSET_HOURS and minutes):
        raise ValueError(f"offset {tz} is beyond +-14:00")
    sign = -1 if tz[0] == "-" else 1
    return sign * timedelta(hours=hours, minutes=minutes)


# ---- which roots are MEAI's, and which of their paths are results -------------------------------


def _first_entry(cache_dir: str) -> str | None:
    """The first entry.json under `cache_dir` at MEAI's depth (`<scenario>/<iteration>/<key>/`)
    or one deeper, where cachelint's own layout puts it (`<agent>/<tenant>/<scenario>/<key>/`),
    found with a few directory reads: a tree of either layout answers at its first entry."""
    for scenario in _subdirs(cache_dir):
        for iteration in _subdirs(scenario):
            for key in _subdirs(iteration):
                path = os.path.join(key, "entry.json")
                if os.path.isfile(path):
                    return path
                for deeper in _subdirs(key):
                    path = os.path.join(deeper, "entry.json")
                    if os.path.isfile(path):
                        return path
    return None


def _subdirs(directory: str) -> Iterable[str]:
    try:
        with os.scandir(directory) as it:
            found = sorted(e.path for e in it if e.is_dir(follow_symlinks=False))
    except OSError:
        return []
    return found


def is_meai_root(config: Config, root: str) -> bool:
    """Whether `root` (repo-relative) holds a MEAI storage root: by `layout`, or for "auto" by its
    first entry (`_first_entry`) naming `scenarioName` (a name cachelint's own entries never
    use)."""
    if config.layout is Layout.MEAI:
        return True
    if config.layout is Layout.CACHELINT:
        return False
    entry = _first_entry(os.path.join(config.repo, root, CACHE_DIR))
    if entry is None:
        return False
    try:
        with open(entry, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return b'"scenarioName"' in head or b'"iterationName"' in head


def meai_roots(config: Config) -> tuple[str, ...]:
    return tuple(r for r in config.cache if is_meai_root(config, r))


def results_dir(root: str) -> str:
    return f"{root.rstrip('/')}/{RESULTS_DIR}"


def results_paths(root: str, paths: Iterable[str]) -> set[str]:
    """The repo-relative `paths` that MEAI's result store owns in the storage root `root`: its
    `results/` directory and everything under it."""
    top = results_dir(root)
    below = top + "/"
    return {p for p in paths if p == top or p.startswith(below)}


def results_in_roots(config: Config, *, present_only: bool = True) -> tuple[str, ...]:
    """The `<root>/results` directories of MEAI roots, repo-relative; with `present_only`, those
    that exist now."""
    return tuple(
        results_dir(r)
        for r in config.cache
        if (not present_only or os.path.isdir(os.path.join(config.repo, results_dir(r))))
        and is_meai_root(config, r)
    )


def skip_matcher(config: Config, *, present_only: bool = True) -> Matcher | None:
    """What the linter, `guard` and `run`'s canary leave out: the `exclude` globs and the results
    of MEAI roots. None when nothing is left out (the usual case, which costs no call per path).

    A check sees the disk as it is, so only results directories that exist count
    (`present_only`); a guard must also leave out the ones the command is about to create."""
    return make_skip(results_in_roots(config, present_only=present_only), config.exclude)


def make_skip(tops: Sequence[str], exclude: Sequence[str]) -> Matcher | None:
    """`skip_matcher` from its parts: directories left out whole, and the `exclude` globs (the
    parts travel to the process that takes `run`'s first canary snapshot)."""
    glob: Matcher | None = None
    if exclude:
        import pathspec

        spec = pathspec.GitIgnoreSpec.from_lines(exclude)
        glob = spec.match_file
    if not tops:
        return glob
    below = tuple(t + "/" for t in tops)
    whole = set(tops)

    def skip(path: str) -> bool:
        if path in whole or path.startswith(below):
            return True
        return glob is not None and bool(glob(path))

    return skip


def skipped_note(config: Config, count: int) -> str:
    """The check summary's note on the files `skip_matcher` left out."""
    why = f"by `exclude` ({config.source})"
    if results_in_roots(config):
        why = f"{why} or as MEAI results" if config.exclude else "as MEAI results"
    return f"{count} {'file' if count == 1 else 'files'} skipped {why}"


def family(config: Config) -> tuple[str, ...]:
    """The package family the stamp records: the configured one when `packages` was set, else
    MEAI's for a MEAI tree (by layout, or detected) and cachelint's own otherwise."""
    if config.packages:
        return config.packages
    if meai_roots(config):
        return FAMILY
    return NATIVE_FAMILY


# ---- advice -------------------------------------------------------------------------------------

RESULTS_ADVICE = (
    "MEAI's result store writes here because DiskBasedReportingConfiguration.Create gives one "
    "storage root to the response cache and the results; cachelint skips these files, but give "
    "the results a root of their own outside the committed cache: build the ReportingConfiguration "
    'yourself with `new DiskBasedResultStore("eval-results")` and `new '
    'DiskBasedResponseCacheProvider("{root}", timeToLiveForCacheEntries: TimeSpan.FromDays(3650))`'
    ", ignore eval-results/ in .gitignore, and delete {results}"
)

LONG_KEY_ADVICE = (
    "MEAI names each entry by its whole 96-character key; either set key-prefix = 96 in the "
    "cachelint config to accept MEAI's own naming (safe while the worst path fits max-path), or "
    "register an IEvaluationResponseCacheProvider whose cache names the entry directory by the "
    "key's first {prefix} characters, keeps the full key in entry.json and treats an entry whose "
    "full key differs (a prefix collision) as a miss"
)

PATH_ADVICE = (
    "for a MEAI tree, shorten the scenario names (ScenarioRun's scenarioName) and iteration names "
    "and move the storage root closer to the repository root; key-prefix cannot shorten MEAI's "
    "96-character entry names"
)
