"""eval-cache-stale-pin: a package the tree was recorded under has a different pin now.

A new version of the evaluation library can change how cache keys are computed (MEAI changed its
key twice: dotnet/extensions #6473 and #6476), so every entry may silently become a miss.
"""

from __future__ import annotations

from collections.abc import Iterator

from cachelint import pins
from cachelint.facts import TreeFacts
from cachelint.findings import Finding
from cachelint.meai import RERECORD_ROOT
from cachelint.rules import Rule
from cachelint.stamp import Stamp, facts_pins, facts_stamps

CODE = "eval-cache-stale-pin"
_ADVICE = (
    "the package changed, so cache keys may have changed: re-record the tree, then run "
    "`cachelint stamp`"
)


def message(name: str, recorded: str | None, pin: str | None, advice: str = _ADVICE) -> str:
    return f"{name}: recorded {recorded or '(none)'} vs pin {pin or '(none)'}; {advice}"


def _advice(facts: TreeFacts, root: str) -> str:
    """For a MEAI root, the re-record that works: MEAI rewrites no entry it can read."""
    if root in facts.meai_roots:
        return "the package changed, so cache keys may have changed: " + RERECORD_ROOT.format(
            root=root.rstrip("/")
        )
    return _ADVICE


def check(facts: TreeFacts) -> Iterator[Finding]:
    states = [s for s in facts_stamps(facts) if s.stamp is not None]
    if not states:
        return
    try:
        now = facts_pins(facts)
    except pins.PinFileError:
        return  # reported by eval-cache-unpinned
    # Packages without one exact pin are eval-cache-unpinned's; saying "pin (none)" too would
    # report one problem twice.
    troubled = now.troubled
    for state in states:
        assert state.stamp is not None
        advice = _advice(facts, state.root)
        yield from _stale(state.path, state.stamp, now, troubled, advice)


def _stale(
    path: str, stamp: Stamp, now: pins.Resolution, troubled: set[str], advice: str
) -> Iterator[Finding]:
    stamped = {pins.stamp_key(name): (name, v) for name, v in stamp.packages.items()}
    # Per project: packages whose .NET projects build with different versions, then or now.
    then_by_project = {
        project: {pins.stamp_key(n): (n, v) for n, v in found.items()}
        for project, found in stamp.projects.items()
    }
    split = {k for found in then_by_project.values() for k in found}
    split |= {k for found in now.by_project.values() for k in found}
    for key in sorted(set(stamped) | set(now.pinned) | split):
        if key in troubled:
            continue
        if key not in split:
            old_name, old = stamped.get(key, (None, None))
            pin = now.pinned.get(key)
            if pin is not None and old is not None and pins.same_version(old, pin):
                continue
            name = pin.name if pin is not None else old_name
            assert name is not None
            yield Finding(path, CODE, message(name, old, pin.version if pin else None, advice))
            continue
        for project in sorted(set(then_by_project) | set(now.by_project)):
            then = then_by_project.get(project, {}).get(key) or stamped.get(key)
            current = now.by_project.get(project, {}).get(key) or now.pinned.get(key)
            if then is None and current is None:
                continue
            old = then[1] if then else None
            version = current.version if current else None
            if old == version or (old and current and pins.same_version(old, current)):
                continue
            name = current.name if current else then[0] if then else key
            yield Finding(path, CODE, message(f"{name} ({project})", old, version, advice))


RULE = Rule(
    CODE, "a package pin differs from the version the tree was recorded under", check, group="stamp"
)
