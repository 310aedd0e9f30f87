"""eval-cache-env-file: the credential file (`env-file`) one `git add -A` away from a commit.

The env-file holds the real API key used to record. Tracked, the key is committed (an error);
present but not ignored by git, the next `git add -A` commits it (a warning).
"""

from __future__ import annotations

from collections.abc import Iterator

from cachelint.facts import TreeFacts
from cachelint.findings import Finding, Severity
from cachelint.rules import Rule

CODE = "eval-cache-env-file"


def check(facts: TreeFacts) -> Iterator[Finding]:
    env_file = facts.config.target.env_file
    if env_file is None:
        return
    if facts.env_file == "tracked":
        yield Finding(
            env_file,
            CODE,
            "the credential file (env-file) is tracked by git, so the API key in it is "
            f"committed; run `git rm --cached -- {env_file}`, add it to .gitignore and rotate "
            "the key",
        )
    elif facts.env_file == "unignored":
        yield Finding(
            env_file,
            CODE,
            "the credential file (env-file) is not ignored by git: one `git add -A` commits "
            f"the API key; add `/{env_file}` to .gitignore",
            Severity.WARNING,
        )


RULE = Rule(CODE, "the env-file holding the API key is tracked or not ignored by git", check)
