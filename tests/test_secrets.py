"""Secrets (issue 14, item 6): found in what the cache commits, masked, refused when recording."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cachelint import entrycache
from cachelint.config import Layout
from cachelint.masks import mask, redact_url
from cachelint.secretscan import fingerprint, may_hold_secret, scan, secrets_in
from tests.conftest import commit_all, git, run_cachelint
from tests.helpers import DEAD, do_run, record, refund, write_repo
from tests.helpers import RUN_NOW as NOW

# Built from pieces so this file never holds a literal key a scanner would flag.
OPENAI = "sk-proj-" + "Ab3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"
ANTHROPIC = "sk-ant-api03-" + "x9Y8w7V6u5T4s3R2q1P0o9N8m7L6k5J4"
AWS = "AKIA" + "IOSFODNN7EXAMPLE"
GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
GITLAB = "glpat-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm"
SLACK = "xoxb-" + "123456789012-abcdefABCDEF"
GOOGLE = "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"
PEM = "-----BEGIN RSA " + "PRIVATE KEY-----"
JWT = (
    "eyJhbGciOiJIUzI1NiJ9"
    + ".eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)
BEARER_TOKEN = "tok" + "en-abcdef123456"
CONFIGURED = "custom-" + "key-value-0123456789"

ACME = {"support/acme/refund": refund(prompt="prompts/acme.md")}


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CACHELINT_TEST_KEY", raising=False)
    monkeypatch.delenv("CACHELINT_EXECUTION", raising=False)
    monkeypatch.setenv("CACHELINT_NOW", NOW)


@pytest.mark.parametrize(
    ("text", "kind", "value"),
    [
        (f"key {OPENAI} here", "OpenAI API key", OPENAI),
        (f'"{ANTHROPIC}"', "Anthropic API key", ANTHROPIC),
        (f"id={AWS};", "AWS access key id", AWS),
        (GITHUB, "GitHub token", GITHUB),
        (GITLAB, "GitLab token", GITLAB),
        (SLACK, "Slack token", SLACK),
        (GOOGLE, "Google API key", GOOGLE),
        (f"{PEM}\\nMIIE...", "private key", PEM),
        (f"token: {JWT}", "JWT", JWT),
    ],
)
def test_each_well_known_format_is_found(text: str, kind: str, value: str) -> None:
    found = scan(text)
    assert [(s.kind, s.value) for s in found] == [(kind, value)]


def test_bearer_value_and_configured_key_are_found() -> None:
    found = scan(f'{{"Authorization": "Bearer {BEARER_TOKEN}"}}')
    assert [(s.kind, s.value) for s in found] == [("Authorization bearer token", BEARER_TOKEN)]
    found = scan(f"echo: {CONFIGURED}.", extra=[CONFIGURED])
    assert [(s.kind, s.value) for s in found] == [("the configured API key", CONFIGURED)]


def test_ordinary_text_is_not_a_secret() -> None:
    assert scan("sk-short, AKIA1234, the skeleton key, eyJ, Bearer of news") == []


def test_mask_shows_four_characters_and_the_length() -> None:
    assert mask(OPENAI) == f"sk-p... ({len(OPENAI)} characters)"
    assert OPENAI[4:] not in mask(OPENAI)


def test_redact_url_strips_userinfo_and_credential_query_values() -> None:
    assert (
        redact_url("https://user:hunter2@api.example.com/v1?api-version=2024&key=abc&token=t")
        == "https://api.example.com/v1?api-version=2024&key=***&token=***"
    )
    assert redact_url("http://127.0.0.1:8765/v1") == "http://127.0.0.1:8765/v1"


# ---- the rule on real repositories --------------------------------------------------------------

ECHO = {"rules": [], "default": {"content": f"Acme refunds within 30 days. {OPENAI} {AWS}"}}


def leaky_repo(repo: Path) -> Path:
    write_repo(repo, DEAD, ACME)
    assert record(repo, ECHO)[0].rc == 0
    leaky = refund({"description": f"uses {GITHUB} and {SLACK}"}, prompt="prompts/acme.md")
    (repo / "eval-datasets/support/acme/leaky.json").write_text(json.dumps(leaky))
    commit_all(repo)
    return repo


def check_secrets(repo: Path, env: dict[str, str] | None = None) -> tuple[int, str]:
    proc = run_cachelint(repo, "check", "--select", "eval-cache-secret", env=env)
    return proc.returncode, proc.stdout + proc.stderr


def test_check_finds_secrets_in_answers_and_datasets_masked(git_repo: Path) -> None:
    leaky_repo(git_repo)
    rc, output = check_secrets(git_repo)
    assert rc == 1
    lines = [line for line in output.splitlines() if "eval-cache-secret" in line]
    contents = [line for line in lines if "/contents.data: " in line]
    assert len(contents) == 2  # the OpenAI key and the AWS key of the recorded answer
    assert any("OpenAI API key sk-p... (" in line for line in contents)
    assert any("AWS access key id AKIA... (20 characters)" in line for line in contents)
    dataset = [line for line in lines if line.startswith("eval-datasets/support/acme/leaky.json")]
    assert len(dataset) == 2 and all("fingerprint blake3:" in line for line in dataset)
    for secret in (OPENAI, AWS, GITHUB, SLACK):
        assert secret not in output


def test_entries_scanned_clean_are_remembered_by_content(git_repo: Path) -> None:
    """With the configured key set, every entry must be read for its value: one scanned clean
    is remembered by its content digest, in the entry cache; without a key, an entry whose bytes
    hold no anchor of any format is never read again, and nothing needs remembering."""
    write_repo(git_repo, DEAD, ACME)
    assert record(git_repo)[0].rc == 0
    commit_all(git_repo)
    assert check_secrets(git_repo)[0] == 0

    def memory() -> frozenset[str]:
        return entrycache.load(git_repo / ".git", Layout.AUTO).clean.digests

    assert memory() == frozenset()
    keyed = {"CACHELINT_TEST_KEY": CONFIGURED}
    assert check_secrets(git_repo, env=keyed)[0] == 0
    assert len(memory()) == 1  # the one entry's digest
    assert not (git_repo / ".git/cachelint/secrets-clean.txt").exists()  # no store of its own
    assert record(git_repo, ECHO)[0].rc == 0  # the same entry, now with a key in its answer
    commit_all(git_repo)
    for env in (None, keyed):
        rc, output = check_secrets(git_repo, env=env)
        assert rc == 1 and "OpenAI API key sk-p..." in output


def test_secret_in_the_stamp_is_found(git_repo: Path) -> None:
    write_repo(git_repo, DEAD, ACME)
    assert record(git_repo)[0].rc == 0
    stamp = git_repo / "eval-cache/.eval-cache-stamp.json"
    stamp.write_text(json.dumps({"format": 1, "note": GOOGLE}))
    commit_all(git_repo)
    rc, output = check_secrets(git_repo)
    assert rc == 1 and "eval-cache/.eval-cache-stamp.json: eval-cache-secret" in output
    assert GOOGLE not in output


def test_watched_files_git_lists_are_scanned_and_ignored_ones_are_not(git_repo: Path) -> None:
    """The watched files are those git lists (tracked, or untracked and not ignored), as the
    watch gate sees them: an ignored watched file holding a key is no finding."""
    write_repo(git_repo, DEAD, ACME)
    assert record(git_repo)[0].rc == 0
    text = (git_repo / "pyproject.toml").read_text(encoding="utf-8")
    watch = 'watch = ["prompts/**"]\n'
    text = text.replace('cache = "eval-cache"\n', 'cache = "eval-cache"\n' + watch)
    (git_repo / "pyproject.toml").write_text(text, encoding="utf-8")
    (git_repo / ".gitignore").write_text("prompts/local.md\n", encoding="utf-8")
    (git_repo / "prompts/leak.md").write_text(f"use {GITHUB}\n", encoding="utf-8")
    (git_repo / "prompts/local.md").write_text(f"use {SLACK}\n", encoding="utf-8")
    commit_all(git_repo)
    (git_repo / "prompts/new.md").write_text(f"use {AWS}\n", encoding="utf-8")  # untracked
    rc, output = check_secrets(git_repo)
    assert rc == 1, output
    assert "prompts/leak.md: eval-cache-secret" in output
    assert "prompts/new.md: eval-cache-secret" in output
    assert "prompts/local.md" not in output


def test_the_configured_keys_value_is_found(git_repo: Path) -> None:
    write_repo(git_repo, DEAD, ACME)
    echo = {"rules": [], "default": {"content": f"Acme refunds within 30 days ({CONFIGURED})"}}
    assert record(git_repo, echo)[0].rc == 0  # recorded with no key: nothing to refuse
    commit_all(git_repo)
    assert check_secrets(git_repo)[0] == 0
    rc, output = check_secrets(git_repo, env={"CACHELINT_TEST_KEY": CONFIGURED})
    assert rc == 1 and "the configured API key cust... (" in output
    assert CONFIGURED not in output


def test_allowlist_by_fingerprint_and_by_glob(git_repo: Path) -> None:
    leaky_repo(git_repo)
    prints = [fingerprint(s) for s in (OPENAI, AWS)]
    text = (git_repo / "pyproject.toml").read_text(encoding="utf-8")
    allow = f"secret-allow = {json.dumps([*prints, 'eval-datasets/**/leaky.json'])}\n"
    text = text.replace('cache = "eval-cache"\n', 'cache = "eval-cache"\n' + allow)
    (git_repo / "pyproject.toml").write_text(text, encoding="utf-8")
    rc, output = check_secrets(git_repo)
    assert rc == 0, output


# ---- recording fails closed ---------------------------------------------------------------------


def test_recording_refuses_an_answer_that_echoes_the_api_key(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_repo(git_repo, DEAD, ACME)
    monkeypatch.setenv("CACHELINT_TEST_KEY", CONFIGURED)
    echo = {"rules": [], "default": {"content": f"Acme refunds within 30 days; key {CONFIGURED}"}}
    outcome, requests = record(git_repo, echo)
    assert requests == 1 and outcome.rc == 1
    assert "the response holds the API key from $CACHELINT_TEST_KEY (cust... (" in outcome.out
    assert "refusing to record it" in outcome.out
    assert CONFIGURED not in outcome.out + outcome.err
    assert not (git_repo / "eval-cache").exists() or not list(
        (git_repo / "eval-cache").rglob("contents.data")
    )
    results = "".join(p.read_text() for p in (git_repo / "eval-results").rglob("*.json"))
    assert CONFIGURED not in results.replace("***", "")


def test_recording_refuses_a_prompt_that_holds_the_api_key(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenarios = {
        "support/acme/refund": refund({"input": f"use {CONFIGURED}"}, prompt="prompts/acme.md")
    }
    write_repo(git_repo, DEAD, scenarios)
    monkeypatch.setenv("CACHELINT_TEST_KEY", CONFIGURED)
    outcome, _ = record(git_repo)
    assert outcome.rc == 1 and "the request holds the API key" in outcome.out
    assert not list(git_repo.glob("eval-cache/**/contents.data"))


def test_credentials_in_the_target_url_never_reach_a_message(git_repo: Path) -> None:
    url = "http://user:hunter2pw@127.0.0.1:9/v1?key=qs-secret-value"
    # No retries: the refused connection is all the recording run needs to report.
    write_repo(git_repo, url, ACME, target="max-retries = 0\n")
    replayed = do_run(git_repo)  # a miss: the message names the url it would record from
    assert replayed.rc == 1 and "it calls http://127.0.0.1:9/v1?key=*** as provider" in replayed.out
    recorded = do_run(git_repo, refresh=True)  # nothing listens on port 9
    assert recorded.rc == 1
    for outcome in (replayed, recorded):
        text = outcome.out + outcome.err
        assert "hunter2pw" not in text and "qs-secret-value" not in text
    written = "".join(p.read_text() for p in (git_repo / "eval-results").rglob("*.*"))
    assert "hunter2pw" not in written and "qs-secret-value" not in written


# ---- the env-file -------------------------------------------------------------------------------


def env_file_findings(repo: Path) -> list[str]:
    proc = run_cachelint(repo, "check", "--select", "eval-cache-env-file")
    return [line for line in proc.stdout.splitlines() if "eval-cache-env-file" in line]


def test_env_file_not_ignored_warns_tracked_errors_ignored_is_quiet(git_repo: Path) -> None:
    write_repo(git_repo, DEAD, ACME)
    assert record(git_repo)[0].rc == 0
    commit_all(git_repo)
    assert env_file_findings(git_repo) == []  # configured but absent
    (git_repo / ".env.eval").write_text(f"CACHELINT_TEST_KEY={CONFIGURED}\n")
    found = env_file_findings(git_repo)
    assert len(found) == 1 and "not ignored by git" in found[0] and "warning" in found[0].lower()
    (git_repo / ".gitignore").write_text("/.env.eval\n")
    assert env_file_findings(git_repo) == []
    git(git_repo, "add", "-f", ".env.eval")
    found = env_file_findings(git_repo)
    assert len(found) == 1 and "is tracked by git" in found[0]
    proc = run_cachelint(git_repo, "check", "--select", "eval-cache-env-file")
    assert proc.returncode == 1 and CONFIGURED not in proc.stdout + proc.stderr


PIECES = [OPENAI, ANTHROPIC, AWS, GITHUB, GITLAB, SLACK, GOOGLE, PEM, JWT, "the answer is 42"]


@given(
    st.lists(
        st.one_of(
            st.sampled_from(PIECES),
            st.text(max_size=30),
            st.sampled_from(
                [
                    "AuThOrIzAtIoN: bEaReR ",
                    "authorization=Bearer ",
                    # re's case-insensitive `i` also matches the Turkish dotted and dotless I
                    "AUTHOR\u0130ZAT\u0130ON: Bearer ",
                    "author\u0131zation: bearer ",
                ]
            ).map(lambda s: s + BEARER_TOKEN),
        ),
        max_size=6,
    ).map("".join)
)
def test_the_prefilter_never_skips_text_a_pattern_matches(text: str) -> None:
    """Scanning skips a file whose text lacks every pattern's anchor; that must never hide a
    match, whatever the case of `authorization`, for text and for raw bytes alike."""
    from cachelint.secretscan import _COMBINED

    if _COMBINED.search(text):
        assert may_hold_secret(text)
        assert may_hold_secret(text.encode("utf-8", "surrogatepass"))


@pytest.mark.parametrize("word", ["AUTHOR\u0130ZAT\u0130ON", "author\u0131zation", "AuThOrIzAtIoN"])
def test_the_prefilter_folds_authorization_as_the_pattern_does(word: str) -> None:
    text = f"{word}: Bearer {BEARER_TOKEN}"
    assert [s.kind for s in scan(text)] == ["Authorization bearer token"]
    assert may_hold_secret(text.encode()) and may_hold_secret(text)
    assert not may_hold_secret(text.replace(word, "authentication").encode())


# ---- real shapes, escapes (issue 37) ------------------------------------------------------------

WORDS = [
    "risk-management-best-practices-2024",
    "task-force-recommendations-for-q3-2025",
    "desk-booking-system-requirements-v2",
    "Ask-the-expert-sessions-are-booked-weekly",
    "sk-learn-compatible-estimators-for-2024",
    "whisk-together-the-butter-and-sugar-first",
]


@pytest.mark.parametrize("word", WORDS)
def test_english_words_are_no_key(word: str) -> None:
    assert scan(f"See {word} and {word.upper()} ({word}).") == []


@pytest.mark.parametrize(
    "escaped",
    [
        "\\u0073k-proj-" + OPENAI[8:],
        OPENAI.replace("-", "\\u002d"),
        OPENAI.replace("-", "\\u002D", 1),
        "Here it is:\\n" + OPENAI,  # after an escaped newline the key begins a word
        "\\u0041KIA" + AWS[4:],
        "\\u0061uthorization: Bearer abc\\/def\\/0123456789",
    ],
)
def test_keys_written_with_json_escapes_are_found(escaped: str) -> None:
    text = json.dumps({"answer": "x"}).replace('"x"', f'"{escaped}"')
    assert may_hold_secret(text) and may_hold_secret(text.encode())
    found = secrets_in("p", text)
    assert len(found) == 1, found
    assert found[0].value in (OPENAI, AWS, "abc/def/0123456789")


def test_an_escaped_backslash_is_not_decoded_twice() -> None:
    assert secrets_in("p", '{"a": "\\\\u0073k-proj-' + OPENAI[8:] + '"}') == []


@given(
    st.lists(
        st.sampled_from(["a", " ", "\\n", "\\\\", "\\u0073", "\\u002d", "risk-", "\\/"]).map(str)
        | st.sampled_from([OPENAI, AWS, GITHUB]).map(
            lambda k: "".join(f"\\u{ord(c):04x}" if c in "skAg-" else c for c in k)
        ),
        max_size=6,
    ).map("".join)
)
def test_the_prefilter_never_skips_an_escaped_key(text: str) -> None:
    if secrets_in("p", text):
        assert may_hold_secret(text)
        assert may_hold_secret(text.encode())


def escaped_key_repo(repo: Path) -> Path:
    """A recorded answer, a dataset and the stamp whose keys are written with JSON escapes, as
    another JSON writer (or a hand edit) may write them: every one decodes to the key."""
    write_repo(repo, DEAD, ACME)
    assert record(repo, ECHO)[0].rc == 0
    [contents] = repo.glob("eval-cache/**/contents.data")
    raw = contents.read_bytes()
    assert OPENAI.encode() in raw and AWS.encode() in raw
    raw = raw.replace(b"sk-proj-", b"\\u0073k\\u002dproj-").replace(b"AKIA", b"\\u0041KIA")
    contents.write_bytes(raw)
    leaky = refund({"description": GITHUB.replace("_", "\\u005f")}, prompt="prompts/acme.md")
    dataset = repo / "eval-datasets/support/acme/leaky.json"
    dataset.write_text(json.dumps(leaky).replace("\\\\u005f", "\\u005f"))
    stamp = repo / "eval-cache/.eval-cache-stamp.json"
    stamp.write_text('{"format": 1, "note": "Authorization: Bearer tok\\/en\\/0123456789"}')
    commit_all(repo)
    return repo


def test_check_finds_keys_written_with_json_escapes(git_repo: Path) -> None:
    escaped_key_repo(git_repo)
    rc, output = check_secrets(git_repo)
    assert rc == 1, output
    lines = [line for line in output.splitlines() if "eval-cache-secret" in line]
    assert sum("/contents.data: " in line for line in lines) == 2, lines
    assert any("OpenAI API key sk-p... (" in line for line in lines)
    assert any("AWS access key id AKIA... (20 characters)" in line for line in lines)
    assert any(line.startswith("eval-datasets/support/acme/leaky.json: ") for line in lines)
    assert any(line.startswith("eval-cache/.eval-cache-stamp.json: ") for line in lines)
    for secret in (OPENAI, AWS, GITHUB, "tok/en/0123456789"):
        assert secret not in output


def test_check_calls_no_english_word_a_key(git_repo: Path) -> None:
    write_repo(git_repo, DEAD, ACME)
    words = "Acme refunds within 30 days. " + " ".join(WORDS)
    assert record(git_repo, {"rules": [], "default": {"content": words}})[0].rc == 0
    leaky = refund({"description": words}, prompt="prompts/acme.md")
    (git_repo / "eval-datasets/support/acme/words.json").write_text(json.dumps(leaky))
    commit_all(git_repo)
    rc, output = check_secrets(git_repo)
    assert rc == 0, output


def test_a_key_in_a_file_name_is_found_and_never_printed(git_repo: Path) -> None:
    """A scenario named by a pasted key: its dataset file and cache directory hold the key in
    their names; check finds it there and prints it nowhere, not even as the worst path."""
    write_repo(git_repo, DEAD, {f"support/acme/{OPENAI}": refund(prompt="prompts/acme.md")})
    assert record(git_repo)[0].rc == 0
    commit_all(git_repo)
    pyproject = git_repo / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text().replace("[tool.cachelint]\n", "[tool.cachelint]\nmax-path = 60\n")
    )
    commit_all(git_repo)
    for args in (["check"], ["check", "--format", "json"]):
        proc = run_cachelint(git_repo, *args)
        output = proc.stdout + proc.stderr
        assert proc.returncode == 1, output
        assert OPENAI not in output
    proc = run_cachelint(git_repo, "check")
    names = [ln for ln in proc.stdout.splitlines() if "eval-cache-secret: its name holds" in ln]
    assert any(ln.startswith("eval-datasets/support/acme/sk-p... (") for ln in names), names
    assert any(ln.startswith("eval-cache/") for ln in names), names
    assert "eval-cache-path-too-long" in proc.stdout
    assert "worst path" in proc.stdout and "sk-p... (44 characters)" in proc.stdout


def _holds(items: object, char: int) -> bool:
    """Whether every match of the parsed regex sequence `items` holds the character `char`."""
    for op, arg in items:  # type: ignore[attr-defined]
        name = str(op)
        if name == "LITERAL" and arg == char:
            return True
        if name == "SUBPATTERN" and _holds(arg[-1], char):
            return True
        if name == "BRANCH" and all(_holds(b, char) for b in arg[1]):
            return True
        if name in ("MAX_REPEAT", "MIN_REPEAT") and arg[0] >= 1 and _holds(arg[2], char):
            return True
    return False


def test_each_anchor_needs_the_character_the_name_scan_looks_for_first() -> None:
    """secret_names searches a tree's names for an anchor only where its needed character is
    present: every match of the anchor must hold it, or a key in a name would be missed."""
    try:
        from re import _parser as parser  # type: ignore[attr-defined]
    except ImportError:  # Python 3.10
        import sre_parse as parser
    from cachelint.secretscan import _ANCHOR_NEEDS, _ANCHORS

    assert len(_ANCHOR_NEEDS) == len(_ANCHORS)
    for need, anchor in zip(_ANCHOR_NEEDS, _ANCHORS, strict=True):
        assert _holds(parser.parse(anchor), ord(need)), (anchor, need)
