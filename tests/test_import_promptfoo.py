"""`cachelint import promptfoo`: promptfoo's cache.json paired with `promptfoo eval -o out.json`,
imported with a dataset per test, then replayed offline by a plain chat target as hits.

One test runs promptfoo itself (`$PROMPTFOO_BIN`, else `.ci/promptfoo`, where .ci/run installs it,
else PATH; without node it skips, without promptfoo it skips locally and fails under CI=true);
the other writes cache.json in the exact shape promptfoo 0.121.20 writes it (keyv-file, values
double-encoded as JSON text), with answers the fake provider gave."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cachelint.cli import main
from tests.conftest import PROJECT
from tests.fakes import fake_server
from tests.helpers import do_run, node_or_skip, recorded_entries, replayed_offline

SCRIPT: dict[str, Any] = {
    "rules": [{"match": {"contains": "refund"}, "reply": {"content": "Refunds take 30 days."}}],
    "default": {"content": "I don't know."},
}
TARGET = """[tool.cachelint]
cache = "eval-cache"
[tool.cachelint.target]
url = "http://127.0.0.1:9/v1"
provider = "cachelint-fake"
model = "gpt-4o-mini"
api-key-env = "CACHELINT_TEST_KEY"
"""
TESTS = [
    {"description": "refund policy", "vars": {"question": "How do refunds work?"}},
    {"description": "shipping", "vars": {"question": "How long is shipping?"}},
]


def _body(question: str) -> dict[str, Any]:
    # What promptfoo 0.121.20's OpenAI chat provider sent the fake provider for these tests.
    return {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": f"Answer briefly: {question}"}],
        "max_tokens": 1024,
        "temperature": 0,
    }


def _write_promptfoo_files(repo: Path, expire_ms: int) -> tuple[Path, Path]:
    """cache.json and out.json as promptfoo writes them, the answers from the fake provider."""
    from cachelint.devtools.fake_provider import FakeProvider, parse_script

    provider = FakeProvider(parse_script(SCRIPT, source="<inline script>"))
    rows, results = [], []
    for index, test in enumerate(TESTS):
        body = _body(test["vars"]["question"])
        _, headers, data = provider.respond(
            "POST", "/v1/chat/completions", {}, json.dumps(body).encode()
        )
        answer = json.loads(data)
        fetched = {"data": answer, "status": 200, "statusText": "OK", "headers": headers}
        inner = json.dumps({"value": json.dumps(fetched), "expires": expire_ms})
        rows.append([f"keyv:fetch:v3:{index:064x}", {"expire": expire_ms, "value": inner}])
        results.append(
            {
                "provider": {"id": "openai:chat:gpt-4o-mini", "label": ""},
                "prompt": {"raw": body["messages"][0]["content"], "label": "p"},
                "response": {"output": answer["choices"][0]["message"]["content"]},
                "testCase": {
                    **test,
                    "assert": [{"type": "contains", "value": "30 days"}] if index == 0 else [],
                },
                "testIdx": index,
                "vars": test["vars"],
            }
        )
    cache = repo / "pf-cache" / "cache.json"
    cache.parent.mkdir()
    cache.write_text(json.dumps({"cache": rows, "lastExpire": expire_ms}))
    config = {"providers": [{"id": "openai:chat:gpt-4o-mini", "config": {"temperature": 0}}]}
    output = repo / "out.json"
    output.write_text(json.dumps({"results": {"version": 3, "results": results}, "config": config}))
    return cache, output


def _import(repo: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    monkeypatch.chdir(repo)
    return main(["import", "promptfoo", *args])


def test_a_promptfoo_cache_imports_with_datasets_and_replays(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (git_repo / "pyproject.toml").write_text(TARGET)
    cache, output = _write_promptfoo_files(git_repo, expire_ms=4_102_444_800_000)  # year 2100
    args = ["--cache", str(cache), "--output", str(output), "--into", "support/acme"]
    rc = _import(git_repo, monkeypatch, *args)
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "imported 2 entries from 2 promptfoo results" in out
    dataset = json.loads((git_repo / "eval-datasets/support/acme/refund-policy.json").read_text())
    assert dataset["options"] == {"max_tokens": 1024, "temperature": 0}
    assert dataset["assert"] == [{"type": "contains", "value": "30 days"}]
    (git_repo / "eval-datasets/support/acme/shipping.json").write_text(
        json.dumps(
            {
                **dataset,
                "messages": _body(TESTS[1]["vars"]["question"])["messages"],
                "assert": [{"type": "contains", "value": "know"}],
            }
        )
    )
    replayed_offline(git_repo, "support/acme/refund-policy", calls=1)
    assert {e["model"] for e in recorded_entries(git_repo)} == {"gpt-4o-mini"}


def test_expired_promptfoo_answers_are_listed_not_imported(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (git_repo / "pyproject.toml").write_text(TARGET)
    cache, output = _write_promptfoo_files(git_repo, expire_ms=1_000)
    args = ["--cache", str(cache), "--output", str(output), "--into", "support/acme"]
    assert _import(git_repo, monkeypatch, *args) == 1
    out = capsys.readouterr().out
    assert out.count("expired in promptfoo's cache (--include-expired imports it)") == 2, out
    assert not (git_repo / "eval-cache").exists()
    assert _import(git_repo, monkeypatch, *args, "--include-expired") == 0


def promptfoo_or_skip() -> str:
    """promptfoo's command; CI has node, and .ci/run installs promptfoo, so CI cannot skip."""
    node_or_skip()
    pinned = PROJECT / ".ci/promptfoo/node_modules/.bin/promptfoo"
    found = os.environ.get("PROMPTFOO_BIN") or (str(pinned) if pinned.is_file() else None)
    found = found or shutil.which("promptfoo")
    if found is not None:
        return found
    if os.environ.get("CI"):
        pytest.fail("CI needs promptfoo; .ci/run installs it in .ci/promptfoo")
    pytest.skip("needs promptfoo: cd .ci/promptfoo && npm ci --omit=optional --ignore-scripts")


def test_a_cache_promptfoo_wrote_imports_and_replays(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    promptfoo = promptfoo_or_skip()
    (git_repo / "pyproject.toml").write_text(TARGET)
    tests = "\n".join(
        f'  - description: {t["description"]}\n    vars: {{question: "{t["vars"]["question"]}"}}\n'
        '    assert: [{type: icontains, value: "days"}]'
        for t in TESTS[:1]
    )
    with fake_server(SCRIPT) as fake:
        (git_repo / "promptfooconfig.yaml").write_text(
            'prompts:\n  - "Answer briefly: {{question}}"\nproviders:\n'
            f"  - id: openai:chat:gpt-4o-mini\n    config:\n      apiBaseUrl: {fake.url}\n"
            f"      temperature: 0\ntests:\n{tests}\n"
        )
        env = {
            **os.environ,
            "PROMPTFOO_CACHE_PATH": str(git_repo / "pf-cache"),
            "OPENAI_API_KEY": "sk-proj-" + "x" * 32,
            "PROMPTFOO_DISABLE_TELEMETRY": "1",
            "PROMPTFOO_DISABLE_UPDATE": "1",
            "PROMPTFOO_CONFIG_DIR": str(git_repo / "pf-home"),
            # 0.121.20's file logger now and then crashes it at exit (see benchmarks/bench_run.py).
            "PROMPTFOO_DISABLE_DEBUG_LOG": "1",
            "PROMPTFOO_DISABLE_ERROR_LOG": "1",
        }
        done = subprocess.run(
            [promptfoo, "eval", "-o", "out.json", "--no-progress-bar"],
            cwd=git_repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        sent = [r.body for r in fake.requests]
    assert sent == [_body(TESTS[0]["vars"]["question"])]  # the request the importer rebuilds
    args = ["--cache", "pf-cache/cache.json", "--output", "out.json", "--into", "support/acme"]
    assert _import(git_repo, monkeypatch, *args) == 0, capsys.readouterr().out
    assert do_run(git_repo).rc == 0
    replayed_offline(git_repo, "support/acme/refund-policy", calls=1)
