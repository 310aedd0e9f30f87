"""The offline canary's first snapshot of the cache tree, taken on another core.

`cachelint run` proves a replay changed nothing in the cache by hashing the tree before and after
the scenarios run (`hashing.snapshot`, by content). The first snapshot only has to be complete
before the first scenario starts, so for a large suite on a machine with a second core a child
process takes it while this one loads the datasets and builds the clients. For a small suite the
child's interpreter start-up would cost more than the overlap saves, and with one core there is
nothing to overlap: the snapshot is then taken in this process, as before. Either way it is the
same snapshot (the child runs the same function on the same tree, with the same files left out).

Run as `python -m cachelint.canary REQUEST`: the request (repo, roots and what to leave out) as
one JSON argument, the snapshot as JSON on stdout; a tree it cannot read is one line on stderr
and exit 2.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from cachelint.childproc import module_command, usable_cores
from cachelint.config import Config
from cachelint.errors import CachelintError
from cachelint.hashing import Snapshot, snapshot
from cachelint.meai import make_skip, results_in_roots

# Below this many scenarios the child's start-up (an interpreter and its imports, ~0.1 s) is not
# hidden behind loading the datasets.
CHILD_MIN_SCENARIOS = 500


class FirstSnapshot:
    """The snapshot of `roots` under `repo`, taken by a child (`start`) or here (`result`)."""

    def __init__(
        self, repo: Path, roots: Sequence[str], tops: Sequence[str], exclude: Sequence[str]
    ) -> None:
        self.repo = repo
        self.roots = list(roots)
        self.tops = list(tops)
        self.exclude = list(exclude)
        self._child: subprocess.Popen[bytes] | None = None

    @classmethod
    def of(cls, repo: Path, config: Config) -> FirstSnapshot:
        """The snapshot `cachelint run`'s canary compares with: every cache root that exists,
        without `exclude` and MEAI's results."""
        roots = [c for c in config.cache if (repo / c).is_dir()]
        return cls(repo, roots, results_in_roots(config, present_only=False), config.exclude)

    def start(self, scenarios: int) -> None:
        """Start the child when the suite is large enough and a second core is free. Its answer
        waits in the pipe: it writes only once it has hashed everything, so a full pipe holds
        back nothing but its exit."""
        if scenarios < CHILD_MIN_SCENARIOS or usable_cores() < 2 or not self.roots:
            return
        request = {"repo": os.fspath(self.repo), "roots": self.roots}
        request |= {"tops": self.tops, "exclude": self.exclude}
        command = [*module_command("cachelint.canary"), json.dumps(request)]
        pipe = subprocess.PIPE
        try:
            child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=pipe, stderr=pipe)
        except OSError:
            return  # no interpreter to start: the snapshot is taken here instead
        self._child = child

    def result(self) -> Snapshot:
        """The snapshot: the child's when it gave one, else taken now in this process."""
        if self._child is not None:
            child, self._child = self._child, None
            answer, problem = child.communicate()
            if child.returncode == 2 and problem:
                raise CachelintError(problem.decode("utf-8", "replace").strip())
            if child.returncode == 0:
                try:
                    taken = json.loads(answer)
                except ValueError:
                    taken = None
                if isinstance(taken, dict):
                    return taken
        return snapshot(self.repo, self.roots, make_skip(self.tops, self.exclude))

    def discard(self) -> None:
        """The run stopped before it needed the snapshot: end the child."""
        if self._child is not None:
            child, self._child = self._child, None
            child.kill()
            child.communicate()


def main() -> int:
    request = json.loads(sys.argv[1])
    try:
        taken = snapshot(
            Path(request["repo"]), request["roots"], make_skip(request["tops"], request["exclude"])
        )
    except CachelintError as exc:
        sys.stderr.write(f"{exc}\n")
        return 2
    sys.stdout.write(json.dumps(taken))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
