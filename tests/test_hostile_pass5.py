"""A fifth hostile pass (issue 37's remaining items): the configured key in a run's outputs and in
the other commands' findings, and the last low cases of the fourth pass. Each test fails on the
code before its fix."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from cachelint.commands.guard import guard
from cachelint.commands.watch import watch
from tests.conftest import PROJECT, commit_all, git, run_cachelint
from tests.helpers import BASIC, DEAD, do_run, make_gated_repo, record, refund, write_repo

# Built from pieces so this file never holds a literal key; no provider's format.
KEY = "mycorp-" + "3f9a0c1b2d4e6f8a7b5c3d1e"


def _recorded(repo: Path) -> Path:
    write_repo(repo, DEAD, BASIC)
    outcome, _ = record(repo)
    assert outcome.rc == 0, outcome.out + outcome.err
    (repo / ".gitignore").write_text("eval-results/\n", encoding="utf-8")
    commit_all(repo, "recorded")
    return repo


def _leaks(text: str) -> bool:
    """The key, or enough of its start to count (a value cut short), in `text`."""
    return KEY[:12] in text or json.dumps(KEY)[1:-1] in text


def test_run_masks_the_configured_key_in_every_output(git_repo: Path, recording_env: None) -> None:
    """A dataset's input holding the configured key's value (no provider's shape): the replay
    misses and its explanation quotes the input, in every report of the run."""
    repo = _recorded(git_repo)
    dataset = repo / "eval-datasets/support/acme/refund.json"
    data = json.loads(dataset.read_text(encoding="utf-8"))
    data["input"] = f"How do refunds work? token {KEY}"
    dataset.write_text(json.dumps(data), encoding="utf-8")
    # One long line: the miss explanation cuts it short, in the middle of the key.
    long = repo / "eval-datasets/support/globex/refund.json"
    other = json.loads(long.read_text(encoding="utf-8"))
    other["input"] = "How do refunds work? " + "x" * 20 + KEY + " and more" * 5
    long.write_text(json.dumps(other), encoding="utf-8")
    commit_all(repo, "a key in a dataset")
    env = {"CACHELINT_TEST_KEY": KEY}
    for fmt in ("text", "json", "markdown", "github"):
        page = repo.parent / f"{fmt}.html"
        proc = run_cachelint(
            repo, "run", "--execution", fmt, "--format", fmt, "--html", str(page), env=env
        )
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "cache miss" in proc.stdout + page.read_text(encoding="utf-8"), fmt
        assert not _leaks(proc.stdout + proc.stderr), fmt
        assert not _leaks(page.read_text(encoding="utf-8")), fmt
        written = [p for p in (repo / "eval-results" / fmt).rglob("*") if p.is_file()]
        assert {p.name for p in written} >= {"run.json", "report.html", "refund.json"}
        for path in written:
            assert not _leaks(path.read_text(encoding="utf-8")), path
    shown = json.loads((repo / "eval-results/json/support/acme/refund.json").read_text())
    assert "myco... (31 characters)" in shown["trials"][0]["error"]
    cut = json.loads((repo / "eval-results/json/support/globex/refund.json").read_text())
    assert "xmyco... (31 characters)'" in cut["trials"][0]["error"]  # 'mycorp-3f9a0c1b2d4e'
    # What it masks: only the key; without it configured, the input is shown as it is.
    proc = run_cachelint(repo, "run", "--execution", "unset", "--format", "json")
    assert KEY in proc.stdout


# ---- guard, watch and run's canary print findings with the key masked ---------------------------


def test_guard_masks_the_configured_key_in_a_changed_path(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = git_repo / "eval-cache" / "cache" / "scenario" / "0123456789abcdef"
    entry.mkdir(parents=True)
    (entry / "entry.json").write_text("{}\n")
    (git_repo / "pyproject.toml").write_text('[tool.cachelint]\ncache = "eval-cache"\n')
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    out = io.StringIO()
    code = f"import pathlib; pathlib.Path({str(entry / KEY)!r}).write_text('x')"
    rc = guard(git_repo, config_path=None, command=[sys.executable, "-c", code], out=out)
    assert rc == 1
    assert "eval-cache-mutated: added by" in out.getvalue()
    assert not _leaks(out.getvalue()) and "myco... (31 characters)" in out.getvalue()


def test_watch_masks_the_configured_key_in_a_watched_path(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_gated_repo(git_repo)
    (repo / "prompts" / f"{KEY}.txt").write_text("extra\n")
    git(repo, "add", "prompts")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    for staged in (True, False):
        out = io.StringIO()
        rc = watch(repo, config_path=None, staged=staged, base=None, out=out)
        assert rc == 1
        assert "eval-green-stale: watched file new since" in out.getvalue()
        assert not _leaks(out.getvalue()), staged


KEYED_MUTATOR = """
from pathlib import Path


def answer(scenario, client):
    reply = client.chat(scenario.messages)
    if client.mode.value == "replay":
        root = Path(__file__).parent / "eval-cache" / "cache" / "support" / "acme"
        (root / "KEY.json").write_text("{}")
    return reply
"""


def test_run_s_canary_masks_the_configured_key_in_a_changed_path(
    git_repo: Path, recording_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_repo(
        git_repo,
        DEAD,
        {"support/acme/refund": refund(prompt="prompts/acme.md")},
        target='type = "python"\nfunction = "mutator_agent:answer"\n',
        files={"mutator_agent.py": KEYED_MUTATOR.replace("KEY", KEY)},
    )
    assert record(git_repo)[0].rc == 0
    monkeypatch.setenv("CACHELINT_TEST_KEY", KEY)
    for fmt in ("text", "json"):
        (git_repo / "eval-cache" / "cache" / "support" / "acme" / f"{KEY}.json").unlink(
            missing_ok=True
        )
        outcome = do_run(git_repo, fmt=fmt, execution=fmt)
        assert outcome.rc == 1
        assert "added by `cachelint run` (mode replay)" in outcome.out
        assert not _leaks(outcome.out + outcome.err), fmt
        page = git_repo / "eval-results" / fmt / "report.html"
        assert not _leaks(page.read_text(encoding="utf-8"))


# ---- init reads the repository's files as every reader does ------------------------------------

INIT_FILES = (".pre-commit-config.yaml", ".gitattributes", ".gitignore", "pyproject.toml")


@pytest.mark.parametrize("name", INIT_FILES)
def test_init_refuses_a_committed_link_without_printing_its_target(
    git_repo: Path, tmp_path: Path, name: str
) -> None:
    secret = tmp_path / "outside.txt"
    secret.write_text("repos: []\nPRIVATE-TEXT-outside-the-repository\n", encoding="utf-8")
    (git_repo / name).symlink_to(secret)
    commit_all(git_repo, "a link")
    proc = run_cachelint(git_repo, "init")
    output = proc.stdout + proc.stderr
    assert proc.returncode == 2, output
    assert "PRIVATE-TEXT" not in output and "Traceback" not in output
    assert name in output and len(proc.stderr.strip().splitlines()) == 1, output


@pytest.mark.parametrize("name", (".gitattributes", ".gitignore"))
def test_init_refuses_a_fifo_instead_of_waiting_on_it(git_repo: Path, name: str) -> None:
    os.mkfifo(git_repo / name)
    proc = subprocess.run(
        [sys.executable, "-m", "cachelint", "init"],
        cwd=git_repo,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"{name}: " in proc.stderr and "FIFO" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


# ---- an http target's error excerpt is masked before it is cut ---------------------------------


class _Refuses(BaseHTTPRequestHandler):
    """Answers 401 with a body that echoes the key just across the excerpt's 200 characters."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        data = ("e" * 190 + KEY).encode()
        self.send_response(401)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_args: object) -> None:
        pass


def test_an_http_target_s_error_excerpt_holds_no_part_of_the_key() -> None:
    from cachelint.config import from_table
    from cachelint.runner.httptarget import HttpTransport
    from cachelint.runner.providers.transport import TransportError

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refuses)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/ask"
    target = {"type": "http", "url": url, "method": "post", "api-key-env": "APP_KEY"}
    config = from_table(Path("/repo"), {"target": target}, "cachelint.toml")
    transport = HttpTransport(config.target, KEY)
    try:
        with pytest.raises(TransportError) as raised:
            transport.send(url, {"question": "refunds?"})
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
    assert "HTTP 401" in str(raised.value) and "e" * 190 + "***" in str(raised.value)
    assert KEY[:4] not in str(raised.value)


# ---- green --from-results reads no committed execution ------------------------------------------


def test_green_refuses_an_execution_directory_git_tracks(
    git_repo: Path, recording_env: None
) -> None:
    repo = _recorded(git_repo)
    for name in ("forged", "real"):
        proc = run_cachelint(repo, "run", "--execution", name)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    # A pull request commits one file of an execution (a forged run.json would do).
    git(repo, "add", "-f", "eval-results/forged/run.json")
    commit_all(repo, "a committed execution")
    record = (repo / ".eval-green.json").read_bytes()
    proc = run_cachelint(repo, "green", "--from-results", "forged")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "eval-results/forged is tracked by git (eval-results/forged/run.json)" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert (repo / ".eval-green.json").read_bytes() == record
    proc = run_cachelint(repo, "green", "--from-results", "real")
    assert proc.returncode == 0, proc.stdout + proc.stderr


# ---- diff --before refuses a linked execution, as report --execution does ----------------------


def test_diff_refuses_a_linked_before_execution(git_repo: Path, tmp_path: Path) -> None:
    repo = _recorded(git_repo)
    proc = run_cachelint(repo, "run", "--execution", "elsewhere")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    away = tmp_path / "outside"
    (repo / "eval-results" / "elsewhere").rename(away)
    (repo / "eval-results" / "linked").symlink_to(away, target_is_directory=True)
    proc = run_cachelint(repo, "diff", "--base", "HEAD", "--before", "linked")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "eval-results/linked" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    (repo / "eval-results" / "linked").unlink()
    away.rename(repo / "eval-results" / "linked")
    assert run_cachelint(repo, "diff", "--base", "HEAD", "--before", "linked").returncode == 0
