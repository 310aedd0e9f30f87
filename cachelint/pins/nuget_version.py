"""NuGet version strings as NuGet reads them (NuGet.Versioning's NuGetVersion and VersionRange).

- A version is 1 to 4 numeric parts, an optional `-release` label and optional `+metadata`;
  missing parts are 0 and leading zeros do not count, so `10.9`, `10.9.0` and `10.09.0.0` are
  one version, normalised as NuGet prints it (`10.9.0`; a fourth part only when not 0). Release
  labels compare case-insensitively; metadata is ignored.
- In a PackageReference/PackageVersion `Version`, a plain version is a minimum that restore
  resolves to that version when it exists; `[x]` and `[x, x]` are exact; anything else is a
  range; `*` anywhere makes it floating, which only `packages.lock.json` turns into a version.
"""

from __future__ import annotations

import re

_VERSION = re.compile(
    r"(?P<nums>[0-9]+(?:\.[0-9]+){0,3})(?:-(?P<release>[0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?"
)


def normalise(text: str) -> str | None:
    """`text` as NuGet's normalised version string, or None when it is not a NuGet version."""
    match = _VERSION.fullmatch(text.strip())
    if match is None:
        return None
    nums = [int(n) for n in match["nums"].split(".")]
    nums += [0] * (3 - len(nums))
    if len(nums) == 4 and nums[3] == 0:
        nums.pop()
    release = match["release"]
    return ".".join(map(str, nums)) + (f"-{release}" if release else "")


def same(a: str, b: str) -> bool:
    """Whether two version strings name one NuGet version (text equality when either is not
    one)."""
    left, right = normalise(a), normalise(b)
    if left is None or right is None:
        return a.strip().casefold() == b.strip().casefold()
    return left.casefold() == right.casefold()


def exact(spec: str) -> str | None:
    """The one version a `Version` attribute resolves to, normalised; None for a range or a
    floating version."""
    text = spec.strip()
    if "*" in text:
        return None
    if not (text.startswith("[") and text.endswith("]")):
        return None if text[:1] in "[(" or text[-1:] in "])" else normalise(text)
    inside = [part.strip() for part in text[1:-1].split(",")]
    if len(inside) == 1:
        return normalise(inside[0])
    if len(inside) == 2 and inside[0] and inside[1]:
        low, high = normalise(inside[0]), normalise(inside[1])
        if low is not None and high is not None and low.casefold() == high.casefold():
            return low
    return None
