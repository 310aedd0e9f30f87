"""eval-cache-stale-pin: a package the tree was recorded under has a different pin now.

A new version of the evaluation library can change how cache keys are computed (MEAI changed its
key twice: dotnet/extensions #6473 and #6476), so every entry may silently become a miss.
"""

from __future__ import annotations

from collections.abc import Iterator

from cachelint import pins
from cachelint.findings import Finding
from cachelint.rules import Rule
from cachelint.stamp import facts_pins, facts_stamps
from cachelint.tree import TreeFacts

CODE = "eval-cache-stale-pin"
_ADVICE = (
    "the package changed, so cache keys may have changed: re-record the tree, then run "
    "`cachelint stamp`"
)


def message(name: str, recorded: str | None, pin: str | None) -> str:
    return f"{name}: recorded {recorded or '(none)'} vs pin {pin or '(none)'}; {_ADVICE}"


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
        stamped = {pins.stamp_key(name): (name, v) for name, v in state.stamp.packages.items()}
        for key in sorted(set(stamped) | set(now.pinned)):
            if key in troubled:
                continue
            old_name, old = stamped.get(key, (None, None))
            pin = now.pinned.get(key)
            if pin is not None and old == pin.version:
                continue
            name = pin.name if pin is not None else old_name
            assert name is not None
            yield Finding(state.path, CODE, message(name, old, pin.version if pin else None))


RULE = Rule(
    CODE, "a package pin differs from the version the tree was recorded under", check, group="stamp"
)
