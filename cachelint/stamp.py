"""The version stamp at each cache root: under which package versions the tree was recorded.

    {
      "format": 1,                        # the cache format (store.FORMAT) the tree is written in
      "packages": {"Microsoft.Extensions.AI.Evaluation": "10.9.0"},
      "pinFiles": {"Microsoft.Extensions.AI.Evaluation": "Directory.Packages.props"},
      "pinnedAt": "2026-01-31",           # date of the pins (see `pinned_at`)
      "ttlDays": 365,                     # the shortest TTL of the tree's entries, in days
      "ttlDaysLongest": 3650,             # and the longest
      "entries": 1234,                    # entries under the root when it was stamped
      "seal": "<blake3 hex>"              # digest of the entry set (see `seal`)
    }

The seal makes a deleted, added or changed entry visible to a check that has nothing to compare
with: it is the blake3 of one line "<entry directory relative to the root>\0<entry digest>\n" per
entry, sorted by directory, where the entry digest covers the content of both of its files
(`store.entry_digest`). A stamp written before seals existed has neither field and is still read.

Written with dump_pretty (sorted keys, LF, final newline) and atomically, so re-stamping the same
pins rewrites the same bytes. Reading validates every field and names the first bad one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta, timezone
from itertools import chain, islice, repeat
from operator import attrgetter, lt
from pathlib import Path
from typing import Any

import blake3

from cachelint import pins
from cachelint.canonical import dump_pretty
from cachelint.config import Config
from cachelint.errors import CachelintError
from cachelint.facts import TreeFacts
from cachelint.fsutil import atomic_write, read_regular
from cachelint.store import FORMAT, Entry, decode_json

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_FIELDS = ("format", "packages", "pinFiles", "pinnedAt", "ttlDays")
_OPTIONAL = (
    "ttlDaysLongest",
    "projects",
    "entries",
    "seal",
    "databases",
    "normalisers",
    "redactions",
)
_HEX64 = re.compile(r"[0-9a-f]{64}")


class InvalidStamp(CachelintError):
    """The stamp file is not valid JSON of the stamp format; the message names the field."""


@dataclass(frozen=True)
class Stamp:
    pinned_at: date
    ttl_days: int
    packages: Mapping[str, str]  # package name -> exact version the tree was recorded under
    pin_files: Mapping[str, str] = field(default_factory=dict)  # package name -> pin file
    format: int = FORMAT
    ttl_days_longest: int | None = None
    # .NET projects that build with different versions of a family package: project -> package ->
    # version (those packages are not in `packages`).
    projects: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    entries: int | None = None  # None: written before seals existed
    seal: str | None = None
    # SQLite cassettes under the root, relative to it -> {"blake3": hex, "rows": {table: count}}
    # (cachelint.sqlite_cache.seal_of).
    databases: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # The blake3 of the key normalisers the tree was recorded under (cachelint.rewrites.digest).
    normalisers: str | None = None
    # The blake3 of the redaction rules, which re-key requests too (cachelint.redact.digest).
    redactions: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "format": self.format,
            "packages": dict(sorted(self.packages.items())),
            "pinFiles": dict(sorted(self.pin_files.items())),
            "pinnedAt": self.pinned_at.isoformat(),
            "ttlDays": self.ttl_days,
        }
        if self.ttl_days_longest is not None:
            data["ttlDaysLongest"] = self.ttl_days_longest
        if self.projects:
            projects = sorted(self.projects.items())
            data["projects"] = {p: dict(sorted(v.items())) for p, v in projects}
        if self.seal is not None:
            data["entries"] = self.entries
            data["seal"] = self.seal
        if self.databases:
            data["databases"] = {k: dict(self.databases[k]) for k in sorted(self.databases)}
        if self.normalisers is not None:
            data["normalisers"] = self.normalisers
        if self.redactions is not None:
            data["redactions"] = self.redactions
        return data


def ttl_days(entries: Iterable[Entry], default: int) -> tuple[int, int]:
    """(shortest, longest) TTL of `entries` (expiration - creation) in whole days, at least 1 (the
    stamp's `ttlDays` is a positive integer; a shorter TTL is eval-cache-short-ttl's to report);
    `default` for both when no entry has both times. The tree's own TTLs, not `ttl-days`: a MEAI
    tree's is whatever `timeToLiveForCacheEntries` was when it was recorded, and a tree
    re-recorded in parts can hold several."""
    spans = [e.expires - e.created for e in entries if e.created and e.expires]
    if not spans:
        return default, default
    day = timedelta(days=1)
    return max(1, min(spans) // day), max(1, max(spans) // day)


def seal(root: str, entries: Iterable[Entry]) -> str:
    """The digest of the entry set under `root` (see the module docs)."""
    cut = len(root.rstrip("/")) + 1
    entries = list(entries)
    directories = [d[cut:] for d in map(attrgetter("directory"), entries)]
    digests = [d or "" for d in map(attrgetter("digest"), entries)]
    return _sealed(directories, digests)


def _sealed(directories: list[str], digests: list[str]) -> str:
    # One line per entry, "<directory>\0<digest>\n", sorted, hashed a block at a time (so the
    # text of all of them is never held joined) and made by C-level calls, since a large tree
    # seals every entry on every check. No directory holds "\0", which sorts first, so lines
    # sort as their directories do, and a check's entries already come sorted: only
    # directories out of order (or repeated) cost a sort of the pairs.
    if not all(map(lt, directories, islice(directories, 1, None))):
        pairs = sorted(zip(directories, digests, strict=True))
        directories, digests = [p[0] for p in pairs], [p[1] for p in pairs]
    hasher = blake3.blake3()
    for start in range(0, len(directories), _BLOCK):
        end = start + _BLOCK
        lines = zip(directories[start:end], repeat("\0"), digests[start:end], repeat("\n"))
        hasher.update("".join(chain.from_iterable(lines)).encode("utf-8", "surrogateescape"))
    return hasher.hexdigest()


_BLOCK = 4096


def _str_map(data: Mapping[str, Any], name: str) -> dict[str, str]:
    value = data.get(name)
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and k and isinstance(v, str) and v for k, v in value.items()
    ):
        raise InvalidStamp(f"field {name!r} must be an object of package name to version string")
    return value


def parse_stamp(data: Any) -> Stamp:
    if not isinstance(data, dict):
        raise InvalidStamp("not a JSON object")
    for name in _FIELDS:
        if name not in data:
            raise InvalidStamp(f"field {name!r} is missing")
    unknown = sorted(set(data) - set(_FIELDS) - set(_OPTIONAL))
    if unknown:
        raise InvalidStamp(f"unknown field {unknown[0]!r}")
    fmt = data["format"]
    if fmt != FORMAT or isinstance(fmt, bool):
        raise InvalidStamp(f"field 'format' is {fmt!r}, this cachelint reads format {FORMAT}")
    ttl = data["ttlDays"]
    if isinstance(ttl, bool) or not isinstance(ttl, int) or ttl <= 0:
        raise InvalidStamp(f"field 'ttlDays' is {ttl!r}, expected a positive integer")
    longest = data.get("ttlDaysLongest")
    if longest is not None and (
        isinstance(longest, bool) or not isinstance(longest, int) or longest < ttl
    ):
        raise InvalidStamp(f"field 'ttlDaysLongest' is {longest!r}, expected an integer >= ttlDays")
    pinned = data["pinnedAt"]
    try:
        if not isinstance(pinned, str) or not _DATE.fullmatch(pinned):
            raise ValueError
        pinned_at = date.fromisoformat(pinned)
    except ValueError:
        raise InvalidStamp(f"field 'pinnedAt' is {pinned!r}, expected a date YYYY-MM-DD") from None
    packages = _str_map(data, "packages")
    pin_files = _str_map(data, "pinFiles")
    stray = sorted(set(pin_files) - set(packages))
    if stray:
        raise InvalidStamp(f"field 'pinFiles' names {stray[0]!r}, which 'packages' does not")
    projects = data.get("projects", {})
    if not isinstance(projects, dict):
        raise InvalidStamp("field 'projects' must be an object of project to package versions")
    per_project = {project: _str_map(projects, project) for project in projects}
    entries, sealed = _parse_seal(data)
    databases = _parse_databases(data.get("databases", {}))
    stamp = Stamp(
        pinned_at, ttl, packages, pin_files, fmt, longest, per_project, entries, sealed, databases
    )
    return replace(
        stamp,
        normalisers=_parse_normalisers(data.get("normalisers")),
        redactions=_parse_normalisers(data.get("redactions"), "redactions"),
    )


def _parse_normalisers(value: Any, name: str = "normalisers") -> str | None:
    if value is not None and not (isinstance(value, str) and _HEX64.fullmatch(value)):
        raise InvalidStamp(f"field {name!r} is {value!r}, expected a blake3 hex digest")
    return value


def _parse_databases(value: Any) -> dict[str, Mapping[str, Any]]:
    """The `databases` field: each SQLite cassette's blake3 and row count per table."""
    bad = InvalidStamp("field 'databases' must map each SQLite file to its blake3 and rows")
    if not isinstance(value, dict):
        raise bad
    for seal in value.values():
        rows = seal.get("rows") if isinstance(seal, dict) else None
        if (
            not isinstance(seal, dict)
            or set(seal) != {"blake3", "rows"}
            or not isinstance(seal["blake3"], str)
            or not _HEX64.fullmatch(seal["blake3"])
            or not isinstance(rows, dict)
            or not all(type(n) is int and n >= 0 for n in rows.values())
        ):
            raise bad
    return value


def _parse_seal(data: Mapping[str, Any]) -> tuple[int | None, str | None]:
    if "entries" not in data and "seal" not in data:
        return None, None
    count, sealed = data.get("entries"), data.get("seal")
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise InvalidStamp(f"field 'entries' is {count!r}, expected a count of entries")
    if not isinstance(sealed, str) or not _HEX64.fullmatch(sealed):
        raise InvalidStamp(f"field 'seal' is {sealed!r}, expected a blake3 hex digest")
    return count, sealed


def read_stamp(repo: Path, rel: str) -> Stamp | None:
    """The stamp at `repo/rel`, None when there is none; InvalidStamp when it is unreadable: a
    link, a FIFO or a file above the bound is never read (`confine.read_inside`)."""
    from cachelint.confine import TEXT_BYTES, OutsideRepository, read_inside

    try:
        raw = read_inside(repo, rel, "stamp", TEXT_BYTES)
    except FileNotFoundError:
        return None
    except OutsideRepository as exc:
        raise InvalidStamp(f"cannot be read ({str(exc).partition(': ')[2]})") from None
    except OSError as exc:
        raise InvalidStamp(f"cannot be read ({exc.strerror})") from None
    try:
        data = decode_json(raw)
    except ValueError as exc:
        raise InvalidStamp(f"not valid JSON ({exc})") from None
    return parse_stamp(data)


def write_stamp(path: Path, stamp: Stamp) -> bool:
    """Write `stamp` atomically; False when the file already holds exactly these bytes (so a
    re-stamp under unchanged pins touches nothing)."""
    data = dump_pretty(stamp.to_json())
    try:
        if read_regular(path, len(data)) == data:  # a link, FIFO or larger file: rewritten
            return False
    except OSError:
        pass
    atomic_write(path, data)
    return True


def pinned_at(repo: Path, files: Sequence[str], now: datetime) -> date:
    """The date of the pins: the committer date (UTC) of the newest commit touching the pin files,
    or today (from `now`) when any of them has uncommitted changes or no commit has them, because
    then the stamped pins are not those of any commit yet."""
    today = now.astimezone(timezone.utc).date()
    if not files:
        return today
    # GitPython, not the plumbing wrapper: `stamp` runs once after a re-record, never in a hook,
    # so its import cost does not matter here, and history and dirtiness come back as
    # objects instead of text to parse.
    import git

    handle = git.Repo(repo)
    try:
        if any(handle.is_dirty(untracked_files=True, path=name) for name in files):
            return today
        newest = next(handle.iter_commits(paths=list(files), max_count=1), None)
    except (ValueError, git.GitCommandError):  # an unborn branch: nothing is committed yet
        return today
    if newest is None:
        return today
    return newest.committed_datetime.astimezone(timezone.utc).date()


# ---- shared by the stamp rules ------------------------------------------------------------------


@dataclass
class RootStamp:
    root: str  # repo-relative cache root
    path: str  # repo-relative stamp path
    entries: list[Entry]
    stamp: Stamp | None = None
    error: str | None = None  # why the stamp is invalid

    @property
    def present(self) -> bool:
        return self.stamp is not None or self.error is not None


def entry_count(count: int) -> str:
    """ "1 entry", "2 entries": how `cachelint stamp` and the stamp rules count entries."""
    return f"{count} entry" if count == 1 else f"{count} entries"


def entries_by_root(roots: Sequence[str], entries: Iterable[Entry]) -> dict[str, list[Entry]]:
    """Assign each entry to the root its directory lies under (one pass). Entries named relative
    to their root rather than the repository go to the only root when there is one."""
    if len(roots) == 1:
        return {roots[0]: list(entries)}
    by_root: dict[str, list[Entry]] = {root: [] for root in roots}
    prefixes = sorted(((r.rstrip("/") + "/", r) for r in roots), key=lambda p: -len(p[0]))
    for entry in entries:
        for prefix, root in prefixes:
            if entry.directory.startswith(prefix):
                by_root[root].append(entry)
                break
        else:
            if len(roots) == 1:
                by_root[roots[0]].append(entry)
    return by_root


def root_stamps(config: Config, roots: Sequence[str], entries: Iterable[Entry]) -> list[RootStamp]:
    result: list[RootStamp] = []
    for root, found in entries_by_root(roots, entries).items():
        rel = config.stamp_path(root)
        state = RootStamp(root, rel, found)
        try:
            state.stamp = read_stamp(config.repo, rel)
        except InvalidStamp as exc:
            state.error = str(exc)
        result.append(state)
    return result


def _root_stamps_of(facts: TreeFacts) -> list[RootStamp]:
    return root_stamps(facts.config, facts.roots, facts.entries)


def facts_stamps(facts: TreeFacts) -> list[RootStamp]:
    """The stamp state of every root, shared by the five stamp rules (callers must not mutate
    it)."""
    return facts.derived(_root_stamps_of)


def _current_pins(facts: TreeFacts) -> pins.Resolution:
    return pins.current(facts.config, facts.projects, facts.meai_roots)


def facts_pins(facts: TreeFacts) -> pins.Resolution:
    """The current pins, read once per check; CachelintError when a pin file is unreadable
    (not remembered, so each caller sees it)."""
    return facts.derived(_current_pins)


def recorded(facts: TreeFacts) -> bool:
    """Whether any root holds entries or a stamp: pins only matter for a recorded tree."""
    return bool(facts.entries) or any(
        (facts.repo / facts.config.stamp_path(r)).exists() for r in facts.roots
    )
