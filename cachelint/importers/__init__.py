"""Importers: answers another tool recorded (vcrpy cassettes, promptfoo's cache), keyed as cachelint
keys the same call, so a replay of the imported suite hits where the original tool would have.

Each importer turns its files into `Recorded` calls (one HTTP request and the answer recorded for
it) and `Skipped` ones (what could not be read and why); `cachelint.importers.keying` then keys
each call exactly as the cache endpoint keys the request an SDK sends it, and
`cachelint.commands.import_` writes the entries through `Store.put`, the one atomic write path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Recorded:
    """One recorded call: where it came from, the request as sent and the answer as received."""

    source: str  # "tests/cassettes/refund.yaml#2": the file and the interaction's number
    scenario: str
    method: str
    url: str
    headers: Mapping[str, str]  # request headers, names lowercased (several values joined)
    body: bytes
    answer: Any  # the decoded JSON answer
    # Secrets the request carried outside its body (an authorization header, a `key=` query
    # parameter): never written, and an entry holding one of them is refused.
    credentials: tuple[str, ...] = ()


@dataclass(frozen=True)
class Skipped:
    """A recorded call (or a whole file) that is not imported, and why, in one line."""

    source: str
    reason: str


@dataclass
class Parsed:
    """What an importer read: the calls to key, what it could not import, and warnings (a
    credential in a cassette's headers, which is dropped but stays in the cassette file)."""

    calls: list[Recorded] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
