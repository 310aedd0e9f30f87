"""Which path parts Windows cannot check out.

Git on Linux commits `aux.json`, `a:b` or `trail.` without complaint; git for Windows then refuses
the checkout (compat/mingw.c is_valid_win32_path). Shared by the `eval-cache-windows-name` rule and
the dataset loader, whose scenario identities become cache paths.
"""

from __future__ import annotations

import re

DEVICES = r"con|prn|aux|nul|conin\$|conout\$|com[0-9¹²³]|lpt[0-9¹²³]"
_BAD_CHARS = frozenset('<>:"|?*\\') | frozenset(chr(c) for c in range(32))
_DEVICE = re.compile(rf"(?:{DEVICES}) *", re.IGNORECASE)


def problem(part: str) -> str | None:
    """Why Windows rejects this single path part, or None if it accepts it."""
    bad = sorted({c for c in part if c in _BAD_CHARS})
    if bad:
        shown = " ".join(repr(c) for c in bad)
        return f"contains {shown}, which Windows does not allow in file names"
    if part.endswith((".", " ")):
        return "ends in a period or space, which Windows strips, so the checkout fails"
    # A device name is reserved with any extension (`aux.json`, `con.tar.gz`) and trailing spaces.
    stem = part.split(".", 1)[0]
    if _DEVICE.fullmatch(stem):
        return f"uses the reserved device name {stem.rstrip(' ').upper()} (with any extension)"
    return None
