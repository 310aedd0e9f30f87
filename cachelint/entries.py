"""Reading a tree's entries for the linter: one reader that verifies content, and one interface,
`EntrySource`, for where an already verified entry may come from instead.

`read_entry` reads both files of an entry and checks everything replay will rely on:

- native entries: `contents.data` hashes (blake3) to the digest `entry.json` records, the key is
  the hash of the canonical request stored beside it, the `scenario` is the entry's directory
  path and the directory name is the key's prefix;
- Microsoft.Extensions.AI.Evaluation entries: `contents.data` is a JSON object without a UTF-8
  byte-order mark (MEAI throws a JsonException replaying anything else), the key directory sits
  exactly at `cache/<scenario>/<iteration>/<key>` and is named as MEAI names it (`store`).

Only files the walk found regular are read (`special_file` says why others are not), opened
without following links and without blocking and read within a limit: a FIFO put in place of an
entry file since must not hang a check, nor a device exhaust its memory.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from typing import Any

import blake3
import orjson

from cachelint.canonical import cache_key
from cachelint.config import Layout
from cachelint.errors import CorruptEntry
from cachelint.secretscan import may_hold_secret
from cachelint.store import (
    CONTENTS_FILE,
    ENTRY_FILE,
    Entry,
    decode_json,
    entry_digest,
    parse_entry,
)

# Larger entry files are reported, not read past `_FIRST_READ` bytes (config `max-entry-bytes`,
# this by default): a committed cache holds chat completions, and a file of this size is a mistake
# (or a hostile input) that must not exhaust the linter's memory.
MAX_FILE_BYTES = 64 * 1024 * 1024

# O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
# O_BINARY: Windows would otherwise turn CRLF into LF and stop at a Ctrl-Z.
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_BINARY", 0)
)
_BOM = b"\xef\xbb\xbf"
_JOIN_BELOW = 1 << 20  # larger contents are searched where they are, not copied
_FIRST_READ = 1 << 16  # one read takes a whole entry file nearly always
_CONFLICT = b"<<<<<<< "


def read_file(path: str, name: str, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the file at `path`, which the walk found a regular file; CorruptEntry naming
    `name` when it cannot be read or holds over `limit` bytes.

    One read takes a whole entry file nearly always, without an `fstat` first: it asks for
    `_FIRST_READ` bytes, or a byte over `limit` if that is fewer, and a shorter answer is the
    whole file. Only a larger file is looked at with `fstat` (its size, and whether it is still
    a regular file), so a device put in its place since the walk is not read on either."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        raise CorruptEntry(f"{name} is missing") from None
    except OSError as exc:
        raise CorruptEntry(f"{name} cannot be read ({exc.strerror})") from None
    try:
        asked = min(limit + 1, _FIRST_READ)
        data = os.read(fd, asked)
        return data if len(data) < asked else _read_rest(fd, data, name, limit)
    except OSError as exc:
        raise CorruptEntry(f"{name} cannot be read ({exc.strerror})") from None
    finally:
        os.close(fd)


def _read_rest(fd: int, first: bytes, name: str, limit: int) -> bytes:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise CorruptEntry(special_file(name))
    if max(info.st_size, len(first)) > limit:
        raise CorruptEntry(f"{name} is {info.st_size} bytes, over the {limit}-byte limit")
    chunks = [first]  # read on to the end, within the limit: the file may grow since fstat
    size = len(first)
    while size <= limit and (chunk := os.read(fd, max(info.st_size + 1 - size, 1 << 16))):
        chunks.append(chunk)
        size += len(chunk)
    if size > limit:
        raise CorruptEntry(f"{name} is over the {limit}-byte limit")
    return b"".join(chunks)


def special_file(name: str) -> str:
    """Why an entry file that is a FIFO, socket or device is not read."""
    return f"{name} is not a regular file (a FIFO, socket or device)"


def _decode_entry(
    raw: bytes, directory: str, layout: Layout, digest: str, maybe_secret: bool
) -> tuple[Entry, Mapping[str, Any]]:
    """The entry.json bytes as an entry and its decoded object. orjson decodes twice as fast as
    json but is stricter (NaN, lone surrogate escapes) and words its errors differently: when its
    result is not a valid entry the stdlib decodes again, so a finding reads as it always did."""
    text = raw[3:] if raw.startswith(_BOM) else raw  # .NET writers may prefix one
    try:
        data = orjson.loads(text)
        entry = parse_entry(
            data, directory, layout, keep_request=False, digest=digest, maybe_secret=maybe_secret
        )
        return entry, data
    except (orjson.JSONDecodeError, CorruptEntry):
        pass
    try:
        data = decode_json(raw)
    except ValueError as exc:
        raise CorruptEntry(f"{ENTRY_FILE} is not valid JSON ({exc})") from None
    entry = parse_entry(
        data, directory, layout, keep_request=False, digest=digest, maybe_secret=maybe_secret
    )
    return entry, data


def read_entry(
    base: str, directory: str, prefix: str, layout: Layout, limit: int = MAX_FILE_BYTES
) -> Entry:
    """Read and verify the entry in `base/directory`, which lies under `prefix` (a cache root's
    `<root>/cache/`) and whose two files the walk found regular; an entry file over `limit`
    bytes is not read. CorruptEntry says which check failed."""
    raw = read_file(f"{base}/{directory}/{ENTRY_FILE}", ENTRY_FILE, limit)
    contents = read_file(f"{base}/{directory}/{CONTENTS_FILE}", CONTENTS_FILE, limit)
    contents_hex = blake3.blake3(contents).hexdigest()
    # One search over both files (a NUL between them, which no anchor holds) costs less than two.
    if len(contents) < _JOIN_BELOW:
        suspect = may_hold_secret(b"%s\0%s" % (raw, contents))
    else:
        suspect = may_hold_secret(raw) or may_hold_secret(contents)
    digest = entry_digest(raw, contents, contents_hex)
    entry, data = _decode_entry(raw, directory, layout, digest, suspect)
    inside = directory[len(prefix) :] if directory.startswith(prefix) else directory
    if entry.layout is Layout.MEAI:
        _verify_meai(entry, contents, inside)
    else:
        _verify_native(entry, data, contents_hex, inside)
    return entry


def _verify_native(entry: Entry, data: Mapping[str, Any], contents_hex: str, inside: str) -> None:
    """Raise CorruptEntry naming what does not hold (`contents_hex`: contents.data's blake3)."""
    if contents_hex != data["contents"]:
        raise CorruptEntry(
            f"{CONTENTS_FILE} does not match the blake3 digest recorded in {ENTRY_FILE} "
            "(overwritten, merged, or torn by an interrupted or concurrent re-record)"
        )
    try:
        key = cache_key(data["request"])
    except ValueError as exc:
        raise CorruptEntry(f"{ENTRY_FILE}: the stored request cannot be hashed ({exc})") from None
    if key != entry.key:
        raise CorruptEntry(
            f"{ENTRY_FILE}: key {entry.key[:16] if entry.key else ''}... is not the hash of the "
            f"request stored beside it ({key[:16]}...): the request or the key was edited"
        )
    scenario = inside.rpartition("/")[0]
    if entry.scenario != scenario:
        raise CorruptEntry(
            f"{ENTRY_FILE}: scenario {entry.scenario!r} is not the entry's directory "
            f"{scenario!r}: replay of {scenario!r} looks elsewhere"
        )


def _verify_meai(entry: Entry, contents: bytes, inside: str) -> None:
    parts = inside.split("/")
    if len(parts) != 3:
        raise CorruptEntry(
            f"the entry sits at cache/{inside}, but MEAI reads entries only at "
            "cache/<scenarioName>/<iterationName>/<key>"
        )
    # scenarioName and iterationName that differ from the directories are not corrupt: MEAI
    # finds an entry by its path and never reads them back (eval-cache-meai-shape warns).
    if contents.startswith(_BOM):
        raise CorruptEntry(
            f"{CONTENTS_FILE} starts with a UTF-8 byte-order mark, which MEAI never writes: it "
            "reads the file as bytes with System.Text.Json, which throws on one; save it "
            "without the BOM (the first three bytes, EF BB BF)"
        )
    if not contents.strip():
        raise CorruptEntry(f"{CONTENTS_FILE} is empty: MEAI throws a JsonException replaying it")
    if _CONFLICT in contents:
        raise CorruptEntry(f"{CONTENTS_FILE} holds a merge-conflict marker; resolve the merge")
    try:
        value = decode_json(contents)
    except ValueError as exc:
        raise CorruptEntry(
            f"{CONTENTS_FILE} is not valid JSON ({exc}): MEAI throws a JsonException replaying it"
        ) from None
    if not isinstance(value, dict):
        raise CorruptEntry(f"{CONTENTS_FILE} is not a JSON object, the response MEAI replays")
