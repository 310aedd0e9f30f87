"""An execution's results read back before anything acts on them (issue 37, "evidence, not
claims").

`cachelint green --from-results` writes the green record from an execution, and `cachelint
report --merge` joins shards that CI jobs uploaded as artifacts. Both read files written earlier,
maybe on another machine, maybe edited since. So each file is read as a regular file below its
execution directory (never through a link, never a FIFO or a device), under a size bound, and
decoded with a depth bound; and what it says must agree with the rest: `passed` is true or false
(the string "false" is not a pass), every listed scenario has its results file, and each file
says what the summary says of it. Anything else is one error line, exit 2, never a pass.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import blake3

from cachelint.confine import first_link
from cachelint.errors import CachelintError
from cachelint.fsutil import read_regular
from cachelint.passpolicy import ALL, PassPolicy
from cachelint.runner.identities import validate_identity
from cachelint.store import decode_json

RUN_FILE = "run.json"
# A run summary holds a few hundred bytes per scenario trial: 256 MiB is a suite of well over a
# hundred thousand scenarios. A scenario's results file holds its calls' messages and answers.
SUMMARY_MAX_BYTES = 256 * 1024 * 1024
RECORD_MAX_BYTES = 64 * 1024 * 1024
# What every scenario's results file holds (`engine.scenario_record`), as the reports read it.
_REQUIRED = ("scenario", "agent", "tenant", "path", "passed", "trials")
# Results nest a dozen levels (calls, messages, tool calls, a model's JSON arguments); far below
# the depth at which the encoder or a renderer would exhaust the stack.
MAX_DEPTH = 100


class BadEvidence(CachelintError):
    """A results file that cannot be acted on: unreadable, malformed, or contradicting another."""


_ADVICE = (
    ": not a results file this cachelint writes; pass an execution directory written by "
    "`cachelint run` or `cachelint report --merge`, whole and unedited"
)


def _refused(shown: str, problem: str, advice: str = _ADVICE) -> BadEvidence:
    """`advice` follows the problem: `_ADVICE`, or "; what to do" of another kind of file."""
    return BadEvidence(f"{shown}: {problem}{advice}")


def too_deep(value: Any) -> bool:
    """Whether `value` (a list or an object) nests lists and objects deeper than MAX_DEPTH.
    Walked a level at a time without recursion, each level's containers gathered in one
    comprehension (a run reads each earlier execution's trend back through it)."""
    level = [value]
    for _ in range(MAX_DEPTH):
        level = [
            child
            for item in level
            for child in (item.values() if isinstance(item, dict) else item)
            if isinstance(child, (dict, list))
        ]
        if not level:
            return False
    return True


def read_json(
    directory: Path, rel: str, max_bytes: int, *, advice: str = _ADVICE, missing_ok: bool = False
) -> tuple[bytes, Any]:
    """The bytes and decoded JSON of `directory/rel`: a regular file reached through no link
    below `directory`, at most `max_bytes`, nested at most `MAX_DEPTH` levels; `(b"", None)`
    for a missing file when `missing_ok`. Anything else is a `BadEvidence` ending in `advice`."""
    shown = str(directory / rel)
    link = first_link(directory, rel)
    if link is not None:
        raise _refused(shown, f"{link} is a symbolic link, never followed", advice)
    try:
        raw = read_regular(directory / rel, max_bytes)
    except FileNotFoundError:
        if missing_ok:
            return b"", None
        raise _refused(shown, "missing", advice) from None
    except OSError as exc:
        raise _refused(shown, exc.strerror or type(exc).__name__, advice) from None
    try:
        value = decode_json(raw)
    except ValueError as exc:
        raise _refused(shown, f"not valid JSON ({exc})", advice) from None
    if isinstance(value, (dict, list)) and too_deep(value):
        raise _refused(shown, f"nested deeper than {MAX_DEPTH} levels", advice)
    return raw, value


def written_digest(data: bytes) -> bytes:
    """What `read_own` knows a file this process wrote by: 16 bytes of blake3 over its bytes
    (not hashlib's BLAKE2b: importing hashlib loads OpenSSL, ~3 ms of a run that needs no more)."""
    return blake3.blake3(data).digest(16)


def read_own(directory: Path, rel: str, digest: bytes) -> Any | None:
    """The document this process wrote to `directory/rel`, decoded, when the file (a regular
    file reached through no link, as `read_json` reads it) still holds the very bytes written
    (their `written_digest`); else None, and the caller reads it as evidence (`read_json`).
    Bytes this process encoded need neither the depth check nor a shape check: it held the
    document they encode (a large run reads its results back as the page draws them)."""
    if first_link(directory, rel) is not None:
        return None
    try:
        raw = read_regular(os.path.join(directory, rel), RECORD_MAX_BYTES)
    except OSError:
        return None
    if written_digest(raw) != digest:
        return None
    try:
        return decode_json(raw)
    except ValueError:
        return None


@dataclass(frozen=True)
class Listed:
    """One scenario as a run summary lists it."""

    identity: str
    passed: bool
    trials: tuple[bool, ...]  # each trial's verdict, in order
    entry: Mapping[str, Any]  # the summary's whole entry, as written


def _policy_from_text(text: Any) -> PassPolicy:
    """The `pass` policy a results file names (`PassPolicy.describe()`'s words); "all" when it
    names none."""
    words = str(text or "all").split()
    try:
        if words[:2] == ["at", "least"] and len(words) == 3:
            return PassPolicy("at-least", int(words[2]))
        if words[:1] == ["rate"] and len(words) == 2:
            return PassPolicy("rate", float(words[1]))
    except ValueError:
        pass
    return ALL


def _recorded_verdict(record: Any, verdicts: Sequence[bool]) -> bool:
    """The verdict a results record's trials make under the policy it names."""
    policy = _policy_from_text(record.get("pass_policy"))
    trials = record.get("trials") or []
    errored = any(isinstance(t, dict) and t.get("error") for t in trials)
    return policy.passes(verdicts, errored)


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _trial_flags(trials: Any) -> tuple[bool, ...] | None:
    if not isinstance(trials, list) or not trials:
        return None
    flags = [_flag(t.get("passed")) if isinstance(t, dict) else None for t in trials]
    return None if any(f is None for f in flags) else tuple(f for f in flags if f is not None)


def _listed(entry: Any, shown: str) -> Listed:
    # It names the scenario's results file beside it: an identity, never a path out of it.
    identity = entry.get("scenario") if isinstance(entry, dict) else entry
    try:
        if not isinstance(entry, dict) or not isinstance(identity, str):
            raise CachelintError("not an identity")
        validate_identity(identity, shown)
    except CachelintError:
        problem = f"lists {identity!r}, not a scenario identity (agent/tenant/scenario)"
        raise _refused(shown, problem) from None
    passed, trials = _flag(entry.get("passed")), _trial_flags(entry.get("trials"))
    if passed is None:
        raise _refused(shown, f"{identity}: 'passed' is {entry.get('passed')!r}, not true or false")
    if trials is None:
        raise _refused(shown, f"{identity}: 'trials' is not a list of trials with true or false")
    if passed != _recorded_verdict(entry, trials):
        raise _refused(shown, f"{identity}: 'passed' disagrees with its trials")
    return Listed(identity, passed, trials, entry)


@dataclass(frozen=True)
class Summary:
    """A validated run summary."""

    document: Mapping[str, Any]
    scenarios: tuple[Listed, ...]
    mutations: tuple[Mapping[str, Any], ...]

    @property
    def mode(self) -> str:
        return str(self.document.get("mode") or "")


def read_summary(directory: Path) -> Summary:
    """The run summary of the execution in `directory`, refused unless its verdicts are booleans
    that agree: each scenario's with its trials, the run's with its scenarios and mutations."""
    shown = str(directory / RUN_FILE)
    _, document = read_json(directory, RUN_FILE, SUMMARY_MAX_BYTES)
    if not isinstance(document, dict) or not isinstance(document.get("scenarios"), list):
        raise _refused(shown, "no list of 'scenarios'")
    mutations = document.get("mutations") or []
    if not isinstance(mutations, list) or not all(isinstance(m, dict) for m in mutations):
        raise _refused(shown, "'mutations' is not a list of findings")
    listed = tuple(_listed(e, shown) for e in document["scenarios"])
    seen: set[str] = set()
    for item in listed:
        if item.identity in seen:
            raise _refused(shown, f"lists {item.identity} twice")
        seen.add(item.identity)
    passed = _flag(document.get("passed"))
    if passed is None:
        raise _refused(shown, f"'passed' is {document.get('passed')!r}, not true or false")
    # A run may fail with every scenario passed (a budget, a baseline), never the other way.
    if passed and (mutations or not all(s.passed for s in listed)):
        raise _refused(shown, "'passed' is true, but a scenario failed or the cache was modified")
    return Summary(document, listed, tuple(mutations))


def read_record(directory: Path, listed: Listed) -> tuple[bytes, Mapping[str, Any]]:
    """The bytes and document of the results file of `listed`, refused unless it is that
    scenario's and says what the summary says of it (the same verdict, trial by trial)."""
    rel = f"{listed.identity}.json"
    shown = str(directory / rel)
    raw, record = read_json(directory, rel, RECORD_MAX_BYTES)
    if not isinstance(record, dict):
        raise _refused(shown, "not an object")
    missing = [key for key in _REQUIRED if record.get(key) is None]
    if missing:
        raise _refused(shown, f"no {missing[0]!r}")
    if not isinstance(record["trials"], list):
        raise _refused(shown, "'trials' is not a list")
    if record.get("scenario") != listed.identity:
        raise _refused(shown, f"is the results of {record.get('scenario')!r}")
    trials = _trial_flags(record.get("trials"))
    if _flag(record.get("passed")) is None or trials is None:
        raise _refused(shown, "'passed' or its trials' are not true or false")
    if record["passed"] != _recorded_verdict(record, trials):
        raise _refused(shown, "'passed' disagrees with its trials")
    if record["passed"] != listed.passed or trials != listed.trials:
        raise _refused(shown, f"disagrees with {RUN_FILE} on the verdict of {listed.identity}")
    return raw, record


def verified(directory: Path) -> Summary:
    """The run summary of a complete execution: every scenario it lists has its results file,
    agreeing with it."""
    summary = read_summary(directory)
    for listed in summary.scenarios:
        read_record(directory, listed)
    return summary
