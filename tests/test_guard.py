"""`cachelint guard -- CMD`: a real command, a real cache tree, content-based comparison."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cachelint.commands.guard import guard
from cachelint.errors import CachelintError
from tests.conftest import PROJECT

PY = sys.executable


def make_cache(repo: Path) -> Path:
    entry = repo / "eval-cache" / "cache" / "scenario" / "0123456789abcdef"
    entry.mkdir(parents=True)
    (entry / "entry.json").write_text("{}\n")
    (entry / "contents.data").write_text('"answer"\n')
    (repo / "eval-cache" / "keep.json").write_text("[]\n")
    return entry


def run_guard(repo: Path, code: str) -> tuple[int, str]:
    out = io.StringIO()
    rc = guard(repo, config_path=None, command=[PY, "-c", code], out=out)
    return rc, out.getvalue()


def test_untouched_tree_passes_the_commands_exit_code_through(git_repo: Path) -> None:
    make_cache(git_repo)
    assert run_guard(git_repo, "pass") == (0, "")
    assert run_guard(git_repo, "raise SystemExit(3)") == (3, "")


def test_write_delete_and_new_file_are_each_named(git_repo: Path) -> None:
    entry = make_cache(git_repo)
    code = (
        "import pathlib, os\n"
        f"e = pathlib.Path({str(entry)!r})\n"
        "(e / 'contents.data').write_text('\"rewritten\"\\n')\n"
        "os.remove(e.parent.parent.parent / 'keep.json')\n"
        "(e / 'stray.tmp').write_text('x')\n"
    )
    rc, out = run_guard(git_repo, code)
    assert rc == 1
    lines = out.splitlines()
    prefix = "eval-cache/cache/scenario/0123456789abcdef"
    assert lines[0].startswith(f"{prefix}/contents.data: eval-cache-mutated: changed by ")
    assert lines[1].startswith(f"{prefix}/stray.tmp: eval-cache-mutated: added by ")
    assert lines[2].startswith("eval-cache/keep.json: eval-cache-mutated: removed by ")
    assert lines[3] == "cachelint guard: 3 files under the cache roots changed"


def test_a_failing_command_that_mutates_keeps_its_own_exit_code(git_repo: Path) -> None:
    entry = make_cache(git_repo)
    rc, out = run_guard(
        git_repo,
        f"import pathlib; pathlib.Path({str(entry / 'entry.json')!r}).write_text('x'); "
        "raise SystemExit(5)",
    )
    assert rc == 5
    assert "entry.json: eval-cache-mutated" in out


def test_same_bytes_and_a_new_mtime_is_no_change(git_repo: Path) -> None:
    entry = make_cache(git_repo)
    target = entry / "contents.data"
    code = (
        "import pathlib, os\n"
        f"p = pathlib.Path({str(target)!r})\n"
        "p.write_bytes(p.read_bytes())\n"
        "os.utime(p, (1, 1))\n"
    )
    assert run_guard(git_repo, code) == (0, "")


def test_unknown_command_is_a_one_line_usage_error(git_repo: Path) -> None:
    make_cache(git_repo)
    with pytest.raises(CachelintError) as info:
        guard(git_repo, config_path=None, command=["no-such-cmd-xyz", "--flag"], out=io.StringIO())
    assert info.value.exit_code == 2
    assert str(info.value).startswith("guard: no-such-cmd-xyz: command not found (exit 127")
    assert "\n" not in str(info.value)


def test_no_command_is_a_usage_error(git_repo: Path) -> None:
    with pytest.raises(CachelintError, match="no command given"):
        guard(git_repo, config_path=None, command=[], out=io.StringIO())


def test_missing_cache_root_still_runs_the_command(git_repo: Path) -> None:
    rc, out = run_guard(git_repo, "raise SystemExit(4)")
    assert rc == 4
    assert "no cache root exists (eval-cache)" in out


def _start_guard(repo: Path, child: Path) -> subprocess.Popen[bytes]:
    script = (
        "import sys; from pathlib import Path; from cachelint.commands.guard import guard\n"
        f"raise SystemExit(guard(Path({str(repo)!r}), config_path=None, "
        f"command=[{PY!r}, {str(child)!r}], out=sys.stderr))\n"
    )
    # A new session stands in for the terminal: killpg reaches guard and child like Ctrl-C does.
    return subprocess.Popen(
        [PY, "-c", script],
        cwd=repo,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
    )


def _wait_until_ready(proc: subprocess.Popen[bytes]) -> None:
    """Block on the child's readiness line: it comes only once guard ignores SIGINT and catches
    SIGTERM, so no signal can arrive before guard is ready for it (EOF if the child died)."""
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line == b"ready\n", (line, proc.stderr.read() if proc.stderr else b"")


# The child reports ready only when its parent (guard) has its handlers in place, read from the
# kernel's view of the parent (/proc/PID/status SigIgn, SigCgt); it then waits at most 30 s.
CHILD = """
import os, signal, sys, time
from pathlib import Path
log = Path(sys.argv[0]).with_suffix(".log")
def on_signal(signum, frame):
    with log.open("a") as fh:
        fh.write(f"{signum}\\n")
    os._exit(128 + signum)
signal.signal(signal.SIGINT, on_signal)
signal.signal(signal.SIGTERM, on_signal)
def parent_masks():
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{os.getppid()}/status").read_text().splitlines()
    )
    return int(fields["SigIgn"], 16), int(fields["SigCgt"], 16)
for _ in range(3000):
    ignored, caught = parent_masks()
    if ignored >> (signal.SIGINT - 1) & 1 and caught >> (signal.SIGTERM - 1) & 1:
        break
    time.sleep(0.01)
print("ready", flush=True)
time.sleep(30)
"""

NEEDS_PROC = pytest.mark.skipif(
    not Path("/proc/self/status").exists(), reason="POSIX signals, and /proc to see guard ready"
)


@NEEDS_PROC
def test_ctrl_c_reaches_the_command_once_and_exits_130(git_repo: Path, tmp_path: Path) -> None:
    make_cache(git_repo)
    child = tmp_path / "child.py"
    child.write_text(CHILD)
    proc = _start_guard(git_repo, child)
    _wait_until_ready(proc)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err.decode()
    assert child.with_suffix(".log").read_text() == f"{int(signal.SIGINT)}\n"
    assert b"Traceback" not in err


@NEEDS_PROC
def test_sigterm_to_guard_is_forwarded(git_repo: Path, tmp_path: Path) -> None:
    make_cache(git_repo)
    child = tmp_path / "child.py"
    child.write_text(CHILD)
    proc = _start_guard(git_repo, child)
    _wait_until_ready(proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + int(signal.SIGTERM), err.decode()
    assert child.with_suffix(".log").read_text() == f"{int(signal.SIGTERM)}\n"


def test_snapshot_hashes_small_large_and_huge_files_and_links(tmp_path: Path) -> None:
    import blake3

    from cachelint.hashing import snapshot

    root = tmp_path / "eval-cache"
    (root / "d").mkdir(parents=True)
    blobs = {
        "eval-cache/small.json": b"{}\n",
        "eval-cache/empty": b"",
        "eval-cache/d/exact-64k": b"a" * 65536,
        "eval-cache/d/over-64k": bytes(range(256)) * 300,
        "eval-cache/d/huge": b"z" * (5 * 1024 * 1024),  # the mmap path
    }
    for rel, data in blobs.items():
        (tmp_path / rel).write_bytes(data)
    os.symlink("small.json", root / "link")
    snap = snapshot(tmp_path, ["eval-cache", "missing-root"])
    expected = {rel: blake3.blake3(data).hexdigest() for rel, data in blobs.items()}
    expected["eval-cache/link"] = "symlink:small.json"
    assert snap == expected


@pytest.mark.parametrize("call", ["open", "scandir"])
def test_an_unreadable_cache_file_or_directory_is_one_line_before_the_command_runs(
    git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, call: str
) -> None:
    entry = make_cache(git_repo)
    denied = entry / "contents.data" if call == "open" else entry
    real = getattr(os, call)

    # chmod 000 does not stop root (as in CI containers): refuse at the OS edge instead.
    def refuse(path: Any, *args: Any, **kwargs: Any) -> Any:
        if os.fspath(path) == str(denied):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, call, refuse)
    marker = tmp_path / "ran"
    with pytest.raises(CachelintError) as info:
        run_guard(git_repo, f"open({str(marker)!r}, 'w')")
    rel = denied.relative_to(git_repo).as_posix()
    assert str(info.value) == f"{rel}: cannot read (Permission denied); check its permissions"
    assert info.value.exit_code == 2
    assert not marker.exists()


def test_escape_sequences_in_mutated_file_names_never_reach_the_terminal(git_repo: Path) -> None:
    entry = make_cache(git_repo)
    crafted = entry / "x\x1b]0;pwned\x07.json"  # an OSC sequence that retitles the terminal
    rc, out = run_guard(git_repo, f"open({str(crafted)!r}, 'w')")
    assert rc == 1
    assert out.startswith(
        "eval-cache/cache/scenario/0123456789abcdef/x\\x1b]0;pwned\\x07.json: eval-cache-mutated: "
    )
    assert "\x1b" not in out and "\x07" not in out
