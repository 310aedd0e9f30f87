"""The cache store: the only module that knows how entries sit on disk.

Native layout (written by cachelint)::

    <root>/cache/<scenario path>/<first key-prefix chars of the key>/entry.json
                                                                    /contents.data

`entry.json` holds the full key, so a read verifies it: two keys sharing a prefix can never return
each other's answers (a collision is a miss). `contents.data` holds the response. Both are written
atomically, contents first, and `entry.json` records the blake3 of the contents, so an interrupted
re-record is detected as corrupt instead of replaying a mismatched pair.

Microsoft.Extensions.AI.Evaluation layout (read-only)::

    <root>/cache/<scenarioName>/<iterationName>/<96 hex SHA-384 key>/entry.json
                                                                     /contents.data

with camelCase `scenarioName`, `iterationName`, `creation`, `expiration`. Its entry.json stores no
key; a team variant that adds `key` (or `cacheKey`) gets that key verified against the directory.

Reads never delete or rewrite anything, expired or not: expiry is reported, not enforced.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, NamedTuple

import blake3

from cachelint.canonical import dump_pretty
from cachelint.config import Config, Layout
from cachelint.errors import CorruptEntry
from cachelint.fastjson import loads, utf8_sig_text
from cachelint.fsutil import DEFAULT_MAX_BYTES, atomic_write, read_regular, read_regular_at
from cachelint.jsontext import may_hold_surrogate
from cachelint.meai import parse_time as parse_stj  # MEAI's dates: System.Text.Json's profile

FORMAT = 1
# (path, stat of the open file, the bytes read, their blake3 hex when computed)
Witness = Callable[[str, os.stat_result, bytes, "str | None"], None]
ENTRY_FILE = "entry.json"
CONTENTS_FILE = "contents.data"
ENTRY_FILES = (ENTRY_FILE, CONTENTS_FILE)
CACHE_DIR = "cache"

_MEAI_KEY = re.compile(r"[0-9A-F]{96}")
_MEAI_NAME = re.compile(r"[0-9A-F]{8,96}")  # a MEAI key or a short-path provider's prefix of one
_FRACTION = re.compile(r"\.(\d+)")
# Python 3.11 taught fromisoformat the "Z" suffix (as UTC, like "+00:00"); 3.10 needs the rewrite.
_FROMISO_Z = sys.version_info >= (3, 11)
# Enum member lookups are attribute lookups on the class each time; parse_entry runs per entry.
_AUTO, _MEAI, _CACHELINT = Layout.AUTO, Layout.MEAI, Layout.CACHELINT


# What the linter keeps in place of a native entry's validated request: it never needs the body,
# and keeping every request body of a large tree would multiply its memory (`Store.get` reads a
# request when it is needed).
UNREAD_REQUEST: Mapping[str, Any] = {}


class Entry(NamedTuple):
    """One cache entry as read from disk, whichever layout wrote it; build it by keyword.

    A NamedTuple rather than a frozen dataclass: the linter builds one per entry of a tree that
    may be large, and the entry cache rebuilds them from columns at C speed. Every field but
    `request` is a column of the entry cache (`COLUMNS`), so a field added here must be added
    there too, which the assertion below `COLUMNS` enforces.
    """

    layout: Layout
    directory: str  # repo- or root-relative path of the entry directory, forward slashes
    scenario: str
    key: str | None
    created: datetime | None
    expires: datetime | None
    provider: str | None = None
    model: str | None = None
    iteration: str | None = None
    # blake3 over both files' own blake3 digests (`entry_digest`): what the stamp's seal is
    # made of. Set by the linter's read, which verifies content; None from `Store` reads.
    digest: str | None = None
    # Whether either file holds an anchor of a well-known key format
    # (`secretscan.may_hold_secret`): False lets the secret rule skip the entry without reading
    # it again. None when not looked at (reads outside the linter).
    maybe_secret: bool | None = None
    request: Mapping[str, Any] | None = None

    @property
    def ttl(self) -> timedelta | None:
        if self.created is None or self.expires is None:
            return None
        return self.expires - self.created


def entry_digest(entry_json: bytes, contents: bytes, contents_hex: str | None = None) -> str:
    """The content digest of one entry: blake3 of the two files' blake3 hex digests, in the
    order entry.json, contents.data, each followed by a newline. `contents_hex` is the blake3
    of `contents` when the caller has it already."""
    if contents_hex is None:
        contents_hex = blake3.blake3(contents).hexdigest()
    both = b"%s\n%s\n" % (blake3.blake3(entry_json).hexdigest().encode(), contents_hex.encode())
    return blake3.blake3(both).hexdigest()


def unchanged(value: Any) -> Any:
    return value


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _from_iso(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def _interned(value: str | None) -> str | None:
    # Thousands of entries share one scenario, provider and model: one string object each.
    return None if value is None else sys.intern(value)


@dataclass(frozen=True)
class Column:
    """How one Entry field is stored in the entry cache: JSON-able `encode`, and back."""

    name: str
    kind: type | tuple[type, ...]  # what `decode` accepts, and None unless `needed`
    encode: Callable[[Any], Any] = unchanged
    decode: Callable[[Any], Any] = unchanged
    needed: bool = False  # None is not a valid value


COLUMNS: tuple[Column, ...] = (
    Column("layout", str, lambda layout: layout.value, Layout, needed=True),
    Column("directory", str, needed=True),
    Column("scenario", str, decode=sys.intern, needed=True),
    Column("key", str),
    Column("created", str, _iso, _from_iso),
    Column("expires", str, _iso, _from_iso),
    Column("provider", str, decode=_interned),
    Column("model", str, decode=_interned),
    Column("iteration", str, decode=_interned),
    Column("digest", str),
    Column("maybe_secret", bool),
)
# `request` is never cached: the linter keeps none (`UNREAD_REQUEST`) and a cached entry is given
# the same. Any other field without a column would be silently lost on a cached check.
assert [c.name for c in COLUMNS] + ["request"] == list(Entry._fields), "Entry without a column"


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def format_time(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: Any) -> datetime:
    """Parse ISO 8601 as written by Python and .NET (7-digit fractions, Z or offsets)."""
    if not isinstance(value, str):
        raise ValueError(f"expected an ISO 8601 timestamp string, got {value!r}")
    # Fast path for the exact shape cachelint writes ("2025-06-01T00:00:00Z", two per entry):
    # the same parse as below minus strip and suffix rewriting. Anything it rejects takes the
    # general path, which decides and words the error.
    if len(value) == 20 and value[19] == "Z":
        moment = _whole_second(value)
        if moment is not None:
            return moment
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    # .NET writes 100 ns ticks (7 digits); Python 3.10's fromisoformat takes at most 6. The
    # test keeps the regex off cachelint's own whole-second times, two per entry.
    if "." in text:
        text = _FRACTION.sub(lambda m: "." + m.group(1)[:6].ljust(6, "0"), text, count=1)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"not an ISO 8601 timestamp: {value!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment


@functools.lru_cache(maxsize=4096)
def _whole_second(value: str) -> datetime | None:
    """A "2025-06-01T00:00:00Z" time; None when it is not one. Remembered: the entries of a
    recording share their seconds, and one datetime per distinct time is what a large tree
    holds in memory."""
    try:
        return datetime.fromisoformat(value if _FROMISO_Z else value[:19] + "+00:00")
    except ValueError:
        return None


def decode_json(raw: bytes) -> Any:
    """`json.loads`, with every way bytes can fail to be JSON as a ValueError giving the reason.

    RecursionError is one of them: a few hundred thousand `[` exhaust the decoder's stack, and
    that is bad input to report, not an internal error."""
    try:
        # UTF-8 only (a byte-order mark allowed, .NET writes one): json.loads on bytes would
        # guess UTF-16 from a stray \xff\xfe and report garbage as "Expecting value".
        return loads(utf8_sig_text(raw), raw=raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(str(exc)) from None
    except RecursionError:
        raise ValueError("nested too deeply") from None


def load_json_file(
    path: str | os.PathLike[str],
    name: str,
    *,
    missing_ok: bool = False,
    max_bytes: int | None = DEFAULT_MAX_BYTES,
) -> Any:
    """Read and decode one entry file; `CorruptEntry` naming `name` when it is missing (unless
    `missing_ok`, which returns None), unreadable or not JSON."""
    try:
        raw = read_regular(path, max_bytes)
    except (FileNotFoundError, NotADirectoryError):
        if missing_ok:
            return None
        raise CorruptEntry(f"{name} is missing") from None
    except OSError as exc:
        raise CorruptEntry(f"{name} cannot be read ({exc.strerror})") from None
    try:
        return decode_json(raw)
    except ValueError as exc:
        raise CorruptEntry(f"{name} is not valid JSON ({exc})") from None


def _field(data: Mapping[str, Any], name: str, kind: type, where: str) -> Any:
    value = data.get(name)
    if not isinstance(value, kind):
        raise CorruptEntry(f"{where}: field {name!r} missing or not a {kind.__name__}")
    return value


def _time_field(data: Mapping[str, Any], name: str, where: str) -> datetime:
    try:
        return parse_time(data.get(name))
    except ValueError as exc:
        raise CorruptEntry(f"{where}: field {name!r}: {exc}") from None


def read_entry(directory: Path, relative: str, layout: Layout = Layout.AUTO) -> Entry:
    """Read and validate the entry in `directory` (`relative` is how findings name it)."""
    entry = parse_entry(load_json_file(directory / ENTRY_FILE, ENTRY_FILE), relative, layout)
    if not (directory / CONTENTS_FILE).is_file():
        raise CorruptEntry(f"{CONTENTS_FILE} is missing")
    return entry


def parse_entry(
    data: Any,
    relative: str,
    layout: Layout = Layout.AUTO,
    *,
    keep_request: bool = True,
    digest: str | None = None,
    maybe_secret: bool | None = None,
) -> Entry:
    """Validate a decoded entry.json. The linter reads one per entry and already knows from its
    own walk whether contents.data exists, so it skips `read_entry`'s pathlib and stat work; it
    passes `keep_request=False` to get `UNREAD_REQUEST` in place of a validated request, and
    what it found in the bytes (`digest`, `maybe_secret`), so each entry is built once."""
    if not isinstance(data, dict):
        raise CorruptEntry("entry.json is not a JSON object")
    name = relative.rpartition("/")[2]
    if layout is _AUTO:
        # MEAI's camelCase names never appear in a native entry, and a native one always has
        # `format`; an entry with neither is MEAI's when its directory is a name only MEAI
        # writes (uppercase hex), so its finding speaks of what MEAI reads.
        meai = (
            "scenarioName" in data
            or "iterationName" in data
            or ("format" not in data and _MEAI_NAME.fullmatch(name) is not None)
        )
    else:
        meai = layout is _MEAI
    if meai:
        return _read_meai(data, relative, name, digest, maybe_secret)
    return _read_native(data, relative, name, keep_request, digest, maybe_secret)


def _read_native(
    data: Mapping[str, Any],
    relative: str,
    name: str,
    keep_request: bool,
    digest: str | None,
    maybe_secret: bool | None,
) -> Entry:
    fmt = data.get("format")
    key = data.get("key")
    request = data.get("request")
    scenario = data.get("scenario")
    provider = data.get("provider")
    model = data.get("model")
    contents = data.get("contents")
    # The linter validates one per entry: one combined test for the usual valid entry, and
    # the field-by-field walk below only for an invalid one, so its first failing check (in the
    # same order as always) still names the field.
    if (
        fmt == FORMAT
        and isinstance(key, str)
        and key.startswith(name)
        and isinstance(request, dict)
        and isinstance(scenario, str)
        and isinstance(provider, str)
        and isinstance(model, str)
        and isinstance(contents, str)
    ):
        # Thousands of entries share a scenario, provider and model: one string object each.
        return Entry(
            layout=_CACHELINT,
            directory=relative,
            scenario=sys.intern(scenario),
            key=key,
            created=_time_field(data, "created", "entry.json"),
            expires=_time_field(data, "expires", "entry.json"),
            provider=sys.intern(provider),
            model=sys.intern(model),
            digest=digest,
            maybe_secret=maybe_secret,
            request=request if keep_request else UNREAD_REQUEST,
        )
    return _read_native_checked(data, relative, name)._replace(
        digest=digest,
        maybe_secret=maybe_secret,
        request=request if keep_request else UNREAD_REQUEST,
    )


def _read_native_checked(data: Mapping[str, Any], relative: str, name: str) -> Entry:
    where = "entry.json"
    fmt = data.get("format")
    if fmt != FORMAT:
        raise CorruptEntry(f"{where}: 'format' is {fmt!r}, this cachelint reads format {FORMAT}")
    key = _field(data, "key", str, where)
    if not key.startswith(name):
        raise CorruptEntry(
            f"{where}: full key {key[:24]}... does not start with its directory name {name!r}"
        )
    request = data.get("request")
    if not isinstance(request, dict):
        raise CorruptEntry(f"{where}: field 'request' missing or not an object")
    _field(data, "contents", str, where)  # the blake3 of contents.data, verified on replay
    return Entry(
        layout=Layout.CACHELINT,
        directory=relative,
        scenario=_field(data, "scenario", str, where),
        key=key,
        created=_time_field(data, "created", where),
        expires=_time_field(data, "expires", where),
        provider=_field(data, "provider", str, where),
        model=_field(data, "model", str, where),
        request=request,
    )


def _meai_time(data: Mapping[str, Any], name: str, where: str) -> datetime:
    try:
        return parse_stj(data.get(name))
    except ValueError as exc:
        raise CorruptEntry(f"{where}: field {name!r}: {exc}") from None


def _read_meai(
    data: Mapping[str, Any],
    relative: str,
    name: str,
    digest: str | None,
    maybe_secret: bool | None,
) -> Entry:
    where = "entry.json (Microsoft.Extensions.AI.Evaluation layout)"
    key = _meai_key(data, name, where)
    return Entry(
        layout=Layout.MEAI,
        directory=relative,
        scenario=sys.intern(_field(data, "scenarioName", str, where)),
        iteration=sys.intern(_field(data, "iterationName", str, where)),
        key=key,
        created=_meai_time(data, "creation", where),
        expires=_meai_time(data, "expiration", where),
        digest=digest,
        maybe_secret=maybe_secret,
    )


def _meai_key(data: Mapping[str, Any], name: str, where: str) -> str:
    """The entry's full key: its directory name, which MEAI looks entries up by (96 uppercase
    hex characters, a SHA-384), or for a short-path provider's entry the `key` (or `cacheKey`)
    in entry.json, which must be such a key starting with the directory name. Without it a
    prefix collision could not be told from a hit."""
    if not _MEAI_NAME.fullmatch(name):
        raise CorruptEntry(
            f"entry directory {name!r} is not a key MEAI writes (96 uppercase hexadecimal "
            "characters, or a short-path provider's prefix of them): MEAI never looks it up, "
            "so it is never replayed; delete the directory"
        )
    key = data.get("key", data.get("cacheKey"))
    if key is None:
        if len(name) == 96:
            return name
        raise CorruptEntry(
            f"{where}: the directory name has {len(name)} characters where MEAI writes 96, and "
            "entry.json carries no full key (`key`): a short-path entry without one cannot tell "
            "a prefix collision from a hit; have the provider write the full 96-character key "
            "into entry.json and re-record the entry, or name it by the whole key"
        )
    if not isinstance(key, str) or not _MEAI_KEY.fullmatch(key) or not key.startswith(name):
        raise CorruptEntry(
            f"{where}: key {key!r} is not a 96-character uppercase hexadecimal key starting with "
            f"its directory name {name!r}: the provider would never find it"
        )
    return key


@dataclass(frozen=True)
class Hit:
    entry: Entry
    response: Any
    # False when the recorded bytes cannot decode to a lone surrogate (no `\\uD8..` escape), so
    # the caller need not look for one in the decoded response.
    may_hold_surrogate: bool = True


class Store:
    """Read and write native entries under one cache root."""

    def __init__(
        self,
        root: Path,
        *,
        key_prefix: int = 16,
        ttl_days: int = 365,
        clock: Callable[[], datetime] = utcnow,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self.root = root
        self.max_bytes = max_bytes  # an entry file above it is refused, never read
        self.key_prefix = key_prefix
        self.ttl_days = ttl_days
        self.clock = clock
        # Told of each file `get` reads, with the open file's stat and the bytes' blake3 when
        # computed: the offline canary proves the tree unchanged from them (`cachelint.canary`).
        self.witness: Witness | None = None

    @classmethod
    def configured(cls, config: Config, moment: datetime) -> Store:
        """The store of `config`'s first cache root as every front door opens it: its key prefix,
        TTL and entry-size limit, entries dated `moment`."""
        return cls(
            config.cache_roots()[0],
            key_prefix=config.key_prefix,
            ttl_days=config.ttl_days,
            clock=lambda: moment,
            max_bytes=config.max_entry_bytes,
        )

    def scenario_dir(self, scenario: str) -> Path:
        return self.root / CACHE_DIR / scenario

    def entry_relpath(self, scenario: str, key: str) -> str:
        """`cache/<scenario>/<key prefix>`: where `key` lives, relative to the cache root."""
        return f"{CACHE_DIR}/{scenario}/{key[: self.key_prefix]}"

    def entry_dir(self, scenario: str, key: str) -> Path:
        return self.root / self.entry_relpath(scenario, key)

    def get(self, scenario: str, key: str) -> Hit | None:
        """The recorded response for `key`, or None: absent, or another key with the same prefix
        (a collision is a miss, never another entry's answer). A damaged entry, or contents.data
        that no longer matches the blake3 recorded beside it, raises CorruptEntry.

        Plain string paths, no stat before opening: this runs once per model call of a replay,
        and pathlib was a third of a hit's cost there."""
        inside = self.entry_relpath(scenario, key)
        directory = f"{os.fspath(self.root)}/{inside}"
        if self.witness is None:
            data = load_json_file(
                f"{directory}/{ENTRY_FILE}", ENTRY_FILE, missing_ok=True, max_bytes=self.max_bytes
            )
        else:
            data = self._witnessed_json(f"{directory}/{ENTRY_FILE}")
        if data is None:
            return None
        entry = parse_entry(data, inside, Layout.CACHELINT)
        path = f"{directory}/{CONTENTS_FILE}"
        try:
            raw, info = read_regular_at(None, path, self.max_bytes, path, "max-entry-bytes")
        except (FileNotFoundError, NotADirectoryError):
            raise CorruptEntry(f"{CONTENTS_FILE} is missing") from None
        except OSError as exc:
            raise CorruptEntry(f"{CONTENTS_FILE} cannot be read ({exc.strerror})") from None
        if entry.key != key:
            return None
        digest = blake3.blake3(raw).hexdigest()
        if self.witness is not None:
            self.witness(path, info, raw, digest)
        if digest != data["contents"]:
            raise CorruptEntry(
                f"{CONTENTS_FILE} does not match the blake3 recorded in {ENTRY_FILE} (edited by "
                "hand, or a re-record was interrupted); re-record the entry"
            )
        try:
            return Hit(entry, decode_json(raw), may_hold_surrogate(raw))
        except ValueError as exc:
            raise CorruptEntry(f"{CONTENTS_FILE} is not valid JSON ({exc})") from None

    def _witnessed_json(self, path: str) -> Any:
        """`load_json_file(path, ENTRY_FILE, missing_ok=True)`, telling the witness the bytes."""
        try:
            raw, info = read_regular_at(None, path, self.max_bytes, path, "max-entry-bytes")
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise CorruptEntry(f"{ENTRY_FILE} cannot be read ({exc.strerror})") from None
        assert self.witness is not None
        self.witness(path, info, raw, None)
        try:
            return decode_json(raw)
        except ValueError as exc:
            raise CorruptEntry(f"{ENTRY_FILE} is not valid JSON ({exc})") from None

    def put(
        self,
        scenario: str,
        key: str,
        request: Mapping[str, Any],
        response: Any,
        *,
        provider: str,
        model: str,
    ) -> Path:
        """Record one entry atomically: contents first, then entry.json (the commit marker)."""
        directory = self.entry_dir(scenario, key)
        contents = dump_pretty(response)
        created = self.clock().replace(microsecond=0)
        entry = {
            "format": FORMAT,
            "key": key,
            "scenario": scenario,
            "provider": provider,
            "model": model,
            "created": format_time(created),
            "expires": format_time(created + timedelta(days=self.ttl_days)),
            "contents": blake3.blake3(contents).hexdigest(),
            "request": dict(request),
        }
        atomic_write(directory / CONTENTS_FILE, contents)
        atomic_write(directory / ENTRY_FILE, dump_pretty(entry))
        return directory

    def entries(self, scenario: str) -> list[Entry]:
        """Every readable native entry recorded for `scenario` (unreadable ones are skipped; the
        linter reports them)."""
        base = self.scenario_dir(scenario)
        found: list[Entry] = []
        if not base.is_dir():
            return found
        for child in sorted(base.iterdir()):
            if (child / ENTRY_FILE).is_file():
                try:
                    entry = read_entry(child, self._relative(child), Layout.CACHELINT)
                except CorruptEntry:
                    continue
                if entry.scenario == scenario:
                    found.append(entry)
        return found

    def _relative(self, directory: Path) -> str:
        try:
            return directory.relative_to(self.root).as_posix()
        except ValueError:
            return directory.as_posix()
