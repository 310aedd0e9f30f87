"""The configured API key's value is masked in every line a check prints (issue 37, "the worst-path
line never prints a secret"), whatever its shape: a company's own key format matches no provider
pattern, and only the configuration says it is a key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cachelint.findings import CheckSummary, Finding
from cachelint.formats import FindingsFormat
from cachelint.reporters import finding_line, render
from cachelint.rules import all_rules
from cachelint.secretscan import may_hold_secret
from tests.conftest import commit_all, run_cachelint
from tests.helpers import DEAD, SCRIPT, refund, write_repo

# Built from pieces so this file never holds a literal key; no provider's format.
KEY = "mycorp-" + "3f9a0c1b2d4e6f8a7b5c3d1e"
FORMATS = [f.value for f in FindingsFormat]


@pytest.fixture(autouse=True)
def _env(recording_env: None) -> None:
    """No key from outside, the clock pinned."""


def test_the_key_has_no_standard_shape() -> None:
    assert not may_hold_secret(KEY)


def test_a_configured_key_in_a_scenario_name_is_printed_by_no_format(
    git_repo: Path, tmp_path: Path
) -> None:
    """A scenario named by the key: its dataset file and cache directory hold it in their names,
    and the path is over max-path, so the secret rule, the path rule and the worst-path summary
    each print that path, in every format."""
    from tests.fakes import fake_server

    write_repo(git_repo, DEAD, {f"support/acme/{KEY}": refund(prompt="prompts/acme.md")})
    pyproject = git_repo / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    with fake_server(SCRIPT) as fake:  # recorded with no key set: the fake provider needs none
        pyproject.write_text(text.replace(DEAD, fake.url), encoding="utf-8")
        proc = run_cachelint(git_repo, "run", "--refresh-cache", "--execution", "recorded")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    pyproject.write_text(
        text.replace("[tool.cachelint]\n", "[tool.cachelint]\nmax-path = 60\n"), encoding="utf-8"
    )
    (git_repo / ".gitignore").write_text("eval-results/\n", encoding="utf-8")
    commit_all(git_repo)
    env = {"CACHELINT_TEST_KEY": KEY}
    for fmt in FORMATS:
        proc = run_cachelint(git_repo, "check", "--format", fmt, env=env)
        output = proc.stdout + proc.stderr
        assert proc.returncode == 1, output
        assert "eval-cache-path-too-long" in output
        assert KEY not in output, fmt
        assert json.dumps(KEY)[1:-1] not in output and KEY[:20] not in output
    proc = run_cachelint(git_repo, "check", env=env)
    assert "worst path" in proc.stdout and f"myco... ({len(KEY)} characters)" in proc.stdout
    # The key read from the configured env-file, as a CI job without the variable reads it.
    (git_repo / ".env.eval").write_text(f"CACHELINT_TEST_KEY={KEY}\n", encoding="utf-8")
    (git_repo / ".gitignore").write_text("eval-results/\n.env.eval\n", encoding="utf-8")
    proc = run_cachelint(git_repo, "check", "--format", "sarif")
    assert proc.returncode == 1 and KEY not in proc.stdout + proc.stderr


def test_every_format_masks_the_configured_key_in_any_rule_s_message() -> None:
    findings = [
        Finding(f"eval-cache/{KEY}/entry.json", "eval-cache-untracked", "not tracked"),
        Finding("eval-cache/x", "eval-cache-corrupt", f"holds {KEY!r} where a model belongs"),
    ]
    summary = CheckSummary(
        ("eval-cache",), 2, 1, f"eval-cache/{KEY}/entry.json", 40, 30, (f"skipped {KEY}",)
    )
    for fmt in FindingsFormat:
        output = render(fmt, findings, summary, all_rules(), keys=(KEY,))
        assert KEY not in output and "myco..." in output, fmt
        assert KEY in render(fmt, findings, summary, all_rules())  # what it masks: only the key
    assert KEY not in finding_line(findings[1], (KEY,))
