"""Confinement: every path cachelint reads or writes stays inside the repository.

A committed cache, its datasets and its prompts arrive in pull requests. A prompt file committed
as a symlink to `~/.aws/credentials` would otherwise be read, sent to the provider and committed
into the cache; `green-record = ".git/config"` would be overwritten with JSON. So each configured
path (one the repository's own files name) is checked once when the configuration loads (no
component below the repository root may be a symbolic link, nothing may point into `.git`, cache
roots may not repeat or nest), and each
read or write site checks the path it is about to use. A violation is one error line naming the
path; nothing is ever read from or written to a link's target. A report path typed on the command
line (`--junit`, `--html`, `report --output`) is the invoker's to choose, outside the repository
too (`check_output`).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path, PurePosixPath

from cachelint.config import Config
from cachelint.errors import CachelintError, ConfigError
from cachelint.fsutil import NotRegularFile, read_regular, read_regular_at
from cachelint.paths import is_inside


class OutsideRepository(CachelintError):
    """A path that would leave the repository (through a link, `..`, `.git`, or a cache root)."""


def _parts(rel: str) -> Sequence[str]:
    text = rel.replace("\\", "/")
    parts = text.split("/")
    if "" in parts or "." in parts:  # a leading, doubled or trailing slash, or a "." component
        return PurePosixPath(text).parts
    return parts


def first_link(repo: str | os.PathLike[str], rel: str) -> str | None:
    """The first component of `repo/rel`, below `repo`, that is a symbolic link (its repo-relative
    path), or None. Components that do not exist end the walk: nothing below them can be a link
    yet, and whatever cachelint creates there is a plain directory or file."""
    current = os.fspath(repo)
    walked: list[str] = []
    for part in _parts(rel):
        current = os.path.join(current, part)
        walked.append(part)
        try:
            mode = os.lstat(current).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return None
        if stat.S_ISLNK(mode):
            return "/".join(walked)
    return None


def require_no_link(repo: Path, rel: str, what: str, error: type[CachelintError]) -> None:
    link = first_link(repo, rel)
    if link is not None:
        shown = rel if link == rel else f"{rel} (through {link})"
        raise error(
            f"{what} {shown}: is a symbolic link; cachelint never reads or writes through a "
            "link (it may point outside the repository), replace it with a real file or directory"
        )


def _in_git_dir(rel: str) -> bool:
    return any(part.casefold() == ".git" for part in _parts(rel))


def check_config(config: Config) -> None:
    """Refuse configured paths that leave the repository, point into `.git`, pass through a
    link, or make the cache roots overlap. Called once per load; a few lstat calls."""
    where = config.source
    seen: list[str] = []
    for root in config.cache:
        if _in_git_dir(root):
            raise ConfigError(
                f"{where}: key 'cache' = {root!r} lies inside a .git directory, which git never "
                "tracks; point it at the committed cache directory (e.g. eval-cache)"
            )
        for other in seen:
            if root == other:
                raise ConfigError(
                    f"{where}: key 'cache' lists {root!r} twice; every entry would be counted "
                    "twice, list each root once"
                )
            if is_inside(root, other) or is_inside(other, root):
                inner, outer = (root, other) if is_inside(root, other) else (other, root)
                raise ConfigError(
                    f"{where}: key 'cache' root {inner!r} lies inside root {outer!r}; nested "
                    "roots count their entries twice, list only the outer one"
                )
        seen.append(root)
    for key, value in (("results", config.results), ("green-record", config.green_record)):
        if _in_git_dir(value):
            raise ConfigError(
                f"{where}: key {key!r} = {value!r} lies inside a .git directory; cachelint never "
                "writes into git's own files, choose a path in the working tree"
            )
    paths = (
        [("cache root", c) for c in config.cache]
        + [("stamp", config.stamp_path(c)) for c in config.cache]
        + [
            ("datasets", config.datasets),
            ("results", config.results),
            ("green-record", config.green_record),
        ]
    )
    paths += [("pin file", pin) for pin in config.pins]
    if config.target.env_file:
        paths.append(("env-file", config.target.env_file))
    for what, rel in paths:
        require_no_link(config.repo, rel, f"{where}: {what}", ConfigError)


def check_output(config: Config, option: str, path: Path) -> Path:
    """A report file named on the command line (`--junit`, `--html`, `report --output`). The
    person running the command chooses where it goes, inside the repository or outside it
    (`$RUNNER_TEMP/junit.xml`, `../artifacts/report.html`), as with `pytest --junitxml`; its
    directories are created and it is written atomically (`fsutil.atomic_write`). Refused: a
    symbolic link or a directory at the final component, and, where it lands in the repository,
    what the repository's own files could turn against the invoker: a committed link on the way,
    `.git`, a cache root, a tracked file. Returns it absolute."""
    absolute = Path(os.path.abspath(Path.cwd() / path))
    _refuse_final(option, path, absolute)
    rel = _repo_relative(config, absolute)
    if rel is not None:
        _refuse_in_repository(config, option, path, rel)
        require_no_link(config.repo, rel, option, OutsideRepository)
        refuse_tracked(config.repo, [rel], option)
        return config.repo / rel
    # Outside, the directories are the invoker's own, links included; one of them may still lead
    # back into the repository, where `.git` and the cache roots stay off limits.
    try:
        landed = _repo_relative(config, absolute.parent.resolve() / absolute.name)
    except (OSError, RuntimeError):  # a link loop: the write fails and says so
        landed = None
    if landed is not None:
        _refuse_in_repository(config, option, path, landed)
    return absolute


def _repo_relative(config: Config, absolute: Path) -> str | None:
    for repo in (config.repo, config.repo.resolve()):
        try:
            return absolute.relative_to(repo).as_posix()
        except ValueError:
            continue
    return None


def _refuse_final(option: str, path: Path, absolute: Path) -> None:
    """The file itself is never a link: a report is never written through one (the atomic
    write would replace it, but the invoker meant the file it points at). What else cannot be
    written over (a directory) fails the write, which says so."""
    try:
        mode = os.lstat(absolute).st_mode
    except OSError:
        return
    if stat.S_ISLNK(mode):
        raise OutsideRepository(
            f"{option} {path}: is a symbolic link; cachelint never writes a report through a "
            "link, remove it or name the file it points to"
        )


def _refuse_in_repository(config: Config, option: str, path: Path, rel: str) -> None:
    if rel in ("", ".") or _in_git_dir(rel):
        raise OutsideRepository(
            f"{option} {path}: inside .git; write reports in the working tree (e.g. eval-results/)"
        )
    for root in config.cache:
        if is_inside(rel, root):
            raise OutsideRepository(
                f"{option} {path}: inside cache root {root!r}; an offline run must write no byte "
                "into the committed cache, write the report elsewhere (e.g. eval-results/)"
            )


def refuse_tracked(repo: Path, rels: Iterable[str], what: str, *, allowed: str = "") -> None:
    """Refuse to overwrite files git tracks (a results directory named `src` would), except a
    committed results directory of an earlier run (`allowed`, its run.json, is tracked)."""
    from cachelint.gitutil import run_git, split_z

    wanted = [r for r in rels if r]
    if not wanted:
        return
    listed = run_git(["ls-files", "-z", "--", *(f":(literal){r}" for r in wanted)], cwd=repo)
    tracked = split_z(listed.out)
    if tracked and allowed not in tracked:
        raise OutsideRepository(
            f"{what}: would overwrite the tracked file {tracked[0]}"
            + (f" (and {len(tracked) - 1} more)" if len(tracked) > 1 else "")
            + "; cachelint writes results only to files git does not track, choose another path"
        )


def check_results_dir(config: Config, execution: str) -> None:
    """`<results>/<execution>/` before a run writes into it: no link, no tracked file in it."""
    rel = f"{config.results}/{execution}"
    require_no_link(config.repo, rel, "results directory", OutsideRepository)
    refuse_tracked(config.repo, [rel], f"results directory {rel}", allowed=f"{rel}/run.json")


def check_green_record(config: Config, *, proven: Callable[[bytes], bool] | None = None) -> None:
    """The green record may overwrite only itself: an existing file there must be a regular file
    holding a green record (so `green-record = "pyproject.toml"` never replaces the project).
    `proven`: the caller's cheaper proof that the bytes read are one, before they are decoded."""
    rel = config.green_record
    require_no_link(config.repo, rel, "green-record", OutsideRepository)
    path = config.repo / rel
    try:
        raw = read_regular(path, GREEN_RECORD_BYTES)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise OutsideRepository(
            f"green-record {rel}: {exc.strerror}; point `green-record` at a file of its own"
        ) from None
    if proven is not None and proven(raw):
        return
    import json

    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        data = None
    if not (isinstance(data, dict) and "watched" in data and "format" in data):
        raise OutsideRepository(
            f"green-record {rel}: exists and is not a green record; cachelint will not overwrite "
            "it, point `green-record` at a file of its own (default .eval-green.json)"
        )


def check_entry_dir(root: str | os.PathLike[str], inside: str, shown: str) -> None:
    """An entry directory `root/inside` (`cache/<scenario>/<prefix>`) before it is read or
    recorded into: a scenario directory committed as a link to a directory outside would
    otherwise be replayed from, or written into."""
    link = first_link(root, inside)
    if link is not None:
        prefix = shown[: -len(inside)] if shown.endswith(inside) else ""
        raise OutsideRepository(
            f"{shown}: {prefix}{link} is a symbolic link under the cache root; cachelint never "
            "reads or records through a link, replace it with a real directory"
        )


# ---- confined reads ------------------------------------------------------------------------------

# Bounds for the small files read from a repository; an entry is bounded by max-entry-bytes.
CONFIG_BYTES = 4 * 1024 * 1024
TEXT_BYTES = 16 * 1024 * 1024
# The green record grows with the suite (a line per dataset and watched file: 15 MB at 100,000
# scenarios), so it has its own bound.
GREEN_RECORD_BYTES = 256 * 1024 * 1024
# Names a prompt or dataset never has and a credential file often does, refused even when no
# env-file is configured: a dataset is reviewed like data and must not be a way to read a key.
PRIVATE_NAMES = (".env", ".netrc", ".git-credentials", ".pypirc", ".npmrc")
# Code points HFS+ ignores in names, so `.g\u200cit` is `.git` on a Mac (git's is_hfs_dotgit).
_IGNORABLE = dict.fromkeys(
    map(
        ord,
        "\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u206a\u206b"
        "\u206c\u206d\u206e\u206f\ufeff",
    ),
)
_DIR_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_DIRECTORY", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
_WALK_BY_FD = os.open in os.supports_dir_fd and os.stat in os.supports_dir_fd


def is_dotgit(part: str) -> bool:
    """Whether one path component names `.git` on some file system: any case (Windows, macOS),
    trailing dots or spaces (Windows drops them), ignorable code points (HFS+), the 8.3 name."""
    # The ignorable code points are none of them ASCII, and translate with a table costs about a
    # microsecond a name even when it removes nothing (a suite's dataset reads check four each).
    name = (part if part.isascii() else part.translate(_IGNORABLE)).rstrip(". ").casefold()
    return name == ".git" or name == "git~1"


def private_files(config: Config) -> tuple[str, ...]:
    """The configured credential files (every target's env-file): never read as data."""
    targets = [config.target, *config.targets.values()]
    return tuple(sorted({t.env_file for t in targets if t.env_file}))


def _private_reason(parts: Sequence[str], private: Iterable[str]) -> str | None:
    name = parts[-1].casefold() if parts else ""
    if name in PRIVATE_NAMES or name.startswith(".env."):
        return "is a credential file by its name"
    folded = "/".join(parts).casefold()
    for rel in private:
        if folded == "/".join(_parts(rel)).casefold():
            return "is the configured env-file, which holds the API key"
    return None


def _refusal(rel: str, private: Iterable[str], credential: bool) -> str | None:
    parts = [p for p in _parts(rel) if p not in ("", ".")]
    if not parts or rel.startswith(("/", "\\")) or (len(rel) > 1 and rel[1] == ":"):
        return "is not a path relative to the repository"
    if ".." in parts:
        return "leaves the repository ('..')"
    if any(is_dotgit(p) for p in parts):
        return "lies inside .git (git's own files: its config holds CI's token)"
    return None if credential else _private_reason(parts, private)


def read_inside(
    repo: Path,
    rel: str,
    what: str,
    max_bytes: int,
    *,
    private: Iterable[str] = (),
    error: type[CachelintError] = OutsideRepository,
    credential: bool = False,
    opened: dict[str, int] | None = None,
) -> bytes:
    """The one way cachelint reads a file of a repository: `repo/rel` must be a path below
    `repo` through no symbolic link and no `.git` component, name neither a credential file
    (`private`, see `private_files`) nor a file by a credential file's name, and be a regular
    file of at most `max_bytes`. Each directory is opened without following links and the file
    is opened in the last one, so a component swapped for a link after a check is never
    followed. A breach of that policy raises `error` (one line naming `what` and `rel`); a
    missing, special or oversized file the OSError of `fsutil.read_regular`. `credential`: this
    read is the env-file's own, for its key (`cachelint.credentials`), and skips the name checks.
    `repo` may also be cachelint's own directory in git's (the entry cache). `opened`: for reads
    of many files a directory at a time (a suite's datasets), the last directory walked to, kept
    open and read from again (the caller closes it: `close_opened`)."""
    rel = rel.replace("\\", "/")
    reason = _refusal(rel, () if credential else private, credential)
    if reason is not None:
        raise error(f"{what} {rel}: {reason}; cachelint never reads it, name another file")
    parts = [p for p in _parts(rel) if p not in ("", ".")]
    data, info = _read_walk(repo, parts, rel, what, max_bytes, error, opened)
    for other in private:
        try:
            seen = os.stat(repo / other, follow_symlinks=False)
        except OSError:
            continue
        if (seen.st_dev, seen.st_ino) == (info.st_dev, info.st_ino):  # a hard link or an alias
            raise error(
                f"{what} {rel}: is the configured env-file {other} under another name; "
                "cachelint never reads it, name another file"
            )
    return data


def _read_walk(
    repo: Path,
    parts: Sequence[str],
    rel: str,
    what: str,
    max_bytes: int,
    error: type[CachelintError],
    opened: dict[str, int] | None = None,
) -> tuple[bytes, os.stat_result]:
    limit = "cachelint's bound for this file"
    if not _WALK_BY_FD:  # Windows: lstat each component, then open without following the last
        require_no_link(repo, rel, what, error)
        return read_regular_at(None, str(repo.joinpath(*parts)), max_bytes, rel, limit)
    parent = "/".join(parts[:-1])
    fd = opened.get(parent) if opened is not None else None
    if fd is None:
        if opened:
            close_opened(opened)
        fd = _walk_to(repo, parts[:-1], rel, what, error)
        if opened is not None:
            opened[parent] = fd
    try:
        return read_regular_at(fd, parts[-1], max_bytes, rel, limit)
    except NotRegularFile:
        if stat.S_ISLNK(os.stat(parts[-1], dir_fd=fd, follow_symlinks=False).st_mode):
            _raise_link(rel, rel, what, error)
        raise
    finally:
        if opened is None:
            os.close(fd)


def close_opened(opened: dict[str, int]) -> None:
    """Close the directories `read_inside` kept open in `opened`."""
    for fd in opened.values():
        os.close(fd)
    opened.clear()


def _walk_to(
    repo: Path, parts: Sequence[str], rel: str, what: str, error: type[CachelintError]
) -> int:
    """An open descriptor of the directory `repo/parts...`, each component opened without
    following a link."""
    fd = os.open(repo, _DIR_FLAGS & ~getattr(os, "O_NOFOLLOW", 0))  # the repository may be a link
    try:
        for i, part in enumerate(parts):
            mode = os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode
            if stat.S_ISLNK(mode):
                _raise_link(rel, "/".join(parts[: i + 1]), what, error)
            try:
                inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno == errno.ELOOP:  # swapped for a link since the stat
                    _raise_link(rel, "/".join(parts[: i + 1]), what, error)
                raise
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def _raise_link(rel: str, link: str, what: str, error: type[CachelintError]) -> None:
    shown = rel if link == rel else f"{rel} (through {link})"
    raise error(
        f"{what} {shown}: is a symbolic link; cachelint never reads or writes through a "
        "link (it may point outside the repository), replace it with a real file or directory"
    )


def run_outputs(
    config: Config, execution: str, junit: Path | None, html: Path | None
) -> tuple[Path | None, Path | None]:
    """Every file `cachelint run` writes, checked before the run starts."""
    check_results_dir(config, execution)
    return (
        None if junit is None else check_output(config, "--junit", junit),
        None if html is None else check_output(config, "--html", html),
    )
