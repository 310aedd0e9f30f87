"""Both hooks through the real pre-commit framework: `pre-commit install` + real `git commit`s,
and one `pre-commit try-repo`. Each framework run costs seconds (the first builds the hook's
virtualenv with pip, which needs registry access, and try-repo builds its own every time), so
there are few of them; select or deselect them with `-k precommit`."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import commit_all, git
from tests.helpers import framework_commit as commit
from tests.helpers import framework_env, make_checked_repo, pre_commit, record_green

CONFIG = '[tool.cachelint]\nwatch = ["prompts/**"]\n'


def test_hooks_precommit_install_blocks_then_lets_through(
    git_repo: Path, hook_source: tuple[Path, str], pre_commit_home: Path
) -> None:
    src, rev = hook_source
    repo = git_repo
    env = framework_env(pre_commit_home)
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {src}\n  rev: {rev}\n  hooks:\n"
        "  - id: cachelint-check\n  - id: cachelint-watch\n"
    )
    (repo / "pyproject.toml").write_text(CONFIG)
    (repo / "prompts").mkdir()
    (repo / "prompts" / "system.txt").write_text("You are terse.\n")
    commit_all(repo, "setup")
    installed = pre_commit(repo, env, "install")
    assert installed.returncode == 0, installed.stderr

    # The check hook: a recorded cache without `-text` is refused, the fix goes through.
    make_checked_repo(repo, attributes=False)
    blocked = commit(repo, env, "record")
    assert blocked.returncode == 1, blocked.stdout + blocked.stderr
    assert "eval-cache: eval-cache-text-attr:" in blocked.stdout + blocked.stderr
    (repo / ".gitattributes").write_text("eval-cache/** -text\n")
    git(repo, "add", "-A")
    record_green(repo)  # the recorded cache went green: keep the watch gate out of this step
    git(repo, "add", "-A")
    done = commit(repo, env, "record, byte-exact")
    assert done.returncode == 0, done.stdout + done.stderr

    # The watch hook: a prompt change without a green run is refused, naming the prompt.
    (repo / "prompts" / "system.txt").write_text("You are verbose.\n")
    git(repo, "add", "prompts")
    blocked = commit(repo, env, "prompt")
    assert blocked.returncode == 1, blocked.stdout + blocked.stderr
    assert (
        "prompts/system.txt: eval-green-stale: watched file changed"
        in blocked.stdout + blocked.stderr
    )
    record_green(repo)
    git(repo, "add", ".eval-green.json")
    done = commit(repo, env, "prompt, evals green")
    assert done.returncode == 0, done.stdout + done.stderr

    # A change outside the globs and the cache: check is skipped, watch passes.
    (repo / "notes.md").write_text("notes\n")
    git(repo, "add", "notes.md")
    done = commit(repo, env, "notes")
    assert done.returncode == 0, done.stdout + done.stderr
    assert git(repo, "status", "--porcelain") == ""


def test_hooks_precommit_try_repo_then_run_check_all_files(
    git_repo: Path, hook_source: tuple[Path, str], pre_commit_home: Path
) -> None:
    src, rev = hook_source
    repo = make_checked_repo(git_repo, attributes=False)
    env = framework_env(pre_commit_home)
    # try-repo builds its hook environment in a throw-away store, so it is run once.
    failed = pre_commit(
        repo, env, "try-repo", str(src), "cachelint-check", "--ref", rev, "--all-files"
    )
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "eval-cache: eval-cache-text-attr:" in failed.stdout
    (repo / ".gitattributes").write_text("eval-cache/** -text\n")
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {src}\n  rev: {rev}\n  hooks:\n  - id: cachelint-check\n"
    )
    git(repo, "add", "-A")
    passed = pre_commit(repo, env, "run", "cachelint-check", "--all-files")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "cachelint" in passed.stdout and "Passed" in passed.stdout
