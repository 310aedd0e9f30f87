"""Attributes that make git store or check out other bytes than a cache file holds (issue 37):
`ident`, `filter`, `working-tree-encoding` and `eol` are eval-cache-text-attr findings, asked of
git in the same one `check-attr` call as `text`."""

from __future__ import annotations

from pathlib import Path

import pytest

from cachelint.attrcheck import parse
from tests.conftest import commit_all, run_cachelint
from tests.helpers import assert_findings, assert_no_findings, put

CODE = "eval-cache-text-attr"


def cache_with(repo: Path, attributes: str) -> Path:
    put(repo, text="one")
    put(repo, text="two")
    (repo / ".gitattributes").write_text(attributes)
    commit_all(repo)
    return repo


@pytest.mark.parametrize(
    ("line", "shown", "why"),
    [
        ("eval-cache/** -text ident", "ident applies to 4 files", "$Id$"),
        ("eval-cache/** -text filter=lfs", "filter=lfs applies to 4 files", "git-lfs"),
        (
            "eval-cache/** -text working-tree-encoding=ISO-8859-1",
            "working-tree-encoding=ISO-8859-1 applies to 4 files",
            "re-encodes",
        ),
        ("eval-cache/** -text eol=crlf", "eol=crlf applies to 4 files", "line endings"),
    ],
)
def test_an_attribute_that_rewrites_bytes_is_a_finding(
    git_repo: Path, line: str, shown: str, why: str
) -> None:
    cache_with(git_repo, f"*.md text\n{line}\n")
    [found] = assert_findings(git_repo, CODE)
    assert (found.path, found.line) == (".gitattributes", 2)
    assert shown in found.message and why in found.message
    assert f"line 2 `{line}`" in found.message


@pytest.mark.parametrize(
    "line",
    [
        "eval-cache/** -text",
        "eval-cache/** binary",
        "eval-cache/** -text -ident -filter -eol -diff linguist-generated",
        "eval-cache/** -text\n*.txt ident filter=lfs eol=crlf",
    ],
)
def test_unset_or_unrelated_attributes_are_no_finding(git_repo: Path, line: str) -> None:
    cache_with(git_repo, line + "\n")
    assert_no_findings(git_repo, CODE)


def test_a_filter_set_closer_to_the_cache_is_reported_where_it_is_set(git_repo: Path) -> None:
    cache_with(git_repo, "eval-cache/** -text\n")
    (git_repo / "eval-cache" / ".gitattributes").write_text("# lfs\ncache/** filter=lfs\n")
    commit_all(git_repo)
    proc = run_cachelint(git_repo, "check", "--select", CODE)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.startswith("eval-cache/.gitattributes:2: eval-cache-text-attr: filter=lfs")


def test_the_usual_answer_is_confirmed_without_splitting() -> None:
    paths = ["eval-cache/a/entry.json", "eval-cache/a/contents.data"]
    usual = b"".join(b"%s\0text\0unset\0" % p.encode() for p in paths)
    assert parse(usual, paths) == ({p: "unset" for p in paths}, {})
    odd = usual + b"eval-cache/a/entry.json\0ident\0set\0"
    assert parse(odd, paths).rewrite == {"eval-cache/a/entry.json": ("ident",)}
    unspecified = b"eval-cache/a/entry.json\0text\0unset\0"
    assert parse(unspecified, paths).text["eval-cache/a/contents.data"] == "unspecified"
