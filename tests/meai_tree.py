"""Storage roots written byte for byte as Microsoft.Extensions.AI.Evaluation 10.9.0 writes them.

What MEAI's source (dotnet/extensions v10.9.0, Reporting/CSharp/Storage and JsonSerialization)
does, and so what these helpers do:
- `JsonUtilities.Default.Options`: System.Text.Json, camelCase names, WriteIndented (two spaces,
  `"name": value`), the OS newline (`JsonSerializerOptions.NewLine` defaults to
  `Environment.NewLine`), no byte-order mark, no final newline; properties in declaration order.
- `DateTime.UtcNow` written as `yyyy-MM-ddTHH:mm:ss[.FFFFFFF]Z`: up to 7 fraction digits, trailing
  zeros trimmed, no fraction at all on a whole second.
- `DiskBasedResponseCache.Set`: `cache/<scenario>/<iteration>/<key>/entry.json`, then
  `contents.data`; the key is 96 uppercase hex characters (SHA-384).
- `DiskBasedResultStore.WriteResultsAsync`: `results/<execution>/<scenario>/<iteration>.json`.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

# JavaScriptEncoder.Default, which System.Text.Json uses unless told otherwise, escapes these
# ASCII characters besides the controls, and everything outside ASCII.
_STJ_ESCAPED = set("\"&'+<>`\\")


def stj_time(moment: datetime, ticks: int = 0) -> str:
    """A UTC DateTime as System.Text.Json writes it; `ticks` adds 100 ns units beyond the
    microsecond (DateTime's resolution is 7 digits, datetime's 6)."""
    utc = moment.astimezone(timezone.utc)
    fraction = f"{utc.microsecond:06d}{ticks}".rstrip("0")
    return utc.strftime("%Y-%m-%dT%H:%M:%S") + (f".{fraction}" if fraction else "") + "Z"


def _stj_string(text: str) -> str:
    out = []
    for char in text:
        if char == "\\":
            out.append("\\\\")
        elif char in _STJ_ESCAPED or not 0x20 <= ord(char) <= 0x7E:
            out.append("".join(f"\\u{unit:04X}" for unit in _utf16_units(char)))
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _utf16_units(char: str) -> list[int]:
    data = char.encode("utf-16-be")
    return [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]


def stj_indented(value: Any, newline: str = "\n", level: int = 0) -> str:
    """`value` as System.Text.Json writes it with WriteIndented (no final newline)."""
    pad = "  " * (level + 1)
    end = "  " * level
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [
            f"{pad}{_stj_string(k)}: {stj_indented(v, newline, level + 1)}"
            for k, v in value.items()
        ]
        return "{" + newline + ("," + newline).join(items) + newline + end + "}"
    if isinstance(value, list):
        if not value:
            return "[]"
        items = [pad + stj_indented(v, newline, level + 1) for v in value]
        return "[" + newline + ("," + newline).join(items) + newline + end + "]"
    if isinstance(value, str):
        return _stj_string(value)
    return json.dumps(value)


def meai_key(*parts: str) -> str:
    return hashlib.sha384("\0".join(parts).encode()).hexdigest().upper()


CREATED = datetime(2026, 8, 21, 9, 14, 24, 123790, tzinfo=timezone.utc)
WHOLE_SECOND = datetime(2026, 8, 21, 9, 14, 24, tzinfo=timezone.utc)


def write_entry(
    storage: Path,
    scenario: str,
    iteration: str,
    *,
    key: str | None = None,
    created: datetime = CREATED,
    ttl: timedelta = timedelta(days=3650),
    newline: str = "\n",
    answer: str = "Paris.",
) -> Path:
    """One response cache entry as `DiskBasedResponseCache.Set` leaves it; returns its
    directory."""
    key = key or meai_key(scenario, iteration, answer)
    directory = storage / "cache" / scenario / iteration / key
    directory.mkdir(parents=True, exist_ok=True)
    entry = {
        "scenarioName": scenario,
        "iterationName": iteration,
        "creation": stj_time(created),
        "expiration": stj_time(created + ttl),
    }
    (directory / "entry.json").write_bytes(stj_indented(entry, newline).encode())
    response = {
        "messages": [
            {"role": "assistant", "contents": [{"$type": "text", "text": answer}]},
        ],
        "responseId": "chatcmpl-" + key[:12].lower(),
        "modelId": "gpt-4o-mini-2024-07-18",
        "createdAt": "2026-08-21T09:14:23+00:00",
        "finishReason": "stop",
        "usage": {"inputTokenCount": 21, "outputTokenCount": 3, "totalTokenCount": 24},
    }
    (directory / "contents.data").write_bytes(stj_indented(response, newline).encode())
    return directory


def result_document(execution: str, scenario: str, iteration: str, created: datetime) -> Any:
    """A ScenarioRunResult as `DiskBasedResultStore` serialises it (camelCase, nulls left out)."""
    return {
        "scenarioName": scenario,
        "iterationName": iteration,
        "executionName": execution,
        "creationTime": stj_time(created),
        "messages": [{"role": "user", "contents": [{"$type": "text", "text": "Capital?"}]}],
        "modelResponse": {
            "messages": [{"role": "assistant", "contents": [{"$type": "text", "text": "Paris."}]}]
        },
        "evaluationResult": {
            "metrics": {
                "Equivalence": {
                    "$type": "numeric",
                    "value": 5,
                    "name": "Equivalence",
                    "interpretation": {"rating": "exceptional", "failed": False},
                }
            }
        },
        "chatDetails": {
            "turnDetails": [
                {
                    "latency": "00:00:00.0123790",
                    "model": "gpt-4o-mini",
                    "usage": {"inputTokenCount": 21, "outputTokenCount": 3},
                    "cacheKey": meai_key(scenario, iteration, "Paris."),
                    "cacheHit": True,
                }
            ]
        },
        "formatVersion": 1,
    }


def write_result(
    storage: Path,
    execution: str,
    scenario: str,
    iteration: str,
    *,
    created: datetime = CREATED,
    newline: str = "\n",
) -> Path:
    """One result as `DiskBasedResultStore.WriteResultsAsync` writes it; returns the file."""
    directory = storage / "results" / execution / scenario
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{iteration}.json"
    document = result_document(execution, scenario, iteration, created)
    path.write_bytes(stj_indented(document, newline).encode())
    return path
