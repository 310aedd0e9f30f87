"""Scenario identities and the dataset files they come from: `<agent>/<tenant>/<scenario>`, the
path of a dataset file under the datasets root without `.json`, valid on every OS and unique
ignoring case."""

from __future__ import annotations

import functools
import os
import re
import unicodedata
from pathlib import Path

from cachelint.errors import CachelintError
from cachelint.winpath import problem

# A suite's scenarios share their agent and tenant names, and often their own names across tenants:
# each part's answer is worked out once.
_problem = functools.lru_cache(maxsize=4096)(problem)
_DRIVE = re.compile(r"[A-Za-z]:")
_DOTS = frozenset({"", ".", ".."})


def validate_identity(identity: str, where: str) -> None:
    """Reject identities that are not exactly `agent/tenant/scenario`, that escape the datasets
    root, or that Windows cannot check out (a committed cache must work on every OS)."""

    def bad(why: str) -> CachelintError:
        return CachelintError(
            f"{where}: scenario identity {identity!r} {why}; datasets live at "
            "<datasets root>/<agent>/<tenant>/<scenario>.json, rename the file or directory"
        )

    if not isinstance(identity, str) or not identity:
        raise bad("is empty")
    if "\\" in identity:
        raise bad("contains a backslash")
    if identity.startswith("/") or _DRIVE.match(identity):
        raise bad("is an absolute path")
    parts = identity.split("/")
    if not _DOTS.isdisjoint(parts):
        raise bad("has an empty, '.' or '..' part")
    if len(parts) != 3:
        levels = "level" if len(parts) == 1 else "levels"
        raise bad(f"has {len(parts)} {levels}, expected exactly 3 (agent/tenant/scenario)")
    for part in parts:
        why = _problem(part)
        if why is not None:
            raise bad(f"part {part!r} {why}")


def scenario_identity(relative: str, path: str, seen: dict[str, str]) -> str:
    """The identity of the dataset file at `relative`, checked, and unique ignoring case among
    those `seen` (case-folded identity -> identity), which it joins."""
    # macOS (HFS+) hands out NFD names; the key must not depend on where the tree was listed.
    identity = unicodedata.normalize("NFC", relative[: -len(".json")])
    validate_identity(identity, path)
    # Two identities differing only in case are one directory on Windows and macOS.
    folded = identity.casefold()
    if folded in seen:
        raise CachelintError(
            f"{path}: scenario identity {identity!r} collides with {seen[folded]!r} on "
            "case-insensitive file systems; rename one of them"
        )
    seen[folded] = identity
    return identity


def dataset_files(base: Path, root: str) -> list[str]:
    """Base-relative posix paths of every `*.json` under `base`, skipping dotfiles and dot-dirs
    (`.gitkeep`, `.gitattributes`). Any other file is an error: a YAML scenario or a stray note
    skipped without a word would be a check that silently never runs."""
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        relative_dir = Path(dirpath).relative_to(base).as_posix()
        for name in dirnames:
            # os.walk lists a link to a directory among the directories and never enters it;
            # silently skipping it would drop scenarios, reading through it would leave the repo.
            if os.path.islink(os.path.join(dirpath, name)):
                raise CachelintError(
                    f"{_shown(base, relative_dir, name)}: is a symbolic link to a directory; "
                    "datasets are never read through a link, replace it with a real directory"
                )
        for filename in sorted(filenames):
            if filename.startswith("."):
                continue
            _require_utf8_name(base, relative_dir, filename)
            relative = filename if relative_dir == "." else f"{relative_dir}/{filename}"
            if not filename.endswith(".json"):
                raise CachelintError(
                    f"{root}/{relative}: not a scenario: the datasets tree holds only "
                    "<agent>/<tenant>/<scenario>.json files (`cachelint schema` prints their "
                    f"format); convert it to JSON or move it out of {root}/"
                )
            found.append(relative)
    return found


def _shown(base: Path, relative_dir: str, name: str) -> str:
    where = name if relative_dir == "." else f"{relative_dir}/{name}"
    return f"{base.name}/{where}"


def _require_utf8_name(base: Path, relative_dir: str, name: str) -> None:
    # os.walk hands undecodable bytes back as lone surrogates (surrogateescape); such a name
    # cannot become a scenario identity or a cache path, nor be printed as it is.
    for part in (*relative_dir.split("/"), name):
        try:
            part.encode("utf-8")
        except UnicodeEncodeError:
            raw = os.fsencode(part)
            raise CachelintError(
                f"{base.name}: a dataset path has a name that is not valid UTF-8 ({raw!r}); "
                "rename it with UTF-8 characters"
            ) from None
