"""The front doors through which entries are recorded and replayed, and which one owns an entry.

Two front doors write one cache: `cachelint run` (the datasets' scenarios) and the pytest plugin
(a team's own `eval` tests). Each proves different entries are needed, so each entry belongs to
the front door whose full pass must reach it: prune, `eval-cache-unused` and the green record
decide per front door, and a front door that never vouched for its entries keeps them.

The owner is read from the entry's scenario identity, which both front doors already store (in
the entry's directory and its `scenario` field), so trees recorded before owners were tracked
need no migration:

- `cachelint run`: exactly `agent/tenant/scenario`, the path of its dataset file
  `<datasets>/<agent>/<tenant>/<scenario>.json`.
- pytest: the test's node id made a path (`scenario_identity` below), which always starts
  with the test module's path: `tests/test_bot.py/test_refund/acme`. A part before the last that
  ends in `.py` is that module.

A dataset directory could also end in `.py` (`bot.py/acme/refund`); a scenario whose dataset file
exists is `cachelint run`'s whatever its name, so only an entry of a removed dataset in such a
directory is taken for pytest's (prune then waits for a full `pytest -m eval`: it keeps entries,
never deletes them, when it guesses wrong).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cachelint.config import Config

_UNPORTABLE = re.compile(r'[<>:"|?*\\\x00-\x1f]+')


class FrontDoor(str, Enum):
    RUN = "run"
    PYTEST = "pytest"

    @property
    def command(self) -> str:
        """The full pass of this front door: what refreshes its usage and green record."""
        return "cachelint run" if self is FrontDoor.RUN else "pytest -m eval"

    @property
    def shown(self) -> str:
        return "`cachelint run`" if self is FrontDoor.RUN else "the pytest plugin"


def scenario_identity(nodeid: str) -> str:
    """A pytest node id as a cache path that every OS can check out (the pytest plugin's
    scenario identity): `tests/test_bot.py::test_refund[acme]` is
    `tests/test_bot.py/test_refund/acme`."""
    parts: list[str] = []
    for piece in nodeid.replace("::", "/").replace("[", "/").rstrip("]").split("/"):
        piece = _UNPORTABLE.sub("_", piece).strip(" .")
        if piece and piece not in (".", ".."):
            parts.append(piece)
    return "/".join(parts) or "test"


def looks_like_pytest(scenario: str) -> bool:
    """Whether `scenario` has the shape of a pytest node id: a module path, then a test."""
    parts = scenario.split("/")
    return any(part.endswith(".py") for part in parts[:-1])


def owner(scenario: str, is_dataset: Callable[[str], bool]) -> FrontDoor:
    """The front door that owns entries of `scenario`; `is_dataset(scenario)` says whether a
    dataset file defines it (asked only for a scenario shaped like pytest's)."""
    if looks_like_pytest(scenario) and not is_dataset(scenario):
        return FrontDoor.PYTEST
    return FrontDoor.RUN


def dataset_probe(config: Config) -> Callable[[str], bool]:
    """`is_dataset` for the working tree: whether `<datasets>/<scenario>.json` is a file."""
    base = Path(config.repo, config.datasets)

    def is_dataset(scenario: str) -> bool:
        return os.path.isfile(os.path.join(base, scenario + ".json"))

    return is_dataset


def scenario_of(directory: str, root: str) -> str | None:
    """The scenario of a native entry directory `<root>/cache/<scenario>/<key prefix>`."""
    head = f"{root}/cache/"
    if not directory.startswith(head):
        return None
    scenario, _, _ = directory[len(head) :].rpartition("/")
    return scenario or None
