"""The offline canary's first snapshot of the cache tree, taken on another core.

`cachelint run` proves a replay changed nothing in the cache by hashing the tree before and after
the scenarios run (`hashing.snapshot`, by content). The first snapshot only has to be complete
before the first scenario starts, so for a large suite on a machine with a second core a child
process takes it while this one loads the datasets and builds the clients. For a small suite the
child's interpreter start-up would cost more than the overlap saves, and with one core there is
nothing to overlap: the snapshot is then taken in this process, as before. Either way it is the
same snapshot (the child runs the same function on the same tree, with the same files left out).

Run as `python -m cachelint.canary`: the request (repo, roots and what to leave out) as JSON on
stdin, the snapshot as JSON on stdout; a tree it cannot read is one line on stderr and exit 2.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from cachelint.childproc import module_command
from cachelint.config import Config
from cachelint.errors import CachelintError
from cachelint.hashing import Snapshot, snapshot
from cachelint.meai import make_skip, results_in_roots

# Below this many scenarios the child's start-up (an interpreter and its imports, ~0.1 s) is not
# hidden behind loading the datasets.
CHILD_MIN_SCENARIOS = 500


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


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
        self._out: IO[bytes] | None = None
        self._err: IO[bytes] | None = None

    @classmethod
    def of(cls, repo: Path, config: Config) -> FirstSnapshot:
        """The snapshot `cachelint run`'s canary compares with: every cache root that exists,
        without `exclude` and MEAI's results."""
        roots = [c for c in config.cache if (repo / c).is_dir()]
        return cls(repo, roots, results_in_roots(config, present_only=False), config.exclude)

    def start(self, scenarios: int) -> None:
        """Start the child when the suite is large enough and a second core is free."""
        if scenarios < CHILD_MIN_SCENARIOS or _cores() < 2 or not self.roots:
            return
        request = {"repo": os.fspath(self.repo), "roots": self.roots}
        request |= {"tops": self.tops, "exclude": self.exclude}
        try:
            self._out, self._err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
            with tempfile.TemporaryFile() as source:
                source.write(json.dumps(request).encode("utf-8"))
                source.seek(0)
                command, env = module_command("cachelint.canary")
                self._child = subprocess.Popen(
                    command, stdin=source, stdout=self._out, stderr=self._err, env=env
                )
        except OSError:
            self._close()  # no temp space or no interpreter to start: take it here instead

    def result(self) -> Snapshot:
        """The snapshot: the child's when it gave one, else taken now in this process."""
        if self._child is not None and self._out is not None and self._err is not None:
            try:
                rc = self._child.wait()
                self._out.seek(0)
                self._err.seek(0)
                answer, problem = self._out.read(), self._err.read()
            finally:
                self._close()
            if rc == 2 and problem:
                raise CachelintError(problem.decode("utf-8", "replace").strip())
            if rc == 0:
                try:
                    taken = json.loads(answer)
                except ValueError:
                    taken = None
                if isinstance(taken, dict):
                    return taken
        return snapshot(self.repo, self.roots, make_skip(self.tops, self.exclude))

    def discard(self) -> None:
        """The run stopped before it needed the snapshot: end the child and free its files."""
        if self._child is not None and self._child.poll() is None:
            self._child.kill()
            self._child.wait()
        self._close()

    def _close(self) -> None:
        for fh in (self._out, self._err):
            if fh is not None:
                fh.close()
        self._child = self._out = self._err = None


def main() -> int:
    request = json.loads(sys.stdin.buffer.read())
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
