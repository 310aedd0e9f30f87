"""`cachelint check` through the real console: `python -m cachelint check` in a tmp repository."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from cachelint.commands.check import check
from cachelint.errors import CachelintError
from tests.conftest import commit_all, run_cachelint
from tests.helpers import NOW, TREE_CODES, put

TREE = ",".join(TREE_CODES)


cachelint = run_cachelint


def checked(repo: Path, fmt: str = "json", **options: Any) -> tuple[int, str]:
    """`check` as `cachelint stamp --check` calls it: the exit code and what it wrote."""
    defaults: dict[str, Any] = {"config_path": None, "select": None, "ignore": (), "strict": False}
    out = io.StringIO()
    code = check(repo, fmt=fmt, now=NOW, out=out, **{**defaults, **options})
    return code, out.getvalue()


@pytest.fixture
def repo(git_repo: Path) -> Path:
    (git_repo / ".gitattributes").write_text("eval-cache/** -text\n")
    put(git_repo, text="one")
    commit_all(git_repo)
    return git_repo


def test_clean_tree_exits_0_and_says_what_it_looked_at(repo: Path) -> None:
    result = cachelint(repo, "check", "--select", TREE)
    assert result.returncode == 0, result.stdout + result.stderr
    (line,) = result.stdout.splitlines()
    assert "0 findings" in line and "2 files" in line and "1 entry" in line
    assert "eval-cache" in line and "/160" in line  # worst path vs max-path, even when it fits


def test_findings_exit_1_one_line_each(repo: Path) -> None:
    (repo / "eval-cache" / "aux.json").write_text("{}")
    result = cachelint(repo, "check", "--select", TREE, "some/file.json", "other")
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert len(lines) == 3  # two findings, then the summary
    assert lines[0].startswith("eval-cache/aux.json: eval-cache-untracked: ")
    assert lines[1].startswith("eval-cache/aux.json: eval-cache-windows-name: 'aux.json' uses")
    assert lines[2].startswith("cachelint: 2 findings")


def test_select_and_ignore_are_repeatable_and_comma_separated(repo: Path) -> None:
    (repo / "eval-cache" / "aux.json").write_text("{}")
    result = cachelint(
        repo,
        "check",
        "--select",
        "eval-cache-windows-name,eval-cache-untracked",
        "--select",
        "eval-cache-empty",
        "--ignore",
        "eval-cache-untracked",
    )
    assert result.returncode == 1
    assert "eval-cache-windows-name" in result.stdout
    assert "eval-cache-untracked" not in result.stdout


def test_unknown_rule_code_is_a_usage_error(repo: Path) -> None:
    for option in ("--select", "--ignore"):
        result = cachelint(repo, "check", option, "eval-cache-nope")
        assert result.returncode == 2
        assert result.stderr.count("\n") == 1 and "eval-cache-nope" in result.stderr
        assert "Traceback" not in result.stderr


def test_outside_a_repository_exits_2_with_one_line(tmp_path: Path) -> None:
    outside = tmp_path / "plain"
    outside.mkdir()
    result = cachelint(outside, "check")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "not inside a git repository" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_bad_config_exits_2(repo: Path) -> None:
    (repo / "cachelint.toml").write_text("max-path = 9000\n")
    result = cachelint(repo, "check")
    assert result.returncode == 2 and "max-path" in result.stderr
    assert "Traceback" not in result.stderr


def test_empty_root_is_never_green(git_repo: Path) -> None:
    result = cachelint(git_repo, "check", "--select", TREE)
    assert result.returncode == 1
    assert "eval-cache: eval-cache-empty: " in result.stdout
    assert "0 entries" in result.stdout.splitlines()[-1]


def test_json_format_parses(repo: Path) -> None:
    (repo / "eval-cache" / "aux.json").write_text("{}")
    result = cachelint(repo, "check", "--format", "json", "--select", TREE)
    assert result.returncode == 1
    document = json.loads(result.stdout)
    assert document["summary"]["roots"] == ["eval-cache"]
    assert document["summary"]["entries"] == 1
    codes = {f["code"] for f in document["findings"]}
    assert codes == {"eval-cache-windows-name", "eval-cache-untracked"}


def test_runs_from_a_subdirectory(repo: Path) -> None:
    result = cachelint(repo / "eval-cache", "check", "--select", TREE)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("where", ["top", "inside", "elsewhere"])
def test_findings_do_not_depend_on_the_working_directory(
    repo: Path,
    where: str,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The walk and the check's own reads open paths relative to the working directory when
    that is shorter; every finding must come out the same from anywhere."""
    (repo / "eval-cache" / "aux.json").write_text("{}")  # untracked, and a Windows device name
    broken = put(repo, scenario="support/acme/broken", text="broken")
    (broken / "entry.json").write_text("{ not json")  # read by the check itself, no helpers here
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    monkeypatch.chdir({"top": repo, "inside": repo / "eval-cache", "elsewhere": elsewhere}[where])
    code, written = checked(repo, select=TREE_CODES, entry_cache=False)
    assert code == 1
    found = {(f["path"], f["code"]) for f in json.loads(written)["findings"]}
    broken_dir = broken.relative_to(repo).as_posix()
    assert (broken_dir, "eval-cache-corrupt") in found
    assert ("eval-cache/aux.json", "eval-cache-untracked") in found
    assert ("eval-cache/aux.json", "eval-cache-windows-name") in found


# ---- the typed function, as `cachelint stamp --check` calls it -----------------------------


def test_groups_limit_the_rules(repo: Path) -> None:
    # The tree's only problem is one that no stamp rule looks at.
    (repo / "eval-cache" / "aux.json").write_text("{}")
    code, written = checked(repo, "text", groups=frozenset({"tree"}))
    assert code == 1 and "eval-cache-windows-name" in written
    _, written = checked(repo, select=(), groups=frozenset({"stamp"}))
    assert "eval-cache-windows-name" not in written


def test_unknown_format_is_a_usage_error(repo: Path) -> None:
    with pytest.raises(
        CachelintError, match="--format 'xml' is not a findings format; use one of text, json"
    ):
        checked(repo, "xml")


def test_warnings_fail_only_with_strict(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The entry was recorded at NOW with a 365-day TTL: 350 days later it is expiring (a warning).
    monkeypatch.setenv("CACHELINT_NOW", "2027-02-14T12:00:00Z")
    lenient = cachelint(repo, "check", "--select", "eval-cache-expiring")
    strict = cachelint(repo, "check", "--select", "eval-cache-expiring", "--strict")
    assert "warning" in lenient.stdout and "eval-cache-expiring" in lenient.stdout
    assert lenient.returncode == 0, lenient.stdout + lenient.stderr
    assert strict.returncode == 1
