"""The git listings a check makes, and their parsers: what the index holds, which files git sees
changed, ignored or untracked, and their effective `text` attribute. Always `-z`, split on NUL,
decoded with surrogateescape so an undecodable name survives the round trip back to git."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import compress, repeat
from operator import itemgetter
from pathlib import Path

from cachelint.gitutil import GitResult, run_git, split_z, stage_record
from cachelint.store import CONTENTS_FILE, ENTRY_FILE
from cachelint.tree import IgnoreSource, IndexEntry

_ENTRY_SUFFIX = "/" + ENTRY_FILE
_CONTENTS_SUFFIX = "/" + CONTENTS_FILE
_ENTRY_SUFFIXES = (_ENTRY_SUFFIX, _CONTENTS_SUFFIX)
_REGULAR_TAG = "\0H 100644 "  # a record of a regular file, neither marked nor unmerged
_REGULAR = IndexEntry("100644", 0)
SKIP_WORKTREE = ("S", "s")  # ls-files -v: "s" is also marked assume-unchanged


def parse_stage(
    out: bytes, *, entry_objects: bool = False, same_as: Iterable[str] = ()
) -> tuple[dict[str, IndexEntry], dict[str, str], dict[str, str]]:
    """`ls-files -v --stage` records are "<tag> <mode> <object> <stage>\\t<path>". Returns the
    index; if `entry_objects`, the object ids of each entry directory's two files, which the
    entry cache is keyed by (`entry_pairs`); and the tag of each path whose tag is not "H":
    marked assume-unchanged ("h") or skip-worktree ("S", "s"), which git no longer compares with
    the disk, or unmerged ("M"). A path equal to one of `same_as` (the walk's) is that string
    object, not a copy: the index and the walk of a large tree then share their text."""
    index: dict[str, IndexEntry] = {}
    objects: dict[str, str] = {}
    flagged: dict[str, str] = {}
    if not out:
        return index, objects, flagged
    text = out.decode("utf-8", "surrogateescape")
    records = text.split("\0")
    records.pop()  # the empty string after the last terminator
    regular = text.count(_REGULAR_TAG) + text.startswith(_REGULAR_TAG[1:]) == len(records)
    del text
    if regular:
        # The usual index: every record "H 100644 <object> 0\t<path>", the object ids all one
        # length, so every path starts at the same offset and slicing replaces parsing.
        start = records[0].index("\t") + 1
        paths = [r[start:] for r in records]
        if same_as:
            walked = {path: path for path in same_as}
            paths = list(map(walked.get, paths, paths))
            del walked
        index = dict.fromkeys(paths, _REGULAR)
        if entry_objects:
            wanted = list(map(str.endswith, paths, repeat(_ENTRY_SUFFIXES)))
            object_id = itemgetter(slice(9, start - 3))  # "H 100644 <object> 0\t"
            ids = list(map(object_id, compress(records, wanted)))
            objects = entry_pairs(list(compress(paths, wanted)), ids)
        return index, objects, flagged
    shared: dict[str, IndexEntry] = {}
    files: list[str] = []
    ids = []
    for record in records:
        meta, _, path = record.partition("\t")
        kind = meta[2:8] + meta[-1]
        entry = shared.get(kind)
        if entry is None:
            entry = shared[kind] = IndexEntry(meta[2:8], int(meta[-1]))
        index[path] = entry
        if entry_objects and entry.stage == 0 and path.endswith(_ENTRY_SUFFIXES):
            files.append(path)
            ids.append(meta[9:-2])
        if meta[0] != "H":
            flagged[path] = meta[0]
    return index, entry_pairs(files, ids), flagged


def entry_pairs(files: list[str], ids: list[str]) -> dict[str, str]:
    """The object ids of each entry directory's two files, as "<entry.json id> <contents.data
    id>", from entry files listed in index order; a directory holding one of the two is left out."""
    # In index order a directory's contents.data comes just before its entry.json ("c" < "e"):
    # when every pair is so, they are paired whole, without a step per file.
    contents, entries = files[0::2], files[1::2]
    if len(contents) == len(entries) and all(map(str.endswith, contents, repeat(_CONTENTS_SUFFIX))):
        directories = [path[: -len(_CONTENTS_SUFFIX)] for path in contents]
        if [path[: -len(_ENTRY_SUFFIX)] for path in entries] == directories and all(
            map(str.endswith, entries, repeat(_ENTRY_SUFFIX))
        ):
            return dict(zip(directories, map(_PAIR.format, ids[1::2], ids[0::2]), strict=True))
    by_directory: dict[str, dict[str, str]] = {}
    for path, object_id in zip(files, ids, strict=True):
        directory, _, name = path.rpartition("/")
        by_directory.setdefault(directory, {})[name] = object_id
    return {
        directory: _PAIR.format(names[ENTRY_FILE], names[CONTENTS_FILE])
        for directory, names in by_directory.items()
        if len(names) == 2
    }


_PAIR = "{} {}"


def index_objects(stage: bytes, wanted: set[str]) -> dict[str, str]:
    """Object ids of the `wanted` paths in the `ls-files -v --stage` output, parsed only when
    git reported candidates (`gitutil.stage_record` reads each record)."""
    paths = {path.encode("utf-8", "surrogateescape"): path for path in wanted}
    out: dict[str, str] = {}
    for parsed in map(stage_record, stage.split(b"\0")):
        if parsed is not None and (path := paths.get(parsed[3])) is not None:
            out[path] = parsed[1].decode()
    return out


def parse_text_attr(out: bytes, paths: list[str]) -> dict[str, str]:
    """check-attr answers "<path>\\0text\\0<value>\\0" in input order. The usual answer is "unset"
    for every file, which counting that triple confirms without splitting the output."""
    if out.count(b"\0text\0unset\0") == len(paths):
        return dict.fromkeys(paths, "unset")
    fields = split_z(out)
    values: dict[str, str] = {}
    result: dict[str, str] = {}
    for i in range(0, len(fields) - 2, 3):
        value = fields[i + 2]
        result[fields[i]] = values.setdefault(value, value)
    return result


def really_modified(repo: Path, candidates: Iterable[str], recorded: dict[str, str]) -> set[str]:
    """diff-files compares stat data, so a file rewritten with the same bytes (or touched) shows
    up; hash the candidates once with `git hash-object` (which applies the same filters as
    `git add`) and keep only those whose content differs from the index (`recorded`: their
    object ids there). The caller passes regular files only: hash-object would block on a FIFO."""
    check = sorted(candidates)
    # --stdin-paths is line based: a name with a newline cannot be hashed this way, keep it.
    odd = {p for p in check if "\n" in p}
    plain = [p for p in check if p not in odd]
    if not plain:
        return odd
    result = run_git(
        ["hash-object", "--stdin-paths"],
        cwd=repo,
        stdin="".join(p + "\n" for p in plain).encode("utf-8", "surrogateescape"),
    )
    shas = result.out.decode("ascii").split()
    return odd | {p for p, sha in zip(plain, shas, strict=True) if sha != recorded.get(p)}


def ignore_sources(repo: Path, ignored: set[str]) -> dict[str, IgnoreSource]:
    """One `git check-ignore -v` for all ignored files: which file and line ignores each."""
    paths = sorted(ignored)
    result = run_git(
        ["check-ignore", "-v", "-z", "--no-index", "--stdin"],
        cwd=repo,
        stdin=nul_joined(paths),
        ok_codes=(0, 1),
    )
    fields = split_z(result.out)
    out: dict[str, IgnoreSource] = {}
    for i in range(0, len(fields) - 3, 4):
        source, line, pattern, path = fields[i : i + 4]
        if source:
            out[path] = IgnoreSource(source, int(line) if line.isdigit() else 0, pattern)
    return out


# The .NET project files in git's index, which the pins are read from: untracked ones are left
# out, since listing them would make git walk the whole work tree.
PROJECT_SUFFIXES = (".csproj", ".fsproj", ".vbproj")
PROJECTS = ["ls-files", "-z", "--cached", "--", *(f"*{suffix}" for suffix in PROJECT_SUFFIXES)]


def projects(result: GitResult) -> tuple[str, ...] | None:
    """The project files `PROJECTS` listed, sorted; None when git could not list them."""
    return tuple(sorted(set(split_z(result.out)))) if result.rc == 0 else None


def git_dir(result: GitResult) -> Path | None:
    """The repository's own git directory from `rev-parse --absolute-git-dir`, or None (no entry
    cache this time) when git did not name an existing absolute directory: a git older than 2.13
    echoes the option back, and the cache must never land in the work tree."""
    text = result.out.decode("utf-8", "surrogateescape").strip()
    path = Path(text)
    return path if result.rc == 0 and text and path.is_absolute() and path.is_dir() else None


def nul_joined(paths: list[str]) -> bytes:
    return ("\0".join(paths) + "\0").encode("utf-8", "surrogateescape")
