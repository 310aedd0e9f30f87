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
import shlex
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


# How many entry directories `guess_layout` looks at: enough that one torn, emptied or
# hand-edited entry is outvoted, few enough to cost a handful of directory reads.
_SAMPLE = 12
_HEX = frozenset("0123456789abcdefABCDEF")


def _hex_case(name: str) -> str | None:
    """ "upper" for a name MEAI's key could give (uppercase hex, a letter among the digits),
    "lower" for a prefix of cachelint's blake3 key (lowercase hex), else None."""
    if len(name) < 8 or not _HEX.issuperset(name) or name.isdigit():
        return None
    if name.isupper():
        return "upper"
    return "lower" if name.islower() else None


def _entry_dirs(cache_dir: str) -> list[tuple[str, int]]:
    """Up to `_SAMPLE` directories holding an entry file, with their depth below `cache_dir`:
    MEAI's at 3 (`<scenario>/<iteration>/<key>`), cachelint's usually at 4
    (`<agent>/<tenant>/<scenario>/<key>`). Scenarios are taken in turn, so one scenario full of
    broken entries cannot fill the sample."""
    found: list[tuple[str, int]] = []
    for scenario in _subdirs(cache_dir):
        for below in _subdirs(scenario):
            for key in _subdirs(below):
                if _holds_entry(key):
                    found.append((key, 3))
                    break
                deeper = next((d for d in _subdirs(key) if _holds_entry(d)), None)
                if deeper is not None:
                    found.append((deeper, 4))
                    break
            if len(found) >= _SAMPLE:
                return found
    return found


def _holds_entry(directory: str) -> bool:
    return os.path.isfile(os.path.join(directory, "entry.json")) or os.path.isfile(
        os.path.join(directory, "contents.data")
    )


def _content_vote(directory: str) -> str | None:
    """What one entry.json says, when it says anything: MEAI's camelCase names or cachelint's
    `format`. A torn, empty or unreadable file says nothing (and decides nothing)."""
    from cachelint.fsutil import open_regular  # no link, FIFO or device is ever opened

    try:
        with open_regular(os.path.join(directory, "entry.json")) as fh:
            head = fh.read(4096)
    except OSError:
        return None
    if b'"scenarioName"' in head or b'"iterationName"' in head:
        return "meai"
    return "cachelint" if b'"format"' in head else None


def _has_results(storage: str) -> bool:
    """Whether `<storage>/results/<execution>/<scenario>/` holds a `.json`, as MEAI's result
    store writes it (cachelint never writes a results/ directory into a cache root)."""
    for execution in _subdirs(os.path.join(storage, RESULTS_DIR)):
        for scenario in _subdirs(execution):
            try:
                with os.scandir(scenario) as it:
                    if any(e.name.endswith(".json") for e in it):
                        return True
            except OSError:
                continue
    return False


def guess_layout(storage: str) -> tuple[Layout, bool]:
    """The layout of the cache root at `storage` (a path) from the tree's shape, and whether
    the evidence was clear (False: nothing spoke, or the votes tied, and the answer is cachelint's
    own layout by default).

    Each sampled entry directory votes with its name (uppercase hex only MEAI writes, lowercase
    only cachelint), its depth (an entry four levels down is never MEAI's) and what its entry.json
    names; MEAI's result store votes too. No single file decides: an interrupted `dotnet test` can
    leave the first entry.json empty, and that must be a finding about that entry only."""
    meai = native = 0
    cache_dir = os.path.join(storage, CACHE_DIR)
    if os.path.islink(storage) or os.path.islink(cache_dir):
        return Layout.CACHELINT, False  # a link is never followed, nor evidence of anything
    for directory, depth in _entry_dirs(cache_dir):
        case = _hex_case(os.path.basename(directory))
        meai += 2 if case == "upper" else 0
        native += 2 if case == "lower" else 0
        native += 1 if depth == 4 else 0
        vote = _content_vote(directory)
        meai += vote == "meai"
        native += vote == "cachelint"
    if _has_results(storage):
        meai += 3
    if meai == native:
        return Layout.CACHELINT, False
    return (Layout.MEAI if meai > native else Layout.CACHELINT), True


def _subdirs(directory: str) -> Iterable[str]:
    try:
        with os.scandir(directory) as it:
            found = sorted(e.path for e in it if e.is_dir(follow_symlinks=False))
    except OSError:
        return []
    return found


def is_meai_root(config: Config, root: str) -> bool:
    """Whether `root` (repo-relative) holds a MEAI storage root: by `layout`, or for "auto" by
    the tree's shape (`guess_layout`)."""
    if config.layout is Layout.MEAI:
        return True
    if config.layout in (Layout.CACHELINT, Layout.EVALCORE):
        return False
    return guess_layout(os.path.join(config.repo, root))[0] is Layout.MEAI


def layout_guesses(config: Config) -> dict[str, tuple[Layout, bool]]:
    """`guess_layout` of each configured root for `layout = "auto"` (none otherwise), gathered
    once with a check's facts (`TreeFacts.meai_roots`) instead of by every rule that asks."""
    if config.layout is not Layout.AUTO:
        return {}
    return {root: guess_layout(os.path.join(config.repo, root)) for root in config.cache}


def meai_roots(config: Config) -> tuple[str, ...]:
    return tuple(r for r in config.cache if is_meai_root(config, r))


def results_dir(root: str) -> str:
    return f"{root.rstrip('/')}/{RESULTS_DIR}"


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
        from cachelint.globs import glob_matcher

        glob = glob_matcher(exclude)
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


def family(config: Config, meai: Sequence[str] | None = None) -> tuple[str, ...]:
    """The package family the stamp records: the configured one when `packages` was set, else
    MEAI's for a MEAI tree (by layout, or detected) and cachelint's own otherwise. `meai`: the
    MEAI roots when already known (a check's `TreeFacts.meai_roots`), so the tree is not read
    for them again."""
    if config.packages:
        return config.packages
    if meai_roots(config) if meai is None else meai:
        return FAMILY
    return NATIVE_FAMILY


# ---- advice -------------------------------------------------------------------------------------

# MEAI resolves a storage path against the working directory, which under `dotnet test` is the
# test project's bin/<configuration>/<framework>/: advice that names a relative path would move
# the cache there and make every scenario miss. examples/meai/tests/Evals/EvalStorage.cs walks up.
ANCHOR = (
    "anchor both paths at the repository, never relative (MEAI resolves a relative path against "
    "the working directory, under `dotnet test` the test project's bin/<configuration>/"
    "<framework>/, where every scenario would then miss): find repoRoot by walking up from "
    "AppContext.BaseDirectory to the directory holding .git, as "
    "examples/meai/tests/Evals/EvalStorage.cs does"
)

RESULTS_ADVICE = (
    "MEAI's result store writes here because DiskBasedReportingConfiguration.Create gives one "
    "storage root to the response cache and the results; cachelint skips these files, but give "
    "the results a root of their own outside the committed cache: build the ReportingConfiguration "
    'yourself with `new DiskBasedResultStore(Path.Combine(repoRoot, "eval-results"))` and `new '
    'DiskBasedResponseCacheProvider(Path.Combine(repoRoot, "{root}"), '
    "timeToLiveForCacheEntries: TimeSpan.FromDays(3650))`; " + ANCHOR + "; add eval-results/ "
    "to .gitignore, and delete {results} (`git rm -r -q --ignore-unmatch -- {results}`, then "
    "`rm -rf -- {results}`)"
)

# MEAI records only on a miss and never rewrites an entry it can read: a new TTL, or keys computed
# by new packages, take effect only for entries deleted first and recorded again.
RERECORD_ROOT = (
    "MEAI records only on a miss and never rewrites an entry it can read, so delete the cache "
    "first (`git rm -r -q -- {root}/cache`), run the evals online (`dotnet test` with the "
    "model's credentials) to record every entry again, `git add {root}/cache`, then run "
    "`cachelint stamp`"
)

MEAI_RERECORD = (
    "delete the entry directory (`rm -rf -- {path}`) and run the evals online (`dotnet test` with "
    "the model's credentials) to record it again (MEAI records only on a miss and never rewrites "
    "an entry it can read), then `git add` it and run `cachelint stamp`"
)

EMPTY_ADVICE = (
    "record it with the .NET evals: run them online once (`dotnet test` with the model's "
    "credentials; MEAI writes each answer to {root}/cache/<scenario>/<iteration>/<key>/), then "
    "`git add {root}` and run `cachelint stamp`; if nothing appears there, the storage path in "
    "the test code is relative and MEAI wrote under bin/: " + ANCHOR
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


def mutation_message(verb: str, path: str, during: str) -> str:
    """What an `eval-cache-mutated` line means for a file under a MEAI root's cache/: MEAI
    writes there only on a miss, and deletes only an entry that expired."""
    directory = shlex.quote(path.rpartition("/")[0])
    if verb == "added":
        return (
            f"added by {during}: MEAI recorded a new entry, so this call was a cache miss (the "
            "prompt, the chat options, the model, the scenario or iteration name, or a "
            "Microsoft.Extensions.AI package changed the key) and the model was called; delete "
            f"it (`rm -rf -- {directory}`), find what changed, and if the change is meant, "
            "record online, commit the new entries and run `cachelint stamp`"
        )
    if verb == "removed":
        return (
            f"removed by {during}: MEAI deleted this entry because it had expired (it deletes "
            "an expired entry on read and calls the model); restore it with `git checkout -- "
            f"{directory}`, raise timeToLiveForCacheEntries, then delete the expired entries and "
            "record them online (MEAI never rewrites an entry it can read)"
        )
    return (
        f"changed by {during}: MEAI rewrote this entry, which it does only after deleting an "
        "expired (or unreadable) one and calling the model; restore it with `git checkout -- "
        f"{directory}` and raise timeToLiveForCacheEntries (see eval-cache-expiring)"
    )
