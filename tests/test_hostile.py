"""Hostile input (issue 14): every case of its "Why", each built in a temporary repository.

A symlink out of the repository, a config path into `.git`, a target that goes live in replay, a
FIFO, a catastrophic regex, deep nesting, lone surrogates and undecodable names: each gives one
error line, a finding or a failed scenario, never a hang, an exit 3 or a byte read from or
written to outside the repository.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import blake3
import pytest

from cachelint.childproc import module_command
from cachelint.netguard import NetworkRefused, allow_loopback_port, disallow_loopback_port
from cachelint.netguard import replay_only as armed
from tests.conftest import PROJECT, commit_all, git, run_cachelint
from tests.fakes import fake_server
from tests.helpers import (
    DEAD,
    SCRIPT,
    cli,
    do_run,
    entry_files,
    plant_shadows,
    record,
    refund,
    write_repo,
)
from tests.helpers import RUN_NOW as NOW
from tests.trees import copy_bundled

OUTSIDE_TEXT = "root:x:0:0:OUTSIDE-SECRET-LINE:/root:/bin/bash\n"
ACME = {"support/acme/refund": refund(prompt="prompts/acme.md")}


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CACHELINT_TEST_KEY", raising=False)
    monkeypatch.delenv("CACHELINT_EXECUTION", raising=False)
    monkeypatch.setenv("CACHELINT_NOW", NOW)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file outside the repository that nothing may read."""
    path = tmp_path / "outside" / "passwd"
    path.parent.mkdir()
    path.write_text(OUTSIDE_TEXT, encoding="utf-8")
    return path


def recorded_repo(repo: Path) -> Path:
    write_repo(repo, DEAD, ACME)
    assert record(repo)[0].rc == 0
    commit_all(repo)
    return repo


def all_text_under(root: Path) -> str:
    return "".join(
        p.read_text(encoding="utf-8", errors="replace")
        for p in root.rglob("*")
        if p.is_file() and not p.is_symlink()
    )


def set_config(repo: Path, extra: str) -> None:
    pyproject = repo / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    pyproject.write_text(
        text.replace('cache = "eval-cache"\n', 'cache = "eval-cache"\n' + extra), encoding="utf-8"
    )


# ---- confinement --------------------------------------------------------------------------------


def test_prompt_file_symlinked_outside_is_refused_and_never_read(
    git_repo: Path,
    outside: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    recorded_repo(git_repo)
    (git_repo / "prompts/acme.md").unlink()
    (git_repo / "prompts/acme.md").symlink_to(outside)
    for args in ((), ("--refresh-cache",)):
        outcome = cli(git_repo, monkeypatch, capsys, *args)
        assert outcome.rc == 2
        assert "prompts/acme.md" in outcome.err and "symbolic link" in outcome.err
        assert len(outcome.err.strip().splitlines()) == 1
        assert "OUTSIDE-SECRET" not in outcome.out + outcome.err
    assert "OUTSIDE-SECRET" not in all_text_under(git_repo)


def test_dataset_file_symlinked_outside_is_refused(
    git_repo: Path,
    outside: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    recorded_repo(git_repo)
    (git_repo / "eval-datasets/support/acme/leak.json").symlink_to(outside)
    outcome = cli(git_repo, monkeypatch, capsys)
    assert outcome.rc == 2
    assert "eval-datasets/support/acme/leak.json" in outcome.err
    assert "symbolic link" in outcome.err and "OUTSIDE-SECRET" not in outcome.err


def test_datasets_root_and_dataset_directory_symlinks_are_refused(
    git_repo: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    recorded_repo(git_repo)
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "x").mkdir(parents=True)
    (git_repo / "eval-datasets/support/evil").symlink_to(elsewhere, target_is_directory=True)
    outcome = cli(git_repo, monkeypatch, capsys)
    assert outcome.rc == 2 and "support/evil" in outcome.err and "symbolic link" in outcome.err
    (git_repo / "eval-datasets/support/evil").unlink()
    os.rename(git_repo / "eval-datasets", tmp_path / "real-datasets")
    (git_repo / "eval-datasets").symlink_to(tmp_path / "real-datasets", target_is_directory=True)
    outcome = cli(git_repo, monkeypatch, capsys)
    assert outcome.rc == 2
    assert "datasets eval-datasets: is a symbolic link" in outcome.err


def test_cache_scenario_directory_symlinked_outside_is_neither_replayed_nor_recorded_into(
    git_repo: Path, tmp_path: Path
) -> None:
    recorded_repo(git_repo)
    scenario_dir = git_repo / "eval-cache/cache/support/acme/refund"
    moved = tmp_path / "moved-scenario"
    os.rename(scenario_dir, moved)
    scenario_dir.symlink_to(moved, target_is_directory=True)
    before = sorted(p.name for p in moved.iterdir())
    replayed = do_run(git_repo)
    assert replayed.rc == 1
    assert "eval-cache/cache/support/acme/refund is a symbolic link" in replayed.out
    assert "[cache hit]" not in replayed.out
    recorded, requests = record(git_repo)
    assert recorded.rc == 1 and requests == 0
    assert sorted(p.name for p in moved.iterdir()) == before  # nothing written outside


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        ('green-record = ".git/config"\n', "lies inside a .git directory"),
        ('results = ".git"\n', "lies inside a .git directory"),
        ('results = ".git/hooks"\n', "lies inside a .git directory"),
    ],
)
def test_config_paths_into_git_are_config_errors(
    git_repo: Path,
    extra: str,
    words: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    recorded_repo(git_repo)
    config_before = (git_repo / ".git/config").read_bytes()
    set_config(git_repo, extra)
    outcome = cli(git_repo, monkeypatch, capsys)
    assert outcome.rc == 2 and words in outcome.err
    assert (git_repo / ".git/config").read_bytes() == config_before
    assert not (git_repo / ".git/hooks/test").exists()


@pytest.mark.parametrize(
    ("cache", "words"),
    [
        ('".git"', "inside a .git directory"),
        ('["eval-cache", "eval-cache"]', "lists 'eval-cache' twice"),
        ('["eval-cache", "eval-cache/cache"]', "lies inside root 'eval-cache'"),
    ],
)
def test_cache_roots_that_are_git_repeat_or_nest_are_config_errors(
    git_repo: Path, cache: str, words: str
) -> None:
    recorded_repo(git_repo)
    text = (git_repo / "pyproject.toml").read_text(encoding="utf-8")
    text = text.replace('cache = "eval-cache"', f"cache = {cache}")
    (git_repo / "pyproject.toml").write_text(text, encoding="utf-8")
    for command in ("check", "run", "stamp", "watch"):
        proc = run_cachelint(git_repo, command)
        assert proc.returncode == 2, (command, proc.stderr)
        assert words in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_green_record_onto_a_tracked_file_is_refused_and_the_file_kept(git_repo: Path) -> None:
    recorded_repo(git_repo)
    set_config(git_repo, 'green-record = "prompts/acme.md"\n')
    commit_all(git_repo)
    before = (git_repo / "prompts/acme.md").read_bytes()
    proc = run_cachelint(git_repo, "run")
    assert proc.returncode == 2
    assert "green-record prompts/acme.md: exists and is not a green record" in proc.stderr
    assert (git_repo / "prompts/acme.md").read_bytes() == before


def test_results_symlinked_into_the_cache_root_is_refused(git_repo: Path) -> None:
    recorded_repo(git_repo)
    shutil.rmtree(git_repo / "eval-results")
    (git_repo / "eval-results").symlink_to(git_repo / "eval-cache", target_is_directory=True)
    before = entry_files(git_repo)
    proc = run_cachelint(git_repo, "run")
    assert proc.returncode == 2
    assert "results eval-results: is a symbolic link" in proc.stderr
    assert entry_files(git_repo) == before
    assert git(git_repo, "status", "--porcelain", "--", "eval-cache") == ""


def test_reports_through_links_into_git_or_onto_tracked_files_are_refused(
    git_repo: Path, tmp_path: Path
) -> None:
    recorded_repo(git_repo)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (git_repo / "reports").symlink_to(elsewhere, target_is_directory=True)
    proc = run_cachelint(git_repo, "run", "--junit", "reports/junit.xml")
    assert proc.returncode == 2 and "--junit reports/junit.xml" in proc.stderr
    assert "is a symbolic link" in proc.stderr and list(elsewhere.iterdir()) == []
    proc = run_cachelint(git_repo, "run", "--junit", ".git/junit.xml")
    assert proc.returncode == 2 and "inside .git" in proc.stderr
    before = (git_repo / "pyproject.toml").read_bytes()
    proc = run_cachelint(git_repo, "run", "--html", "pyproject.toml")
    assert proc.returncode == 2 and "would overwrite the tracked file pyproject.toml" in proc.stderr
    assert (git_repo / "pyproject.toml").read_bytes() == before


def test_env_file_symlink_is_refused(git_repo: Path, outside: Path) -> None:
    recorded_repo(git_repo)
    (git_repo / ".env.eval").symlink_to(outside)
    proc = run_cachelint(git_repo, "run", "--refresh-cache")
    assert proc.returncode == 2 and "env-file .env.eval: is a symbolic link" in proc.stderr
    assert "OUTSIDE-SECRET" not in proc.stdout + proc.stderr


# ---- bounded work -------------------------------------------------------------------------------


def test_fifo_in_place_of_a_cache_file_fails_the_scenario_without_hanging(git_repo: Path) -> None:
    recorded_repo(git_repo)
    contents = next(p for p in (git_repo / "eval-cache").rglob("contents.data"))
    contents.unlink()
    os.mkfifo(contents)
    proc = run_cachelint(git_repo, "run")  # a hang would hit run_cachelint's timeout
    assert proc.returncode == 1
    assert "contents.data cannot be read (is a FIFO (named pipe), not a regular file" in proc.stdout


def test_fifo_under_a_cache_root_is_a_special_file_finding_not_a_hang(git_repo: Path) -> None:
    recorded_repo(git_repo)
    os.mkfifo(git_repo / "eval-cache/cache/support/pipe")
    contents = next(p for p in (git_repo / "eval-cache").rglob("contents.data"))
    contents.unlink()
    os.mkfifo(contents)  # in place of a tracked cache file
    proc = run_cachelint(git_repo, "check", "--select", "eval-cache-special-file")
    assert proc.returncode == 1, proc.stderr
    found = [line for line in proc.stdout.splitlines() if "eval-cache-special-file" in line]
    assert [line.split(":")[0] for line in found] == [
        contents.relative_to(git_repo).as_posix(),
        "eval-cache/cache/support/pipe",
    ]
    assert all("is a FIFO (named pipe), not a regular file" in line for line in found)


def test_fifo_dataset_is_an_error_not_a_hang(git_repo: Path) -> None:
    recorded_repo(git_repo)
    os.mkfifo(git_repo / "eval-datasets/support/acme/pipe.json")
    proc = run_cachelint(git_repo, "run")
    assert proc.returncode == 2
    assert "eval-datasets/support/acme/pipe.json: cannot read: is a FIFO" in proc.stderr


def test_entry_above_max_entry_bytes_is_not_read(git_repo: Path) -> None:
    recorded_repo(git_repo)
    set_config(git_repo, "max-entry-bytes = 1024\n")
    contents = next(p for p in (git_repo / "eval-cache").rglob("contents.data"))
    contents.write_bytes(contents.read_bytes() + b" " * 2048)
    outcome = do_run(git_repo)
    assert outcome.rc == 1
    assert "above the limit of 1024 (max-entry-bytes); not read" in outcome.out


def test_check_reports_an_entry_file_above_max_entry_bytes(
    git_repo: Path,
) -> None:
    recorded_repo(git_repo)
    set_config(git_repo, "max-entry-bytes = 1024\n")
    contents = next(p for p in (git_repo / "eval-cache").rglob("contents.data"))
    contents.write_bytes(contents.read_bytes() + b" " * 2048)
    commit_all(git_repo, "a huge answer")
    for extra in ((), ("--no-cache",)):
        checked = run_cachelint(git_repo, "check", "--select", "eval-cache-corrupt", *extra)
        assert checked.returncode == 1, checked.stdout + checked.stderr
        assert "contents.data is " in checked.stdout
        assert "bytes, over the 1024-byte limit" in checked.stdout


def test_check_reports_a_fifo_entry_file_as_corrupt(git_repo: Path) -> None:
    recorded_repo(git_repo)
    contents = next(p for p in (git_repo / "eval-cache").rglob("contents.data"))
    contents.unlink()
    os.mkfifo(contents)  # opened for reading, it would wait for a writer
    entry = contents.parent.relative_to(git_repo).as_posix()
    for extra in ((), ("--no-cache",)):
        checked = run_cachelint(git_repo, "check", "--select", "eval-cache-corrupt", *extra)
        assert checked.returncode == 1, checked.stdout + checked.stderr
        assert (
            f"{entry}: eval-cache-corrupt: contents.data is not a regular file "
            "(a FIFO, socket or device)"
        ) in checked.stdout


@pytest.mark.parametrize("size", [0, 1, 65_535, 65_536, 65_537, 200_000])
def test_an_entry_file_is_read_whole_whatever_its_size(tmp_path: Path, size: int) -> None:
    from cachelint.entries import read_file

    path = tmp_path / "contents.data"
    path.write_bytes(bytes(range(256)) * (size // 256) + b"x" * (size % 256))
    assert read_file(str(path), "contents.data") == path.read_bytes()
    assert read_file(str(path), "contents.data", limit=size) == path.read_bytes()


@pytest.mark.parametrize(("size", "limit"), [(1_025, 1_024), (100_001, 100_000), (300_000, 70_000)])
def test_an_entry_file_over_the_limit_is_refused_with_its_size(
    tmp_path: Path, size: int, limit: int
) -> None:
    from cachelint.entries import read_file
    from cachelint.errors import CorruptEntry

    path = tmp_path / "entry.json"
    path.write_bytes(b" " * size)
    with pytest.raises(CorruptEntry, match=f"entry.json is {size} bytes, over the {limit}-byte"):
        read_file(str(path), "entry.json", limit=limit)


BACKTRACK = {"content": "a" * 60 + "b"}


def test_catastrophic_regex_is_a_failed_assertion_not_a_hang(git_repo: Path) -> None:
    scenarios = {
        "support/acme/refund": refund(
            {"assert": [{"type": "regex", "pattern": "(a|aa)+$"}]}, prompt="prompts/acme.md"
        )
    }
    write_repo(git_repo, DEAD, scenarios)
    outcome, _ = record(git_repo, {"rules": [], "default": BACKTRACK})
    assert outcome.rc == 1
    assert "gave up after 1 s (catastrophic backtracking)" in outcome.out


SLEEPER = """
import pathlib, time

def answer(scenario, client):
    pathlib.Path(__file__).with_name("started-" + scenario.name).write_text("x")
    time.sleep(600)
"""


# `cachelint` with Python's own Ctrl-C handler, as a terminal starts it. A shell starts a background
# job (a CI script run as one, say) with SIGINT ignored, and Python keeps it ignored: Ctrl-C could
# then not reach the run at all, which is not what the test is about.
CTRL_C_ABLE = (
    "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "from cachelint.cli import main; sys.exit(main(sys.argv[1:]))"
)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_ctrl_c_stops_a_run_with_a_stuck_target(git_repo: Path, jobs: str) -> None:
    scenarios = {
        "support/acme/one": refund(prompt="prompts/acme.md"),
        "support/acme/two": refund(prompt="prompts/acme.md"),
    }
    write_repo(
        git_repo,
        DEAD,
        scenarios,
        target='type = "python"\nfunction = "sleeper_agent:answer"\n',
        files={"sleeper_agent.py": SLEEPER},
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", CTRL_C_ABLE, "run", "--jobs", jobs],
        cwd=git_repo,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        marker = git_repo / "started-one"
        for _ in range(600):  # until the target runs (bounded: the test stops by itself)
            if marker.exists() or proc.poll() is not None:
                break
            subprocess.run(["sleep", "0.1"])
        assert marker.exists(), proc.stderr.read() if proc.stderr else ""
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130
    assert "cachelint: interrupted" in err


# ---- replay fails closed ------------------------------------------------------------------------

ROGUE = """
import httpx

URL = "{url}"

def answer(scenario, client):
    body = {{"model": "scripted-v1", "messages": list(scenario.messages)}}
    reply = httpx.post(URL + "/chat/completions", json=body).json()
    return reply["choices"][0]["message"]["content"]
"""

SWALLOWER = """
import socket

def answer(scenario, client):
    reply = client.chat(scenario.messages)
    try:
        socket.create_connection(("192.0.2.1", 443), timeout=1)
    except Exception:
        pass  # ignores the refusal: the scenario still fails
    return reply["choices"][0]["message"]["content"]
"""

IDLE = """
def answer(scenario, client):
    return "Acme refunds within 30 days."
"""


def test_python_target_with_its_own_client_cannot_go_live_in_replay(git_repo: Path) -> None:
    with fake_server(SCRIPT) as fake:
        write_repo(
            git_repo,
            DEAD,
            ACME,
            target='type = "python"\nfunction = "rogue_agent:answer"\n',
            files={"rogue_agent.py": ROGUE.format(url=fake.url)},
        )
        outcome = do_run(git_repo)
        assert fake.requests == []
    assert outcome.rc == 1
    assert "scenario support/acme/refund" in outcome.out
    assert "refuses network access to 127.0.0.1:" in outcome.out
    assert "the answer did not come from the cache" in outcome.out
    assert not (git_repo / ".eval-green.json").exists()


def test_a_swallowed_refusal_still_fails_the_scenario(git_repo: Path) -> None:
    write_repo(
        git_repo,
        DEAD,
        ACME,
        target='type = "python"\nfunction = "swallow_agent:answer"\n',
        files={"swallow_agent.py": SWALLOWER},
    )
    assert record(git_repo)[0].rc == 0
    outcome = do_run(git_repo)
    assert outcome.rc == 1
    assert (
        "scenario support/acme/refund: tried to reach 192.0.2.1:443 in replay mode" in outcome.out
    )


def test_a_target_module_reaching_the_network_at_import_is_one_error(git_repo: Path) -> None:
    """Its module is imported under the replay's guard: module-level code is the target's too.
    No scenario runs yet, so the line names the module and the host, not a scenario."""
    write_repo(
        git_repo,
        DEAD,
        ACME,
        target='type = "python"\nfunction = "eager_agent:answer"\n',
        files={"eager_agent.py": "import socket\nsocket.getaddrinfo('example.com', 443)\n"},
    )
    replay = run_cachelint(git_repo, "run")
    assert replay.returncode == 2
    [line] = replay.stderr.splitlines()
    assert "cannot import module 'eager_agent'" in line
    assert "(NetworkRefused: replay mode refuses network access to example.com:443;" in line


def test_python_target_that_makes_no_call_through_the_cache_fails(git_repo: Path) -> None:
    write_repo(
        git_repo,
        DEAD,
        ACME,
        target='type = "python"\nfunction = "idle_agent:answer"\n',
        files={"idle_agent.py": IDLE},
    )
    outcome = do_run(git_repo)
    assert outcome.rc == 1
    assert "made no model call through the cache" in outcome.out
    assert "the answer did not come from the cache" in outcome.out


def test_only_loopback_ports_cachelint_opened_are_allowed() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        with armed():
            with pytest.raises(NetworkRefused, match=f"127.0.0.1:{port}"):
                socket.create_connection(("127.0.0.1", port), timeout=5)
            with pytest.raises(NetworkRefused, match="example.com"):
                socket.getaddrinfo("example.com", 443)
            allow_loopback_port(port)
            try:
                socket.create_connection(("127.0.0.1", port), timeout=5).close()
            finally:
                disallow_loopback_port(port)
        # Disarmed: the same process connects as before.
        socket.create_connection(("127.0.0.1", port), timeout=5).close()


# ---- no internal errors from data ---------------------------------------------------------------


def test_lone_surrogate_in_a_cached_answer_fails_the_scenario(git_repo: Path) -> None:
    recorded_repo(git_repo)
    contents = next(p for p in (git_repo / "eval-cache").rglob("contents.data"))
    raw = contents.read_bytes().replace(b"Acme refunds", b"Acme \\ud83d refunds")
    contents.write_bytes(raw)
    entry = contents.with_name("entry.json")
    data = json.loads(entry.read_text(encoding="utf-8"))
    data["contents"] = blake3.blake3(raw).hexdigest()
    entry.write_text(json.dumps(data), encoding="utf-8")
    for fmt in ("text", "json", "junit"):
        proc = run_cachelint(git_repo, "run", "--format", fmt)
        assert proc.returncode == 1, proc.stderr
        assert "internal error" not in proc.stderr
    assert "holds a lone surrogate '\\ud83d' in choices[0].message.content" in proc.stdout


def test_a_corrupt_git_index_is_one_error(git_repo: Path) -> None:
    """git refuses an index without its signature: check says so in one line, with or without
    the entry cache and workers."""
    recorded_repo(git_repo)
    commit_all(git_repo)
    index = git_repo / ".git" / "index"
    index.write_bytes(b"JUNK" + index.read_bytes()[4:])  # "DIRC" is the signature
    for args in (["check"], ["check", "--no-cache", "--jobs", "3"]):
        proc = run_cachelint(git_repo, *args)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        (line,) = proc.stderr.splitlines()
        assert line.startswith("cachelint: error: `git ") and "index file corrupt" in line, args


def test_deeply_nested_pyproject_is_one_config_error(git_repo: Path) -> None:
    recorded_repo(git_repo)
    with (git_repo / "pyproject.toml").open("a", encoding="utf-8") as fh:
        fh.write("[tool.other]\nx = " + "[" * 2000 + "]" * 2000 + "\n")
    for command in ("check", "run"):
        proc = run_cachelint(git_repo, command)
        assert proc.returncode == 2, proc.stderr
        assert "invalid TOML: nested too deeply" in proc.stderr


def test_deeply_nested_config_value_is_one_config_error(git_repo: Path) -> None:
    recorded_repo(git_repo)
    set_config(git_repo, "exclude = " + "[" * 300 + "]" * 300 + "\n")
    proc = run_cachelint(git_repo, "run")
    assert proc.returncode == 2 and "key 'exclude'" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_deeply_nested_dataset_options_are_one_error(git_repo: Path) -> None:
    recorded_repo(git_repo)
    options: dict[str, object] = {}
    cursor = options
    for _ in range(900):
        cursor["a"] = {}
        cursor = cursor["a"]  # type: ignore[assignment]
    data = refund({"options": options}, prompt="prompts/acme.md")
    (git_repo / "eval-datasets/support/acme/deep.json").write_text(json.dumps(data))
    proc = run_cachelint(git_repo, "run")
    assert proc.returncode == 2
    assert "eval-datasets/support/acme/deep.json: field 'options':" in proc.stderr
    assert "nested too deeply" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_dataset_name_that_is_not_utf8_is_one_error(git_repo: Path) -> None:
    recorded_repo(git_repo)
    bad = os.path.join(os.fsencode(git_repo / "eval-datasets/support/acme"), b"bad\xff.json")
    with open(bad, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(refund(prompt="prompts/acme.md")))
    proc = run_cachelint(git_repo, "run")
    assert proc.returncode == 2
    assert "not valid UTF-8 (b'bad\\xff.json')" in proc.stderr


def test_dataset_with_a_lone_surrogate_is_one_error(git_repo: Path) -> None:
    recorded_repo(git_repo)
    (git_repo / "eval-datasets/support/acme/odd.json").write_text(
        '{"input": "hi \\udc00", "assert": [{"type": "contains", "value": "x"}]}'
    )
    proc = run_cachelint(git_repo, "run")
    assert proc.returncode == 2
    assert "odd.json: holds a lone surrogate '\\udc00' in input" in proc.stderr


@pytest.mark.parametrize("before", [None, "false"], ids=["unset", "set"])
def test_a_replay_switches_own_calls_off_and_puts_the_environment_back(
    monkeypatch: pytest.MonkeyPatch, before: str | None
) -> None:
    from cachelint import netguard
    from cachelint.netguard import OWN_CALLS_OFF

    for name in OWN_CALLS_OFF:
        if before is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, before)
    with netguard.armed(replay=True):
        assert {name: os.environ.get(name) for name in OWN_CALLS_OFF} == OWN_CALLS_OFF
    assert {os.environ.get(name) for name in OWN_CALLS_OFF} == {before}
    with netguard.armed(replay=False):  # recording: their calls are the team's to keep
        assert {os.environ.get(name) for name in OWN_CALLS_OFF} == {before}


def test_cachelints_own_children_never_import_the_repositorys_modules(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`python -m` puts the working directory first on the child's sys.path: a json.py a pull
    request adds at the top of the repository would run in the results writer in place of the
    standard library's."""
    copy_bundled(git_repo)
    marker = git_repo.parent / "imported"
    plant_shadows(git_repo, marker)
    monkeypatch.chdir(git_repo)
    sink = subprocess.run(
        module_command("cachelint.resultsink"), input=b"", capture_output=True, timeout=60
    )
    assert (sink.returncode, sink.stdout) == (0, b"null"), sink.stderr
    assert not marker.exists(), marker.read_text()
