"""`cachelint stamp`, the stamp format and the stamp/TTL rules, on real git repositories."""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from cachelint import stamp as stamp_mod
from cachelint.canonical import cache_key
from cachelint.collect import collect
from cachelint.config import Layout, load
from cachelint.errors import ConfigError
from cachelint.findings import Finding, Severity
from cachelint.rules import all_rules
from cachelint.stamp import entry_count, facts_stamps, recorded
from cachelint.store import Entry, Store, format_time
from tests.conftest import commit_all, run_cachelint
from tests.meai_tree import stj_indented, stj_time

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
MEAI = "Microsoft.Extensions.AI.Evaluation"
PROPS = (
    "<Project>\n  <ItemGroup>\n"
    '    <PackageVersion Include="Microsoft.Extensions.AI.Evaluation" Version="{version}" />\n'
    "  </ItemGroup>\n</Project>\n"
)
STALE = (
    "eval-cache/.eval-cache-stamp.json: eval-cache-stale-pin: "
    "Microsoft.Extensions.AI.Evaluation: recorded 10.9.0 vs pin 10.11.0; the package changed, "
    "so cache keys may have changed: re-record the tree, then run `cachelint stamp`"
)


def cli(repo: Path, *args: str, now: datetime = NOW) -> subprocess.CompletedProcess[str]:
    return run_cachelint(repo, *args, env={"CACHELINT_NOW": format_time(now)})


def setup_repo(
    repo: Path,
    *,
    version: str = "10.9.0",
    config: str = 'packages = ["Microsoft.Extensions.AI.Evaluation"]\n',
) -> None:
    (repo / "cachelint.toml").write_text(config)
    (repo / "Directory.Packages.props").write_text(PROPS.format(version=version))
    (repo / ".gitattributes").write_text("eval-cache/** -text\n")


def record(
    repo: Path, *, root: str = "eval-cache", n: int = 2, when: datetime = NOW, ttl_days: int = 365
) -> None:
    store = Store(repo / root, ttl_days=ttl_days, clock=lambda: when)
    for i in range(n):
        request = {"messages": [{"role": "user", "content": f"q{i}"}]}
        store.put(
            f"support/acme/refund-{i}",
            cache_key(request),
            request,
            {"choices": [{"message": {"content": f"a{i}"}}]},
            provider="openai",
            model="gpt-4o-mini",
        )


def meai_entry(
    repo: Path, index: int, created: datetime, ttl: timedelta, root: str = "eval-cache"
) -> None:
    key = f"{index:02X}" * 48
    entry = repo / root / "cache" / "Support.Refund" / "1" / key
    entry.mkdir(parents=True)
    # As MEAI 10.9.0 writes it: System.Text.Json, indented, no final newline, trimmed fractions.
    document = {
        "scenarioName": "Support.Refund",
        "iterationName": "1",
        "creation": stj_time(created),
        "expiration": stj_time(created + ttl),
    }
    (entry / "entry.json").write_bytes(stj_indented(document).encode())
    (entry / "contents.data").write_text('{\n  "messages": []\n}')


def run_rule(repo: Path, code: str, *, now: datetime = NOW) -> list[Finding]:
    """The one-line rule harness: the findings of one rule on the real tree."""
    (rule,) = [r for r in all_rules() if r.code == code]
    assert rule.group == "stamp"
    facts = collect(load(repo), now=now)
    return sorted(rule.check(facts))


def write_stamp(
    repo: Path,
    data: object,
    root: str = "eval-cache",
    name: str = ".eval-cache-stamp.json",
    *,
    sealed: bool = True,
) -> None:
    """Write `data` as the stamp; a stamp object without a seal gets the seal of the entries
    under `root` as they are (as `cachelint stamp` would), unless `sealed` is False."""
    if sealed and isinstance(data, dict) and "seal" not in data:
        entries = [e for e in collect(load(repo), now=NOW).entries if e.directory.startswith(root)]
        data = {**data, "entries": len(entries), "seal": stamp_mod.seal(root, entries)}
    (repo / root / name).write_text(json.dumps(data))


def good_stamp(version: str = "10.9.0", ttl: int = 365) -> dict[str, object]:
    return {
        "format": 1,
        "packages": {MEAI: version},
        "pinFiles": {MEAI: "Directory.Packages.props"},
        "pinnedAt": "2026-02-01",
        "ttlDays": ttl,
    }


# ---- the CLI ------------------------------------------------------------------------------------


def test_stamp_then_raised_pin_gives_exactly_the_stale_pin_line(git_repo: Path) -> None:
    setup_repo(git_repo)
    record(git_repo)
    commit_all(git_repo, "record")
    result = cli(git_repo, "stamp")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("wrote eval-cache/.eval-cache-stamp.json: 2 entries")
    written = (git_repo / "eval-cache/.eval-cache-stamp.json").read_bytes()
    # the pins were committed just now; that commit's date is the pins' date
    today = datetime.now(timezone.utc).date().isoformat()
    assert json.loads(written) == {
        "format": 1,
        "packages": {MEAI: "10.9.0"},
        "pinFiles": {MEAI: "Directory.Packages.props"},
        "pinnedAt": today,
        "ttlDays": 365,
        "ttlDaysLongest": 365,
        "entries": 2,
        "seal": stamp_mod.seal("eval-cache", collect(load(git_repo), now=NOW).entries),
    }
    assert written.endswith(b"}\n") and b"\r" not in written
    commit_all(git_repo, "stamp")

    again = cli(git_repo, "stamp")  # same pins: same bytes, file untouched
    assert again.returncode == 0 and again.stdout.startswith("unchanged ")
    clean = cli(git_repo, "check")
    assert "eval-cache-stale-pin" not in clean.stdout
    assert "eval-cache-no-stamp" not in clean.stdout

    (git_repo / "Directory.Packages.props").write_text(PROPS.format(version="10.11.0"))
    result = cli(git_repo, "check")
    assert result.returncode == 1
    assert STALE in result.stdout.splitlines()
    only_stamp = cli(git_repo, "stamp", "--check")
    assert only_stamp.returncode == 1
    assert STALE in only_stamp.stdout.splitlines()
    as_json = cli(git_repo, "stamp", "--check", "--format", "json")
    assert as_json.returncode == 1
    assert "eval-cache-stale-pin" in as_json.stdout and json.loads(as_json.stdout)


def test_stamp_pinned_at_is_today_when_pins_are_uncommitted(git_repo: Path) -> None:
    setup_repo(git_repo)
    record(git_repo)
    result = cli(git_repo, "stamp")
    assert result.returncode == 0, result.stderr
    stamp = json.loads((git_repo / "eval-cache/.eval-cache-stamp.json").read_text())
    assert stamp["pinnedAt"] == "2026-03-01"  # CACHELINT_NOW, not a commit date


def test_stamp_pinned_at_is_the_date_of_the_newest_pin_commit(git_repo: Path) -> None:
    setup_repo(git_repo)
    record(git_repo)
    (git_repo / "eval-cache/.keep").write_text("")
    commit_all(git_repo, "pins", committer_date="2025-12-24T23:30:00-03:00")
    assert stamp_mod.pinned_at(git_repo, ["Directory.Packages.props"], NOW).isoformat() == (
        "2025-12-25"  # committer date in UTC
    )


def test_stamp_refuses_an_empty_tree(git_repo: Path) -> None:
    setup_repo(git_repo)
    (git_repo / "eval-cache").mkdir()
    result = cli(git_repo, "stamp")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("cachelint: error: eval-cache: no cache entries to stamp;")


def test_stamp_of_an_empty_meai_tree_names_the_dotnet_recording(git_repo: Path) -> None:
    setup_repo(
        git_repo, config='layout = "meai"\npackages = ["Microsoft.Extensions.AI.Evaluation"]\n'
    )
    (git_repo / "eval-cache").mkdir()
    result = cli(git_repo, "stamp")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    # MEAI's tree is recorded by the .NET evals, never by cachelint's runner.
    assert "`dotnet test` with the model's credentials" in result.stderr
    assert "cachelint run" not in result.stderr
    assert not (git_repo / "eval-cache/.eval-cache-stamp.json").exists()


def test_stamp_refuses_an_unpinned_family_package(git_repo: Path) -> None:
    setup_repo(git_repo, version="[10.0,11.0)")
    record(git_repo)
    result = cli(git_repo, "stamp")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(
        "cachelint: error: cannot stamp: Microsoft.Extensions.AI.Evaluation: not pinned to an "
        "exact version: found '[10.0,11.0)' in Directory.Packages.props;"
    )
    assert not (git_repo / "eval-cache/.eval-cache-stamp.json").exists()


def test_stamp_refuses_when_the_package_is_nowhere(git_repo: Path) -> None:
    setup_repo(git_repo, config='packages = ["Microsoft.Extensions.AI.Evaluation", "Polly"]\n')
    record(git_repo)
    result = cli(git_repo, "stamp")
    assert result.returncode == 2
    assert "Polly: not found in Directory.Packages.props;" in result.stderr
    assert result.stderr.count("\n") == 1


def test_custom_stamp_name_is_written_and_linted(git_repo: Path) -> None:
    setup_repo(
        git_repo,
        config='stamp = ".morph-eval-cache.json"\npackages = ["Microsoft.Extensions.AI.*"]\n',
    )
    record(git_repo)
    assert run_rule(git_repo, "eval-cache-no-stamp")[0].path == "eval-cache/.morph-eval-cache.json"
    result = cli(git_repo, "stamp")
    assert result.returncode == 0, result.stderr
    assert (git_repo / "eval-cache/.morph-eval-cache.json").is_file()
    assert not (git_repo / "eval-cache/.eval-cache-stamp.json").exists()
    assert run_rule(git_repo, "eval-cache-no-stamp") == []
    (git_repo / "Directory.Packages.props").write_text(PROPS.format(version="10.11.0"))
    (finding,) = run_rule(git_repo, "eval-cache-stale-pin")
    assert finding.path == "eval-cache/.morph-eval-cache.json"


# ---- the rules ----------------------------------------------------------------------------------


def test_missing_and_stale_stamps_have_different_codes_and_advice(git_repo: Path) -> None:
    setup_repo(git_repo)
    record(git_repo)
    (missing,) = run_rule(git_repo, "eval-cache-no-stamp")
    assert missing.path == "eval-cache/.eval-cache-stamp.json"
    assert missing.message.startswith("missing: 2 entries under eval-cache but no record")
    assert missing.message.endswith("re-record the tree, then run `cachelint stamp`")
    assert run_rule(git_repo, "eval-cache-stale-pin") == []

    write_stamp(git_repo, good_stamp("10.8.0"))
    assert run_rule(git_repo, "eval-cache-no-stamp") == []
    (stale,) = run_rule(git_repo, "eval-cache-stale-pin")
    assert stale.message.startswith(f"{MEAI}: recorded 10.8.0 vs pin 10.9.0; the package changed")


def test_no_stamp_needed_for_a_root_without_entries(git_repo: Path) -> None:
    setup_repo(git_repo)
    (git_repo / "eval-cache").mkdir()
    assert run_rule(git_repo, "eval-cache-no-stamp") == []
    assert run_rule(git_repo, "eval-cache-unpinned") == []


def test_package_added_to_or_dropped_from_the_family_is_stale(git_repo: Path) -> None:
    setup_repo(git_repo)
    record(git_repo)
    data = good_stamp()
    data["packages"] = {MEAI: "10.9.0", "Polly": "8.4.2"}
    data["pinFiles"] = {MEAI: "Directory.Packages.props", "Polly": "Directory.Packages.props"}
    write_stamp(git_repo, data)
    (gone,) = run_rule(git_repo, "eval-cache-stale-pin")
    assert gone.message.startswith("Polly: recorded 8.4.2 vs pin (none);")

    write_stamp(git_repo, {**good_stamp(), "packages": {}, "pinFiles": {}})
    (new,) = run_rule(git_repo, "eval-cache-stale-pin")
    assert new.message.startswith(f"{MEAI}: recorded (none) vs pin 10.9.0;")


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ("{not json", "not valid JSON"),
        ("[]", "not a JSON object"),
        (json.dumps({**good_stamp(), "format": 2}), "field 'format' is 2, this cachelint reads"),
        (
            json.dumps({k: v for k, v in good_stamp().items() if k != "packages"}),
            "field 'packages' is missing",
        ),
        (json.dumps({**good_stamp(), "packages": {MEAI: 10}}), "field 'packages' must be"),
        (json.dumps({**good_stamp(), "pinnedAt": "yesterday"}), "field 'pinnedAt' is 'yesterday'"),
        (json.dumps({**good_stamp(), "ttlDays": "365"}), "field 'ttlDays' is '365'"),
        (json.dumps({**good_stamp(), "extra": 1}), "unknown field 'extra'"),
    ],
)
def test_invalid_stamp_names_the_field(git_repo: Path, content: str, why: str) -> None:
    setup_repo(git_repo)
    record(git_repo)
    (git_repo / "eval-cache/.eval-cache-stamp.json").write_text(content)
    (finding,) = run_rule(git_repo, "eval-cache-stamp-invalid")
    assert finding.path == "eval-cache/.eval-cache-stamp.json"
    assert finding.message.startswith(f"invalid stamp: {why}")
    # an invalid stamp is neither missing nor comparable
    assert run_rule(git_repo, "eval-cache-no-stamp") == []
    assert run_rule(git_repo, "eval-cache-stale-pin") == []


def test_unpinned_rule_shows_the_range_and_where(git_repo: Path) -> None:
    setup_repo(git_repo, version="10.*")
    record(git_repo)
    write_stamp(git_repo, good_stamp())
    (finding,) = run_rule(git_repo, "eval-cache-unpinned")
    assert finding.path == "Directory.Packages.props"
    assert finding.message.startswith(
        f"{MEAI}: not pinned to an exact version: found '10.*' in Directory.Packages.props;"
    )
    # reported once, as unpinned, not a second time as "pin (none)"
    assert run_rule(git_repo, "eval-cache-stale-pin") == []


def test_unpinned_rule_on_an_unreadable_pin_file_is_a_finding(git_repo: Path) -> None:
    setup_repo(git_repo)
    (git_repo / "Directory.Packages.props").write_text("<Project>")
    record(git_repo)
    (finding,) = run_rule(git_repo, "eval-cache-unpinned")
    assert finding.path == "Directory.Packages.props"
    assert finding.message.startswith("invalid XML")


def test_meai_entries_with_14_day_and_2_year_ttls(git_repo: Path) -> None:
    setup_repo(git_repo)
    created = NOW - timedelta(days=3)
    for i in range(3):
        meai_entry(git_repo, i, created, timedelta(days=14))
    # a writer whose two clock reads differ by a second still has one 14-day TTL, not two
    meai_entry(git_repo, 5, created, timedelta(days=14, seconds=1))
    meai_entry(git_repo, 9, created, timedelta(days=730))
    (finding,) = run_rule(git_repo, "eval-cache-short-ttl")
    assert finding.path.startswith("eval-cache/cache/Support.Refund/1/000000")
    assert finding.path.endswith("/entry.json")
    assert finding.message.startswith(
        "TTL (expiration - creation) is 14 days on this entry (and 3 more under eval-cache), "
        "under min-ttl-days 365: DiskBasedResponseCacheProvider deletes an entry on the first "
        "read after its expiration"
    )
    assert "`timeToLiveForCacheEntries` to at least 365 days" in finding.message
    # MEAI never rewrites an entry it can read: a new TTL takes only once the old ones are gone.
    assert "delete the cache first (`git rm -r -q -- eval-cache/cache`)" in finding.message


def test_native_short_ttl_from_entries_and_stamp(git_repo: Path) -> None:
    setup_repo(git_repo)
    record(git_repo, ttl_days=30)
    write_stamp(git_repo, good_stamp(ttl=30))
    findings = run_rule(git_repo, "eval-cache-short-ttl")
    assert [f.path.rpartition("/")[2] for f in findings] == [".eval-cache-stamp.json", "entry.json"]
    assert findings[0].message.startswith("ttlDays 30 is under min-ttl-days 365")
    assert findings[1].message.startswith(
        "TTL (expires - created) is 30 days on this entry (and 1 more under eval-cache)"
    )


def test_two_year_ttl_is_fine(git_repo: Path) -> None:
    setup_repo(git_repo)
    record(git_repo, ttl_days=730)
    write_stamp(git_repo, good_stamp(ttl=730))
    assert run_rule(git_repo, "eval-cache-short-ttl") == []
    assert run_rule(git_repo, "eval-cache-expiring") == []


def test_entry_expiring_tomorrow_warns_and_fails_only_with_strict(git_repo: Path) -> None:
    setup_repo(git_repo)
    record(git_repo, n=1, when=NOW - timedelta(days=364))
    commit_all(git_repo, "record")
    assert cli(git_repo, "stamp").returncode == 0
    (finding,) = run_rule(git_repo, "eval-cache-expiring")
    assert finding.severity is Severity.WARNING
    assert finding.message.startswith(
        "1 entry expiring within 30 days, earliest 2026-03-02T12:00:00Z (this one);"
    )
    assert cli(git_repo, "stamp", "--check").returncode == 0
    strict = cli(git_repo, "stamp", "--check", "--strict")
    assert strict.returncode == 1
    assert "eval-cache-expiring: warning: 1 entry expiring within 30 days" in strict.stdout


def test_expired_entries_are_errors_with_the_earliest_date_and_count(git_repo: Path) -> None:
    setup_repo(git_repo)
    created = NOW - timedelta(days=400)
    meai_entry(git_repo, 1, created, timedelta(days=380))
    meai_entry(git_repo, 2, created, timedelta(days=370))
    meai_entry(git_repo, 3, created, timedelta(days=800))
    (finding,) = run_rule(git_repo, "eval-cache-expiring")
    assert finding.severity is Severity.ERROR
    assert finding.path.startswith("eval-cache/cache/Support.Refund/1/020202")
    assert finding.message.startswith(
        "2 entries expired, earliest 2026-01-30T12:00:00Z (this one and 1 more under eval-cache); "
        "a MEAI run deletes an expired entry on read and calls the model"
    )
    assert "never rewrites an entry it can read, so delete the cache first" in finding.message


def test_stamp_rules_are_registered_in_the_stamp_group() -> None:
    codes = {r.code for r in all_rules() if r.group == "stamp"}
    assert codes >= {
        "eval-cache-no-stamp",
        "eval-cache-stale-pin",
        "eval-cache-unpinned",
        "eval-cache-stamp-invalid",
        "eval-cache-short-ttl",
        "eval-cache-expiring",
    }


def test_stamp_round_trips_deterministically(tmp_path: Path) -> None:
    from datetime import date

    stamp = stamp_mod.Stamp(date(2026, 2, 1), 365, {"b": "2", "a": "1"}, {"b": "x", "a": "y"})
    path = tmp_path / "s.json"
    assert stamp_mod.write_stamp(path, stamp) is True
    first = path.read_bytes()
    assert stamp_mod.write_stamp(path, stamp) is False
    assert stamp_mod.read_stamp(tmp_path, "s.json") == stamp
    assert first.index(b'"a"') < first.index(b'"b"')
    assert stamp_mod.read_stamp(tmp_path, "absent.json") is None


def test_stamp_pinned_at_is_today_while_a_pin_file_has_uncommitted_changes(git_repo: Path) -> None:
    setup_repo(git_repo)
    # A fixed committer date, so the clean case cannot coincide with NOW on any real day.
    commit_all(git_repo, "pins", committer_date="2025-12-24T12:00:00+00:00")
    clean = stamp_mod.pinned_at(git_repo, ["Directory.Packages.props"], NOW)
    assert clean.isoformat() == "2025-12-24"
    props = git_repo / "Directory.Packages.props"
    props.write_text(props.read_text().replace("10.9.0", "10.11.0"))
    assert stamp_mod.pinned_at(git_repo, ["Directory.Packages.props"], NOW) == NOW.date()


def test_stamp_pinned_at_is_today_on_an_unborn_branch(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "requirements.txt").write_text("cachelint==0.1.0\n")
    assert stamp_mod.pinned_at(tmp_path, ["requirements.txt"], NOW) == NOW.date()


# ---- the stamp's configuration: pins and the stamp's name ------------------------------------

PINS_CASES = [
    ('pins = ["nope.props"]\n', "key 'pins' names 'nope.props', which does not exist"),
    ('pins = ["Gemfile.lock"]\n', "key 'pins' names 'Gemfile.lock', a format cachelint cannot"),
]


@pytest.mark.parametrize(("pins_line", "message"), PINS_CASES)
@pytest.mark.parametrize(
    "command",
    [
        ("check",),
        ("check", "--select", "eval-cache-unpinned"),
        # stale-pin used to swallow it and pass
        ("check", "--select", "eval-cache-stale-pin"),
        ("stamp", "--check"),
        ("stamp",),
    ],
)
def test_bad_pins_key_exits_2_with_one_line(
    git_repo: Path, pins_line: str, message: str, command: tuple[str, ...]
) -> None:
    setup_repo(git_repo, config='packages = ["Microsoft.Extensions.AI.Evaluation"]\n' + pins_line)
    (git_repo / "Gemfile.lock").write_text("GEM\n")
    record(git_repo)
    write_stamp(git_repo, good_stamp())
    commit_all(git_repo)
    result = cli(git_repo, *command)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.count("\n") == 1 and message in result.stderr
    assert result.stderr.startswith("cachelint: error: cachelint.toml: ")
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_broken_pin_file_is_still_a_finding_not_a_config_error(git_repo: Path) -> None:
    setup_repo(git_repo)
    (git_repo / "Directory.Packages.props").write_text("<Project>")
    record(git_repo)
    write_stamp(git_repo, good_stamp())
    commit_all(git_repo)
    result = cli(git_repo, "stamp", "--check")
    assert result.returncode == 1, result.stdout + result.stderr
    (finding, summary) = result.stdout.splitlines()
    assert finding.startswith("Directory.Packages.props: eval-cache-unpinned: invalid XML")
    assert summary.startswith("cachelint: 1 finding ")


def test_a_configured_stamp_name_is_used_everywhere(git_repo: Path) -> None:
    config = 'packages = ["Microsoft.Extensions.AI.Evaluation"]\nstamp = "STAMP.json"\n'
    setup_repo(git_repo, config=config)
    record(git_repo, n=1)
    written = cli(git_repo, "stamp")
    assert written.returncode == 0, written.stderr
    assert written.stdout.startswith("wrote eval-cache/STAMP.json: 1 entry, pinnedAt ")
    assert not (git_repo / "eval-cache" / ".eval-cache-stamp.json").exists()
    commit_all(git_repo)
    facts = collect(load(git_repo), now=NOW)
    (state,) = facts_stamps(facts)
    assert state.path == "eval-cache/STAMP.json" and state.stamp is not None
    # a stamp without entries still marks the tree as recorded, under the configured name only
    shutil.rmtree(git_repo / "eval-cache" / "cache")
    assert recorded(collect(load(git_repo), now=NOW))
    (git_repo / "eval-cache" / "STAMP.json").rename(git_repo / "eval-cache" / "other.json")
    assert not recorded(collect(load(git_repo), now=NOW))


def test_watch_globs_may_not_match_a_configured_stamp_name(git_repo: Path) -> None:
    (git_repo / "cachelint.toml").write_text('stamp = "STAMP.json"\nwatch = ["**/STAMP.json"]\n')
    with pytest.raises(ConfigError, match="key 'watch' matches 'eval-cache/STAMP.json'"):
        load(git_repo)


def test_entry_count() -> None:
    assert [entry_count(n) for n in (0, 1, 2)] == ["0 entries", "1 entry", "2 entries"]


def test_stamp_prints_a_cache_root_with_escape_sequences_visibly(git_repo: Path) -> None:
    root = "cache\x1b[2J\u202e"
    config = f'packages = ["Microsoft.Extensions.AI.Evaluation"]\ncache = {json.dumps(root)}\n'
    setup_repo(git_repo, config=config)
    record(git_repo, root=root)
    commit_all(git_repo, "record")
    result = cli(git_repo, "stamp")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("wrote cache\\x1b[2J\\u202e/.eval-cache-stamp.json: 2 entries")
    assert "\x1b" not in result.stdout + result.stderr
    assert "\u202e" not in result.stdout + result.stderr


def test_the_seal_is_the_documented_digest() -> None:
    """A committed stamp's seal must stay what the module docs say it is, whatever makes it:
    blake3 of one "<directory>\\0<digest>\\n" line per entry, sorted by directory."""
    import blake3

    # "t/a" is a prefix of both "t/a-b" and "t/a/c", which sort on either side of "t/a/" by
    # the character after it; the generated run crosses the block the seal is hashed by.
    named = [("t/b/0002", "b" * 64), ("t/a/0001", "a" * 64), ("t/é/0003", ""), ("t/a", "c" * 64)]
    named += [("t/a-b", "d" * 64), ("t/a/c", "e" * 64)]
    many = [(f"t/run/{n:05}", f"{n:064x}") for n in range(9_000)]
    for pairs in (named, many + named, many):
        lines = "".join(f"{d}\0{g}\n" for d, g in sorted(pairs))
        expected = blake3.blake3(lines.encode()).hexdigest()
        for order in (pairs, pairs[::-1], sorted(pairs)):
            assert stamp_mod.seal("root", [_entry(f"root/{d}", g) for d, g in order]) == expected


def _entry(directory: str, digest: str) -> Entry:
    # A digest of "" is an entry the read did not digest (None).
    return Entry(Layout.CACHELINT, directory, "s", None, None, None, digest=digest or None)
