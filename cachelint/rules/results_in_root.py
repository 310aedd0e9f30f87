"""eval-cache-results-in-root: MEAI's results share the storage root of the committed cache.

`DiskBasedReportingConfiguration.Create` hands one storage root to the response cache and to the
result store, so every run writes `<root>/results/<execution>/<scenario>/<iteration>.json` beside
the cache. Those files are skipped by the other rules, `guard` and `run`'s canary (they change on
every run by design); this warning, once per root, says how to give them a root of their own.
"""

from __future__ import annotations

from collections.abc import Iterator

from cachelint.facts import TreeFacts
from cachelint.findings import Finding, Severity
from cachelint.meai import RESULTS_ADVICE, RESULTS_DIR, results_in_roots
from cachelint.rules import Rule

CODE = "eval-cache-results-in-root"


def check(facts: TreeFacts) -> Iterator[Finding]:
    for results in results_in_roots(facts.config):
        root = results[: -len(RESULTS_DIR) - 1]
        yield Finding(
            results,
            CODE,
            "MEAI results inside the cache's storage root: "
            + RESULTS_ADVICE.format(root=root, results=f"{results}/"),
            Severity.WARNING,
        )


RULE = Rule(CODE, "MEAI writes its results into the storage root of the committed cache", check)
