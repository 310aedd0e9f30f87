"""MEAI storage roots as .NET teams have them (issue 15): written byte for byte as
Microsoft.Extensions.AI.Evaluation 10.9.0 writes them, results beside the cache, checked, stamped
and guarded through the real CLI in real git repositories."""

from __future__ import annotations

import json
import re
import shutil
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from cachelint.collect import collect
from cachelint.config import load
from cachelint.meai import is_meai_root, parse_time, skip_matcher
from tests.conftest import commit_all, git, run_cachelint
from tests.meai_tree import (
    CREATED,
    WHOLE_SECOND,
    meai_key,
    result_document,
    stj_indented,
    write_entry,
    write_result,
)
from tests.trees import copy_bundled

NOW = "2026-09-01T00:00:00Z"
ENV = {"CACHELINT_NOW": NOW}
STORAGE = "eval-cache"
PROPS = """<Project>
  <PropertyGroup>
    <ManagePackageVersionsCentrally>true</ManagePackageVersionsCentrally>
  </PropertyGroup>
  <ItemGroup>
    <PackageVersion Include="Microsoft.Extensions.AI.Evaluation" Version="10.9.0" />
    <PackageVersion Include="Microsoft.Extensions.AI.Evaluation.Reporting" Version="10.9.0" />
    <PackageVersion Include="xunit" Version="2.9.3" />
  </ItemGroup>
</Project>
"""
CSPROJ = """<Project Sdk="Microsoft.NET.Sdk">
  <PropertyGroup>
    <TargetFramework>net9.0</TargetFramework>
  </PropertyGroup>
  <ItemGroup>
    <PackageReference Include="Microsoft.Extensions.AI.Evaluation" />
    <PackageReference Include="Microsoft.Extensions.AI.Evaluation.Reporting" />
    <PackageReference Include="xunit" />
  </ItemGroup>
</Project>
"""


def meai_repo(
    repo: Path,
    *,
    newline: str = "\n",
    layout: str | None = "meai",
    key_prefix: int | None = 96,
    ttl: timedelta = timedelta(days=3650),
    results: bool = True,
) -> Path:
    """A .NET repository whose evals use DiskBasedReportingConfiguration.Create("eval-cache"):
    the cache and the results in one storage root, the TTL set long, `-text` on the tree, the
    packages pinned centrally."""
    storage = repo / STORAGE
    write_entry(storage, "Geography.Capitals", "1", newline=newline, ttl=ttl)
    write_entry(
        storage,
        "Geography.Capitals",
        "2",
        newline=newline,
        ttl=ttl,
        created=WHOLE_SECOND,
        answer="Lyon.",
    )
    if results:
        write_result(storage, "20260821T091424", "Geography.Capitals", "1", newline=newline)
        write_result(storage, "20260821T091424", "Geography.Capitals", "2", newline=newline)
    (repo / ".gitattributes").write_text(f"{STORAGE}/** -text\n")
    (repo / "Directory.Packages.props").write_text(PROPS)
    (repo / "Evals.csproj").write_text(CSPROJ)
    lines = [f'cache = "{STORAGE}"']
    if layout is not None:
        lines.append(f'layout = "{layout}"')
    if key_prefix is not None:
        lines.append(f"key-prefix = {key_prefix}")
    (repo / "cachelint.toml").write_text("\n".join(lines) + "\n")
    git(repo, "add", "--", ".gitattributes", "Directory.Packages.props", "Evals.csproj")
    git(repo, "add", "--", "cachelint.toml", f"{STORAGE}/cache")
    git(repo, "commit", "-q", "--no-gpg-sign", "--no-verify", "-m", "record")
    return repo


def results_writer(tmp_path: Path, newline: str = "\n") -> list[str]:
    """A command that does what `dotnet test` does to a MEAI storage root on an offline run: it
    writes a new execution's results (and reads the cache)."""
    document = result_document("20260901T000000", "Geography.Capitals", "1", CREATED)
    data = stj_indented(document, newline).encode()
    script = tmp_path / "write_results.py"
    target = f"{STORAGE}/results/20260901T000000/Geography.Capitals/1.json"
    script.write_text(
        "import pathlib\n"
        f"path = pathlib.Path({target!r})\n"
        "path.parent.mkdir(parents=True, exist_ok=True)\n"
        f"path.write_bytes({data!r})\n"
    )
    return [sys.executable, str(script)]


# ---- done when: a tree exactly as MEAI writes it is clean under check, stamp and guard -------


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("layout", ["meai", None], ids=["layout-meai", "layout-auto"])
def test_meai_tree_is_clean_under_check_stamp_and_guard(
    git_repo: Path, tmp_path: Path, newline: str, layout: str | None
) -> None:
    repo = meai_repo(git_repo, newline=newline, layout=layout)
    entry = next((repo / STORAGE / "cache").rglob("entry.json")).read_bytes()
    assert entry.count(newline.encode()) == 5 and not entry.endswith(b"\n")
    assert not entry.startswith(b"\xef\xbb\xbf")

    stamped = run_cachelint(repo, "stamp", env=ENV)
    assert stamped.returncode == 0, stamped.stdout + stamped.stderr
    stamp = json.loads((repo / STORAGE / ".eval-cache-stamp.json").read_text())
    assert stamp["packages"] == {
        "Microsoft.Extensions.AI.Evaluation": "10.9.0",
        "Microsoft.Extensions.AI.Evaluation.Reporting": "10.9.0",
    }
    commit_all(repo, "stamp")  # the results too: a team that commits them gets no finding either

    checked = run_cachelint(repo, "check", env=ENV)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    warnings = [line for line in checked.stdout.splitlines() if "eval-cache-" in line]
    assert len(warnings) == 1 and "eval-cache-results-in-root" in warnings[0], checked.stdout
    assert "files skipped as MEAI results" in checked.stdout
    stamp_check = run_cachelint(repo, "stamp", "--check", env=ENV)
    assert stamp_check.returncode == 0, stamp_check.stdout

    guarded = run_cachelint(repo, "guard", "--", *results_writer(tmp_path, newline), env=ENV)
    assert guarded.returncode == 0, guarded.stderr
    assert "eval-cache-mutated" not in guarded.stderr
    assert (repo / STORAGE / "results" / "20260901T000000").is_dir()


def test_guard_still_reports_a_write_into_the_cache_of_a_meai_root(
    git_repo: Path, tmp_path: Path
) -> None:
    repo = meai_repo(git_repo)
    entry = next((repo / STORAGE / "cache").rglob("entry.json"))
    script = tmp_path / "touch.py"
    script.write_text(f"import pathlib\npathlib.Path({str(entry)!r}).write_bytes(b'{{}}')\n")
    guarded = run_cachelint(repo, "guard", "--", sys.executable, str(script), env=ENV)
    assert guarded.returncode == 1
    assert "eval-cache-mutated" in guarded.stderr and "entry.json" in guarded.stderr


def test_guard_skips_results_a_first_run_creates(git_repo: Path, tmp_path: Path) -> None:
    repo = meai_repo(git_repo, results=False)
    assert not (repo / STORAGE / "results").exists()
    guarded = run_cachelint(repo, "guard", "--", *results_writer(tmp_path), env=ENV)
    assert guarded.returncode == 0, guarded.stderr


def test_guard_honours_exclude(git_repo: Path, tmp_path: Path) -> None:
    repo = meai_repo(git_repo, layout="cachelint", key_prefix=None, results=False)
    with (repo / "cachelint.toml").open("a") as fh:
        fh.write('exclude = ["eval-cache/scratch/**"]\n')
    script = tmp_path / "scratch.py"
    script.write_text(
        "import pathlib\n"
        "p = pathlib.Path('eval-cache/scratch/log.txt')\n"
        "p.parent.mkdir(parents=True)\n"
        "p.write_text('x')\n"
    )
    guarded = run_cachelint(repo, "guard", "--", sys.executable, str(script), env=ENV)
    assert guarded.returncode == 0, guarded.stderr
    # And the layout matters: under layout "cachelint", results/ is no exception.
    guarded = run_cachelint(repo, "guard", "--", *results_writer(tmp_path), env=ENV)
    assert guarded.returncode == 1 and "eval-cache/results/" in guarded.stderr


# ---- results are not cache -----------------------------------------------------------------


def _codes(repo: Path, *args: str) -> list[tuple[str, str]]:
    proc = run_cachelint(repo, "check", "--format", "json", *args, env=ENV)
    assert proc.returncode in (0, 1), proc.stderr
    return [(f["code"], f["path"]) for f in json.loads(proc.stdout)["findings"]]


def test_untracked_results_are_not_untracked_cache_files(git_repo: Path) -> None:
    repo = meai_repo(git_repo)
    found = _codes(repo)
    assert [c for c, p in found if "/results" in p] == ["eval-cache-results-in-root"]
    assert ("eval-cache-results-in-root", f"{STORAGE}/results") in found


def test_ignored_results_are_not_ignored_cache_files(git_repo: Path) -> None:
    repo = meai_repo(git_repo)
    (repo / ".gitignore").write_text(f"{STORAGE}/results/\n")
    found = _codes(repo)
    assert not [c for c, _ in found if c == "eval-cache-ignored"], found


def test_results_in_a_cachelint_root_are_still_cache_files(git_repo: Path) -> None:
    repo = meai_repo(git_repo, layout="cachelint", key_prefix=None)
    found = _codes(repo)
    result = f"{STORAGE}/results/20260821T091424/Geography.Capitals/1.json"
    assert ("eval-cache-untracked", result) in found
    assert "eval-cache-results-in-root" not in {c for c, _ in found}


def test_the_skip_matcher_skips_the_results_store(git_repo: Path) -> None:
    repo = meai_repo(git_repo)
    paths = [
        f"{STORAGE}/results",
        f"{STORAGE}/results/x/y/1.json",
        f"{STORAGE}/resultsx/1.json",
        f"{STORAGE}/cache/s/i/k/entry.json",
    ]
    skip = skip_matcher(load(repo))
    assert skip is not None and [skip(p) for p in paths] == [True, True, False, False]
    facts = collect(load(repo), now=datetime(2026, 9, 1, tzinfo=timezone.utc))
    assert not [p for p in facts.files if "/results/" in p]
    assert len(facts.entries) == 2


# ---- messages that name the real fix ---------------------------------------------------------


def test_long_key_names_the_provider_and_key_prefix_96(git_repo: Path) -> None:
    repo = meai_repo(git_repo, key_prefix=None)
    proc = run_cachelint(repo, "check", "--format", "json", env=ENV)
    long_keys = [
        f for f in json.loads(proc.stdout)["findings"] if f["code"] == "eval-cache-long-key"
    ]
    assert len(long_keys) == 2
    message = long_keys[0]["message"]
    for part in (
        "key-prefix = 96",
        "IEvaluationResponseCacheProvider",
        "first 16 characters",
        "full key in entry.json",
        "prefix collision",
        "as a miss",
        "within max-path 160",
    ):
        assert part in message, message


def test_path_too_long_gives_meai_advice(git_repo: Path) -> None:
    repo = meai_repo(git_repo)
    write_entry(repo / STORAGE, "Geography.Capitals.Of.Every.Country.In.Europe.Long", "1")
    proc = run_cachelint(repo, "check", "--format", "json", env=ENV)
    too_long = [f for f in json.loads(proc.stdout)["findings"] if f["code"].endswith("too-long")]
    assert too_long
    message = too_long[0]["message"]
    assert "scenario names" in message and "storage root" in message
    assert "lower key-prefix" not in message


# ---- layout-aware defaults -------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["meai", None], ids=["layout-meai", "layout-auto"])
def test_meai_tree_defaults_to_the_meai_family(git_repo: Path, layout: str | None) -> None:
    repo = meai_repo(git_repo, layout=layout)
    found = _codes(repo)
    assert not [f for f in found if f[0] == "eval-cache-unpinned"], found


def test_native_tree_still_defaults_to_cachelint(git_repo: Path) -> None:
    repo = meai_repo(git_repo, layout="cachelint", key_prefix=None, results=False)
    proc = run_cachelint(repo, "stamp", env=ENV)
    assert proc.returncode == 2 and "cachelint" in proc.stderr


def test_auto_layout_finds_a_meai_root_past_a_key_directory_without_an_entry(
    git_repo: Path,
) -> None:
    """An interrupted write can leave a key directory with no entry (here holding only an empty
    directory) first in order: `layout = "auto"` decides by the first entry after it."""
    repo = meai_repo(git_repo, layout=None)
    (repo / STORAGE / "cache" / "A.First" / "1" / ("0" * 96) / "partial").mkdir(parents=True)
    assert is_meai_root(load(repo), STORAGE)


def test_auto_layout_tells_a_native_root_by_its_first_entry(git_repo: Path) -> None:
    """cachelint's own entries sit one level deeper than MEAI's: the first of them decides, past
    a scenario directory holding only an empty key directory, and a file at MEAI's depth further
    on that names `scenarioName` does not turn the root into a MEAI one."""
    repo = copy_bundled(git_repo)
    first, *_, last = sorted((repo / "eval-cache" / "cache").glob("*/*/*"))  # MEAI's key depth
    (first / "0000000000000000").mkdir()
    (last / "entry.json").write_text('{"scenarioName": "x", "iterationName": "1"}')
    assert not is_meai_root(load(repo), "eval-cache")


def test_stamp_records_the_trees_ttl_not_cachelints(git_repo: Path) -> None:
    repo = meai_repo(git_repo, ttl=timedelta(days=14))
    write_entry(repo / STORAGE, "Geography.Rivers", "1", ttl=timedelta(days=400))
    proc = run_cachelint(repo, "stamp", env=ENV)
    assert proc.returncode == 0, proc.stderr
    stamp = json.loads((repo / STORAGE / ".eval-cache-stamp.json").read_text())
    assert (stamp["ttlDays"], stamp["ttlDaysLongest"]) == (14, 400)


# ---- dates exactly as MEAI reads them ------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-08-21T09:14:24.12379Z", datetime(2026, 8, 21, 9, 14, 24, 123790)),
        ("2026-08-21T09:14:24Z", datetime(2026, 8, 21, 9, 14, 24)),
        ("2026-08-21T09:14:24.1237905Z", datetime(2026, 8, 21, 9, 14, 24, 123790)),
        ("2026-08-21T09:14:24.1234567891234567Z", datetime(2026, 8, 21, 9, 14, 24, 123456)),
        ("2026-08-21T09:14:24", datetime(2026, 8, 21, 9, 14, 24)),
        ("2026-08-21T09:14", datetime(2026, 8, 21, 9, 14)),
        ("2026-08-21", datetime(2026, 8, 21)),
        ("2026-08-21T11:14:24+02:00", datetime(2026, 8, 21, 9, 14, 24)),
        ("2026-08-21T07:14:24-02", datetime(2026, 8, 21, 9, 14, 24)),
        ("2026-08-21T09:14:24.Z", datetime(2026, 8, 21, 9, 14, 24)),
    ],
)
def test_dates_system_text_json_reads(text: str, expected: datetime) -> None:
    assert parse_time(text) == expected.replace(tzinfo=timezone.utc)


@pytest.mark.parametrize(
    "text",
    [
        "2026-08-21 09:14:24Z",  # a space for T
        "2026-08-21t09:14:24Z",
        "2026-08-21T09:14:24z",  # lowercase z
        "2026-08-21T09:14:24.12345678901234567Z",  # 17 fraction digits
        " 2026-08-21T09:14:24Z",
        "2026-08-21T09:14:24Z ",
        "2026-08-21T09:14:24.",
        "2026-08-21T09:14:24+0200",
        "2026-08-21T09:14:24+15:00",
        "2026-08-21T09:14:24+14:30",
        "2026-08-21T24:00:00Z",
        "2026-08-21T09:14:60Z",
        "2026-02-30T09:14:24Z",
        "0000-01-01T00:00:00Z",
        "2026-08-21T09",
        "20260821T091424Z",
        "2026-08-21T09:14:24.5+02:00:00",
        "２０２６-08-21T09:14:24Z",  # full-width digits are not [0-9]
    ],
)
def test_dates_system_text_json_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        parse_time(text)


@pytest.mark.parametrize(
    "bad",
    ["2026-08-21 09:14:24Z", "2026-08-21T09:14:24z", "2026-08-21T09:14:24.12345678901234567Z"],
)
def test_an_entry_meai_cannot_read_is_corrupt(git_repo: Path, bad: str) -> None:
    repo = meai_repo(git_repo)
    entry = next((repo / STORAGE / "cache").rglob("entry.json"))
    data = json.loads(entry.read_bytes())
    entry.write_bytes(stj_indented({**data, "expiration": bad}).encode())
    commit_all(repo)
    found = _codes(repo)
    assert ("eval-cache-corrupt", entry.parent.relative_to(repo).as_posix()) in found


def test_key_is_the_directory_name() -> None:
    assert len(meai_key("a")) == 96 and meai_key("a").isupper()


# ---- the example -----------------------------------------------------------------------------

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "meai"


def test_example_is_written_exactly_as_meai_writes_it(tmp_path: Path) -> None:
    storage = tmp_path / "eval-cache"
    write_entry(storage, "Geography.Capitals", "1", answer="Paris.")
    write_entry(storage, "Geography.Capitals", "2", answer="Lyon.", created=WHOLE_SECOND)
    write_entry(storage, "Geography.Rivers", "1", answer="The Seine.")
    expected = {
        p.relative_to(storage).as_posix(): p.read_bytes() for p in storage.rglob("*") if p.is_file()
    }
    cache = EXAMPLE / "eval-cache"
    found = {
        p.relative_to(cache).as_posix(): p.read_bytes()
        for p in (cache / "cache").rglob("*")
        if p.is_file()
    }
    assert found == expected


def test_example_passes_check(git_repo: Path) -> None:
    shutil.copytree(EXAMPLE, git_repo, dirs_exist_ok=True)
    commit_all(git_repo, "the example")
    checked = run_cachelint(git_repo, "check", "--strict", env=ENV)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "0 findings (0 errors, 0 warnings) in 7 files, 3 entries" in checked.stdout
    stamp = run_cachelint(git_repo, "stamp", "--check", "--strict", env=ENV)
    assert stamp.returncode == 0, stamp.stdout


# ---- run's offline canary ----------------------------------------------------------------------

RESULTS_AGENT = """
from pathlib import Path


def answer(scenario, client):
    reply = client.chat(scenario.messages)
    if client.mode.value == "replay":
        base = Path(__file__).parent
        results = base / "meai-storage" / "results" / "Default" / "Refunds"
        results.mkdir(parents=True, exist_ok=True)
        (results / "1.json").write_text("{}")
        scratch = base / "eval-cache" / "scratch"
        scratch.mkdir(exist_ok=True)
        (scratch / "log.txt").write_text("x")
    return reply
"""


@pytest.mark.parametrize("settled", [False, True], ids=["by-content", "by-stat"])
def test_run_canary_skips_meai_results_and_exclude(
    git_repo: Path, settled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Files recorded just before the run are compared by content; older ones by stat (ctime).
    if settled:
        monkeypatch.setattr("cachelint.canary.RACY_NS", 0)
    from tests.helpers import BASIC, DEAD, do_run, record, write_repo

    write_repo(
        git_repo,
        DEAD,
        {"support/acme/refund": BASIC["support/acme/refund"]},
        target='type = "python"\nfunction = "results_agent:answer"\n',
        files={"results_agent.py": RESULTS_AGENT},
    )
    pyproject = git_repo / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text().replace(
            'cache = "eval-cache"\n',
            'cache = ["eval-cache", "meai-storage"]\nexclude = ["eval-cache/scratch/**"]\n',
        )
    )
    write_entry(git_repo / "meai-storage", "Refunds", "1")
    assert record(git_repo)[0].rc == 0
    commit_all(git_repo)
    outcome = do_run(git_repo, fmt="json")
    assert (git_repo / "meai-storage/results/Default/Refunds/1.json").is_file()
    assert (git_repo / "eval-cache/scratch/log.txt").is_file()
    assert json.loads(outcome.out)["mutations"] == [], outcome.out
    assert outcome.rc == 0, outcome.out + outcome.err


# ---- the .NET page -----------------------------------------------------------------------------


def test_dotnet_page_is_linked_and_covers_what_a_team_sets_up() -> None:
    root = Path(__file__).resolve().parent.parent
    assert "(docs/dotnet.md)" in (root / "README.md").read_text(encoding="utf-8")
    page = (root / "docs" / "dotnet.md").read_text(encoding="utf-8")
    for needed in (
        "/** -text",
        "timeToLiveForCacheEntries: TimeSpan.FromDays(3650)",
        "new DiskBasedResultStore(",
        "cachelint guard -- dotnet test",
        "id: cachelint-check",
        "key-prefix = 96",
        "examples/meai/",
    ):
        assert needed in page, needed
    # Issue 38: the TTL of the tutorial's factory, lock files, the hook as it behaves.
    for needed in (
        "DiskBasedReportingConfiguration.Create(",
        "    timeToLiveForCacheEntries: TimeSpan.FromDays(3650));",
        "<RestorePackagesWithLockFile>true</RestorePackagesWithLockFile>",
        "packages.lock.json",
        "Path.Combine(repoRoot,",
        "always_run: true",
        "`Directory.Packages.props`",
    ):
        assert needed in page, needed
    # A `files:` regex does nothing beside `always_run: true`: the page must not offer one.
    assert re.search(r"^\s*files:", page, re.MULTILINE) is None
