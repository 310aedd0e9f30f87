"""`cachelint diff --base REF`'s reading: the committed cache at REF against the working tree.

One `git ls-tree` lists every entry file at REF with its blob id; the working tree's entry files
are read (regular files only, bounded, never through a link) and hashed as git hashes a blob, so
only the entries that differ are decoded. The old side of every differing entry is read with one
`git cat-file --batch`. Native entries only (`cache/<scenario>/<prefix>/entry.json` beside
`contents.data`); MEAI trees and SQLite cassettes are not compared.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cachelint.confine import first_link
from cachelint.errors import CachelintError
from cachelint.fsutil import read_regular
from cachelint.gitutil import blob_id, cat_blobs, run_git, split_z
from cachelint.runner.review import AnswerChange, Review, answer_text, closest, explain
from cachelint.store import CACHE_DIR, CONTENTS_FILE, ENTRY_FILE, decode_json

Files = dict[str, bytes]  # entry file name -> blob id (at REF) or bytes (working tree)


@dataclass(frozen=True)
class Recorded:
    request: Mapping[str, Any]
    response: Any
    model: str | None = None  # the model the entry was recorded from


def _entry_dir(path: str, roots: Sequence[str]) -> tuple[str, str] | None:
    """(entry directory, file name) when `path` is an entry file of a native entry."""
    directory, _, name = path.rpartition("/")
    if name not in (ENTRY_FILE, CONTENTS_FILE):
        return None
    for root in roots:
        if directory.startswith(f"{root}/{CACHE_DIR}/") and directory.count("/") >= (
            root.count("/") + 3
        ):
            return directory, name
    return None


def _committed(repo: Path, ref: str, roots: Sequence[str]) -> dict[str, Files]:
    """Every entry directory at `ref` under the cache roots: its files' blob ids."""
    verified = run_git(
        ["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], cwd=repo, check=False
    )
    if verified.rc != 0:
        raise CachelintError(
            f"diff --base {ref}: not a commit of this repository; pass a branch, tag or commit "
            "(e.g. --base origin/main after `git fetch`)"
        )
    listed = run_git(["ls-tree", "-r", "-z", "--full-tree", ref, "--", *roots], cwd=repo)
    found: dict[str, Files] = {}
    for line in split_z(listed.out):
        meta, _, path = line.partition("\t")
        parts = meta.split(" ")
        where = _entry_dir(path, roots)
        if where is None or len(parts) != 3 or parts[1] != "blob":
            continue
        found.setdefault(where[0], {})[where[1]] = parts[2].encode()
    return found


def _working(repo: Path, roots: Sequence[str]) -> dict[str, Files]:
    """Every entry directory in the working tree under the cache roots: its files' bytes."""
    found: dict[str, Files] = {}
    for root in roots:
        # os.walk follows a link at its top: a committed `cache` link would be read (and its
        # answers printed into the review) from wherever it points.
        link = first_link(repo, f"{root}/{CACHE_DIR}")
        if link is not None:
            raise CachelintError(
                f"{link}: is a symbolic link in the cache tree; diff never reads through a link "
                "(it may point outside the repository), replace it with a real directory "
                "(`cachelint check` reports it as eval-cache-symlink)"
            )
        base = repo / root / CACHE_DIR
        for directory, dirs, files in os.walk(base, followlinks=False):
            dirs.sort()
            names = [n for n in files if n in (ENTRY_FILE, CONTENTS_FILE)]
            rel = Path(directory).relative_to(repo).as_posix()
            for name in names:
                if _entry_dir(f"{rel}/{name}", roots) is None:
                    continue
                try:
                    found.setdefault(rel, {})[name] = read_regular(f"{directory}/{name}")
                except OSError as exc:
                    raise CachelintError(
                        f"{rel}/{name}: cannot be read ({exc}); the linter (cachelint check) "
                        "says why"
                    ) from None
    return found


def _recorded(files: Mapping[str, bytes]) -> Recorded | None:
    """A native entry's request and response, or None when it is not one (the linter says why)."""
    try:
        entry = decode_json(files[ENTRY_FILE])
        response = decode_json(files[CONTENTS_FILE])
    except (KeyError, ValueError):
        return None
    if not isinstance(entry, dict) or not isinstance(entry.get("request"), dict):
        return None
    model = entry.get("model", entry["request"].get("model"))
    return Recorded(entry["request"], response, model if isinstance(model, str) else None)


def _scenario(directory: str, roots: Sequence[str]) -> str:
    root = next(r for r in roots if directory.startswith(f"{r}/{CACHE_DIR}/"))
    return directory[len(root) + len(CACHE_DIR) + 2 :].rpartition("/")[0]


def _differs(old: Files | None, new: Files) -> bool:
    if old is None or set(old) != set(new):
        return True
    return any(blob_id(data, len(old[name])).encode() != old[name] for name, data in new.items())


def _old_entries(
    repo: Path, committed: Mapping[str, Files], wanted: set[str], roots: Sequence[str]
) -> dict[str, dict[str, Recorded]]:
    """The entries at REF of the scenarios in `wanted`: scenario -> directory -> entry."""
    dirs = [d for d in committed if _scenario(d, roots) in wanted]
    blobs = cat_blobs(repo, sorted({b.decode() for d in dirs for b in committed[d].values()}))
    out: dict[str, dict[str, Recorded]] = {}
    for d in dirs:
        entry = _recorded({name: blobs[b.decode()] for name, b in committed[d].items()})
        if entry is not None:
            out.setdefault(_scenario(d, roots), {})[d] = entry
    return out


def _change(
    scenario: str, directory: str, new: Recorded, before: Mapping[str, Recorded]
) -> AnswerChange | None:
    old = before.get(directory)
    if old is None:
        others = [e for d, e in sorted(before.items())]
        picked = closest(new.request, [e.request for e in others])
        old = next((e for e in others if e.request is picked), None)
    then = None if old is None else answer_text(old.response)
    now = answer_text(new.response)
    if then == now:
        return None
    return AnswerChange(
        scenario,
        directory,
        explain(old.request if old else None, new.request),
        then,
        now,
        model=new.model,
    )


def cache_review(repo: Path, ref: str, roots: Sequence[str]) -> Review:
    """Per entry recorded or re-recorded since `ref` whose answer differs, the change."""
    committed = _committed(repo, ref, roots)
    working = _working(repo, roots)
    dirty = sorted(d for d, files in working.items() if _differs(committed.get(d), files))
    before = _old_entries(repo, committed, {_scenario(d, roots) for d in dirty}, roots)
    changes, unreadable = [], 0
    for directory in dirty:
        new = _recorded(working[directory])
        if new is None:
            unreadable += 1
            continue
        scenario = _scenario(directory, roots)
        change = _change(scenario, directory, new, before.get(scenario, {}))
        if change is not None:
            changes.append(change)
    gone = sum(1 for d in committed if d not in working)
    notes = []
    if gone:
        notes.append(f"{gone} entries recorded at {ref} are gone from the working tree (pruned)")
    if unreadable:
        notes.append(f"{unreadable} changed entries are unreadable: run `cachelint check`")
    return Review(ref, "working tree", changes, tuple(notes))
