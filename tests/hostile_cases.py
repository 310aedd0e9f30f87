"""Issue 37's cases, each with the tests that reproduce it (tests/test_hostile_catalogue.py keeps
this list honest: every case names a test, every named test exists, and a case not fixed names
tests marked xfail strict).

The issue counts 46 cases; listed one distinct input each, they are 52 here (the severe one, 24
from the Medium bullets, 27 Low). A node id is `tests/<file>.py::<test>`, optionally with one
parametrisation in brackets.

Spot check against the code before round 3's work on issue 37 (a9db7c6, the parent of 463813e,
the first commit of that work), the current tests copied into a worktree of it, run with
PYTHONPATH on that worktree; `cachelint.facts` (renamed from `cachelint.tree` in aaa4e5f) shimmed
and do_run given the old keyword call so tests/helpers.py imports, and test_confined_reads.py's
import of names confine did not have yet made optional. 50 mapped tests run one by one: 46 failed
(three of them by hanging until killed: the FIFO stamp, the FIFO .gitattributes, the FIFO run.json),
which covers 48 of the 52 cases. Passed on the old code: the two glob-speed tests (pathspec 1.1.1
picks RE2 by itself when google-re2 is installed, as it is in this venv), hence the test without
RE2, which hangs on the old code. Not shown failing: L-layout-probe-link (its test imports
meai.guess_layout, which did not exist: could not be run), M-gitattributes-link (not run: on the
old code it reads /dev/zero until memory runs out), L-swap-during-check (fixed later: the test
passes on the fix, was a strict xfail before it) and M-deep-baselines (its test stops at the
shard run.json on the old code before it reaches the
baselines). Not sampled: the other parametrisations, the pytest-session kill tests and the
prune swapped midway.
"""

from __future__ import annotations

from typing import NamedTuple


class Case(NamedTuple):
    id: str
    description: str
    tests: tuple[str, ...]
    fixed: bool = True


CR = "tests/test_confined_reads.py::"
MERGE = "tests/test_merge.py::"
EC = "tests/test_entrycache_hostile.py::"
EP = "tests/test_endpoint_hostile.py::"
NG = "tests/test_netguard_gaps.py::"
FC = "tests/test_fail_closed.py::"
SEC = "tests/test_secrets.py::"
SUM = "tests/test_summary_escaping.py::"
CFG = "tests/test_config.py::"
FD = "tests/test_front_doors.py::"
GAP = "tests/test_hostile_gaps.py::"
HOSTILE_RESULTS = (
    MERGE + "test_a_hostile_results_file_is_one_error_line_for_merge_green_and_baselines"
)

CASES: list[Case] = [
    # ---- severe -------------------------------------------------------------------------------
    Case(
        "S-system-file-leak",
        "a dataset's system-file naming .git/config or the env-file publishes the token or key",
        (
            CR + "test_a_system_file_in_git_is_refused_and_the_token_never_written",
            CR + "test_a_system_file_naming_the_env_file_is_refused",
            CR + "test_a_hard_link_to_the_env_file_is_refused",
        ),
    ),
    # ---- medium: reads outside the repository or without bound ---------------------------------
    Case(
        "M-stamp-fifo",
        "a FIFO stamp hangs check",
        (CR + "test_a_fifo_stamp_is_an_invalid_stamp_not_a_hang",),
    ),
    Case(
        "M-stamp-huge",
        "a huge stamp is read whole",
        (CR + "test_a_huge_stamp_is_not_read_whole",),
    ),
    Case(
        "M-gitattributes-link",
        "a symlinked .gitattributes is read through the link (/dev/zero: read forever, exit 3)",
        (CR + "test_a_gitattributes_symlinked_to_dev_zero_is_not_read",),
    ),
    Case(
        "M-merge-follows-links",
        "report --merge copies what links in a shard point to into eval-results/, kept on failure",
        (MERGE + "test_merge_never_follows_a_link_inside_a_shard",),
    ),
    # ---- medium: attributes that rewrite bytes -------------------------------------------------
    Case(
        "M-attr-ident",
        "`ident` on cache paths passes ($Id$ rewritten in every clone)",
        ("tests/test_rewrite_attrs.py::test_an_attribute_that_rewrites_bytes_is_a_finding",),
    ),
    Case(
        "M-attr-filter",
        "`filter=` (git-lfs) on cache paths passes",
        (
            "tests/test_rewrite_attrs.py::test_an_attribute_that_rewrites_bytes_is_a_finding",
            "tests/test_rewrite_attrs.py::test_a_filter_set_closer_to_the_cache_is_reported_where_it_is_set",
        ),
    ),
    # ---- medium: the endpoint ------------------------------------------------------------------
    Case(
        "M-endpoint-body-before-key",
        "the endpoint reads a body of any size before it checks the run's key",
        (EP + "test_an_unauthenticated_request_is_refused_before_its_body_is_read",),
    ),
    # ---- medium: the network guard -------------------------------------------------------------
    Case(
        "M-guard-getnameinfo",
        "replay's guard misses socket.getnameinfo (reverse DNS)",
        (
            NG + "test_a_reverse_lookup_is_refused_in_replay",
            NG + "test_a_python_childs_reverse_lookup_is_refused_and_logged",
        ),
    ),
    Case(
        "M-guard-native-code",
        "native-code connections in a python target's process are not seen, and nothing says so",
        (GAP + "test_the_security_docs_say_what_the_network_guard_cannot_see",),
    ),
    # ---- medium: Markdown summary --------------------------------------------------------------
    Case(
        "M-summary-injection",
        "agent/tenant and dataset names inject an image and a link into the step summary",
        (
            SUM + "test_names_and_answers_in_the_markdown_summary_inject_nothing",
            SUM + "test_the_markdown_renderer_neutralises_each_kind_of_link",
        ),
    ),
    # ---- medium: trust in what was written earlier ---------------------------------------------
    Case(
        "M-deep-baselines",
        "a deeply nested eval-baselines.json crashes with RecursionError",
        (HOSTILE_RESULTS + "[deep]",),
    ),
    Case(
        "M-deep-shard-run-json",
        "a deeply nested shard run.json crashes merge and green with RecursionError",
        (HOSTILE_RESULTS + "[deep]",),
    ),
    Case(
        "M-deep-entries-used",
        "a deeply nested entries-used.json crashes prune and check with RecursionError",
        (GAP + "test_a_deeply_nested_entries_used_record_is_one_error_not_a_recursion_error",),
    ),
    Case(
        "M-green-string-verdict",
        'green --from-results counts "passed": "false" as passed',
        (MERGE + "test_green_acts_only_on_verdicts_its_results_files_back[string-verdict]",),
    ),
    Case(
        "M-green-ignores-results",
        "green --from-results trusts run.json and never looks at per-scenario results",
        (
            MERGE + "test_green_acts_only_on_verdicts_its_results_files_back"
            "[summary-contradicts-results]",
        ),
    ),
    Case(
        "M-prune-forged-usage",
        "prune --yes deletes on an entries-used.json naming an execution that never ran",
        (FD + "test_a_usage_record_is_evidence_only_when_its_execution_ran",),
    ),
    Case(
        "M-prune-link-swap",
        "prune --yes deletes outside the repository when a scenario dir is swapped for a link",
        (
            "tests/test_prune_confinement.py::"
            "test_prune_deletes_nothing_through_a_scenario_swapped_for_a_link_midway",
            "tests/test_prune_confinement.py::"
            "test_prune_deletes_nothing_through_a_scenario_swapped_for_a_link_before_it_runs",
            FD + "test_prune_never_deletes_through_a_directory_swapped_for_a_link",
        ),
    ),
    Case(
        "M-prune-interrupted",
        "after an interrupted re-record, prune --yes deletes the fresh recording as unused",
        (
            "tests/test_interrupted_recording.py::"
            "test_a_recording_run_killed_midway_stops_prune_and_green",
            "tests/test_interrupted_recording.py::"
            "test_a_recording_pytest_session_killed_midway_stops_prune_and_green",
            FD + "test_a_killed_pytest_rerecord_stops_prune",
            FD + "test_an_interrupted_run_rerecord_stops_prune",
        ),
    ),
    # ---- medium: config ------------------------------------------------------------------------
    Case(
        "M-glob-backtracking",
        "exclude/watch globs are backtracking regexes: one long name keeps check busy for minutes",
        (
            CFG + "test_a_backtracking_glob_matches_a_long_name_fast",
            GAP + "test_a_backtracking_watch_glob_matches_a_long_name_fast",
            GAP + "test_without_re2_a_watch_glob_is_refused_not_matched_by_backtracking",
        ),
    ),
    Case(
        "M-not-regex-timeout",
        "a not-regex assertion whose pattern times out passes",
        (
            FC + "test_a_negated_pattern_that_times_out_fails",
            FC + "test_a_tool_argument_pattern_that_backtracks_fails_instead_of_hanging",
        ),
    ),
    # ---- medium: exit codes --------------------------------------------------------------------
    Case(
        "M-broken-pipe-exit",
        "cachelint run | head -n1 with a failed run exits 0",
        (FC + "test_a_failed_run_piped_into_a_closed_reader_keeps_exit_1",),
    ),
    # ---- medium: secrets -----------------------------------------------------------------------
    Case(
        "M-secret-json-escapes",
        "a key written with JSON escapes in an entry, a dataset or the stamp is not found",
        (
            SEC + "test_check_finds_keys_written_with_json_escapes",
            SEC + "test_keys_written_with_json_escapes_are_found",
        ),
    ),
    Case(
        "M-secret-english-words",
        "words ending in sk- and 20+ characters (risk-management-...) are called OpenAI keys",
        (
            SEC + "test_check_calls_no_english_word_a_key",
            SEC + "test_english_words_are_no_key",
        ),
    ),
    Case(
        "M-bidi-results-json",
        "bidi control characters from a dataset file name reach the results JSON raw",
        (SUM + "test_json_outputs_escape_bidi_characters_from_dataset_file_names",),
    ),
    # ---- low -----------------------------------------------------------------------------------
    Case(
        "L-fifo-gitattributes",
        "a FIFO .gitattributes in the cache root hangs check",
        (CR + "test_a_fifo_gitattributes_in_the_cache_root_is_not_a_hang",),
    ),
    Case(
        "L-hash-object-unbounded",
        "git hash-object runs over a changed cache file of any size",
        (EC + "test_a_changed_cache_file_above_max_entry_bytes_is_not_hashed",),
    ),
    Case(
        "L-entrycache-link",
        "the entry cache is written through a symlinked .git/cachelint",
        (
            EC + "test_a_symlinked_cache_directory_is_never_written_through",
            EC + "test_a_symlinked_cache_directory_is_not_read_through",
        ),
    ),
    Case(
        "L-entrycache-huge",
        "an 8 GiB entries.jsonl is read whole",
        (EC + "test_an_oversized_cache_file_or_listing_is_no_cache",),
    ),
    Case(
        "L-name-not-utf8",
        "a cache file name that is not valid UTF-8 passes",
        ("tests/test_names.py::test_a_name_that_is_not_utf8_is_a_finding",),
    ),
    Case(
        "L-layout-probe-link",
        "the layout probe follows a symlinked cache directory and its first entry.json",
        ("tests/test_readers.py::test_the_layout_probe_follows_no_link",),
    ),
    Case(
        "L-config-link",
        "config is read through a symlinked pyproject.toml",
        (CFG + "test_a_symlinked_pyproject_is_a_config_error_not_read",),
    ),
    Case(
        "L-swap-during-check",
        "a cache file swapped for a symlink during check is hashed through the link",
        (GAP + "test_a_cache_file_swapped_for_a_link_during_check_is_not_hashed_through_it",),
    ),
    Case(
        "L-weak-stat-checks",
        "core.trustctime=false / checkStat=minimal hide a same-size edit from the entry cache",
        (EC + "test_weakened_stat_checks_do_not_hide_a_same_size_edit",),
    ),
    Case(
        "L-forged-entry-cache",
        "a forged entries.jsonl with the right object ids makes an expired entry valid",
        (
            EC + "test_a_forged_row_cannot_make_an_expired_entry_valid",
            EC + "test_a_cache_signed_by_another_clone_is_not_used",
        ),
    ),
    Case(
        "L-unreadable-dir",
        "an unreadable entry directory is reported as deleted",
        (
            EC + "test_an_unreadable_entry_directory_is_reported_as_unreadable",
            EC + "test_a_directory_the_walk_cannot_list_is_not_reported_as_deleted",
        ),
    ),
    Case(
        "L-dotgit-advice",
        "a file under a .GIT directory gets `git add` advice that git refuses",
        ("tests/test_names.py::test_a_git_directory_in_another_spelling_gets_advice_git_accepts",),
    ),
    Case(
        "L-endpoint-bad-length",
        "Content-Length: abc or 10^15 prints a traceback on run's stderr",
        (EP + "test_a_malformed_or_oversized_content_length_is_one_answer_and_one_line",),
    ),
    Case(
        "L-endpoint-connect-blame",
        "an unauthenticated CONNECT fails the running scenario and blames it",
        (EP + "test_an_unauthenticated_connect_blames_no_running_scenario",),
    ),
    Case(
        "L-node-dns",
        "a Node child of a command target can still resolve names (dns.lookup)",
        (NG + "test_a_node_childs_dns_lookups_are_refused_and_logged",),
    ),
    Case(
        "L-guard-armed",
        "target code disarms the guard with cachelint.netguard._armed = 0",
        (
            NG + "test_target_code_cannot_switch_the_guard_off",
            NG + "test_a_target_that_switches_the_guard_off_fails_its_scenario",
        ),
    ),
    Case(
        "L-summary-mentions",
        "@org/team directory names stay live @mentions in the summary",
        (
            SUM + "test_names_and_answers_in_the_markdown_summary_inject_nothing",
            SUM + "test_the_markdown_renderer_neutralises_each_kind_of_link",
        ),
    ),
    Case(
        "L-run-json-fifo-huge",
        "a FIFO or oversized run.json hangs or crashes merge and green",
        (HOSTILE_RESULTS + "[fifo]", HOSTILE_RESULTS + "[huge]"),
    ),
    Case(
        "L-merge-half-written",
        "a merge that fails validation leaves a half-written execution that green accepts",
        (MERGE + "test_a_failed_merge_leaves_no_execution_for_green_to_accept",),
    ),
    Case(
        "L-baselines-link",
        "run --baseline reads a symlinked eval-baselines.json",
        (GAP + "test_a_linked_baselines_file_is_not_read_through",),
    ),
    Case(
        "L-secret-allow-glob",
        "an invalid glob in secret-allow crashes check (exit 3) instead of a config error",
        (
            CFG + "test_an_invalid_secret_allow_glob_is_a_config_error",
            CFG + "test_an_invalid_secret_allow_glob_exits_2_from_check",
        ),
    ),
    Case(
        "L-config-paths",
        "NUL or over-long path components in configured paths crash (exit 3)",
        (CFG + "test_nul_and_over_long_paths_are_config_errors_naming_the_key",),
    ),
    Case(
        "L-config-nan-inf",
        "nan/inf pass as timeouts and as the budget",
        (CFG + "test_nan_and_inf_anywhere_are_config_errors_naming_the_key",),
    ),
    Case(
        "L-cachelint-toml",
        "a cachelint.toml silently replaces [tool.cachelint]",
        (CFG + "test_cachelint_toml_beside_a_pyproject_table_is_an_error_naming_both",),
    ),
    Case(
        "L-key-prefix",
        "a key-prefix that matches no recorded directory passes while every replay misses",
        ("tests/test_rules.py::test_a_key_prefix_longer_than_the_recorded_names_is_found",),
    ),
    Case(
        "L-python-assertion",
        "a python assertion may name any callable (builtins:print corrupts --format json)",
        (
            "tests/test_python_assertion_confined.py::"
            "test_a_function_from_outside_the_repository_is_refused",
        ),
    ),
    Case(
        "L-secret-in-name",
        "a secret in a cache file's name is not looked for and is printed as the worst path",
        (SEC + "test_a_key_in_a_file_name_is_found_and_never_printed",),
    ),
]
