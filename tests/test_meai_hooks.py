"""The commit hooks see a .NET pin bump (issue 38): a staged change to any file the pin readers
read (Directory.Packages.props, a project, packages.lock.json, Directory.Build.props, and the
Python and npm manifests and locks) runs the check, whose pin rules then block a stale stamp.
Through real `git commit`s, with the plain hook and through the pre-commit framework."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cachelint.hook import _Gate
from tests.conftest import commit_all, git, run_cachelint
from tests.helpers import framework_commit, framework_env, head, pre_commit
from tests.helpers import hook_commit as commit
from tests.test_meai import ENV, STORAGE, meai_repo

MEAI = "Microsoft.Extensions.AI.Evaluation"
LOCK = {
    "version": 1,
    "dependencies": {
        "net9.0": {
            MEAI: {"type": "Direct", "requested": "[10.9.0, )", "resolved": "10.9.0"},
            "Microsoft.Extensions.AI": {"type": "Transitive", "resolved": "10.9.0"},
        }
    },
}


def dotnet_repo(repo: Path) -> Path:
    """A MEAI tree as MEAI 10.9.0 writes it, its project in tests/Evals/ with a lock file and a
    Directory.Build.props defining the version property, stamped and committed."""
    meai_repo(repo, results=False)
    evals = repo / "tests" / "Evals"
    evals.mkdir(parents=True)
    git(repo, "mv", "Evals.csproj", "tests/Evals/Evals.csproj")
    (evals / "packages.lock.json").write_text(json.dumps(LOCK, indent=2))
    (repo / "Directory.Build.props").write_text(
        "<Project><PropertyGroup><MeaiVersion>10.9.0</MeaiVersion>"
        "<RestorePackagesWithLockFile>true</RestorePackagesWithLockFile>"
        "</PropertyGroup></Project>\n"
    )
    props = repo / "Directory.Packages.props"
    props.write_text(
        props.read_text().replace(
            f'"{MEAI}" Version="10.9.0"', f'"{MEAI}" Version="$(meaiversion)"'
        )
    )
    stamped = run_cachelint(repo, "stamp", env=ENV)
    assert stamped.returncode == 0, stamped.stderr
    commit_all(repo, "stamp")
    check = run_cachelint(repo, "check", env=ENV)
    assert check.returncode == 0, check.stdout
    return repo


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new))


BUMPS = {
    "Directory.Packages.props": (
        'Reporting" Version="10.9.0"',
        'Reporting" Version="10.11.0"',
    ),
    "Directory.Build.props": ("<MeaiVersion>10.9.0<", "<MeaiVersion>10.11.0<"),
    "tests/Evals/Evals.csproj": (
        f'<PackageReference Include="{MEAI}" />',
        f'<PackageReference Include="{MEAI}" VersionOverride="10.11.0" />',
    ),
    "tests/Evals/packages.lock.json": (
        json.dumps(LOCK, indent=2),
        json.dumps(LOCK, indent=2).replace(
            '"Transitive",\n        "resolved": "10.9.0"',
            '"Transitive",\n        "resolved": "10.11.0"',
        ),
    ),
}


@pytest.mark.parametrize("name", sorted(BUMPS))
def test_the_plain_hook_blocks_a_pin_bump_in_any_dotnet_pin_file(git_repo: Path, name: str) -> None:
    repo = dotnet_repo(git_repo)
    before = head(repo)
    _replace(repo / name, *BUMPS[name])
    git(repo, "add", "--", name)
    blocked = commit(repo, f"bump {name}")
    assert blocked.returncode == 1, blocked.stdout + blocked.stderr
    # A version moved in the props or the project alone leaves the lock behind: unpinned, with
    # the restore that regenerates it; moved everywhere, the stamp is stale.
    stale = "eval-cache-stale-pin" in blocked.stderr and "vs pin 10.11.0" in blocked.stderr
    behind = "eval-cache-unpinned" in blocked.stderr and "10.11.0 in " in blocked.stderr
    assert stale or (behind and "dotnet restore --force-evaluate" in blocked.stderr), blocked.stderr
    assert head(repo) == before


def test_the_plain_hook_lets_an_unrelated_commit_through(git_repo: Path) -> None:
    repo = dotnet_repo(git_repo)
    _replace(repo / "Directory.Packages.props", *BUMPS["Directory.Packages.props"])  # unstaged
    (repo / "Program.cs").write_text("// unrelated\n")
    git(repo, "add", "Program.cs")
    done = commit(repo, "unrelated")
    assert done.returncode == 0, done.stderr


def test_pin_files_are_relevant_to_the_check() -> None:
    gate = _Gate({"pins": ["deps/pins.txt"]})
    for path in (
        "Directory.Packages.props",
        "src/Directory.Packages.props",
        "Directory.Build.props",
        "tests/Evals/Directory.Build.props",
        "tests/Evals/Evals.csproj",
        "src/App/App.fsproj",
        "tests/Evals/packages.lock.json",
        "build/versions.props",
        "Evals.sln",
        "uv.lock",
        "poetry.lock",
        "Pipfile.lock",
        "requirements.txt",
        "requirements-dev.txt",
        "package.json",
        "package-lock.json",
        "deps/pins.txt",
    ):
        assert gate.wants_check(path), path
    for path in ("src/App/Program.cs", "web/package.json", "docs/requirements.txt", "README.md"):
        assert not gate.wants_check(path), path


def test_the_framework_hook_blocks_a_pin_bump(
    git_repo: Path, hook_source: tuple[Path, str], pre_commit_home: Path
) -> None:
    """`pre-commit install` and a real commit of a bumped Directory.Packages.props, with the
    hook configured exactly as docs/dotnet.md shows it."""
    src, rev = hook_source
    repo = dotnet_repo(git_repo)
    env = framework_env(pre_commit_home)
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {src}\n    rev: {rev}\n    hooks:\n      - id: cachelint-check\n"
    )
    commit_all(repo, "hooks")
    installed = pre_commit(repo, env, "install")
    assert installed.returncode == 0, installed.stderr
    before = head(repo)
    _replace(repo / "Directory.Packages.props", *BUMPS["Directory.Packages.props"])
    git(repo, "add", "Directory.Packages.props")
    blocked = framework_commit(repo, env, "bump")
    output = blocked.stdout + blocked.stderr
    assert blocked.returncode == 1, output
    assert f"{STORAGE}/.eval-cache-stamp.json: eval-cache-stale-pin:" in output
    assert head(repo) == before
