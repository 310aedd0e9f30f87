"""Every file cachelint reads, enumerated from its source (issue 37, "a test that enumerates the
readers"): a read outside `confine.read_inside` and `fsutil` is allowed only when listed below
with the reason it need not be confined, so a new unconfined reader fails here
until someone decides about it. Then the readers routed through `read_inside` are tested against
a symbolic link, the one thing each must refuse."""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from cachelint.config import Layout, load
from cachelint.credentials import load_api_key
from cachelint.errors import CachelintError
from cachelint.meai import guess_layout
from cachelint.pins import PinFileError, detect_pin_files, read_pins
from tests.conftest import PROJECT, commit_all
from tests.helpers import write_meai

PACKAGE = PROJECT / "cachelint"
# The modules that implement confined and bounded reading: every other read goes through them.
READING = {"cachelint/confine.py", "cachelint/fsutil.py"}
READERS = {"open", "read_bytes", "read_text", "read_regular", "read_regular_at", "open_regular"}
WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT")
CACHE_ENTRY = "a cache entry: read_regular (no link, no special file, max-entry-bytes) after the "
CACHE_ENTRY += "walk refused links in its directories; read_inside per entry costs 100,000 walks"
OWN = "cachelint's own file in the git directory (entry cache, its key): read_regular, bounded"
PINS = "pins._common.read_text, which reads through confine.read_inside"

ALLOWED: dict[tuple[str, str, str], str] = {
    ("cachelint/attrfiles.py", "_read_attributes_file", "read_regular"): (
        ".git/info/attributes: git's own local file (read_inside refuses .git), bounded"
    ),
    ("cachelint/commands/import_.py", "_read_cassettes", "read_regular"): (
        "import: a cassette named on the command line, the user's choice; bounded"
    ),
    (
        "cachelint/commands/init.py",
        "_installed_from",
        "metadata.distribution('cachelint').read_text",
    ): "cachelint's own installed metadata",
    ("cachelint/commands/prune.py", "_remove", "os.open"): (
        "prune: opens directories (O_DIRECTORY|O_NOFOLLOW) to delete inside them, reads nothing"
    ),
    ("cachelint/commands/prune.py", "_remove_at", "os.open"): "prune: as _remove",
    (
        "cachelint/commands/schema.py",
        "schema_text",
        "files('cachelint').joinpath('data').joinpath(SCHEMA).read_text",
    ): "cachelint's own data",
    ("cachelint/config.py", "_read_toml", "read_regular"): (
        "a config named by --config, the user's choice (the repository's go through read_inside)"
    ),
    ("cachelint/devtools/fake_script.py", "load_script", "path.read_text"): (
        "the fake provider's script, a developer tool's argument"
    ),
    ("cachelint/entries.py", "read_file", "os.open"): CACHE_ENTRY,
    ("cachelint/entrycache.py", "written_from", "open_regular"): OWN,
    ("cachelint/entrycache.py", "load", "open_regular"): OWN,
    ("cachelint/entrycache.py", "load_listing", "read_regular"): OWN,
    ("cachelint/entrycache.py", "_write_inside", "os.open"): OWN,
    ("cachelint/entrycache.py", "_key", "read_regular"): OWN,
    ("cachelint/entrycache.py", "_new_key", "os.open"): OWN,
    ("cachelint/green.py", "_hash_worktree", "open"): (
        "a watched file git lists, lstat'ed first (links hashed as git does), regular only"
    ),
    ("cachelint/hashing.py", "hash_file", "os.open"): CACHE_ENTRY,
    ("cachelint/listing.py", "_blob_id", "read_regular"): (
        "a tracked file whose stat data changed, hashed as a blob: never through a link, bounded"
    ),
    ("cachelint/hashing.py", "_hash_entry", "os.open"): CACHE_ENTRY,
    ("cachelint/hook.py", "_read_regular", "os.open"): (
        "the lean hook's reads (the top-level config files, the kept parsed config in the git "
        "directory, a `.git` file): read_regular's checks (lstat, no link, no special file, "
        "bounded) without importing fsutil, a tenth of the hook's own cost"
    ),
    ("cachelint/importers/apply.py", "_read_map", "read_regular"): (
        "import: a map file named on the command line; bounded"
    ),
    ("cachelint/importers/promptfoo_cache.py", "import_promptfoo", "read_regular"): (
        "import: a promptfoo cache named on the command line; bounded"
    ),
    ("cachelint/meai.py", "_content_vote", "open_regular"): (
        "the layout probe: 4 KB of one entry.json, no link, no special file (a linked root is "
        "never probed)"
    ),
    ("cachelint/pins/__init__.py", "_solution_projects", "read_text"): PINS,
    ("cachelint/pins/_common.py", "load_toml", "read_text"): PINS,
    ("cachelint/pins/_common.py", "load_json", "read_text"): PINS,
    ("cachelint/pins/_msbuild.py", "load", "read_text"): PINS,
    ("cachelint/pins/requirements.py", "parse", "read_text"): PINS,
    ("cachelint/pooled.py", "Helpers.start", "open"): "a pipe to a helper process, not a file",
    ("cachelint/pooled.py", "_from_list", "open"): "a pipe to a helper process, not a file",
    ("cachelint/entryscan.py", "read_scanned", "read_regular"): (
        "stamps, datasets (walked without following links) and git-listed watched files, "
        "read_regular refusing a final link; a tracked .env a glob names is scanned on purpose"
    ),
    ("cachelint/rules/unredacted.py", "_load", "read_regular"): CACHE_ENTRY,
    ("cachelint/runner/cachediff.py", "_working", "read_regular"): CACHE_ENTRY,
    ("cachelint/runner/childguard.py", "offline_children", "open"): "a pipe, not a file",
    ("cachelint/runner/childguard.py", "offline_target_children.drain", "open"): (
        "a pipe, not a file"
    ),
    ("cachelint/runner/evidence.py", "read_json", "read_regular"): (
        "results cachelint wrote, regular and bounded (link-free results directory checked)"
    ),
    ("cachelint/runner/evidence.py", "read_own", "read_regular"): (
        "a results file this run wrote, read back for the page: regular, bounded, no link on "
        "the way, and used only when its bytes are the ones written (else read_json reads it)"
    ),
    ("cachelint/runner/reports/publishing.py", "_started_at_end", "open_regular"): (
        "the last 128 bytes of an earlier execution's trend.json: no link, no special file, in "
        "an execution directory that is no link; the rest is read by evidence.read_json"
    ),
    ("cachelint/runner/reports/publishing.py", "_streamed_trend", "read_regular"): (
        "an earlier execution's trend.json of 1 MiB or more, read to be decoded a scenario at a "
        "time: no link below the results directory, no special file, bounded as read_json is"
    ),
    ("cachelint/runner/reports/publishing.py", "publish_run", "open_regular"): (
        "the report.html this run has just written in its own results directory (checked for "
        "links before the run), copied to --html in 1 MiB chunks: no link, no special file"
    ),
    ("cachelint/sqlite_cache.py", "_is_sqlite", "open"): (
        "16 bytes of a cassette the walk found regular"
    ),
    ("cachelint/sqlite_cache.py", "_header_problem", "open"): (
        "100 bytes of a cassette the walk found regular"
    ),
    ("cachelint/stamp.py", "write_stamp", "read_regular"): (
        "the stamp being rewritten by `cachelint stamp`, bounded"
    ),
    ("cachelint/store.py", "load_json_file", "read_regular"): CACHE_ENTRY,
    ("cachelint/store.py", "Store.get", "read_regular_at"): CACHE_ENTRY,
    ("cachelint/store.py", "Store._witnessed_json", "read_regular_at"): CACHE_ENTRY,
}


def _is_write(call: ast.Call, name: str, base: str) -> bool:
    """A call that opens for writing (or a pipe's write end) is no read."""
    if name == "open" and base == "os":
        flags = ast.unparse(call.args[1]) if len(call.args) > 1 else ""
        return any(f in flags for f in WRITE_FLAGS)
    if name != "open":
        return False
    mode = next((k.value for k in call.keywords if k.arg == "mode"), None)
    if mode is None:
        args = call.args if base in ("", "io") else [None, *call.args]
        mode = args[1] if len(args) > 1 else None
    return isinstance(mode, ast.Constant) and any(c in str(mode.value) for c in "wax+")


def _calls(node: ast.AST, where: list[str]) -> Iterator[tuple[str, ast.Call, str]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield from _calls(child, [*where, child.name])
            continue
        if isinstance(child, ast.Call):
            func = child.func
            name = getattr(func, "id", None) or getattr(func, "attr", None)
            base = ast.unparse(func.value) if isinstance(func, ast.Attribute) else ""
            if name in READERS and not _is_write(child, name, base):
                yield ".".join(where) or "<module>", child, ast.unparse(func)
        yield from _calls(child, where)


def reading_sites() -> set[tuple[str, str, str]]:
    found: set[tuple[str, str, str]] = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PROJECT).as_posix()
        if module in READING:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found.update((module, function, text) for function, _, text in _calls(tree, []))
    return found


def test_every_reader_is_confined_or_allowed_with_a_reason() -> None:
    sites = reading_sites()
    unlisted = sorted(sites - set(ALLOWED))
    assert not unlisted, (
        "files read outside confine.read_inside: route them through it, or add each to ALLOWED "
        f"with the reason it need not be: {unlisted}"
    )
    stale = sorted(set(ALLOWED) - sites)
    assert not stale, f"ALLOWED names readers that no longer exist: {stale}"
    assert all(reason.strip() for reason in ALLOWED.values())


def test_the_enumeration_sees_a_new_reader(tmp_path: Path) -> None:
    source = "def f(p):\n    return open(p).read() + p.read_bytes()\n"
    found = {text for _, _, text in _calls(ast.parse(source), [])}
    assert found == {"open", "p.read_bytes"}
    writes = "def g(p):\n    open(p, 'w')\n    p.open('ab')\n    os.open(p, os.O_WRONLY)\n"
    assert list(_calls(ast.parse(writes), [])) == []


# ---- the readers routed through read_inside refuse a link ---------------------------------------


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "outside"
    secret.mkdir()
    return secret


def test_a_linked_pin_file_is_refused(git_repo: Path, outside: Path) -> None:
    (outside / "requirements.txt").write_text("cachelint==0.1.0\n")
    (git_repo / "requirements.txt").symlink_to(outside / "requirements.txt")
    commit_all(git_repo)
    config = load(git_repo)
    assert "requirements.txt" in detect_pin_files(git_repo)
    with pytest.raises(PinFileError, match=r"requirements\.txt.*link"):
        read_pins(config)


def test_a_linked_solution_file_is_refused(git_repo: Path, outside: Path) -> None:
    (outside / "App.sln").write_text('Project("{X}") = "App", "App/App.csproj", "{Y}"\n')
    (git_repo / "App.sln").symlink_to(outside / "App.sln")
    with pytest.raises(PinFileError, match=r"App\.sln.*link"):
        detect_pin_files(git_repo)


def test_a_linked_env_file_is_refused(
    git_repo: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    (outside / "keys").write_text("OPENAI_API_KEY=sk-from-outside\n")
    (git_repo / ".env").symlink_to(outside / "keys")
    with pytest.raises(CachelintError, match=r"\.env.*link"):
        load_api_key(git_repo, "OPENAI_API_KEY", ".env")
    (git_repo / ".env").unlink()
    (git_repo / ".env").write_text("OPENAI_API_KEY=sk-inside\n")
    assert load_api_key(git_repo, "OPENAI_API_KEY", ".env") == "sk-inside"
    assert load_api_key(git_repo, "OPENAI_API_KEY", "missing.env") is None


def test_the_layout_probe_follows_no_link(git_repo: Path, outside: Path) -> None:
    """A MEAI tree outside the repository, reached through a linked cache directory or a linked
    entry.json, is no evidence: the root stays cachelint's by default, undecided."""
    write_meai(outside)
    os.symlink(outside / "eval-cache", git_repo / "eval-cache")
    assert guess_layout(str(git_repo / "eval-cache")) == (Layout.CACHELINT, False)
    os.unlink(git_repo / "eval-cache")
    # A key directory named so that only its entry.json could vote, and that a link.
    inside = write_meai(git_repo, key="not-a-hex-key")
    (inside / "entry.json").unlink()
    (inside / "entry.json").symlink_to(write_meai(outside, key="not-a-hex-key") / "entry.json")
    assert guess_layout(str(git_repo / "eval-cache")) == (Layout.CACHELINT, False)
