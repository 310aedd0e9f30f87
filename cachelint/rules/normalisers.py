"""eval-cache-normalisers-changed: the key normalisers are not the ones the tree was stamped under.

A normaliser (`normalise` in [tool.cachelint], `cachelint.rewrites`) rewrites each request before
it is keyed, so adding, removing or changing one re-keys every request it touches: entries
recorded under the old rules miss in replay. `cachelint stamp` writes the rules' digest into the
stamp; a config whose rules differ makes the stamp stale until the tree is re-recorded and
re-stamped under them.
"""

from __future__ import annotations

from collections.abc import Iterator

from cachelint.config import Config
from cachelint.facts import TreeFacts
from cachelint.findings import Finding
from cachelint.rules import Rule
from cachelint.stamp import facts_stamps

CODE = "eval-cache-normalisers-changed"


def _shown(value: str | None) -> str:
    return f"digest {value[:12]}" if value else "none"


def _digests(config: Config) -> tuple[str | None, str | None]:
    """The configured normalisers' and redaction rules' digests, None for none: the modules that
    hold them load only when the config has some (they are not on a plain check's start-up)."""
    now: str | None = None
    redactions: str | None = None
    if config.normalise:
        from cachelint.rewrites import digest

        now = digest(config.normalise)
    if config.redact:
        from cachelint import redact  # redaction rules re-key requests too (docs/redact.md)

        redactions = redact.digest(config.redact)
    return now, redactions


def check(facts: TreeFacts) -> Iterator[Finding]:
    now, redactions = _digests(facts.config)
    for state in facts_stamps(facts):
        stamp = state.stamp
        if stamp is None:
            continue  # no stamp, or an invalid one: the other stamp rules say so
        for what, key, stamped, configured in (
            ("key normalisers", "normalise", stamp.normalisers, now),
            ("redaction rules", "redact", stamp.redactions, redactions),
        ):
            if stamped != configured:
                yield _finding(state.path, facts.config.source, what, key, stamped, configured)


def _finding(
    path: str, source: str, what: str, key: str, stamped: str | None, now: str | None
) -> Finding:
    return Finding(
        path,
        CODE,
        f"the {what} changed since `cachelint stamp` (stamped: "
        f"{_shown(stamped)}, {source} `{key}`: {_shown(now)}): "
        "requests they touch are keyed differently, so entries recorded before miss in "
        "replay; re-record (`cachelint run --refresh-cache`), then run `cachelint stamp` and "
        "commit both, or restore the previous rules",
    )


RULE = Rule(
    CODE,
    "the key normalisers or redaction rules differ from the ones the tree was stamped under",
    check,
    group="stamp",
)
