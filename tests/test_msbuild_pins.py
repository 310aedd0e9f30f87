"""Pins as MSBuild resolves them (issue 15): VersionOverride, the nearest Directory.Packages.props
and its GetPathOfFileAbove import chain, properties from Directory.Build.props and the project,
packages.lock.json per project, and the stamp and stale-pin per project."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from cachelint import pins
from cachelint.collect import collect
from cachelint.config import Config, load
from cachelint.pins.msbuild_eval import evaluate, find_projects
from tests.conftest import commit_all, git, run_cachelint
from tests.helpers import NOW
from tests.meai_tree import write_entry

MEAI = "Microsoft.Extensions.AI.Evaluation"
ENV = {"CACHELINT_NOW": "2026-09-01T00:00:00Z"}


def central(*versions: tuple[str, str], props: str = "", extra: str = "") -> str:
    items = "".join(f'    <PackageVersion Include="{n}" Version="{v}" />\n' for n, v in versions)
    return (
        "<Project>\n  <PropertyGroup>\n"
        "    <ManagePackageVersionsCentrally>true</ManagePackageVersionsCentrally>\n"
        f"{props}  </PropertyGroup>\n{extra}  <ItemGroup>\n{items}  </ItemGroup>\n</Project>\n"
    )


def project(*references: str, override: dict[str, str] | None = None, props: str = "") -> str:
    override = override or {}
    refs = "".join(
        f'    <PackageReference Include="{r}"'
        + (f' VersionOverride="{override[r]}"' if r in override else "")
        + " />\n"
        for r in references
    )
    return (
        '<Project Sdk="Microsoft.NET.Sdk">\n  <PropertyGroup>\n'
        f"    <TargetFramework>net9.0</TargetFramework>\n{props}  </PropertyGroup>\n"
        f"  <ItemGroup>\n{refs}  </ItemGroup>\n</Project>\n"
    )


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def versions(repo: Path, pattern: str = MEAI) -> pins.Resolution:
    return pins.current(Config(repo=repo, source="test", packages=(pattern,)))


def test_projects_without_a_solution_are_found(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "Directory.Packages.props": central((MEAI, "10.9.0")),
            "src/App/App.csproj": project(MEAI),
            "tests/Evals/Evals.csproj": project(MEAI, override={MEAI: "10.8.0"}),
            "tests/Evals/bin/Debug/Copy.csproj": project(MEAI),
        },
    )
    assert find_projects(tmp_path) == ["src/App/App.csproj", "tests/Evals/Evals.csproj"]
    got = versions(tmp_path)
    assert got.problems == () and got.pinned == {}
    assert {p: {r.version for r in v.values()} for p, v in got.by_project.items()} == {
        "src/App/App.csproj": {"10.9.0"},
        "tests/Evals/Evals.csproj": {"10.8.0"},
    }
    assert got.by_project["tests/Evals/Evals.csproj"][
        "microsoft-extensions-ai-evaluation"
    ].source == ("tests/Evals/Evals.csproj")


def test_a_version_property_from_directory_build_props(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "Directory.Build.props": (
                "<Project><PropertyGroup><MeaiVersion>10.9.0</MeaiVersion></PropertyGroup></Project>"
            ),
            "Directory.Packages.props": central((MEAI, "$(MeaiVersion)")),
            "Evals/Evals.csproj": project(MEAI),
        },
    )
    got = versions(tmp_path)
    assert got.problems == ()
    (resolved,) = got.pinned.values()
    assert (resolved.version, resolved.source) == ("10.9.0", "Directory.Packages.props")
    assert evaluate(tmp_path, "Evals/Evals.csproj").files == (
        "Directory.Build.props",
        "Directory.Packages.props",
        "Evals/Evals.csproj",
    )


def test_a_version_property_from_the_project_itself(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "Directory.Packages.props": central((MEAI, "$(MeaiVersion)")),
            "Evals/Evals.csproj": project(MEAI, props="    <MeaiVersion>10.9.0</MeaiVersion>\n"),
        },
    )
    (resolved,) = versions(tmp_path).pinned.values()
    assert resolved.version == "10.9.0"


def test_the_default_value_idiom_keeps_the_earlier_definition(tmp_path: Path) -> None:
    default = "    <MeaiVersion Condition=\"'$(MeaiVersion)' == ''\">10.9.0</MeaiVersion>\n"
    write(
        tmp_path,
        {
            "Directory.Build.props": (
                "<Project><PropertyGroup><MeaiVersion>10.8.0</MeaiVersion></PropertyGroup></Project>"
            ),
            "Directory.Packages.props": central((MEAI, "$(MeaiVersion)"), props=default),
            "Evals/Evals.csproj": project(MEAI),
        },
    )
    (resolved,) = versions(tmp_path).pinned.values()
    assert resolved.version == "10.8.0"


def test_the_default_value_idiom_applies_when_nothing_set_it(tmp_path: Path) -> None:
    default = "    <MeaiVersion Condition=\"'$(MeaiVersion)' == ''\">10.9.0</MeaiVersion>\n"
    write(
        tmp_path,
        {
            "Directory.Packages.props": central((MEAI, "$(MeaiVersion)"), props=default),
            "Evals/Evals.csproj": project(MEAI),
        },
    )
    got = versions(tmp_path)
    assert got.problems == ()
    (resolved,) = got.pinned.values()
    assert resolved.version == "10.9.0"


def test_the_nearest_directory_packages_props_and_its_import_chain(tmp_path: Path) -> None:
    chain = (
        "  <Import Project=\"$([MSBuild]::GetPathOfFileAbove('Directory.Packages.props', "
        "'$(MSBuildThisFileDirectory)../'))\" />\n"
    )
    nested = (
        "<Project>\n"
        f"{chain}"
        "  <ItemGroup>\n"
        f'    <PackageVersion Update="{MEAI}" Version="10.11.0" />\n'
        "  </ItemGroup>\n</Project>\n"
    )
    write(
        tmp_path,
        {
            "Directory.Packages.props": central((MEAI, "10.9.0"), ("xunit", "2.9.3")),
            "tests/Directory.Packages.props": nested,
            "tests/Evals/Evals.csproj": project(MEAI, "xunit"),
            "src/App/App.csproj": project(MEAI),
        },
    )
    evaluated = evaluate(tmp_path, "tests/Evals/Evals.csproj")
    assert evaluated.files == (
        "tests/Directory.Packages.props",
        "Directory.Packages.props",
        "tests/Evals/Evals.csproj",
    )
    got = versions(tmp_path)
    assert {p: [r.version for r in v.values()] for p, v in got.by_project.items()} == {
        "src/App/App.csproj": ["10.9.0"],
        "tests/Evals/Evals.csproj": ["10.11.0"],
    }
    # xunit comes from the root file through the import: one version, from the file it is in.
    (xunit,) = versions(tmp_path, "xunit").pinned.values()
    assert (xunit.version, xunit.source) == ("2.9.3", "Directory.Packages.props")


def test_a_lock_file_is_read_per_project(tmp_path: Path) -> None:
    lock = {
        "version": 2,
        "dependencies": {
            "net9.0": {
                MEAI: {"type": "Direct", "requested": "[10.8.0, )", "resolved": "10.8.0"},
                "Microsoft.Extensions.AI": {"type": "Transitive", "resolved": "10.8.0"},
            }
        },
    }
    write(
        tmp_path,
        {
            "Directory.Packages.props": central((MEAI, "10.9.0")),
            "src/App/App.csproj": project(MEAI),
            "tests/Evals/Evals.csproj": project(MEAI, override={MEAI: "10.8.0"}),
            "tests/Evals/packages.lock.json": json.dumps(lock),
        },
    )
    got = versions(tmp_path, "Microsoft.Extensions.AI*")
    assert got.problems == ()
    (transitive,) = [r for r in got.pinned.values() if r.name == "Microsoft.Extensions.AI"]
    assert (transitive.version, transitive.project) == ("10.8.0", "tests/Evals/Evals.csproj")
    assert "tests/Evals/packages.lock.json" in got.files


# ---- through the CLI: stamp per project, stale-pin names the project ----------------------


def _repo(git_repo: Path, override: str) -> Path:
    write(
        git_repo,
        {
            ".gitattributes": "eval-cache/** -text\n",
            "cachelint.toml": 'cache = "eval-cache"\nlayout = "meai"\nkey-prefix = 96\n',
            "Directory.Packages.props": central((MEAI, "10.9.0")),
            "src/App/App.csproj": project(MEAI),
            "tests/Evals/Evals.csproj": project(MEAI, override={MEAI: override}),
        },
    )
    write_entry(git_repo / "eval-cache", "Geography.Capitals", "1")
    commit_all(git_repo, "record")
    return git_repo


def test_stamp_records_each_projects_version_and_check_is_clean(git_repo: Path) -> None:
    repo = _repo(git_repo, "10.8.0")
    stamped = run_cachelint(repo, "stamp", env=ENV)
    assert stamped.returncode == 0, stamped.stderr
    stamp = json.loads((repo / "eval-cache/.eval-cache-stamp.json").read_text())
    assert stamp["projects"] == {
        "src/App/App.csproj": {MEAI: "10.9.0"},
        "tests/Evals/Evals.csproj": {MEAI: "10.8.0"},
    }
    assert MEAI not in stamp["packages"]
    commit_all(repo, "stamp")
    checked = run_cachelint(repo, "check", "--select", "eval-cache-stale-pin,eval-cache-unpinned")
    assert checked.returncode == 0, checked.stdout


def test_check_lists_the_indexed_projects_with_its_other_listings(git_repo: Path) -> None:
    """The check's facts carry the project files in git's index, as `find_projects` lists them,
    for the pin rules: an untracked project is not among them."""
    repo = _repo(git_repo, "10.8.0")
    write(repo, {"tools/Scratch/Scratch.csproj": project(MEAI)})
    facts = collect(load(repo), now=NOW)
    assert facts.projects == ("src/App/App.csproj", "tests/Evals/Evals.csproj")
    assert list(facts.projects) == find_projects(repo)


def test_pin_files_the_config_names_are_read_without_listing_projects(git_repo: Path) -> None:
    """With `pins` set, check lists no projects: the named project alone is stamped (its own
    version, not one per project) and checked, so a change to the other project's version does
    not make a pin stale."""
    repo = _repo(git_repo, "10.8.0")
    with (repo / "cachelint.toml").open("a") as fh:
        fh.write('pins = ["tests/Evals/Evals.csproj"]\n')
    assert collect(load(repo), now=NOW).projects is None
    assert run_cachelint(repo, "stamp", env=ENV).returncode == 0
    stamp = json.loads((repo / "eval-cache/.eval-cache-stamp.json").read_text())
    assert stamp["packages"] == {MEAI: "10.8.0"} and "projects" not in stamp
    assert stamp["pinFiles"] == {MEAI: "tests/Evals/Evals.csproj"}
    commit_all(repo, "stamp")
    write(repo, {"src/App/App.csproj": project(MEAI, override={MEAI: "10.7.0"})})
    rules = "eval-cache-stale-pin,eval-cache-unpinned"
    checked = run_cachelint(repo, "check", "--select", rules, env=ENV)
    assert checked.returncode == 0, checked.stdout


def test_stale_pin_names_the_project_whose_override_moved(git_repo: Path) -> None:
    repo = _repo(git_repo, "10.8.0")
    assert run_cachelint(repo, "stamp", env=ENV).returncode == 0
    commit_all(repo, "stamp")
    write(repo, {"tests/Evals/Evals.csproj": project(MEAI, override={MEAI: "10.8.1"})})
    checked = run_cachelint(repo, "check", "--select", "eval-cache-stale-pin", env=ENV)
    assert checked.returncode == 1
    lines = [line for line in checked.stdout.splitlines() if "eval-cache-stale-pin" in line]
    assert len(lines) == 1, checked.stdout
    assert f"{MEAI} (tests/Evals/Evals.csproj): recorded 10.8.0 vs pin 10.8.1" in lines[0]


def test_an_override_that_joins_the_central_version_is_stale_for_that_project_only(
    git_repo: Path,
) -> None:
    repo = _repo(git_repo, "10.8.0")
    assert run_cachelint(repo, "stamp", env=ENV).returncode == 0
    commit_all(repo, "stamp")
    write(repo, {"tests/Evals/Evals.csproj": project(MEAI)})
    git(repo, "add", "-A")
    checked = run_cachelint(repo, "check", "--select", "eval-cache-stale-pin", env=ENV)
    lines = [line for line in checked.stdout.splitlines() if "eval-cache-stale-pin" in line]
    assert len(lines) == 1, checked.stdout
    assert f"{MEAI} (tests/Evals/Evals.csproj): recorded 10.8.0 vs pin 10.9.0" in lines[0]


def test_a_solution_with_a_version_override_stamps(git_repo: Path) -> None:
    # Issue 15: with a .sln present, an override was "pinned differently" and stamp refused.
    shutil.copytree(Path(__file__).parent / "data/pins/dotnet-cpm", git_repo, dirs_exist_ok=True)
    csproj = git_repo / "src/Evals/Evals.csproj"
    csproj.write_text(
        csproj.read_text().replace(
            f'<PackageReference Include="{MEAI}" />',
            f'<PackageReference Include="{MEAI}" VersionOverride="10.11.0" />',
        )
    )
    lock = git_repo / "src/Evals/packages.lock.json"
    lock.write_text(lock.read_text().replace('"resolved": "10.9.0"', '"resolved": "10.11.0"', 1))
    write(git_repo, {"cachelint.toml": 'cache = "eval-cache"\nkey-prefix = 96\n'})
    write_entry(git_repo / "eval-cache", "Geography.Capitals", "1")
    commit_all(git_repo, "record")
    stamped = run_cachelint(git_repo, "stamp", env=ENV)
    assert stamped.returncode == 0, stamped.stderr
    stamp = json.loads((git_repo / "eval-cache/.eval-cache-stamp.json").read_text())
    assert stamp["packages"][MEAI] == "10.11.0"
    assert stamp["pinFiles"][MEAI] == "src/Evals/Evals.csproj"


def test_only_projects_that_use_the_family_date_the_pins(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "evals/Directory.Packages.props": central((MEAI, "10.9.0")),
            "evals/Evals/Evals.csproj": project(MEAI),
            "tools/Directory.Packages.props": central(("Spectre.Console", "0.50.0")),
            "tools/Cli/Cli.csproj": project("Spectre.Console"),
        },
    )
    got = versions(tmp_path)
    assert got.files == ("evals/Directory.Packages.props", "evals/Evals/Evals.csproj")


# ---- NuGet versions and MSBuild names as NuGet and MSBuild read them (issue 38) -------------


def _lock(*resolved: tuple[str, str, str]) -> str:
    """packages.lock.json as `dotnet restore` writes it with RestorePackagesWithLockFile."""
    deps = {
        name: {"type": kind, "resolved": version}
        | ({"requested": f"[{version}, )"} if kind == "Direct" else {})
        for name, version, kind in resolved
    }
    return json.dumps({"version": 1, "dependencies": {"net9.0": deps}}, indent=2)


def test_normalised_nuget_versions_are_one_version(tmp_path: Path) -> None:
    """`10.9` in the props and restore's `10.9.0` in the lock: one version, no disagreement."""
    write(
        tmp_path,
        {
            "Directory.Packages.props": central((MEAI, "10.9")),
            "Evals/Evals.csproj": project(MEAI),
            "Evals/packages.lock.json": _lock((MEAI, "10.9.0", "Direct")),
        },
    )
    got = versions(tmp_path)
    assert got.problems == ()
    assert [r.version for r in got.pinned.values()] == ["10.9.0"]


def test_exact_ranges_floating_versions_and_locks(tmp_path: Path) -> None:
    for spec, expected in (
        ("[10.9.0]", "10.9.0"),
        ("[10.9]", "10.9.0"),
        ("[10.9.0, 10.9.0]", "10.9.0"),
        ("10.09.0.0", "10.9.0"),
        ("10.9.0-preview.1+sha.abc", "10.9.0-preview.1"),
    ):
        write(
            tmp_path, {"Directory.Packages.props": central((MEAI, spec)), "E.csproj": project(MEAI)}
        )
        got = versions(tmp_path)
        assert [r.version for r in got.pinned.values()] == [expected], spec
    # A floating version: restore decides, and only the lock records what it took.
    write(tmp_path, {"Directory.Packages.props": central((MEAI, "10.*"))})
    (problem,) = versions(tmp_path).problems
    assert "floating" in problem.message and "RestorePackagesWithLockFile" in problem.message
    write(tmp_path, {"packages.lock.json": _lock((MEAI, "10.11.0", "Direct"))})
    got = versions(tmp_path)
    assert got.problems == ()
    assert [(r.version, r.source) for r in got.pinned.values()] == [
        ("10.11.0", "packages.lock.json")
    ]


def test_msbuild_property_names_are_case_insensitive(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "Directory.Build.props": (
                "<Project><PropertyGroup><MeaiVersion>10.8.0</MeaiVersion>"
                "<MEAIVERSION>10.9.0</MEAIVERSION></PropertyGroup></Project>\n"
            ),
            "Directory.Packages.props": central((MEAI, "$(meaiversion)")),
            "E.csproj": project(MEAI),
        },
    )
    got = versions(tmp_path)
    assert got.problems == ()
    assert [r.version for r in got.pinned.values()] == ["10.9.0"]  # the last definition wins
    # The props file read on its own (`pins` in the config) resolves it the same way.
    (tmp_path / "Directory.Packages.props").write_text(
        central((MEAI, "$(MEAIVersion)"), props="    <meaiVersion>10.9</meaiVersion>\n")
    )
    config = Config(
        repo=tmp_path, source="test", packages=(MEAI,), pins=("Directory.Packages.props",)
    )
    got = pins.current(config)
    assert got.problems == () and [r.version for r in got.pinned.values()] == ["10.9.0"]


def _meai_tree(git_repo: Path, version: str, lock: str) -> Path:
    write(
        git_repo,
        {
            ".gitattributes": "eval-cache/** -text\n",
            "cachelint.toml": 'cache = "eval-cache"\nlayout = "meai"\nkey-prefix = 96\n',
            "Directory.Packages.props": central(
                (MEAI, "$(MeaiVersion)"), props=f"    <meaiversion>{version}</meaiversion>\n"
            ),
            "tests/Evals/Evals.csproj": project(MEAI),
            "tests/Evals/packages.lock.json": lock,
        },
    )
    write_entry(git_repo / "eval-cache", "Geography.Capitals", "1", newline="\r\n")
    commit_all(git_repo, "record")
    return git_repo


def test_stamp_and_check_take_nuget_and_msbuild_as_they_resolve(git_repo: Path) -> None:
    """`Version="10.9"` through a lower-case `$(meaiversion)`, restore's lock saying 10.9.0 and
    pinning the transitive Microsoft.Extensions.AI packages: the stamp takes, check is clean,
    and the props rewritten as `10.9.0` is no pin change."""
    lock = _lock(
        (MEAI, "10.9.0", "Direct"),
        ("Microsoft.Extensions.AI", "10.9.0", "Transitive"),
        ("Microsoft.Extensions.AI.Abstractions", "10.9.0", "Transitive"),
    )
    repo = _meai_tree(git_repo, "10.9", lock)
    stamped = run_cachelint(repo, "stamp", env=ENV)
    assert stamped.returncode == 0, stamped.stderr
    stamp = json.loads((repo / "eval-cache/.eval-cache-stamp.json").read_text())
    assert stamp["packages"] == {
        MEAI: "10.9.0",
        "Microsoft.Extensions.AI": "10.9.0",
        "Microsoft.Extensions.AI.Abstractions": "10.9.0",
    }
    # Read from the props through the property, and found to agree with the lock.
    assert stamp["pinFiles"][MEAI] == "Directory.Packages.props"
    commit_all(repo, "stamp")
    select = ("--select", "eval-cache-stale-pin,eval-cache-unpinned")
    checked = run_cachelint(repo, "check", *select, env=ENV)
    assert checked.returncode == 0, checked.stdout
    props = repo / "Directory.Packages.props"
    props.write_text(props.read_text().replace(">10.9<", ">10.9.0<"))
    checked = run_cachelint(repo, "check", *select, env=ENV)
    assert checked.returncode == 0, checked.stdout
    # A transitive bump shows in the lock alone, and is a stale pin.
    lock_path = repo / "tests/Evals/packages.lock.json"
    lock_path.write_text(
        _lock(
            (MEAI, "10.9.0", "Direct"),
            ("Microsoft.Extensions.AI", "10.11.0", "Transitive"),
            ("Microsoft.Extensions.AI.Abstractions", "10.11.0", "Transitive"),
        )
    )
    checked = run_cachelint(repo, "check", *select, env=ENV)
    assert checked.returncode == 1
    assert "Microsoft.Extensions.AI: recorded 10.9.0 vs pin 10.11.0" in checked.stdout


def test_a_stamp_that_recorded_an_unnormalised_version_is_not_stale(git_repo: Path) -> None:
    repo = _meai_tree(git_repo, "10.9.0", _lock((MEAI, "10.9.0", "Direct")))
    assert run_cachelint(repo, "stamp", env=ENV).returncode == 0
    path = repo / "eval-cache/.eval-cache-stamp.json"
    path.write_text(path.read_text().replace('"10.9.0"', '"10.9"'))  # an older cachelint's
    commit_all(repo, "stamp")
    checked = run_cachelint(repo, "check", "--select", "eval-cache-stale-pin", env=ENV)
    assert checked.returncode == 0, checked.stdout
