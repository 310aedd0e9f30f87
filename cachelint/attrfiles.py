"""The attributes files a check reads itself (git's check-attr answers only for single paths):
every one that can apply under the cache roots, never through a link or from a special file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from cachelint.config import Config
from cachelint.confine import TEXT_BYTES, OutsideRepository, read_inside
from cachelint.errors import CachelintError
from cachelint.facts import ATTRIBUTES, INFO_ATTRIBUTES
from cachelint.fsutil import read_regular
from cachelint.walk import Walk


def read_attributes(repo: Path, config: Config, walk: Walk) -> dict[str, list[str]]:
    """The lines of the attributes files that can apply under the roots: those in the
    directories above each root, those the walk found inside, and .git/info/attributes."""
    wanted: set[str] = set()
    if ATTRIBUTES in walk.names:
        wanted = {p for p in walk.files if p.rpartition("/")[2] == ATTRIBUTES}
    for root in config.cache:
        parent = root
        while parent:
            parent = parent.rpartition("/")[0]
            wanted.add(f"{parent}/{ATTRIBUTES}" if parent else ATTRIBUTES)
    wanted.add(INFO_ATTRIBUTES)
    found: dict[str, list[str]] = {}
    for rel in wanted:
        if rel in walk.special:
            continue
        try:
            raw = _read_attributes_file(repo, rel)
        except (OSError, OutsideRepository):
            # Missing, special, too large, or a link: git (2.32 and later) never follows a
            # symbolic link to .gitattributes in the working tree, and neither does cachelint.
            continue
        found[rel] = raw.decode("utf-8", "surrogateescape").splitlines()
    return found


def refuse_special(repo: Path, config: Config, walk: Walk) -> None:
    """A FIFO or device named .gitattributes (or .git/info/attributes): git opens it to read
    attributes (check-attr, diff-files and hash-object for a file it must read) and waits forever
    for a writer, so check stops first."""
    found = [p for p in walk.special if p.rpartition("/")[2] == ATTRIBUTES]
    above = {INFO_ATTRIBUTES}
    for root in config.cache:
        parent = root
        while parent:
            parent = parent.rpartition("/")[0]
            above.add(f"{parent}/{ATTRIBUTES}" if parent else ATTRIBUTES)
    for rel in above:
        try:
            mode = os.lstat(repo / rel).st_mode
        except OSError:
            continue
        if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode) or stat.S_ISDIR(mode)):
            found.append(rel)
    if found:
        raise CachelintError(
            f"{min(found)}: is a FIFO, socket or device, not a regular file; git blocks reading "
            "attributes from it (check-attr, add), so nothing was checked; remove it"
        )


def _read_attributes_file(repo: Path, rel: str) -> bytes:
    if rel == INFO_ATTRIBUTES:  # git's own, local file: never committed, read as git reads it
        return read_regular(repo / rel, TEXT_BYTES)
    return read_inside(repo, rel, "attributes file", TEXT_BYTES)
