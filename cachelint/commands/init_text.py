"""The texts `cachelint init` writes: the pre-commit entries, the GitHub Actions workflow and the
example (prompt, dataset, python target, the fake provider's script it is recorded from)."""

from __future__ import annotations

import json
from typing import Any

EXAMPLE_PROMPT_TEXT = (
    "You are the assistant of this project. Greet a new user in one friendly sentence that\n"
    "starts with Hello.\n"
)

EXAMPLE_SCENARIO: dict[str, Any] = {
    "description": (
        "Written by `cachelint init`: one scenario to replace with your own "
        "(docs/datasets.md). Recorded from cachelint's scripted fake provider."
    ),
    "system-file": "prompts/example.md",
    "input": "I just installed this project. Can you greet me?",
    "assert": [
        {"type": "icontains", "value": "hello"},
        {"type": "length", "max": 300},
    ],
}

# What the fake provider answers while init records the example.
EXAMPLE_SCRIPT: dict[str, Any] = {
    "model": "scripted-v1",
    "default": {"content": "Hello, and welcome: ask me anything about this project."},
}

EXAMPLE_TARGET_TEXT = '''\
"""The example's target, written by `cachelint init`: the code each scenario runs.

cachelint calls `answer(scenario, client)` for every scenario under eval-datasets/. `client`
points any provider SDK at cachelint's cache endpoint: `cachelint run` replays the recorded
answers offline, and `cachelint run --refresh-cache` passes the calls through to the target in
the config and records them. Replace the body with a call into your own agent, handing it an SDK
client made like this one.
"""

from __future__ import annotations

from typing import Any

import openai


def answer(scenario: Any, client: Any) -> str:
    sdk = openai.OpenAI(
        base_url=client.base_url,
        api_key=client.api_key,
        http_client=client.http_client(),
        max_retries=0,
    )
    reply = sdk.chat.completions.create(
        model=client.model, messages=[dict(m) for m in scenario.messages], temperature=0
    )
    return reply.choices[0].message.content or ""
'''


def dataset_text(scenario: dict[str, Any]) -> str:
    return json.dumps(scenario, indent=2) + "\n"


def precommit_block(url: str | None, commit: str | None, requested: str | None) -> str:
    """The `repos:` item(s) for cachelint's two hooks, indented as a top-level list item."""
    if url and commit:
        note = f"  # {requested}" if requested and requested != commit else ""
        return (
            "  # cachelint's hooks, from the commit this cachelint was installed from.\n"
            f"  - repo: {url}\n    rev: {commit}{note}\n    hooks:\n"
            "      - id: cachelint-check\n      - id: cachelint-watch\n"
        )
    return (
        "  # cachelint's hooks, run by the cachelint installed in the project's environment (the\n"
        "  # version it pins, so the hooks and CI lint alike): commit with that environment\n"
        "  # active. `python -I`: a json.py at the repository's top never shadows the stdlib's.\n"
        "  - repo: local\n    hooks:\n"
        "      - id: cachelint-check\n        name: cachelint check\n"
        "        entry: python -I -m cachelint.hook check\n        language: system\n"
        "        pass_filenames: false\n        always_run: true\n"
        "      - id: cachelint-watch\n        name: cachelint watch\n"
        "        entry: cachelint watch --staged\n        language: system\n"
        "        pass_filenames: false\n        always_run: true\n"
    )


_HEAD = """\
# Written by `cachelint init`: lint the committed LLM response cache, replay the evals offline
# from it (no model API key) and keep prompt changes behind a green run.
name: cachelint

on:
  push:
    branches: [@BRANCH@]
  pull_request:

permissions:
  contents: read

jobs:
  cachelint:
    runs-on: ubuntu-latest
    permissions:
      contents: read
      security-events: write  # upload-sarif: the findings go to code scanning
    steps:
      - uses: actions/checkout@v4
        with:
          fetch-depth: 0  # `cachelint watch --base` needs the merge base
      - uses: actions/setup-python@v5
        with:
          python-version: "3.12"
@SETUP@      - name: Install
        run: |
@INSTALL@
      - name: cachelint check
        run: cachelint check --format sarif > cachelint.sarif
      - name: Upload the findings to code scanning
        if: ${{ !cancelled() }}
        uses: github/codeql-action/upload-sarif@v3
        with:
          sarif_file: cachelint.sarif
          category: cachelint
"""

_PYTHON_REPLAY = """\
      - name: Replay the evals offline
        if: ${{ !cancelled() }}
        run: >-
          cachelint run --format github --execution ci
          --junit eval-results/junit.xml --html eval-results/report.html
      - name: Upload the JUnit and HTML reports
        if: ${{ !cancelled() }}
        uses: actions/upload-artifact@v4
        with:
          name: cachelint-reports
          path: |
            eval-results/junit.xml
            eval-results/report.html
"""

_DOTNET_SETUP = """\
      - uses: actions/setup-dotnet@v4
        with:
          dotnet-version: "9.0.x"
"""

_DOTNET_REPLAY = """\
      - name: Replay the evals offline (no byte of the cache may change)
        if: ${{ !cancelled() }}
        run: cachelint guard -- dotnet test
"""

_WATCH = """\
      - name: No prompt or dataset change without a green run
        if: ${{ !cancelled() && github.event_name == 'pull_request' }}
        run: cachelint watch --base "origin/$BASE_REF"
        env:
          BASE_REF: ${{ github.base_ref }}
"""


def workflow_text(*, branch: str, install: list[str], dotnet: bool) -> str:
    """The workflow: `install` are the Install step's shell lines."""
    text = (
        _HEAD.replace("@BRANCH@", branch)
        .replace("@SETUP@", _DOTNET_SETUP if dotnet else "")
        .replace("@INSTALL@", "\n".join(f"          {line}" for line in install))
    )
    return text + (_DOTNET_REPLAY if dotnet else _PYTHON_REPLAY) + _WATCH
