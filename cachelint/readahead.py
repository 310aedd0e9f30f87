"""Reading entries: in the linter, and ahead of it in helper processes on the other cores.

A cold check (a fresh clone in CI, or `--no-cache`) spends more time reading and validating
entry.json files than walking the tree: 16 us each here, 1.6 s at 100,000 entries, on the core
that also walks. Threads cannot share that work (the GIL: two reader threads were slower than
one), but processes can, and the index names every committed entry.json within 0.1 s, long
before the walk ends. So as soon as `git ls-files --stage` answers, its records are cut into one
slice per core, and a helper process for each (`main` below) reads the entries of its
slice with `read_entry`, the function the linter reads with itself. It hands them back as lines
of the entry cache's columns (`entrycache.encode`, with their object ids), which the linter turns
into entries at C speed and takes an entry from instead of reading it when its walk meets that
entry directory. On the first check of a clone those lines become the entry cache as they are.

Helpers only ever save time. Whatever they do not hand back (a corrupt entry, an untracked one,
everything of a helper that could not start or failed) the linter reads itself with the same
function, so every finding is worded from the bytes on disk as before.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from itertools import pairwise
from pathlib import Path
from typing import IO

import orjson

from cachelint import entrycache
from cachelint.config import Layout
from cachelint.errors import CorruptEntry
from cachelint.gitutil import stage_record
from cachelint.store import ENTRY_FILE, Entry, decode_json, parse_entry

# Entries per helper below which its start-up (~0.1 s of interpreter and imports) costs more than
# reading them in the linter.
MIN_SLICE = 5_000
MAX_HELPERS = 4

# The helper runs in the repository's top directory, which `python -m` or `-c` would put first on
# sys.path: a pull request could then run its own orjson.py in the CI that lints it. Isolated
# (-I: no such entry, no PYTHON* variables, no user site-packages), it finds cachelint where this
# process did, after the interpreter's own packages.
_HELPER_CODE = (
    "import sys; sys.path.append(sys.argv.pop(1)); from cachelint.readahead import main; "
    "sys.exit(main())"
)
_PACKAGES = str(Path(__file__).resolve().parent.parent)

_ENTRY_SUFFIX = "/" + ENTRY_FILE
_RECORD_END = _ENTRY_SUFFIX.encode() + b"\0"
_READ_SIZE = 1 << 16
_COPY_SIZE = 1 << 20
_BOM = b"\xef\xbb\xbf"
# Never follow a link or wait on a fifo: a helper opens what the index names, before the walk has
# said what is there. O_BINARY: Windows would otherwise turn CRLF into LF and stop at a Ctrl-Z.
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_BINARY", 0)
)


def read_entry(path: str, directory: str, layout: Layout) -> Entry:
    """The entry in `path`: what `parse_entry` makes of the stdlib's decoding of its bytes (the
    store's own read), with the request left out, and faster.

    store.read_entry goes through pathlib, io.open and a stat per entry; at 100,000 entries that
    overhead was half of the whole check, and the walk already knows what exists. orjson decodes
    twice as fast as json, but is stricter (NaN, lone surrogate escapes), words its errors
    differently and reads an integer beyond 64 bits as a float: whenever orjson's result is not a
    valid entry, the stdlib decodes again, so a corrupt finding reads exactly as it does through
    the store. Corrupt entries are rare; the check for them costs nothing on valid ones."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
        try:
            raw = os.read(fd, _READ_SIZE)
            if len(raw) == _READ_SIZE:  # rare: a huge entry.json; one read covers the rest
                raw += os.read(fd, os.fstat(fd).st_size)
        finally:
            os.close(fd)
    except OSError as exc:
        raise CorruptEntry(f"{ENTRY_FILE} cannot be read ({exc.strerror})") from None
    if raw.startswith(_BOM):  # .NET writers may prefix one; the codec "utf-8-sig" is slower
        raw = raw[3:]
    try:
        return parse_entry(orjson.loads(raw), directory, layout, keep_request=False)
    except (orjson.JSONDecodeError, CorruptEntry):
        pass
    try:
        data = decode_json(raw)
    except ValueError as exc:
        raise CorruptEntry(f"{ENTRY_FILE} is not valid JSON ({exc})") from None
    return parse_entry(data, directory, layout, keep_request=False)


class Helpers:
    """Helper processes, each reading a slice of the index's entries. Their stderr is dropped:
    a helper that fails only leaves its entries to the linter."""

    def __init__(self, layout: Layout) -> None:
        self._layout = layout
        self._running: list[tuple[subprocess.Popen[bytes], IO[bytes]]] = []
        self._answered: list[IO[bytes]] = []
        self._records: list[IO[bytes]] = []  # each helper's stdin: its slice of the listing

    def entries(self) -> dict[str, Entry]:
        """The entries the helpers read, by directory; waits for them. (Their object ids stay
        in their lines, for `lines`, and in their input, for `entry_objects`.)"""
        found: dict[str, Entry] = {}
        header = entrycache.header(self._layout)
        for proc, out in self._running:
            if proc.wait() != 0:  # a helper that failed may have written anything
                continue
            out.seek(0)
            if out.readline() != header:
                continue
            read = entrycache.decode_lines(out, objects=False)
            if read is not None:
                found.update(read.entries)
                self._answered.append(out)
        return found

    def lines(self) -> Iterator[bytes]:
        """The entry cache lines of what `entries` gave, as the helpers wrote them."""
        for out in self._answered:
            out.seek(0)
            out.readline()  # the header
            while chunk := out.read(_COPY_SIZE):
                yield chunk

    def entry_objects(self) -> dict[str, str]:
        """The object id of every entry.json record handed to the helpers, by path: what the
        linter's own parse of the index listing would give, read from the helpers' input files
        only when it is needed (rarely: see `tree._read_entries_ahead`)."""
        found: dict[str, str] = {}
        for records in self._records:
            records.seek(0)
            found.update(_entry_records(records.read()))
        return found

    def close(self) -> None:
        """Stop any helper still running and drop their answers."""
        for proc, out in self._running:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            out.close()
        for records in self._records:
            records.close()
        self._running = []
        self._answered = []
        self._records = []

    def _start(self, repo: Path, records: bytes, prefixes: Sequence[str]) -> None:
        # Files, not pipes, either way: see gitutil.GitProcess.
        out = tempfile.TemporaryFile()
        source = tempfile.TemporaryFile()
        try:
            source.write(records)
            source.seek(0)
            helper = [sys.executable, "-I", "-c", _HELPER_CODE, _PACKAGES]
            command = [*helper, self._layout.value, *prefixes]
            proc = subprocess.Popen(
                command, cwd=repo, stdin=source, stdout=out, stderr=subprocess.DEVNULL
            )
        except BaseException:
            out.close()
            source.close()
            raise
        self._running.append((proc, out))
        self._records.append(source)


def start(repo: Path, stage: bytes, prefixes: Sequence[str], layout: Layout) -> Helpers | None:
    """Helpers reading the entries under `prefixes` (`<root>/cache/`) that `stage`, the output
    of `git ls-files -z -v --stage`, lists; None when there are too few entries to be worth it
    or no helper could start."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    count = min(cores or 1, MAX_HELPERS, stage.count(_RECORD_END) // MIN_SLICE)
    if count < 1 or not sys.executable:
        return None
    helpers = Helpers(layout)
    try:
        for records in _slices(stage, count):
            helpers._start(repo, records, prefixes)
    except OSError:  # no room for a temp file, no process: the linter reads what is left
        pass
    if not helpers._running:
        return None
    return helpers


def _slices(stage: bytes, count: int) -> list[bytes]:
    """`stage` cut into `count` runs of whole records of about the same size."""
    cuts = [0]
    for i in range(1, count):
        end = stage.find(b"\0", max(cuts[-1], len(stage) * i // count))
        cuts.append(len(stage) if end < 0 else end + 1)
    cuts.append(len(stage))
    return [stage[a:b] for a, b in pairwise(cuts) if b > a]


def main() -> int:
    """The helper (`python -I -c _HELPER_CODE PACKAGES LAYOUT PREFIX...`), in the repository's
    top directory, `ls-files -z -v --stage` records on stdin. On stdout: the entry cache's header
    and lines of columns of the entries it read, each written as soon as it is full, so a helper
    holds one line's entries at a time."""
    # What a helper builds is kept until its line is written and none of it is in a cycle: the
    # cyclic collector would only rescan the entries (0.2 s at 100,000 entries).
    gc.disable()
    layout = Layout(sys.argv[1])
    prefixes = tuple(sys.argv[2:])
    out = sys.stdout.buffer
    out.write(entrycache.header(layout))
    entries: list[Entry] = []
    objects: list[str] = []
    for path, object_id in _entry_records(sys.stdin.buffer.read()):
        if not path.startswith(prefixes):
            continue
        try:
            entries.append(read_entry(path, path[: -len(_ENTRY_SUFFIX)], layout))
        except CorruptEntry:
            continue  # the linter reads it again and reports it
        objects.append(object_id)
        if len(entries) == entrycache.LINE_ENTRIES:
            out.write(entrycache.encode(entries, objects))
            entries, objects = [], []
    out.write(entrycache.encode(entries, objects))
    return 0


def _entry_records(stage: bytes) -> list[tuple[str, str]]:
    """The path and object id of each entry.json record "<tag> <mode> <object> <stage>\t<path>"
    in `stage`, unmerged ones left out (the linter reads and reports those). Split at C speed:
    a regex finding them took 0.45 s at 100,000 entries, this 0.05 s."""
    suffix = _ENTRY_SUFFIX.encode()
    found = []
    for record in stage.split(b"\0"):
        # Only the entry.json records are parsed: half of them, at C speed.
        if record.endswith(suffix) and (parsed := stage_record(record)) is not None:
            _, object_id, number, path = parsed
            if number == b"0":
                found.append((path.decode("utf-8", "surrogateescape"), object_id.decode()))
    return found
