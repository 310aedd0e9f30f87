"""The replay fast paths must be invisible: same key bytes, same hits, same corrupt-entry errors."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
import rfc8785

from cachelint.canonical import canonical_bytes
from cachelint.errors import CachelintError, CorruptEntry
from cachelint.fsutil import TEMP_PREFIX
from cachelint.runner.dataset import parse_scenario
from cachelint.runner.engine import ResultWriter, ScenarioResult
from cachelint.store import CONTENTS_FILE, ENTRY_FILE, Store

_CHARS = ['"', "\\", "\b", "\f", "\n", "\r", "\t", "\x00", "\x1f", "\x7f", "a", "Z", "é", "€",
          "\u2028", "\ue000", "\uffff", "😀", "𝄞", " ", "/", "<"]  # fmt: skip


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(_CHARS) for _ in range(rng.randint(0, 6)))


def _value(rng: random.Random, depth: int = 0) -> Any:
    pick = rng.randint(0, 9 if depth < 4 else 5)
    if pick == 0:
        return None
    if pick == 1:
        return rng.choice([True, False])
    if pick == 2:
        return rng.choice([0, -1, 7, 2**53 - 1, -(2**53) + 1, 10**15])
    if pick == 3:
        return rng.choice([0.0, -0.0, 1.5, 1e21, 1e-7, 0.1, 123456789.125, 5e-324])
    if pick <= 5:
        return _text(rng)
    if pick <= 7:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {_text(rng): _value(rng, depth + 1) for _ in range(rng.randint(0, 5))}


def test_canonical_bytes_equal_rfc8785_on_random_values() -> None:
    rng = random.Random(8785)
    for _ in range(3000):
        value = _value(rng)
        assert canonical_bytes(value) == rfc8785.dumps(value), value


@pytest.mark.parametrize(
    "value",
    [
        {"\ue000": 1, "😀": 2, "a": 3},  # UTF-16 order differs from code-point order here
        {"messages": [{"role": "user", "content": 'x\u0001\n"y\\'}], "n": 2**53 - 1},
        ("tuple", [True, None]),
    ],
)
def test_canonical_bytes_edge_cases(value: Any) -> None:
    assert canonical_bytes(value) == rfc8785.dumps(value)


@pytest.mark.parametrize("value", [2**53, {"x": float("nan")}, "\ud800", {1: "int key"}])
def test_canonical_bytes_still_refuses_what_rfc8785_refuses(value: Any) -> None:
    with pytest.raises(ValueError, match="not canonicalisable"):
        canonical_bytes(value)


KEY = "ab" * 32


def _recorded(tmp_path: Path) -> tuple[Store, Path]:
    store = Store(tmp_path / "eval-cache")
    directory = store.put("a/t/s", KEY, {"messages": []}, {"choices": []}, provider="p", model="m")
    return store, directory


def test_store_get_verifies_the_full_key(tmp_path: Path) -> None:
    store, _ = _recorded(tmp_path)
    hit = store.get("a/t/s", KEY)
    assert hit is not None and hit.response == {"choices": []}
    other = KEY[:16] + "cd" * 24  # same directory, another full key: a miss, never its answer
    assert store.get("a/t/s", other) is None
    assert store.get("a/t/other", KEY) is None


def test_store_get_raises_corrupt_entries(tmp_path: Path) -> None:
    store, directory = _recorded(tmp_path)
    (directory / CONTENTS_FILE).unlink()
    with pytest.raises(CorruptEntry, match="contents.data is missing"):
        store.get("a/t/s", KEY)
    (directory / ENTRY_FILE).write_text("{not json", encoding="utf-8")
    with pytest.raises(CorruptEntry, match="entry.json is not valid JSON"):
        store.get("a/t/s", KEY)
    (directory / ENTRY_FILE).write_text("[" * 200_000, encoding="utf-8")
    with pytest.raises(CorruptEntry, match="entry.json is not valid JSON .nested too deeply"):
        store.get("a/t/s", KEY)


def test_store_get_refuses_contents_edited_after_recording(tmp_path: Path) -> None:
    store, directory = _recorded(tmp_path)
    (directory / CONTENTS_FILE).write_text('{"choices": ["edited by hand"]}\n', encoding="utf-8")
    with pytest.raises(CorruptEntry, match="does not match the blake3 recorded in entry.json"):
        store.get("a/t/s", KEY)


def _result(tmp_path: Path, identity: str) -> ScenarioResult:
    data = {"input": "hi", "assert": [{"type": "contains", "value": "hi"}]}
    scenario = parse_scenario(tmp_path, identity, f"eval-datasets/{identity}.json", data)
    return ScenarioResult(scenario, ())


def test_result_writer_files_exist_after_close(tmp_path: Path) -> None:
    directory = tmp_path / "results" / "x"
    names = [f"a{i % 3}/t/s{i}" for i in range(50)]
    with ResultWriter(directory, execution="x", mode="replay") as writer:
        for name in names:
            writer.write(_result(tmp_path, name))
    for name in names:
        record = json.loads((directory / f"{name}.json").read_text(encoding="utf-8"))
        assert record["scenario"] == name
    leftovers = [p for p in directory.rglob("*") if TEMP_PREFIX in p.name]
    assert leftovers == []


def test_result_writer_failure_is_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "results").write_text("a file where the results directory should be\n")
    writer = ResultWriter(tmp_path / "results" / "x", execution="x", mode="replay")
    writer.write(_result(tmp_path, "a/t/s"))
    with pytest.raises(CachelintError, match=r"a/t/s\.json: cannot write the results file") as err:
        writer.close()
    assert "\n" not in str(err.value)
