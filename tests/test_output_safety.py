"""Hostile strings never reach a terminal raw, and every suggested command survives a paste.

File names, config values and model answers come from pull requests and models: each test puts
escape sequences, C1 controls, bidi overrides or shell metacharacters where a person will read
them, through the real command line, and looks at the bytes that come out.
"""

from __future__ import annotations

import io
import json
import re
import shlex
import sys
from pathlib import Path

import pytest

from cachelint.display import json_dumps, sanitize, sanitize_block, shell_command
from cachelint.runner.options import RunOptions
from cachelint.runner.pipeline import run
from tests.conftest import commit_all, run_cachelint
from tests.fakes import fake_server

# Anything a terminal could act on: C0 (bar LF, checked per line), DEL, C1, bidi, separators.
RAW = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
    "\ud800-\udfff]"
)
ESC_NAME = "x\x1b[2J\x1b]0;pwned\x07.json"
HOSTILE = "a\x9bb\u202ec\u2028d\u061ce\x1b[31mf"


def assert_clean(*texts: str) -> None:
    for text in texts:
        assert not RAW.search(text), repr(text)


def test_sanitize_block_keeps_only_line_feeds() -> None:
    assert sanitize_block("one\r\ntwo\u2028three\n") == "one\\x0d\ntwo\\u2028three\n"


def test_json_dumps_escapes_what_a_terminal_would_act_on_and_round_trips() -> None:
    text = json_dumps({"v": HOSTILE + "\ud800"})
    assert_clean(text)
    assert json.loads(text) == {"v": HOSTILE + "\ud800"}


def test_shell_command_quotes_metacharacters() -> None:
    path = "eval-cache/x; echo PWNED $(id)"
    command = shell_command("git", "add", "--", path)
    assert command == "git add -- 'eval-cache/x; echo PWNED $(id)'"
    assert shlex.split(command) == ["git", "add", "--", path]


def test_error_line_shows_escape_sequences(tmp_path: Path, git_repo: Path) -> None:
    proc = run_cachelint(git_repo, "check", "--config", f"missing-{ESC_NAME}.toml")
    assert proc.returncode == 2
    assert proc.stderr.startswith("cachelint: error: ")
    assert "\\x1b[2J" in proc.stderr
    assert_clean(proc.stdout, proc.stderr)


def test_usage_error_shows_escape_sequences(git_repo: Path) -> None:
    proc = run_cachelint(git_repo, "check", "--select", "a,b", "--format", ESC_NAME)
    assert proc.returncode == 2
    assert_clean(proc.stdout, proc.stderr)


def _cache_repo(repo: Path, root: str = "eval-cache") -> Path:
    (repo / "pyproject.toml").write_text(
        f"[tool.cachelint]\ncache = {json.dumps(root)}\n", encoding="utf-8"
    )
    entry = repo / root / "cache" / "s" / "k" / "entry.json"
    entry.parent.mkdir(parents=True)
    entry.write_text("{}\n", encoding="utf-8")
    return entry


def test_guard_names_a_written_file_with_escapes_visibly(git_repo: Path) -> None:
    _cache_repo(git_repo)
    commit_all(git_repo)
    script = f"open('eval-cache/{ESC_NAME}', 'w').write('x')"
    proc = run_cachelint(git_repo, "guard", "--", sys.executable, "-c", script)
    assert proc.returncode == 1, proc.stderr
    assert "eval-cache/x\\x1b[2J\\x1b]0;pwned\\x07.json: eval-cache-mutated" in proc.stderr
    assert_clean(proc.stdout, proc.stderr)


def test_stamp_refusal_names_a_hostile_root_visibly(git_repo: Path) -> None:
    # (the written-stamp line is covered in test_stamp.py, where a stampable repo is built)
    _cache_repo(git_repo, root="cache\x1b[31m\u202e")
    commit_all(git_repo)
    proc = run_cachelint(git_repo, "stamp")
    assert proc.returncode == 2, proc.stdout
    assert "cache\\x1b[31m\\u202e" in proc.stderr
    assert_clean(proc.stdout, proc.stderr)


def test_fix_command_for_an_untracked_file_is_shell_quoted(git_repo: Path) -> None:
    _cache_repo(git_repo)
    commit_all(git_repo)
    name = "eval-cache/cache/s/k/x; echo PWNED $(id)"
    (git_repo / name).write_text("{}\n", encoding="utf-8")
    proc = run_cachelint(git_repo, "check", "--select", "eval-cache-untracked")
    assert proc.returncode == 1
    fix = re.search(r"run `([^`]*)`", proc.stdout)
    assert fix is not None, proc.stdout
    assert shlex.split(fix.group(1)) == ["git", "add", "--", name]


def _run_repo(repo: Path, url: str) -> None:
    (repo / "pyproject.toml").write_text(
        "[tool.cachelint]\n"
        'cache = "eval-cache"\n'
        "[tool.cachelint.target]\n"
        f'url = "{url}"\n'
        'provider = "cachelint-fake"\n'
        'model = "scripted-v1"\n'
        'api-key-env = "CACHELINT_TEST_KEY"\n',
        encoding="utf-8",
    )
    scenario = {"input": "say it", "assert": [{"type": "equals", "value": "something else"}]}
    path = repo / "eval-datasets" / "agent" / "tenant" / "hostile.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(scenario), encoding="utf-8")


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_run_report_shows_model_controls_visibly(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    monkeypatch.setenv("CACHELINT_NOW", "2026-01-15T10:00:00Z")
    monkeypatch.delenv("CACHELINT_TEST_KEY", raising=False)
    with fake_server({"rules": [], "default": {"content": HOSTILE}}) as fake:
        _run_repo(git_repo, fake.url)
        out, err = io.StringIO(), io.StringIO()
        rc = run(git_repo, RunOptions(refresh=True, fmt=fmt, execution="t"), out=out, err=err)
    assert rc == 1, out.getvalue()
    text = out.getvalue()
    assert_clean(*text.split("\n"), err.getvalue())
    if fmt == "json":
        trial = json.loads(text)["scenarios"][0]["trials"][0]
        # the decoded value is exact: the controls are escaped only in the JSON text
        assert "a\x9bb\u202ec\u2028d\u061ce" in trial["assertions"][0]["reason"]
    else:
        assert "\\x9b" in text and "\\u202e" in text
    for name in ("run.json", "report.html"):
        assert_clean(*(git_repo / "eval-results" / "t" / name).read_text().split("\n"))


def test_sanitize_is_the_one_sanitizer() -> None:
    from cachelint import reporters
    from cachelint.runner.reports import junit, text

    assert not hasattr(text, "neutralise") and not hasattr(junit, "neutralise")
    assert reporters.sanitize is sanitize


def test_sarif_message_text_shows_controls_as_escapes() -> None:
    from cachelint.findings import CheckSummary, Finding
    from cachelint.formats import FindingsFormat
    from cachelint.reporters import render

    finding = Finding("eval-cache/a\u202eb.json", "eval-cache-untracked", f"bad {HOSTILE}")
    summary = CheckSummary(roots=("eval-cache",), files=1, entries=0)
    document = json.loads(render(FindingsFormat.SARIF, [finding], summary, []))
    result = document["runs"][0]["results"][0]
    assert result["message"]["text"] == f"bad {sanitize(HOSTILE)}"
    # the location stays exact (percent-encoded), so code scanning finds the file
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == (
        "eval-cache/a%E2%80%AEb.json"
    )


def test_no_second_sanitizer_in_the_package() -> None:
    # A copy of the character class elsewhere drifts (one once missed U+2028 and surrogates).
    from tests.conftest import PROJECT

    copies = [
        path.relative_to(PROJECT).as_posix()
        for path in sorted((PROJECT / "cachelint").rglob("*.py"))
        # the class's signature is the bidi range; a list of single code points kept for another
        # reason (confine's HFS+-ignorable names) is not a sanitizer
        if "\\u202a-\\u202e" in path.read_text(encoding="utf-8").lower()
    ]
    assert copies == ["cachelint/display.py"]
