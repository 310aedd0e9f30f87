"""eval-cache-unredacted: an entry holds a value a redaction rule would have removed.

Redaction rules (`redact` in [tool.cachelint], `cachelint.redact`) are applied before an entry is
written, so an entry recorded under them never holds what they remove. One recorded before a rule
was added, or written by another tool, may: this rule applies every rule to each native entry's
stored request and answer and reports the ones that would change, the value masked (its first two
characters and its length). Nothing is read when no rule is configured.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

from cachelint.config import Layout
from cachelint.facts import TreeFacts
from cachelint.findings import Finding
from cachelint.fsutil import read_regular
from cachelint.rules import Rule
from cachelint.store import CONTENTS_FILE, ENTRY_FILE

CODE = "eval-cache-unredacted"


def _load(facts: TreeFacts, rel: str) -> object:
    try:
        raw = read_regular(os.path.join(facts.repo, rel), facts.config.max_entry_bytes)
        return json.loads(raw)
    except (OSError, ValueError):
        return None  # unreadable or not JSON: eval-cache-corrupt reports it


def check(facts: TreeFacts) -> Iterator[Finding]:
    rules = facts.config.redact
    if not rules:
        return
    from cachelint.redact import unredacted  # only a tree with redaction rules needs them

    for entry in facts.entries:
        if entry.layout is not Layout.CACHELINT:
            continue
        data = _load(facts, f"{entry.directory}/{ENTRY_FILE}")
        request = data.get("request") if isinstance(data, dict) else None
        answer = _load(facts, f"{entry.directory}/{CONTENTS_FILE}")
        for rule, part, masked in unredacted(rules, request, answer):
            where = ENTRY_FILE if part == "request" else CONTENTS_FILE
            yield Finding(
                f"{entry.directory}/{where}",
                CODE,
                f"the recorded {part} holds a value redaction rule {rule.name!r} removes "
                f"({masked}); re-record the entry under the rule "
                "(`cachelint run --refresh-cache`) so the committed cache never holds it",
            )


RULE = Rule(CODE, "an entry holds a value a redaction rule would have removed", check)
