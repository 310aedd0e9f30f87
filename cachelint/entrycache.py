"""Entries verified by earlier checks, so an entry whose files git holds unchanged is not read,
hashed and verified again.

Reading and verifying every entry is the largest part of a check, and a pre-commit hook runs
check on every commit that touches the cache, when nearly every entry is the one it verified last
time. The cache keeps the index listing (`git ls-files -v --stage`) its entries were verified
against, whose records hold each file's object id, a content hash. An entry is reused only while

- its two files' records in the index are the ones in that listing (the same object ids), and
- `git diff-files` lists neither path and neither is marked assume-unchanged or skip-worktree
  (git's own check that the working tree file still has the indexed content: the same trust
  `git status` and `git commit -a` place in it).

Anything else is read from disk and verified. Only valid entries are kept; a corrupt one is read
every time, so its finding is always worded from the bytes on disk.

The file (`<git dir>/cachelint/entries.jsonl`, never in the cache tree) is a header line (format,
cachelint version, layout setting, number of entries, the blake3 of the index listing), then lines
of columns: each a JSON array of one array per `store.COLUMNS` field, for up to `LINE_ENTRIES`
entries, then the secret scan's memory when it holds any (the content digests of entries scanned
clean, and what they were judged by: `Clean`), then a trailer holding the keyed blake3 (a MAC) of
every line before it. The listing
itself is kept beside it, as git wrote it (`entries.index`). Losing either only costs time: an
unreadable, foreign or damaged file is ignored and rewritten, and a failed write is not an error.
`cachelint check --no-cache` skips them.

What was written earlier is not taken on its word. The MAC's key (`<git dir>/cachelint.key`,
random, made by the first check of a clone, never committed and outside the directory a CI cache
would carry) is what makes a row a fact this clone's cachelint verified: a file written elsewhere
or edited by hand (an expired entry made valid, a secret's flag cleared) does not verify and is
read as no cache. The directory is never a link (nothing is written or read through one), and a
file over `MAX_FILE_BYTES` is no cache.
"""

from __future__ import annotations

import hmac
import os
import secrets
import stat
from collections.abc import Iterable, Iterator, Sequence
from contextlib import suppress
from itertools import chain, repeat
from operator import attrgetter
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple, cast

import blake3
import orjson

from cachelint import __version__
from cachelint.config import Layout
from cachelint.fsutil import TEMP_PREFIX, atomic_write_chunks, open_regular, read_regular
from cachelint.secretscan import PATTERNS_VERSION
from cachelint.store import COLUMNS, UNREAD_REQUEST, Entry, unchanged

# Bump when the meaning of a column changes, or what the linter verifies before it caches an
# entry, so older files are dropped. 2 verified entry.json alone; 3 read MEAI dates more loosely
# than MEAI does; 4 had no secret prefilter column; 5 no digest of the index listing; 6 had a
# prefilter blind to a Turkish dotted or dotless I in `authorization`; 7 kept each entry's object
# ids instead of the index listing; 8 had no MAC; 9 kept the secret scan's memory apart.
FORMAT = 10
DIRECTORY = "cachelint"
CACHE_FILE = f"{DIRECTORY}/entries.jsonl"
LISTING_FILE = f"{DIRECTORY}/entries.index"
KEY_FILE = "cachelint.key"
# Either file above this size is no cache (about 400 bytes an entry: millions of entries), never
# read into memory.
MAX_FILE_BYTES = 512 * 1024 * 1024
_TRAILER = b'{"mac":"'
_CLEAN = b'{"clean":"'

# Entries per line: decoding a line holds all of its columns at once.
LINE_ENTRIES = 10_000
# Bytes read at a time (`_lines`).
_CHUNK = 1 << 20


class Clean(NamedTuple):
    """The content digests (`store.entry_digest`) of entries the secret scan found clean, judged
    as `scan` says (`entryscan.scan_header`: the patterns, the allowlist, the configured key)."""

    scan: str = ""
    digests: frozenset[str] = frozenset()


class Cached(NamedTuple):
    """Entries by directory, verified while the index listing was the one whose blake3 is
    `index_digest`: while the listing is byte for byte the same and git reports no file
    changed, every entry still holds. `clean` is the secret scan's memory."""

    entries: dict[str, Entry]
    index_digest: str = ""
    clean: Clean = Clean()


def cache_file(git_dir: Path) -> Path:
    return git_dir / CACHE_FILE


def header(layout: Layout, count: int, index: str = "") -> bytes:
    """The first line: what the columns depend on besides the bytes of the entries, how many
    entries follow, and the digest of the index listing their object ids come from."""
    fields = {"format": FORMAT, "cachelint": __version__, "layout": layout.value}
    fields["secrets"] = PATTERNS_VERSION  # what `maybe_secret` was judged by
    fields.update(entries=count, index=index)
    return orjson.dumps(fields, option=orjson.OPT_APPEND_NEWLINE)


def _parse_header(line: bytes, layout: Layout) -> tuple[int, str] | None:
    """The entry count and index digest of a header written for this layout by this cachelint,
    else None."""
    try:
        fields = orjson.loads(line)
        count, index = fields["entries"], fields["index"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None
    if type(count) is not int or type(index) is not str or line != header(layout, count, index):
        return None
    return count, index


def _encode_line(entries: Sequence[Entry]) -> tuple[bytes, int]:
    """One line of columns and how many entries it holds. An entry that JSON cannot hold (a
    directory git named with undecodable bytes holds a lone surrogate) is left out: it is read
    from disk each time."""
    # One tuple per field, in Entry's own order (the assertion under COLUMNS); `request`, the
    # last field, is no column.
    fields = list(zip(*entries, strict=True)) or [()] * len(Entry._fields)
    columns = [
        list(_encoded(column.encode, values))
        for column, values in zip(COLUMNS, fields[: len(COLUMNS)], strict=True)
    ]
    try:
        return orjson.dumps(columns, option=orjson.OPT_APPEND_NEWLINE), len(entries)
    except TypeError:  # orjson.JSONEncodeError
        return _encode_line([entry for entry in entries if _encodable(entry)])


def _encodable(entry: Entry) -> bool:
    try:
        orjson.dumps([c.encode(getattr(entry, c.name)) for c in COLUMNS])
    except TypeError:  # orjson.JSONEncodeError
        return False
    return True


def pack(entries: Sequence[Entry]) -> tuple[bytes, list[Entry]]:
    """`entries` as one line of the cache file, and those JSON cannot hold (to be sent as they
    are); what the linter's worker processes hand back (`cachelint.pooled`)."""
    line, count = _encode_line(entries)
    if count == len(entries):
        return line, []
    return line, [entry for entry in entries if not _encodable(entry)]


def unpack(line: bytes) -> dict[str, Entry]:
    """The entries of a line `pack` wrote, by directory."""
    entries = _decode_line(line)
    if entries is None:
        raise ValueError("not a line of entry columns")
    return entries


def _decode_line(line: bytes) -> dict[str, Entry] | None:
    """What `_encode_line` wrote, by directory; None when it is not that (a damaged line, a
    wrong type)."""
    try:
        columns = orjson.loads(line)
        if type(columns) is not list or len(columns) != len(COLUMNS):
            return None
        values = []
        for column, raw in zip(COLUMNS, columns, strict=True):
            if not _valid(raw, column.kind, needed=column.needed) or len(raw) != len(columns[0]):
                return None
            values.append(list(_decoded(column.decode, raw)))
        # As a read leaves it: a native entry's request was verified, then not kept; an MEAI
        # entry has none.
        layouts = values[COLUMNS.index(_LAYOUT)]
        values.append([UNREAD_REQUEST if kind is Layout.CACHELINT else None for kind in layouts])
        # Fields follow Entry's own order (the assertion under COLUMNS): tuple.__new__ builds
        # each entry at C speed.
        rows = zip(*values, strict=True)
        built = cast(Iterator[Entry], map(tuple.__new__, repeat(Entry), rows))
        return dict(zip(columns[COLUMNS.index(_DIRECTORY)], built, strict=True))
    except (orjson.JSONDecodeError, TypeError, ValueError):
        return None


_DIRECTORY = next(c for c in COLUMNS if c.name == "directory")
_LAYOUT = next(c for c in COLUMNS if c.name == "layout")


def _valid(column: object, kind: type | tuple[type, ...], *, needed: bool) -> bool:
    """Whether `column` is a list of `kind` values (or None, unless `needed`)."""
    if type(column) is not list:
        return False
    kinds = set(map(type, cast(list[object], column)))
    allowed = set(kind) if isinstance(kind, tuple) else {kind}
    return kinds <= (allowed if needed else allowed | {type(None)})


def _encoded(encode: Any, values: Sequence[Any]) -> Iterator[Any]:
    """`encode` of each value, once per distinct value (a tree's entries share a few dates)."""
    if encode is unchanged:
        return iter(values)
    encoded = {value: encode(value) for value in set(values)}
    return map(encoded.__getitem__, values)


def _decoded(decode: Any, raw: list[Any]) -> Iterator[Any]:
    """`decode` of each value, once per distinct value: a tree's entries share a few dates,
    models and scenarios, and decoding each only once also shares one object between them."""
    if decode is unchanged:
        return iter(raw)
    decoded = {value: None if value is None else decode(value) for value in set(raw)}
    return map(decoded.__getitem__, raw)


def written_from(git_dir: Path, layout: Layout) -> str:
    """The digest of the index listing the cache file was written from, read from its header
    alone (not verified: it only names the kept listing to compare with); "" when there is no usable
    file."""
    if not _real_directory(git_dir):
        return ""
    try:
        with open_regular(cache_file(git_dir)) as fh:
            parsed = _parse_header(fh.readline(1 << 16), layout)
    except OSError:
        return ""
    return "" if parsed is None else parsed[1]


def load(git_dir: Path, layout: Layout) -> Cached:
    """The cache file's entries for this layout setting; none when it is missing, foreign,
    oversized, damaged anywhere, not signed with this clone's key, or holds another number of
    entries than its header says."""
    key = _key(git_dir, create=False)
    if key is None or not _real_directory(git_dir):
        return Cached({})
    try:
        with open_regular(cache_file(git_dir)) as fh:
            if os.fstat(fh.fileno()).st_size > MAX_FILE_BYTES:
                return Cached({})
            found = _read_signed(fh, layout, key)
    except OSError:
        return Cached({})
    if found is None or len(found[0].entries) != found[1]:
        return Cached({})
    return found[0]


def _read_signed(fh: BinaryIO, layout: Layout, key: bytes) -> tuple[Cached, int] | None:
    """The entries of an open cache file whose trailer is the MAC of its lines under `key`,
    and the count its header gives; None for any other file."""
    first = fh.readline()
    parsed = _parse_header(first, layout)
    if parsed is None:
        return None
    count, index = parsed
    mac = blake3.blake3(first, key=key)
    entries: dict[str, Entry] = {}
    trailer = b""
    clean: Clean | None = Clean()
    for line in _lines(fh):
        if trailer or line.startswith(_TRAILER):
            if trailer:  # anything after the trailer
                return None
            trailer = line
            continue
        mac.update(line)
        if line.startswith(_CLEAN):
            clean = _decode_clean(line)
            continue
        part = _decode_line(line)
        if part is None or clean is None:
            return None
        entries.update(part)
    if clean is None or not hmac.compare_digest(trailer, _trailer(mac)):
        return None
    return Cached(entries, index, clean), count


def _lines(fh: BinaryIO) -> Iterator[bytes]:
    """The rest of `fh` line by line, as iterating over it gives them: a buffered reader's
    readline looks at each byte in a Python-level C loop (~5 instructions a byte, 32 M of a warm
    check's 2 G at 20,000 entries), where bytes.find looks for the newline with memchr."""
    pending: list[bytes] = []
    while chunk := fh.read(_CHUNK):
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            pending.append(chunk[start : end + 1])
            yield b"".join(pending)
            pending.clear()
            start = end + 1
        if start < len(chunk):
            pending.append(chunk[start:])
    if pending:
        yield b"".join(pending)


def _encode_clean(clean: Clean) -> bytes:
    """The line of the secret scan's memory, after the entries' lines."""
    fields = {"clean": clean.scan, "digests": sorted(clean.digests)}
    return orjson.dumps(fields, option=orjson.OPT_APPEND_NEWLINE | orjson.OPT_SORT_KEYS)


def _decode_clean(line: bytes) -> Clean | None:
    try:
        fields = orjson.loads(line)
        scan, digests = fields["clean"], fields["digests"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None
    if type(scan) is not str or not _valid(digests, str, needed=True):
        return None
    return Clean(scan, frozenset(digests))


def _trailer(mac: Any) -> bytes:
    return _TRAILER + mac.hexdigest().encode() + b'"}\n'


def save(
    git_dir: Path, layout: Layout, entries: Sequence[Entry], index: str, clean: Clean | None = None
) -> None:
    """Replace the cache file with these entries, verified while the index listing was the one
    whose digest is `index` (kept by `save_listing`), and the secret scan's memory `clean`
    (none when it holds no digest), signed with this clone's key, atomically
    and without an fsync (a torn file reads as damaged and is rebuilt), one line encoded at a
    time so the file is never whole in memory. Failing to write is not an error; nothing is
    written through a link."""
    keep: list[Entry] = []
    for start in range(0, len(entries), LINE_ENTRIES):
        block = entries[start : start + LINE_ENTRIES]
        if _plainly_encodable(block):
            keep += block
        else:
            keep += [entry for entry in block if _plainly_encodable((entry,)) or _encodable(entry)]
    lines = chain(
        (_encode_line(keep[i : i + LINE_ENTRIES])[0] for i in range(0, len(keep), LINE_ENTRIES)),
        (_encode_clean(clean),) if clean is not None and clean.digests else (),
    )
    key = _key(git_dir, create=True) if _real_directory(git_dir, create=True) else None
    if key is None:
        return
    with suppress(OSError):
        _write_inside(
            git_dir, CACHE_FILE, _signed(chain((header(layout, len(keep), index),), lines), key)
        )


def _signed(lines: Iterable[bytes], key: bytes) -> Iterator[bytes]:
    """`lines`, then the trailer holding their MAC under `key`."""
    mac = blake3.blake3(key=key)
    for line in lines:
        mac.update(line)
        yield line
    yield _trailer(mac)


def save_listing(git_dir: Path, listing: bytes) -> None:
    """Keep the index listing the next cache file is verified against. Failing is not an
    error: a listing that does not match the cache file's header is not used."""
    if _real_directory(git_dir, create=True):
        with suppress(OSError):
            _write_inside(git_dir, LISTING_FILE, (listing,))


def load_listing(git_dir: Path, digest: str) -> bytes | None:
    """The kept index listing whose blake3 is `digest`; None when it is missing or another, or
    `digest` is "" (no cache file names one)."""
    if not digest or not _real_directory(git_dir):
        return None
    try:
        listing = read_regular(git_dir / LISTING_FILE, max_bytes=MAX_FILE_BYTES)
    except OSError:
        return None
    return listing if blake3.blake3(listing).hexdigest() == digest else None


def _real_directory(git_dir: Path, *, create: bool = False) -> bool:
    """Whether git's `cachelint` directory is a directory and no link (made, with `create`,
    when missing): the cache is never read or written through a link, which could lead out of
    the git directory."""
    path = git_dir / DIRECTORY
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except FileNotFoundError:
        if not create:
            return False
    except OSError:
        return False
    try:
        os.mkdir(path)  # a link put there since is not followed: EEXIST
    except OSError:
        return False
    return True


def _write_inside(git_dir: Path, name: str, chunks: Iterable[bytes]) -> None:
    """Replace the file `name` (under `DIRECTORY`) atomically, without an fsync (a torn file
    reads as damaged and is rebuilt), in the directory opened without following a link: a link
    put in its place after `_real_directory` looked fails the open instead of being written
    through."""
    if os.open not in os.supports_dir_fd:  # Windows: no descriptor of a directory to write in
        atomic_write_chunks(git_dir / name, chunks, durable=False)
        return
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
    directory = os.open(git_dir / DIRECTORY, flags)
    try:
        temp = f"{TEMP_PREFIX}{secrets.token_hex(8)}"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666, dir_fd=directory)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.writelines(chunks)
            os.replace(temp, name.rpartition("/")[2], src_dir_fd=directory, dst_dir_fd=directory)
        except BaseException:
            with suppress(OSError):
                os.unlink(temp, dir_fd=directory)
            raise
    finally:
        os.close(directory)


def _key(git_dir: Path, *, create: bool) -> bytes | None:
    """This clone's MAC key (`KEY_FILE`: 64 hex digits), made when missing if `create`; None
    when there is none to use (unreadable, a link, damaged)."""
    path = git_dir / KEY_FILE
    try:
        text = read_regular(path, max_bytes=128)
    except FileNotFoundError:
        return _new_key(path) if create else None
    except OSError:  # a link, a FIFO, too large, unreadable
        return None
    try:
        key = bytes.fromhex(text.decode("ascii").strip())
    except ValueError:
        return None
    return key if len(key) == 32 else None


def _new_key(path: Path) -> bytes | None:
    key = secrets.token_bytes(32)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError:  # another check made it first
        return _key(path.parent, create=False)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(key.hex().encode() + b"\n")
    except OSError:  # no room: a partial key would only fail to read back
        with suppress(OSError):
            os.unlink(path)
        return None
    return key


def _plainly_encodable(entries: Iterable[Entry]) -> bool:
    """True for the usual entries, whose text is all ASCII: JSON holds them (the general test,
    which encodes an entry, is left for the rest)."""
    return "".join(filter(None, chain.from_iterable(map(_TEXT, entries)))).isascii()


_TEXT = attrgetter("directory", "scenario", "key", "provider", "model", "iteration")
