"""Re-record review (issue 41 item 2): `cachelint diff --base REF` and `report --compare A B` show,
per scenario whose recorded answer changed, the request change, old vs new answer and the verdict
change, in Markdown sized for a pull-request comment and in HTML."""

from __future__ import annotations

import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from cachelint.runner.reports.reviewviews import COMMENT_LIMIT, review_markdown
from cachelint.runner.review import AnswerChange, Review
from tests.conftest import commit_all, run_cachelint
from tests.helpers import BASIC, DEAD, record, write_repo, write_targets_repo
from tests.test_matrix import COMPARE, REFUND, targets

CONCISE = (
    "You are the Acme support agent.\nAnswer refund questions.\nBe concise, cite the policy.\n"
)
SCRIPT: dict[str, Any] = {
    "rules": [
        {
            "match": {"contains": "refund", "system_contains": "cite the policy"},
            "reply": {"content": "Per policy 4.2, Acme refunds within 14 days."},
        },
        {
            "match": {"contains": "refund"},
            "reply": {"content": "Acme refunds within 30 days."},
        },
    ],
    "default": {"content": "I don't know."},
}


def _rerecorded_repo(repo: Path) -> Path:
    """Recorded and committed; then the Acme prompt changes and is re-recorded (uncommitted)."""
    write_repo(repo, DEAD, BASIC)
    outcome, _ = record(repo, SCRIPT)
    assert outcome.rc == 0, outcome.out + outcome.err
    commit_all(repo, "recorded")
    (repo / "prompts/acme.md").write_text(CONCISE, encoding="utf-8")
    outcome, calls = record(repo, SCRIPT, execution="rerecorded")
    assert calls == 2, outcome.out  # both scenarios re-recorded; only Acme's answer changed
    return repo


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.text: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_diff_base_head_shows_old_and_new_answer_and_the_prompt_change(git_repo: Path) -> None:
    repo = _rerecorded_repo(git_repo)
    shown = run_cachelint(repo, "diff", "--base", "HEAD", "--html", "review.html")
    assert shown.returncode == 0, shown.stderr
    comment = shown.stdout
    assert "1 scenario's recorded answers changed \\(HEAD → working tree\\)" in comment
    assert "<b>support/acme/refund</b>: ? → FAIL (" not in comment  # verdicts come from results
    assert "support/globex/refund" not in comment  # same request, same answer: not listed
    # the request change, as the miss explanation words it
    assert "messages[0] (system): line 3: '- Be brief.' -> '+ Be concise, cite the policy.'" in (
        comment
    )
    # old and new answer in one diff block
    assert "- Acme refunds within 30 days." in comment
    assert "+ Per policy 4.2, Acme refunds within 14 days." in comment
    assert comment.count("<details>") == 1 and len(comment) < COMMENT_LIMIT
    # the latest execution (the re-record, which asserts "refunds within") is the 'now' verdict,
    # a replay at HEAD the 'before' one
    assert "<b>support/acme/refund</b>: PASS → PASS (still passing)" in comment

    page = (repo / "review.html").read_text(encoding="utf-8")
    parsed = _Text()
    parsed.feed(page)
    assert "script" not in parsed.tags
    assert page.count('data-testid="answer-diff"') == 1
    assert "<del>30 days</del>" in page or "<del>30</del>" in page
    assert "Per policy 4.2" in "".join(parsed.text)


def test_diff_with_nothing_changed_and_a_bad_ref(git_repo: Path) -> None:
    write_repo(git_repo, DEAD, BASIC)
    outcome, _ = record(git_repo, SCRIPT)
    assert outcome.rc == 0
    commit_all(git_repo, "recorded")
    same = run_cachelint(git_repo, "diff", "--base", "HEAD")
    assert same.returncode == 0, same.stderr
    assert "0 scenarios' recorded answers changed" in same.stdout
    bad = run_cachelint(git_repo, "diff", "--base", "no-such-branch")
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        "cachelint: error: diff --base no-such-branch: not a commit of this repository; pass a "
        "branch, tag or commit (e.g. --base origin/main after `git fetch`)"
    ]


def test_report_compare_shows_answer_changes_in_html_and_markdown(git_repo: Path) -> None:
    repo = _rerecorded_repo(git_repo)
    shown = run_cachelint(repo, "report", "--compare", "test", "rerecorded")
    assert shown.returncode == 0, shown.stderr
    page = (repo / "eval-results/rerecorded/compare-test.html").read_text(encoding="utf-8")
    assert page.count('data-testid="reviewed"') == 1
    assert 'data-scenario="support/acme/refund"' in page
    assert "be concise, cite the policy" in page.lower()
    comment = (repo / "eval-results/rerecorded/compare-test.md").read_text(encoding="utf-8")
    assert "<b>support/acme/refund</b>: PASS → PASS (still passing)" in comment
    assert "+ Per policy 4.2, Acme refunds within 14 days." in comment


def test_markdown_stays_under_the_comment_limit_with_truncation_counts() -> None:
    long = "word " * 5_000
    changes = [
        AnswerChange(
            f"agent/t/s{i:03}", "call 1", ("model: 'a' -> 'b'",), long, long + "x", True, False
        )
        for i in range(200)
    ]
    text = review_markdown(Review("A", "B", changes), full_page="review.html")
    assert len(text) < COMMENT_LIMIT
    assert "more characters)" in text
    shown = text.count("<details>")
    assert 0 < shown < 200
    assert f"{200 - shown} more scenarios not shown (comment size limit)" in text
    # an answer that holds a code fence cannot close the block it sits in
    fenced = review_markdown(
        Review("A", "B", [AnswerChange("a/t/s", "call 1", ("x",), "```\n<b>hi</b>", "ok")])
    )
    assert "````diff" in fenced


# The re-recorded prompt makes the model stop saying how refunds work: the assertion fails now.
VAGUE: dict[str, Any] = {
    "rules": [
        {
            "match": {"contains": "refund", "system_contains": "cite the policy"},
            "reply": {"content": "Please see the policy page."},
        },
        {"match": {"contains": "refund"}, "reply": {"content": "Acme refunds within 30 days."}},
    ],
    "default": {"content": "I don't know."},
}


def test_diff_base_replays_the_old_verdict_at_the_ref(git_repo: Path) -> None:
    """Two commits (recorded; prompt changed and re-recorded): `diff --base HEAD~1` without
    --before shows the verdict a replay at HEAD~1 gives (PASS), not '?', beside today's FAIL."""
    write_repo(git_repo, DEAD, BASIC)
    outcome, _ = record(git_repo, VAGUE)
    assert outcome.rc == 0, outcome.out + outcome.err
    commit_all(git_repo, "recorded")
    (git_repo / "prompts/acme.md").write_text(CONCISE, encoding="utf-8")
    outcome, _ = record(git_repo, VAGUE, execution="rerecorded")
    assert outcome.rc == 1, outcome.out  # the new answer fails "refunds within"
    commit_all(git_repo, "prompt changed, re-recorded")
    # runs started within one second are ordered by name: the execution is named
    status = run_cachelint(git_repo, "diff", "--base", "HEAD~1", "--execution", "rerecorded")
    assert status.returncode == 0, status.stderr
    assert "<b>support/acme/refund</b>: PASS → FAIL (regressed)" in status.stdout
    assert "support/globex/refund" not in status.stdout
    assert "old verdicts unknown" not in status.stdout
    # the replay ran in a throwaway clone: nothing of it is left in the repository
    assert "0 scenarios'" in run_cachelint(git_repo, "diff", "--base", "HEAD").stdout
    listed = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=git_repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "diff-base-replay" not in listed
    assert (
        subprocess.run(
            ["git", "worktree", "list"], cwd=git_repo, capture_output=True, text=True, check=True
        ).stdout.count("\n")
        == 1
    )
    # --before still names the execution whose verdicts are 'before'
    named = run_cachelint(
        git_repo, "diff", "--base", "HEAD~1", "--execution", "rerecorded", "--before", "rerecorded"
    )
    assert "<b>support/acme/refund</b>: FAIL → FAIL (still failing)" in named.stdout


def test_diff_base_says_why_an_old_verdict_is_unknown(git_repo: Path) -> None:
    """A ref whose datasets cannot be replayed (here: its prompt file is missing) leaves the old
    verdict '?' with one line saying why."""
    write_repo(git_repo, DEAD, BASIC)
    outcome, _ = record(git_repo, VAGUE)
    assert outcome.rc == 0, outcome.out + outcome.err
    (git_repo / "prompts/acme.md").rename(git_repo / "acme.md.away")
    commit_all(git_repo, "recorded, the prompt left out")
    (git_repo / "prompts/acme.md").write_text(CONCISE, encoding="utf-8")
    outcome, _ = record(git_repo, VAGUE, execution="rerecorded")
    assert outcome.rc == 1, outcome.out
    # runs started within one second are ordered by name: the execution is named
    shown = run_cachelint(git_repo, "diff", "--base", "HEAD", "--execution", "rerecorded")
    assert shown.returncode == 0, shown.stderr
    assert "<b>support/acme/refund</b>: ? → FAIL" in shown.stdout
    (note,) = [line for line in shown.stdout.splitlines() if "old verdicts unknown" in line]
    assert note.startswith("- old verdicts unknown: the replay at HEAD failed \\(eval\\-datasets/")
    assert "'prompts/acme\\.md' not found" in note and "cachelint\\-base" not in note, note


# A target matrix (test_matrix's): the big model is the primary target, the small one the second.
MATRIX = targets(COMPARE)
BOTH_RIGHT: dict[str, Any] = {"default": {"content": "Refunds take 30 days."}}
SMALL_WRONG: dict[str, Any] = {
    "rules": [{"match": {"model": "small-model"}, "reply": {"content": "Ask the shop."}}],
    "default": {"content": "Refunds take 30 days."},
}


def test_diff_base_names_the_target_whose_answer_changed_and_its_verdict(
    git_repo: Path,
) -> None:
    """Both pairs of a two-target matrix recorded and committed; only the second target is
    re-recorded, now failing: the review shows that target and its regressed verdict, not the
    primary pair's unchanged one."""
    write_targets_repo(git_repo, targets=MATRIX, scenarios={"support/acme/refund": REFUND})
    outcome, calls = record(git_repo, BOTH_RIGHT)
    assert (outcome.rc, calls) == (0, 2), outcome.out + outcome.err
    commit_all(git_repo, "recorded")
    outcome, calls = record(git_repo, SMALL_WRONG, targets=["small"], execution="rerecorded")
    assert (outcome.rc, calls) == (1, 1), outcome.out + outcome.err
    regressed = "support/acme/refund (target small)</b>: PASS → FAIL (regressed)"
    shown = run_cachelint(
        git_repo, "diff", "--base", "HEAD", "--execution", "rerecorded", "--html", "review.html"
    )
    assert shown.returncode == 0, shown.stderr
    assert f"<b>{regressed}" in shown.stdout, shown.stdout
    assert "1 scenario's recorded answers changed" in shown.stdout
    assert "old verdicts unknown" not in shown.stdout
    page = (git_repo / "review.html").read_text(encoding="utf-8")
    assert 'data-scenario="support/acme/refund" data-target="small" open>' in page
    assert "support/acme/refund (target small): PASS → FAIL (regressed)" in page
    # a replay of the whole matrix as 'now': the entry names the pair whose call used it
    assert record(git_repo, {}, refresh=False, execution="replayed")[0].rc == 1
    replayed = run_cachelint(git_repo, "diff", "--base", "HEAD", "--execution", "replayed")
    assert f"<b>{regressed}" in replayed.stdout, replayed.stdout
    assert "PASS → PASS" not in replayed.stdout  # the primary pair's verdict, unchanged
