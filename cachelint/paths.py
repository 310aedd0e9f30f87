"""The one answer to "is this path inside that root", for repo-relative and absolute paths alike.

Four copies of this test once disagreed (one said `eval-cache/../x` was inside `eval-cache`, one
said a root was not inside itself); this is the strict one: whole components after lexical
normalisation, and a root is inside itself (a results directory equal to a cache root overlaps it).
"""

from __future__ import annotations

import os
from pathlib import PurePath


def is_inside(path: str | PurePath, root: str | PurePath) -> bool:
    """True when `path` is `root` or below it, compared component by component after lexical
    normalisation (`a/./b`, `a//b`, a trailing `/`, `a/../b`): `eval-cache2` is not inside
    `eval-cache`, nor is `eval-cache/../x`. A relative path is never inside an absolute root or
    the other way round. No filesystem access: resolve symlinks first where they matter."""
    p = os.path.normpath(os.fspath(path))
    r = os.path.normpath(os.fspath(root))
    if os.path.isabs(p) != os.path.isabs(r):
        return False
    if r == os.curdir:
        return p != os.pardir and not p.startswith(os.pardir + os.sep)
    return p == r or p.startswith(r.rstrip(os.sep) + os.sep)
