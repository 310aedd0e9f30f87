"""Shared fixtures: real git repositories in tmp_path, with an identity that needs no git config."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# CI has no git identity and the developer's global config must not leak into tests (a global
# core.autocrlf or a hooksPath would change what git does to the fixtures).
os.environ.update(
    {
        "GIT_AUTHOR_NAME": "cachelint tests",
        "GIT_AUTHOR_EMAIL": "tests@cachelint.invalid",
        "GIT_COMMITTER_NAME": "cachelint tests",
        "GIT_COMMITTER_EMAIL": "tests@cachelint.invalid",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
)
os.environ.pop("CACHELINT_NOW", None)

PROJECT = Path(__file__).resolve().parent.parent


def git(
    repo: Path, *args: str, input: bytes | None = None, env: dict[str, str] | None = None
) -> str:
    """Run git in `repo`, fail the test with git's stderr if it fails, return stdout. `env` adds
    to the environment."""
    environ = {**os.environ, **env} if env else None
    proc = subprocess.run(["git", *args], cwd=repo, input=input, capture_output=True, env=environ)
    if proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr.decode()}")
    return proc.stdout.decode()


def run_cachelint(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m cachelint ARGS` in `cwd` as a user would run it: a real process, its exit code,
    stdout and stderr (this checkout first on the path, so an installed copy cannot answer)."""
    return subprocess.run(
        [sys.executable, "-m", "cachelint", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(PROJECT), **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


def commit_all(repo: Path, message: str = "commit", *, committer_date: str | None = None) -> None:
    git(repo, "add", "-A")
    env = {"GIT_COMMITTER_DATE": committer_date} if committer_date else None
    commit = ["commit", "-q", "--no-gpg-sign", "--no-verify", "--allow-empty", "-m", message]
    git(repo, *commit, env=env)


RUN_NOW = "2026-01-15T10:00:00Z"  # CACHELINT_NOW for the run tests


@pytest.fixture
def recording_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment the endpoint tests record and replay in: no test key, no execution name
    from outside, the clock pinned (so recorded dates do not depend on the day)."""
    monkeypatch.delenv("CACHELINT_TEST_KEY", raising=False)
    monkeypatch.delenv("CACHELINT_EXECUTION", raising=False)
    monkeypatch.setenv("CACHELINT_NOW", RUN_NOW)


@pytest.fixture
def git_repo(tmp_path: Path) -> Iterator[Path]:
    """An empty git repository with a first commit, on branch main."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "core.autocrlf", "false")
    git(repo, "commit", "-q", "--no-gpg-sign", "--allow-empty", "-m", "root")
    yield repo


def shared_by_workers(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """A path every pytest-xdist worker of this session sees (their base temp dirs' parent),
    so a costly artefact is built once per session rather than once per worker."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / name


@pytest.fixture(scope="session")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One pre-commit cache for the whole session, shared by the workers: each hook environment
    is built once (pre-commit's own store lock serialises concurrent installs)."""
    home = shared_by_workers(tmp_path_factory, "pre-commit-home")
    home.mkdir(exist_ok=True)
    return home


@pytest.fixture(scope="session")
def hook_source(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The project as the framework sees a hook repository: a git repo with a commit.

    A copy of the working tree, because try-repo and `rev:` only see committed (or staged)
    files, and the lead commits this project, not us. Built privately, then renamed into the
    place the workers share: the first rename wins and the others use its repository, so every
    worker names the same repo and rev and pre-commit's environment for it is built once."""
    staging = tmp_path_factory.mktemp("hook-source") / "cachelint"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(PROJECT / "cachelint", staging / "cachelint", ignore=ignore)
    shutil.copytree(PROJECT / "hooks", staging / "hooks", ignore=ignore)
    for name in ("pyproject.toml", ".pre-commit-hooks.yaml", "README.md"):
        if (PROJECT / name).exists():
            shutil.copy2(PROJECT / name, staging / name)
    if not (staging / "README.md").exists():  # pyproject names it; the lead writes the real one
        (staging / "README.md").write_text("# cachelint\n")
    git(staging, "init", "-q", "-b", "main")
    commit_all(staging, "hook source")
    src = shared_by_workers(tmp_path_factory, "hook-source")
    try:
        staging.rename(src)
    except OSError:  # another worker's copy is already in place
        pass
    return src, git(src, "rev-parse", "HEAD").strip()
