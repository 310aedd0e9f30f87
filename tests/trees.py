"""Valid trees the tests start from and then break: a copy of the bundled cache (recorded through
cachelint's own write path) and entries written byte for byte as MEAI 10.9.0 writes them."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.conftest import PROJECT, commit_all, run_cachelint

BUNDLED = PROJECT / "eval-cache" / "cache"
REFUND = "eval-cache/cache/support/acme/refund"
MEAI_KEY = "6B3F0A5E9C2D4F8A" * 6  # 96 uppercase hex characters, as MEAI names entries
PROPS = """<Project>
  <ItemGroup>
    <PackageVersion Include="Microsoft.Extensions.AI.Evaluation" Version="10.9.0" />
  </ItemGroup>
</Project>
"""


def copy_bundled(repo: Path) -> Path:
    """The bundled cache in `repo`, pinned, stamped (sealed) and committed."""
    shutil.copytree(BUNDLED, repo / "eval-cache" / "cache")
    (repo / ".gitattributes").write_text("eval-cache/** -text\n")
    (repo / "requirements.txt").write_text("cachelint==0.1.0\n")
    (repo / "cachelint.toml").write_text("ttl-days = 3650\n")
    stamped = run_cachelint(repo, "stamp")
    assert stamped.returncode == 0, stamped.stderr
    commit_all(repo, "record")
    return repo


def entry_dirs(repo: Path, scenario: str = REFUND) -> list[Path]:
    return sorted(p for p in (repo / scenario).iterdir() if p.is_dir())


def write_meai(repo: Path, scenario: str, iteration: str, key: str, *, at: str = "") -> Path:
    """One entry as MEAI 10.9.0's DiskBasedResponseCache writes it: System.Text.Json indented
    (two spaces), camelCase, dates trimmed of trailing zeros, no final newline."""
    directory = repo / "eval-cache" / "cache" / (at or f"{scenario}/{iteration}") / key
    directory.mkdir(parents=True)
    entry = (
        "{\n"
        f'  "scenarioName": "{scenario}",\n'
        f'  "iterationName": "{iteration}",\n'
        '  "creation": "2026-08-21T09:14:24.12379Z",\n'
        '  "expiration": "2036-08-21T09:14:24Z"\n'
        "}"
    )
    contents = (
        "{\n"
        '  "messages": [\n'
        "    {\n"
        '      "role": "assistant",\n'
        '      "contents": [\n'
        "        {\n"
        '          "$type": "text",\n'
        '          "text": "Your refund is on its way."\n'
        "        }\n"
        "      ]\n"
        "    }\n"
        "  ],\n"
        '  "responseId": "chatcmpl-1",\n'
        '  "modelId": "gpt-4o-mini"\n'
        "}"
    )
    (directory / "entry.json").write_text(entry, newline="")
    (directory / "contents.data").write_text(contents, newline="")
    return directory
