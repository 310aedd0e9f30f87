"""The green record's git listing leaves out the cache roots no pinned path can lie under, and the
record stays what the whole listing gives."""

from __future__ import annotations

import random
from pathlib import Path

from cachelint.config import load
from cachelint.gitutil import split_z
from cachelint.globs import compile_globs
from cachelint.green import (
    _may_match_below,
    start_record_listing,
    start_worktree_listing,
    worktree_state,
)
from tests.conftest import commit_all
from tests.helpers import make_gated_repo


def _listed(process_out: bytes) -> set[str]:
    return set(split_z(process_out))


def test_a_cache_root_no_glob_reaches_is_not_listed_and_the_state_is_the_same(
    git_repo: Path,
) -> None:
    repo = make_gated_repo(git_repo, '[tool.cachelint]\nwatch = ["prompts/**", "/models.json"]\n')
    (repo / "eval-cache" / "untracked.txt").write_text("x\n")
    config = load(repo)
    whole = _listed(start_worktree_listing(repo).result().out)
    narrowed = _listed(start_record_listing(config).result().out)
    assert "eval-cache/untracked.txt" in whole
    assert not any(p.startswith("eval-cache/") for p in narrowed), narrowed
    assert {p for p in whole if not p.startswith("eval-cache/")} == narrowed
    full_state = worktree_state(config, listing=start_worktree_listing(repo))
    assert worktree_state(config) == full_state
    assert set(full_state.watched) == {"models.json", "prompts/system.txt"}


def test_a_glob_matching_at_any_depth_keeps_the_cache_root_listed(git_repo: Path) -> None:
    # `*.md` matches below the cache root too: the record pins the root's notes as it always did.
    repo = make_gated_repo(git_repo, '[tool.cachelint]\nwatch = ["prompts/**", "*.md"]\n')
    (repo / "eval-cache" / "NOTES.md").write_text("how this cache was recorded\n")
    commit_all(repo, "notes")
    config = load(repo)
    state = worktree_state(config)
    assert set(state.watched) == {"README.md", "eval-cache/NOTES.md", "prompts/system.txt"}
    assert state == worktree_state(config, listing=start_worktree_listing(repo))


def test_a_datasets_directory_inside_the_cache_root_keeps_it_listed(git_repo: Path) -> None:
    config = '[tool.cachelint]\ndatasets = "eval-cache/sets"\nwatch = ["prompts/**"]\n'
    repo = make_gated_repo(git_repo, config)
    (repo / "eval-cache" / "sets").mkdir()
    (repo / "eval-cache" / "sets" / "s.json").write_text('{"input": "hi"}\n')
    state = worktree_state(load(repo))
    assert set(state.datasets) == {"eval-cache/sets/s.json"}


_SEGMENTS = ["eval-cache", "EVAL-CACHE", "cache", "a", "x.md", "*", "**", "?", "[ab]", "e*"]
_ODD = ["", ".", "..", "eval-cache ", "eval-cache\t", "\\*", "#c", "a b"]
_BELOW = ["x.md", "cache/x/entry.json", "a/b/x.md", "eval-cache/y", "a", "b/c/d", "#c/x"]


def test_a_glob_said_not_to_reach_below_a_root_matches_nothing_there() -> None:
    # Against pathspec's gitignore semantics: anchoring, trailing slashes and spaces, negation.
    rnd = random.Random(44)
    roots = [["eval-cache"], ["a", "eval-cache"], ["a", "b"], ["x.md"]]
    said_no = 0
    for _ in range(4000):
        glob = "/".join(rnd.choice(_SEGMENTS + _ODD) for _ in range(rnd.randint(1, 4)))
        glob = rnd.choice(["", "/", "!", "!/"]) + glob + rnd.choice(["", "", "/", " "])
        try:
            spec = compile_globs([glob])
        except ValueError:
            continue
        for root in roots:
            if _may_match_below(glob, root):
                continue
            said_no += 1
            for rest in _BELOW:
                path = "/".join([*root, rest])
                assert not spec.match_file(path), (glob, path)
    assert said_no > 1000  # the check above ran on many globs
    assert not _may_match_below("prompts/**", ["eval-cache"])
    assert _may_match_below("models.json", ["eval-cache"])
    assert _may_match_below("eval-cache/**", ["eval-cache"])
    assert _may_match_below("**/x", ["eval-cache"])
