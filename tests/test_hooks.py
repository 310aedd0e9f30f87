"""The plain git hook (hooks/pre-commit -> cachelint.hook) through real `git commit`s."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pathspec
import pytest

from cachelint.hook import STAGED_NAMES, _Gate
from tests.conftest import PROJECT, commit_all, git
from tests.helpers import (
    VENV_BIN,
    head,
    hook_env,
    make_checked_repo,
    make_gated_repo,
    outside_site_packages,
    plant_shadows,
    record_green,
)
from tests.helpers import hook_commit as commit


def test_watch_gate_blocks_a_prompt_change_until_the_green_record_is_staged(
    git_repo: Path,
) -> None:
    repo = make_gated_repo(git_repo)
    before = head(repo)
    (repo / "prompts" / "system.txt").write_text("You are verbose.\n")
    git(repo, "add", "prompts")
    blocked = commit(repo, "new prompt")
    assert blocked.returncode == 1, blocked.stderr
    assert (
        "prompts/system.txt: eval-green-stale: watched file changed" in blocked.stderr
    )  # git sends hook output to stderr
    assert head(repo) == before

    record_green(repo)  # what `cachelint run` does after a fully green run
    git(repo, "add", ".eval-green.json")
    done = commit(repo, "new prompt, evals green")
    assert done.returncode == 0, done.stdout + done.stderr
    assert head(repo) != before


def test_the_hook_never_imports_the_repositorys_modules(git_repo: Path) -> None:
    """`python -m` puts the working directory, the repository's top, first on sys.path: a
    json.py there would run in the hook in place of the standard library's."""
    repo = make_gated_repo(git_repo)
    marker = repo.parent / "imported"
    plant_shadows(repo, marker)
    (repo / "prompts" / "system.txt").write_text("You are verbose.\n")
    git(repo, "add", "prompts")
    blocked = commit(repo, "new prompt")
    assert blocked.returncode == 1, blocked.stderr
    assert "prompts/system.txt: eval-green-stale" in blocked.stderr
    assert not marker.exists(), marker.read_text()


def test_the_hook_runs_a_cachelint_installed_outside_the_interpreters_site_packages(
    git_repo: Path, tmp_path: Path
) -> None:
    """Keeping the repository's modules out must not keep out PYTHONPATH or the user's
    site-packages, where a team may have installed cachelint (`python -I` would)."""
    repo = make_gated_repo(git_repo)
    python, pythonpath = outside_site_packages(tmp_path)
    (repo / "prompts" / "system.txt").write_text("You are verbose.\n")
    git(repo, "add", "prompts")
    env = hook_env(CACHELINT_PYTHON=str(python), PYTHONPATH=pythonpath)
    blocked = commit(repo, "new prompt", env)
    assert blocked.returncode == 1, blocked.stderr
    assert "prompts/system.txt: eval-green-stale" in blocked.stderr


def test_without_watch_globs_a_committed_record_still_gates_datasets(git_repo: Path) -> None:
    repo = make_gated_repo(git_repo, config="")
    before = head(repo)
    (repo / "eval-datasets" / "agent" / "tenant" / "s1.json").write_text('{"input": "new"}\n')
    git(repo, "add", "eval-datasets")
    blocked = commit(repo, "dataset edit")
    assert blocked.returncode == 1
    assert "eval-datasets/agent/tenant/s1.json: eval-green-stale: dataset file changed" in (
        blocked.stderr
    )
    assert head(repo) == before


def test_a_change_outside_watch_and_cache_commits_silently(git_repo: Path) -> None:
    repo = make_gated_repo(git_repo)
    (repo / "README.md").write_text("new docs\n")
    (repo / "src.py").write_text("print('hi')\n")
    git(repo, "add", "-A")
    result = commit(repo, "docs")
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_a_cache_file_moved_out_of_the_root_is_seen_as_deleted_there(git_repo: Path) -> None:
    """Rename detection would list only the new path (outside every root): the move would commit
    unchecked and ungated."""
    repo = make_gated_repo(git_repo)
    before = head(repo)
    entry = "eval-cache/cache/agent/tenant/s1/0123456789abcdef"
    git(repo, "mv", f"{entry}/contents.data", "moved.data")
    blocked = commit(repo, "move")
    assert blocked.returncode == 1, blocked.stderr
    assert f"{entry}: eval-cache-corrupt: contents.data is missing" in blocked.stderr
    assert "eval-cache: eval-green-stale: cache tree changed" in blocked.stderr
    assert head(repo) == before


def test_the_plain_hook_reports_a_failing_git_as_the_module_does(git_repo: Path) -> None:
    """hooks/pre-commit runs git beside Python and pipes its output and exit status in."""
    repo = make_gated_repo(git_repo)
    (repo / ".git" / "index").write_bytes(b"DIRC not an index")
    runs = [
        ["sh", str(PROJECT / "hooks" / "pre-commit")],
        [sys.executable, "-m", "cachelint.hook", "pre-commit"],
    ]
    plain, direct = (
        subprocess.run(cmd, cwd=repo, capture_output=True, text=True, env=hook_env())
        for cmd in runs
    )
    assert plain.returncode == direct.returncode == 2, plain.stderr
    assert "cachelint hook: `git diff --cached` failed with exit code 128\n" in plain.stderr
    assert plain.stderr == direct.stderr
    script = (PROJECT / "hooks" / "pre-commit").read_text(encoding="utf-8")
    assert " ".join(["git", *STAGED_NAMES]) + ";" in script


def _imports_of_an_unrelated_commit(repo: Path) -> dict[str, set[str]]:
    """The modules each hook's process imports, run as the plain hook and the framework run them
    (`-X importtime` inserted into the framework's entries, which run isolated)."""
    entries = {}
    for line in (PROJECT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8").splitlines():
        key, _, value = line.strip().partition(": ")
        if key == "entry":
            entries[value] = shlex.split(value)
    assert len(entries) == 2, entries
    runs = {
        f"framework: {name}": [sys.executable, "-X", "importtime", *argv[1:]]
        for name, argv in entries.items()
    }
    runs["plain"] = ["sh", str(PROJECT / "hooks" / "pre-commit")]
    found = {}
    for name, cmd in runs.items():
        env = hook_env(PYTHONPROFILEIMPORTTIME="1")
        done = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr
        lines = [ln.split("|")[-1].strip() for ln in done.stderr.splitlines() if "|" in ln]
        found[name] = set(lines)
    return found


def test_an_unrelated_commit_parses_no_toml_and_runs_no_runpy_once_the_config_is_known(
    git_repo: Path,
) -> None:
    repo = make_gated_repo(git_repo)
    (repo / "README.md").write_text("x\n")
    git(repo, "add", "-A")
    first = _imports_of_an_unrelated_commit(repo)  # the first run parses the config
    assert any(found & {"tomllib", "tomli"} for found in first.values()), first
    for name, found in _imports_of_an_unrelated_commit(repo).items():
        assert "cachelint.hook" in found, name
        assert not found & {"tomllib", "tomli", "runpy"}, (name, sorted(found))


def test_the_kept_config_follows_the_config_files_bytes(git_repo: Path) -> None:
    repo = make_gated_repo(git_repo)
    (repo / "src.py").write_text("print('v1')\n")
    git(repo, "add", "-A")
    assert commit(repo, "unwatched").returncode == 0
    kept = repo / ".git" / "cachelint" / "hook-config"
    assert kept.is_file()
    config = (repo / "pyproject.toml").read_text()
    (repo / "pyproject.toml").write_text(config.replace("watch = [", 'watch = ["src.py", '))
    (repo / "src.py").write_text("print('v2')\n")
    git(repo, "add", "src.py")  # the config edit itself stays unstaged: not relevant by itself
    blocked = commit(repo, "now watched")
    assert blocked.returncode == 1, blocked.stderr
    assert "src.py: eval-green-stale: watched file new" in blocked.stderr
    kept.write_bytes(b"\xff not marshal data")  # damaged: parsed again, never an error
    again = commit(repo, "now watched")
    assert again.returncode == 1, again.stderr
    assert "src.py: eval-green-stale: watched file new" in again.stderr
    assert kept.read_bytes() != b"\xff not marshal data"


def test_the_interpreter_comes_from_cachelint_python(git_repo: Path) -> None:
    repo = make_gated_repo(git_repo)
    (repo / "models.json").write_text('{"model": "other"}\n')
    git(repo, "add", "-A")
    env = hook_env(CACHELINT_PYTHON=sys.executable)
    env["PATH"] = os.environ["PATH"].replace(f"{VENV_BIN}{os.pathsep}", "")
    result = commit(repo, "swap", env)
    assert result.returncode == 1
    assert "models.json: eval-green-stale" in result.stderr


def test_an_interpreter_without_cachelint_blocks_instead_of_passing(git_repo: Path) -> None:
    repo = make_gated_repo(git_repo)
    before = head(repo)
    # A real interpreter that starts fine but has no cachelint: -S drops site-packages.
    bare = repo.parent / "bare-python"
    bare.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    bare.chmod(0o755)
    (repo / "README.md").write_text("x\n")
    git(repo, "add", "-A")
    result = commit(repo, "x", hook_env(CACHELINT_PYTHON=str(bare)))
    assert result.returncode == 1
    assert "No module named 'cachelint'" in result.stderr
    assert head(repo) == before


def test_fast_path_imports_nothing_heavy(git_repo: Path) -> None:
    repo = make_gated_repo(git_repo)
    (repo / "README.md").write_text("x\n")
    git(repo, "add", "-A")
    probe = (
        "import sys; from cachelint import hook; rc = hook.main(['pre-commit']); "
        "heavy = ('pathspec', 'cachelint.cli', 'cachelint.config', 'cachelint.commands', "
        "'blake3', 'subprocess', 'httpx', 'rich', 'git'); "
        "print(rc, [m for m in heavy if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=repo, capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "0 []"


def test_hook_runs_the_gate_from_a_subdirectory_too(git_repo: Path) -> None:
    repo = make_gated_repo(git_repo)
    (repo / "prompts" / "system.txt").write_text("changed\n")
    git(repo, "add", "-A")
    result = subprocess.run(
        [sys.executable, "-m", "cachelint.hook", "pre-commit"],
        cwd=repo / "prompts",
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1
    assert "prompts/system.txt: eval-green-stale" in result.stdout


def test_bad_usage_of_the_hook_module(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "cachelint.hook", "commit-msg"], capture_output=True, text=True
    )
    assert result.returncode == 2
    assert result.stderr.strip() == "usage: python -m cachelint.hook pre-commit|check|watch"


def test_git_missing_from_path_is_one_line_and_leaks_no_descriptor(git_repo: Path) -> None:
    empty = git_repo / "empty-bin"
    empty.mkdir()
    result = subprocess.run(
        [sys.executable, "-m", "cachelint.hook", "pre-commit"],
        cwd=git_repo,
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": str(empty)},
    )
    assert result.returncode == 2
    assert result.stderr == (
        "cachelint hook: cannot run git (No such file or directory); put git on PATH\n"
    )
    probe = (
        "import os; from cachelint import hook\n"
        "before = sorted(os.listdir('/proc/self/fd'))\n"
        "try:\n    hook._git(['status'], '.')\nexcept hook._NoGit:\n    pass\n"
        "print(before == sorted(os.listdir('/proc/self/fd')))\n"
    )
    leak = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=git_repo,
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": str(empty)},
    )
    assert leak.stdout == "True\n", leak.stderr


PATTERNS = [
    "prompts/**",
    "/models.json",
    "models.json",
    "*.prompty",
    "**/system*.txt",
    "src/**/prompt_[ab].md",
    "config/model?.yaml",
    "agents/",
    "docs/*/prompt.md",
    "\\#literal.txt",
    "trailing.txt   ",
]
PATHS = [
    "prompts/a.txt",
    "prompts/deep/b.txt",
    "x/prompts/a.txt",
    "models.json",
    "sub/models.json",
    "a.prompty",
    "deep/er/b.prompty",
    "system.txt",
    "a/system-v2.txt",
    "src/prompt_a.md",
    "src/x/y/prompt_b.md",
    "src/x/prompt_c.md",
    "config/model1.yaml",
    "config/model12.yaml",
    "agents/x.json",
    "lib/agents/y.json",
    "docs/a/prompt.md",
    "docs/a/b/prompt.md",
    "#literal.txt",
    "trailing.txt",
    "README.md",
    "src/main.py",
]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_prefilter_never_misses_what_pathspec_matches(pattern: str) -> None:
    spec = pathspec.GitIgnoreSpec.from_lines([pattern])
    gate = _Gate({"watch": [pattern], "datasets": "eval-datasets"})
    matched = [p for p in PATHS if spec.match_file(p)]
    assert matched, f"fixture paths should exercise {pattern!r}"
    for path in matched:
        assert gate.maybe_watched(path), f"{pattern!r} matches {path!r} but the prefilter said no"
    # ...and it still rules out the unrelated files, which is what makes the fast path fast.
    assert not gate.maybe_watched("README.md") or pattern.startswith("*")
    assert not gate.maybe_watched("src/main.py") or pattern.startswith("*")


def test_check_relevance_covers_cache_roots_attributes_ignores_and_config() -> None:
    gate = _Gate({"cache": ["evals/cache-a", "b/"]})
    for path in (
        "evals/cache-a/x/entry.json",
        "b/stamp.json",
        ".gitattributes",
        "deep/dir/.gitattributes",
        "x/.gitignore",
        "pyproject.toml",
        "cachelint.toml",
    ):
        assert gate.wants_check(path), path
    for path in ("eval-cache/x", "sub/pyproject.toml", "evals/cache-ab/x", "README.md"):
        assert not gate.wants_check(path), path


def test_a_broken_config_table_sends_the_hook_to_the_real_loader(git_repo: Path) -> None:
    (git_repo / "pyproject.toml").write_text("[tool.cachelint]\nwatch = 3\n")
    commit_all(git_repo)
    before = head(git_repo)
    (git_repo / "a.txt").write_text("x\n")  # relevant to nothing a valid config could name
    git(git_repo, "add", "-A")
    line = (
        "cachelint: error: pyproject.toml [tool.cachelint]: key 'watch' = 3: expected a string "
        "or a list of strings\n"
    )
    result = commit(git_repo, "x")
    assert (result.returncode, result.stderr) == (1, line)  # git turns any hook failure into 1
    assert head(git_repo) == before
    direct = subprocess.run(
        [sys.executable, "-m", "cachelint.hook", "pre-commit"],
        cwd=git_repo,
        capture_output=True,
        text=True,
    )
    assert (direct.returncode, direct.stderr) == (2, line)


def test_check_blocks_a_cache_without_minus_text_then_lets_the_fix_through(git_repo: Path) -> None:
    repo = make_checked_repo(git_repo, attributes=False)
    before = head(repo)
    blocked = commit(repo, "record")
    assert blocked.returncode == 1, blocked.stderr
    assert "eval-cache: eval-cache-text-attr:" in blocked.stderr
    assert head(repo) == before

    (repo / ".gitattributes").write_text("eval-cache/** -text\n")
    git(repo, "add", ".gitattributes")
    done = commit(repo, "record, byte-exact")
    assert done.returncode == 0, done.stderr
    assert head(repo) != before
