"""The lean entry point behind the git hooks: `python -m cachelint.hook pre-commit` (the plain
hook: check and the watch gate) and `python -m cachelint.hook check` (the pre-commit framework's
`cachelint-check` hook, which must run on every commit because the framework never passes a
deleted path to a hook, and so decides here whether the staged change touches anything to lint)
and `python -m cachelint.hook watch` (the framework's `cachelint-watch` hook: the gate alone).

Most commits touch neither the cache nor a watched prompt, so this path must cost little more than
starting Python. It imports only the standard library (no cachelint.cli, no command modules, no
pathspec, rich, httpx or GitPython), asks git for the staged names once (`git diff --cached
--no-renames --name-only -z`: a rename out of a cache root lists the old path too) and reads the
config while git runs, and only when something relevant is staged imports and runs `cachelint
check` and/or the watch gate in-process. The config is parsed (tomllib, which alone costs more than
the rest of this path) only when its bytes differ from those the git directory's
`cachelint/hook-config` was kept for. The entries are `python -I -c "from cachelint.hook import
main; ..."`, not `-m cachelint.hook`, which imports runpy. Relevant to the check: the cache roots,
attributes and ignore files, the config, and every file the pin readers read (a staged version
bump in Directory.Packages.props, a project or a lock makes the stamp stale).

The watch globs are gitignore-style and only pathspec evaluates them exactly, but importing it
costs more than the whole fast path. So a conservative pre-filter runs first: every literal run of
characters in a pattern must occur in the path for the pattern to match it, so a path failing
that test for every pattern is certainly not watched; a path passing it goes to pathspec.
"""

# No `from __future__ import annotations` here or in cachelint/__init__.py: it imports the
# __future__ module, about 1.5% of a Python start-up, on a path that must stay near one. The
# annotations below are evaluated (3.10 reads `X | None` and `list[str]`) or quoted.
import marshal
import os
import stat
import sys

TYPE_CHECKING = False  # not `typing`: it costs a tenth of the start-up this path must stay near
if TYPE_CHECKING:
    from collections.abc import Callable

USAGE = "usage: python -m cachelint.hook pre-commit|check|watch"

# Paths whose change can break the cache's integrity even outside the cache roots: attributes
# decide line-ending conversion, ignore rules decide what git sees, the config decides the roots.
_CHECK_NAMES = (".gitattributes", ".gitignore")
_CHECK_ROOT_FILES = ("pyproject.toml", "cachelint.toml")
# The files the pin readers read (cachelint.pins), lower-cased: a staged bump of a family package
# there makes the stamp stale, which only the check's pin rules see. .NET files count wherever
# they are (MSBuild reads the nearest Directory.*.props above each project, projects live in
# subdirectories, and an import may name any .props or .targets); the Python and npm manifests
# and locks, and the solution that lists the projects, at the top.
_PIN_NAMES = ("directory.packages.props", "directory.build.props", "packages.lock.json")
_PIN_SUFFIXES = (".csproj", ".fsproj", ".vbproj", ".props", ".targets")
_PIN_ROOT_NAMES = (
    "uv.lock",
    "poetry.lock",
    "pipfile.lock",
    "package.json",
    "package-lock.json",
)
_PIN_ROOT_SUFFIXES = (".sln", ".slnx")
_WILDCARDS = "*?"
# The staged names, deletions included. No rename detection: a cache file moved out of a root must
# list its old path as deleted. hooks/pre-commit runs the same command (tests/test_hooks.py).
STAGED_NAMES = ["diff", "--cached", "--no-renames", "--name-only", "-z"]
PIPED = "--staged-names-on-stdin"
_CONFIG_MAX = 4 * 1024 * 1024
_READ_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_BINARY", 0)
)
# The gate's part of the parsed config, kept in the git directory under the exact bytes it was
# parsed from: `import tomllib` (re, typing, datetime) costs more than the rest of the fast path.
_TABLE_DIR = "cachelint"
_TABLE_FILE = "hook-config"
_TABLE_FORMAT = 1
_GATE_KEYS = ("cache", "watch", "pins", "datasets", "__invalid__")
_MISSING = object()


class _NoGit(Exception):
    """git could not be started; `main` turns it into one line and exit 2."""


def _git(args: list[str], cwd: str) -> tuple[int, bytes]:
    """Run git, return (rc, stdout); stderr goes straight to the user."""
    return _git_started(args, cwd)()


def _git_started(args: list[str], cwd: str) -> "Callable[[], tuple[int, bytes]]":
    """Start git; the returned function waits for it and gives (rc, stdout). Between the two the
    caller works on while git runs (on another core, when one is free)."""
    if not hasattr(os, "posix_spawnp"):  # Windows: no posix_spawn, pay for subprocess
        import subprocess

        try:
            proc = subprocess.run(["git", *args], cwd=cwd, stdout=subprocess.PIPE)
        except OSError as exc:
            raise _NoGit(exc.strerror or str(exc)) from None
        return lambda: (proc.returncode, proc.stdout)
    # posix_spawn + a pipe avoids importing subprocess (and its threading/selectors imports).
    read_end, write_end = os.pipe()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        pid = os.posix_spawnp(
            "git",
            ["git", *args],
            os.environ,
            file_actions=[(os.POSIX_SPAWN_DUP2, write_end, 1)],
        )
    except OSError as exc:
        os.close(read_end)
        raise _NoGit(exc.strerror or str(exc)) from None
    finally:
        os.chdir(old)
        os.close(write_end)

    def finish() -> tuple[int, bytes]:
        chunks = []
        while True:
            chunk = os.read(read_end, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
        os.close(read_end)
        _, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status), b"".join(chunks)

    return finish


def _top_level() -> str | None:
    # git runs hooks from the top of the work tree; only a manual run elsewhere needs rev-parse.
    cwd = os.getcwd()
    if os.path.exists(os.path.join(cwd, ".git")):
        return cwd
    rc, out = _git(["rev-parse", "--show-toplevel"], cwd)
    return out.decode("utf-8", "surrogateescape").strip() if rc == 0 else None


def _read_table(repo: str) -> dict[str, object] | None:
    """The raw cachelint table, or None for defaults; `{"__invalid__": True}` sends the commit to
    the full loader for its one-line error (a link, a FIFO, both files configuring cachelint).
    Parsed once per version of the config files: the gate's part of the table is kept in the git
    directory under the bytes it was parsed from (`_cached_table`), since importing tomllib costs
    more than the rest of this path."""
    raw: dict[str, bytes] = {}
    for name in ("cachelint.toml", "pyproject.toml"):
        try:
            raw[name] = _read_regular(os.path.join(repo, name), _CONFIG_MAX)
        except FileNotFoundError:
            continue
        except OSError:  # a link, a FIFO, too large: never read here
            return {"__invalid__": True}
    own, pyproject = raw.get("cachelint.toml"), raw.get("pyproject.toml")
    if pyproject is not None and b"cachelint" not in pyproject:
        pyproject = None  # no [tool.cachelint]: skip importing the TOML parser altogether
    if own is None and pyproject is None:
        return None
    key = (_TABLE_FORMAT, sys.hexversion, _GATE_KEYS, own, pyproject)
    git_dir = _git_dir(repo)
    kept = _MISSING if git_dir is None else _cached_table(git_dir, key)
    if kept is not _MISSING:
        return kept  # type: ignore[return-value]
    table = _parse_table(own, pyproject)
    if git_dir is not None:
        gate_part = None if table is None else {k: table[k] for k in _GATE_KEYS if k in table}
        _keep_table(git_dir, key, gate_part)
    return table


def _read_regular(path: str, max_bytes: int) -> bytes:
    """`fsutil.read_regular` without importing fsutil (a tenth of this path's own cost): a regular
    file's bytes, never a link, FIFO or device (lstat first, then opened without following a link
    or blocking, then fstat), at most `max_bytes`; else FileNotFoundError or another OSError."""
    if not stat.S_ISREG(os.lstat(path).st_mode):
        raise OSError(f"{path}: not a regular file; never read")
    fd = os.open(path, _READ_FLAGS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
            raise OSError(f"{path}: not a regular file or above {max_bytes} bytes; not read")
        chunks = []
        left = max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    if left <= 0:  # grew past the bound while read
        raise OSError(f"{path}: above {max_bytes} bytes; not read")
    return b"".join(chunks)


def _parse_table(own: bytes | None, pyproject: bytes | None) -> dict[str, object] | None:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - 3.10
        import tomli as tomllib
    try:
        tool = {} if pyproject is None else tomllib.loads(pyproject.decode("utf-8")).get("tool")
        own_table = None if own is None else tomllib.loads(own.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {"__invalid__": True}  # let the full loader produce the one-line error
    table = tool.get("cachelint") if isinstance(tool, dict) else None
    if own_table is not None:  # both configuring cachelint is the full loader's error
        return own_table if table is None else {"__invalid__": True}
    return table if isinstance(table, dict) or table is None else {"__invalid__": True}


def _git_dir(repo: str) -> str | None:
    """The repository's git directory: `.git`, or where a `.git` file (a worktree, a submodule)
    points; None when neither is there."""
    dot = os.path.join(repo, ".git")
    try:
        if stat.S_ISDIR(os.lstat(dot).st_mode):
            return dot
        line = _read_regular(dot, 4096).decode("utf-8", "surrogateescape").strip()
    except OSError:
        return None
    if not line.startswith("gitdir: "):
        return None
    return os.path.join(repo, line[len("gitdir: ") :])


def _cached_table(git_dir: str, key: tuple[object, ...]) -> object:
    """The gate's part of the table kept under exactly these config bytes (and this Python and
    format), else `_MISSING`. A damaged or foreign file is a miss, never an error."""
    try:
        data = _read_regular(os.path.join(git_dir, _TABLE_DIR, _TABLE_FILE), 2 * _CONFIG_MAX + 4096)
        kept = marshal.loads(data)
    except (OSError, ValueError, EOFError, TypeError):
        return _MISSING
    if not (isinstance(kept, tuple) and len(kept) == 2 and kept[0] == key):
        return _MISSING
    table = kept[1]
    return table if table is None or isinstance(table, dict) else _MISSING


def _keep_table(git_dir: str, key: tuple[object, ...], table: dict[str, object] | None) -> None:
    """Write `(key, table)` to the git directory's `cachelint/hook-config` atomically
    (`fsutil.atomic_write_chunks`, no fsync: a torn file is a miss); a value marshal cannot write
    (a TOML date) or a git directory that cannot be written is skipped silently. This runs only
    when the config's bytes changed, so its imports stay off the fast path."""
    try:
        data = marshal.dumps((key, table))  # type: ignore[arg-type]  # checked here: ValueError
    except ValueError:
        return
    from pathlib import Path

    from cachelint.fsutil import atomic_write_chunks

    try:
        atomic_write_chunks(Path(git_dir, _TABLE_DIR, _TABLE_FILE), (data,), durable=False)
    except OSError:
        return


def _str_list(value: object, default: list[str]) -> list[str] | None:
    if value is None:
        return default
    if isinstance(value, str):
        value = [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def _root(text: str) -> str:
    return os.path.normpath(text.replace("\\", "/")).replace(os.sep, "/").strip("/")


def _literal_runs(pattern: str) -> list[str]:
    """Runs of characters a gitignore pattern must match literally (bracket classes, escapes,
    `*` and `?` split them)."""
    runs: list[str] = []
    current = ""
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch in _WILDCARDS or ch == "\\":
            runs.append(current)
            current = ""
            i += 2 if ch == "\\" else 1
        elif ch == "[":
            runs.append(current)
            current = ""
            close = pattern.find("]", i + 2)
            i = len(pattern) if close < 0 else close + 1
        else:
            current += ch
            i += 1
    runs.append(current)
    return [r for r in runs if r]


def _pin_file(directory: str, name: str) -> bool:
    """Whether a path (its directory and lower-cased name) is one the pin readers may read."""
    if name in _PIN_NAMES or name.endswith(_PIN_SUFFIXES):
        return True
    if directory:
        return False
    if name in _PIN_ROOT_NAMES or name.endswith(_PIN_ROOT_SUFFIXES):
        return True
    return name.startswith("requirements") and name.endswith((".txt", ".in"))


class _Gate:
    """What the hook needs to decide relevance without the full config loader."""

    def __init__(self, table: dict[str, object] | None) -> None:
        table = table or {}
        self.invalid = "__invalid__" in table
        cache = _str_list(table.get("cache"), ["eval-cache"])
        watch = _str_list(table.get("watch"), [])
        pins = _str_list(table.get("pins"), [])
        datasets = table.get("datasets", "eval-datasets")
        if cache is None or watch is None or pins is None or not isinstance(datasets, str):
            self.invalid = True
            cache, watch, pins, datasets = [], [], [], ""
        self.pins = frozenset(_root(p) for p in pins)
        self.cache_prefixes = tuple(_root(c) + "/" for c in cache)
        self.dataset_prefix = _root(datasets) + "/" if datasets else None
        self.watch = watch
        self._prefilter = []
        for line in watch:
            pattern = line.rstrip()
            if not pattern or pattern.startswith(("#", "!")):
                continue  # negations only remove matches; comments match nothing
            self._prefilter.append(_literal_runs(pattern.rstrip("/")))

    def wants_check(self, path: str) -> bool:
        if path in _CHECK_ROOT_FILES or path.startswith(self.cache_prefixes):
            return True
        directory, _, name = path.rpartition("/")
        return name in _CHECK_NAMES or path in self.pins or _pin_file(directory, name.lower())

    def maybe_watched(self, path: str) -> bool:
        # A staged change of the cache alone is compared with the green record's cache digest.
        if path.startswith(self.cache_prefixes):
            return True
        if self.dataset_prefix is not None and path.startswith(self.dataset_prefix):
            return True
        slashed = "/" + path  # lets "/x" runs (from "/x" or "**/x") match at the top level
        return any(all(run in slashed for run in runs) for runs in self._prefilter)


def pre_commit(*, check: bool = True, watch: bool = True, piped: bool = False) -> int:
    """Lint (with `check`) and gate (with `watch`) what the staged change touches; deletions
    included, since `git diff --cached --name-only` lists deleted paths too. With `piped`,
    hooks/pre-commit has started git beside this interpreter: its output comes on stdin."""
    repo = _top_level()
    if repo is None:
        print("cachelint hook: not inside a git work tree; run it from a clone", file=sys.stderr)
        return 2
    if piped and repo == os.getcwd():
        staged_names = lambda: _piped_names(repo)  # noqa: E731
    else:
        staged_names = _git_started(STAGED_NAMES, repo)
    table = _read_table(repo)  # while git reads the index
    rc, out = staged_names()
    if rc != 0:
        print(f"cachelint hook: `git diff --cached` failed with exit code {rc}", file=sys.stderr)
        return 2
    if not out and (watch or not check):
        return 0
    staged = out.rstrip(b"\0").decode("utf-8", "surrogateescape").split("\0") if out else []
    gate = _Gate(table)
    # Nothing staged: not a commit (say `pre-commit run --all-files` in CI), so lint the tree.
    run_check = check and (not staged or gate.invalid or any(gate.wants_check(p) for p in staged))
    # A staged dataset goes to the gate even without globs: a committed green record gates it.
    maybe_watch = watch and any(gate.maybe_watched(p) for p in staged)
    if not (run_check or maybe_watch):
        return 0
    return _slow_path(repo, staged, run_check=run_check, maybe_watch=maybe_watch)


def _piped_names(repo: str) -> tuple[int, bytes]:
    """What hooks/pre-commit piped in: git's output, a newline, git's exit status (the newline
    the status follows is the last one: -z names end in NUL). Anything else: git is run here."""
    names, newline, status = sys.stdin.buffer.read().rpartition(b"\n")
    if not newline or not status.isdigit():
        return _git(STAGED_NAMES, repo)
    return int(status), names


def _slow_path(repo: str, staged: list[str], *, run_check: bool, maybe_watch: bool) -> int:
    """Something relevant is staged: now pay for the real loader, the check and the gate."""
    from pathlib import Path

    from cachelint.display import sanitize
    from cachelint.errors import CachelintError, ExitCode

    try:
        check_rc = 0
        if run_check:
            from cachelint import clock
            from cachelint.commands.check import check

            check_rc = check(
                Path(repo),
                config_path=None,
                fmt="text",
                select=None,
                ignore=(),
                strict=False,
                now=clock.now(),
                out=sys.stdout,
            )
        watch_rc = 0
        if maybe_watch:
            from cachelint.commands.watch import watch_staged
            from cachelint.config import load

            watch_rc = watch_staged(load(Path(repo)), staged, out=sys.stdout)
    except CachelintError as exc:
        print(f"cachelint: error: {sanitize(str(exc))}", file=sys.stderr)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        return int(ExitCode.INTERRUPTED)
    except Exception as exc:  # a bug in cachelint: one line, and the commit is blocked
        print(
            f"cachelint: internal error: {type(exc).__name__}: {sanitize(str(exc))} (run "
            "`cachelint check` or "
            "`cachelint watch --staged` with --verbose for a traceback, and report it)",
            file=sys.stderr,
        )
        return int(ExitCode.INTERNAL)
    return max(check_rc, watch_rc)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    piped = args == ["pre-commit", PIPED]  # hooks/pre-commit's own form
    if piped:
        args = ["pre-commit"]
    if args not in (["pre-commit"], ["check"], ["watch"]):
        print(USAGE, file=sys.stderr)
        return 2
    try:
        return pre_commit(check=args != ["watch"], watch=args != ["check"], piped=piped)
    except _NoGit as exc:
        print(f"cachelint hook: cannot run git ({exc}); put git on PATH", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
