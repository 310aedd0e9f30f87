"""Atomic file writes: a temp file in the same directory, fsync, then os.replace.

vcrpy's plain open("w") leaves half-written cassettes after a crash; here a reader sees either the
old file or the new one. Temp files carry a fixed prefix so the linter can flag leftovers.
"""

from __future__ import annotations

import errno
import os
import stat

# The hook's fast path reads the config through `read_regular`: this module imports nothing it does
# not need at run time (pathlib, typing and secrets cost more than the rest of that path).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path
    from typing import BinaryIO

TEMP_PREFIX = ".cachelint-tmp-"


def _create_temp(directory: Path) -> tuple[int, Path]:
    # Not tempfile.mkstemp: it creates files 0600, so recorded entries would be unreadable to the
    # rest of a team sharing a checkout. os.open with 0o666 lets the umask decide, like open("w").
    # os.urandom is what secrets.token_hex reads; importing secrets loads hmac and OpenSSL (~3 ms).
    while True:
        tmp = directory / f"{TEMP_PREFIX}{os.urandom(8).hex()}"
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
        except FileExistsError:
            continue


def atomic_write(path: Path, data: bytes) -> None:
    atomic_write_chunks(path, (data,))


def atomic_write_chunks(path: Path, chunks: Iterable[bytes], *, durable: bool = True) -> None:
    """`atomic_write` of bytes produced piece by piece, so a large file is never whole in memory.
    `durable=False` skips the fsync: for a file that is only a cache, where a torn write after a
    power loss is detected and rebuilt, not lost data."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _create_temp(path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.writelines(chunks)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


# ---- bounded, confined reads --------------------------------------------------------------------

# O_NONBLOCK: should a FIFO slip in between the lstat and the open, opening it for reading
# returns at once instead of waiting for a writer. O_NOFOLLOW: the last component is never
# followed, so a link swapped in after the lstat fails the open (ELOOP) instead of being read.
_READ_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_BINARY", 0)
)

DEFAULT_MAX_BYTES = 64 * 1024 * 1024


class NotRegularFile(OSError):
    """A symlink, FIFO, device, socket or directory where a regular file was expected. An
    OSError whose `strerror` says what it is, so existing `except OSError` sites word it."""


class FileTooLarge(OSError):
    """A regular file above the size limit: reported, never read into memory."""


def special_kind(mode: int) -> str | None:
    """What a non-regular file is ("FIFO", "socket", ...), or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        return "symbolic link"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISFIFO(mode):
        return "FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device file"
    return "special file"


def _refuse(mode: int, path: str | os.PathLike[str]) -> NotRegularFile:
    kind = special_kind(mode) or "special file"
    return NotRegularFile(errno.EINVAL, f"is a {kind}, not a regular file; never read", str(path))


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """A regular file opened for reading, refused as `read_regular` refuses anything else."""
    fd, _ = _open_regular(path)
    return os.fdopen(fd, "rb")


def _open_regular(
    path: str | os.PathLike[str], dir_fd: int | None = None
) -> tuple[int, os.stat_result]:
    """The descriptor of a regular file opened for reading, and its stat, without blocking or
    following a link. The lstat comes first so a FIFO or device is never even opened (opening
    some devices has side effects); the fstat after opening confirms the same file. With
    `dir_fd`, `path` is one name in that open directory (`confine.read_inside`'s walk)."""
    mode = os.stat(path, dir_fd=dir_fd, follow_symlinks=False).st_mode
    if not stat.S_ISREG(mode):
        raise _refuse(mode, path)
    try:
        fd = os.open(path, _READ_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # replaced by a link since the lstat
            raise _refuse(stat.S_IFLNK, path) from None
        raise
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise _refuse(info.st_mode, path)
    return fd, info


def read_regular(path: str | os.PathLike[str], max_bytes: int | None = DEFAULT_MAX_BYTES) -> bytes:
    """The bytes of a regular file, refusing anything else without blocking or following a link
    (`_open_regular`). Raises `NotRegularFile`, `FileTooLarge` (above `max_bytes`) or the OSError
    of the failed syscall."""
    fd, info = _open_regular(path)
    return _read_open(fd, info, max_bytes, str(path))


def read_regular_at(
    dir_fd: int | None, name: str, max_bytes: int, shown: str, limit: str
) -> tuple[bytes, os.stat_result]:
    """`read_regular` of the entry `name` of the open directory `dir_fd` (errors name `shown`,
    `limit` the bound), with the stat of the file read (its device and inode identify it)."""
    try:
        fd, info = _open_regular(name, dir_fd)
    except OSError as exc:
        exc.filename = shown
        raise
    return _read_open(fd, info, max_bytes, shown, limit), info


def _read_open(
    fd: int, info: os.stat_result, max_bytes: int | None, shown: str, limit: str = "max-entry-bytes"
) -> bytes:
    """The bytes of the open regular file `fd` (closed here), at most `max_bytes` of them
    (`limit` names where that bound comes from)."""
    try:
        if max_bytes is not None and info.st_size > max_bytes:
            raise FileTooLarge(
                errno.EFBIG,
                f"is {info.st_size} bytes, above the limit of {max_bytes} ({limit}); not read",
                shown,
            )
        chunks = []
        left = info.st_size + 1 if max_bytes is None else max_bytes + 1
        # The first read asks for the size stat gave and one byte more (the end seen by the
        # next): the bytes are then the one object read, not a join of copies of chunks, and a
        # small file's buffer is its size (a 1 MiB one, shrunk, was an mmap and a copy).
        step = info.st_size + 1
        while left > 0:
            chunk = os.read(fd, min(left, step))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
            step = 1 << 16
        data = b"".join(chunks)
        if max_bytes is not None and len(data) > max_bytes:  # grew while we read it
            raise FileTooLarge(
                errno.EFBIG, f"is above the limit of {max_bytes} bytes; not read", shown
            )
        return data
    finally:
        os.close(fd)
