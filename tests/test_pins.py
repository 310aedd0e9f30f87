"""Pin parsers against real-shaped project files (tests/data/pins) and the family resolution."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cachelint import pins
from cachelint.config import Config, from_table
from cachelint.errors import CachelintError, ConfigError
from cachelint.pins import Ecosystem

DATA = Path(__file__).parent / "data" / "pins"


def _project(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    shutil.copytree(DATA / name, target)
    return target


def _resolve(repo: Path, *packages: str, pin_files: tuple[str, ...] = ()) -> pins.Resolution:
    return pins.current(Config(repo=repo, source="test", packages=packages, pins=pin_files))


def _versions(resolution: pins.Resolution) -> dict[str, tuple[str, str]]:
    return {r.name: (r.version, r.source) for r in resolution.pinned.values()}


def test_central_package_management_solution(tmp_path: Path) -> None:
    repo = _project(tmp_path, "dotnet-cpm")
    assert pins.detect_pin_files(repo) == [
        "Directory.Packages.props",
        "src/Evals/Evals.csproj",
        "src/Evals/packages.lock.json",
        "tests/Evals.Tests/Evals.Tests.csproj",
    ]
    # NuGet names are case-insensitive: the lower-case pattern still matches.
    got = _resolve(repo, "microsoft.extensions.ai.evaluation*", "xunit.runner.visualstudio")
    assert got.problems == ()
    assert _versions(got) == {
        # $(MeaiEvaluationVersion) resolved from the props file's own PropertyGroup
        "Microsoft.Extensions.AI.Evaluation": ("10.9.0", "Directory.Packages.props"),
        "Microsoft.Extensions.AI.Evaluation.Quality": ("10.9.0", "Directory.Packages.props"),
        # [10.9.0] is NuGet's exact-version syntax
        "Microsoft.Extensions.AI.Evaluation.Reporting": ("10.9.0", "Directory.Packages.props"),
        # the props file says 3.1.* (a range); the csproj's VersionOverride child element pins it
        "xunit.runner.visualstudio": ("3.1.4", "tests/Evals.Tests/Evals.Tests.csproj"),
    }


def test_transitive_packages_come_from_the_nuget_lock_file(tmp_path: Path) -> None:
    repo = _project(tmp_path, "dotnet-cpm")
    got = _resolve(repo, "Microsoft.Extensions.AI.Abstractions")
    assert _versions(got) == {
        "Microsoft.Extensions.AI.Abstractions": ("9.10.0", "src/Evals/packages.lock.json")
    }


def _override(repo: Path, version: str) -> None:
    csproj = repo / "src/Evals/Evals.csproj"
    csproj.write_text(
        csproj.read_text().replace(
            '<PackageReference Include="Microsoft.Extensions.AI.Evaluation" />',
            '<PackageReference Include="Microsoft.Extensions.AI.Evaluation" '
            f'VersionOverride="{version}" />',
        )
    )


def test_version_override_is_the_projects_version(tmp_path: Path) -> None:
    # Issue 15: the override is what the project builds with, not a second opinion.
    repo = _project(tmp_path, "dotnet-cpm")
    _override(repo, "10.11.0")
    lock = repo / "src/Evals/packages.lock.json"
    lock.write_text(lock.read_text().replace('"resolved": "10.9.0"', '"resolved": "10.11.0"', 1))
    got = _resolve(repo, "Microsoft.Extensions.AI.Evaluation")
    assert got.problems == ()
    (resolved,) = got.pinned.values()
    assert (resolved.version, resolved.source) == ("10.11.0", "src/Evals/Evals.csproj")


def test_version_override_with_a_stale_lock_names_the_project_and_the_lock(tmp_path: Path) -> None:
    repo = _project(tmp_path, "dotnet-cpm")
    _override(repo, "10.11.0")
    got = _resolve(repo, "Microsoft.Extensions.AI.Evaluation")
    assert got.pinned == {}
    (problem,) = got.problems
    assert problem.source == "src/Evals/packages.lock.json"
    assert problem.message.startswith(
        "Microsoft.Extensions.AI.Evaluation (src/Evals/Evals.csproj): pinned differently: "
        "10.11.0 in src/Evals/Evals.csproj; 10.9.0 in src/Evals/packages.lock.json;"
    )
    assert "dotnet restore --force-evaluate" in problem.message


@pytest.mark.parametrize(
    "spec",
    ["10.*", "*", "[10.0,11.0)", "(10.0,)", "[10.9.0,]", "$(UndefinedVersion)"],
)
def test_nuget_ranges_and_unresolved_properties_are_not_pins(tmp_path: Path, spec: str) -> None:
    (tmp_path / "Directory.Packages.props").write_text(
        "<Project><ItemGroup>"
        f'<PackageVersion Include="Microsoft.Extensions.AI.Evaluation" Version="{spec}" />'
        "</ItemGroup></Project>"
    )
    got = _resolve(tmp_path, "Microsoft.Extensions.AI.Evaluation")
    assert got.pinned == {}
    (problem,) = got.problems
    assert "not pinned to an exact version" in problem.message
    assert "in Directory.Packages.props" in problem.message


def test_legacy_csproj_with_namespace_and_version_child_element(tmp_path: Path) -> None:
    (tmp_path / "Evals.csproj").write_text(
        '<?xml version="1.0" encoding="utf-8"?>\n'
        '<Project ToolsVersion="15.0" xmlns="http://schemas.microsoft.com/developer/msbuild/2003">'
        '<ItemGroup><PackageReference Include="Microsoft.Extensions.AI.Evaluation">'
        "<Version>10.9.0</Version></PackageReference></ItemGroup></Project>"
    )
    got = _resolve(tmp_path, "Microsoft.Extensions.AI.Evaluation")
    assert _versions(got) == {"Microsoft.Extensions.AI.Evaluation": ("10.9.0", "Evals.csproj")}


def test_uv_project_lock_pins_what_pyproject_leaves_open(tmp_path: Path) -> None:
    repo = _project(tmp_path, "uv-project")
    assert pins.detect_pin_files(repo) == ["pyproject.toml", "uv.lock"]
    # PEP 503: "inspect_ai", "Inspect.AI" and "inspect-ai" are one package.
    got = _resolve(repo, "Inspect.AI", "openai", "ruff", "support_bot_evals")
    assert got.problems == ()
    assert _versions(got) == {
        "inspect-ai": ("0.3.140", "uv.lock"),
        "openai": ("1.109.1", "uv.lock"),
        "ruff": ("0.6.9", "pyproject.toml"),  # dependency-groups, exact
        "support-bot-evals": ("0.3.0", "pyproject.toml"),  # the project pins itself
    }


def test_pyproject_ranges_without_a_lock_are_unpinned(tmp_path: Path) -> None:
    repo = _project(tmp_path, "uv-project")
    (repo / "uv.lock").unlink()
    got = _resolve(repo, "openai", "anthropic", "cachelint")
    assert got.pinned == {}
    assert [p.message.split(";")[0] for p in got.problems] == [
        "anthropic: not pinned to an exact version: found '~=0.40' in pyproject.toml",
        "cachelint: not pinned to an exact version: found '(any version)' in pyproject.toml",
        "openai: not pinned to an exact version: found '>=1.40' in pyproject.toml",
    ]


def test_poetry_project(tmp_path: Path) -> None:
    repo = _project(tmp_path, "poetry-project")
    got = _resolve(repo, "langchain-*", "tiktoken", "rag-evals", "pytest")
    assert _versions(got) == {
        "langchain-core": ("0.3.21", "poetry.lock"),
        "langchain-openai": ("0.2.9", "pyproject.toml"),  # a bare Poetry version is exact
        "tiktoken": ("0.8.0", "poetry.lock"),
        "rag-evals": ("1.4.2", "pyproject.toml"),
    }
    (problem,) = got.problems  # pytest is "^8.3" and not in the lock
    assert problem.message.startswith("pytest: not pinned to an exact version: found '^8.3' in")


def test_npm_project_takes_top_level_installs_only(tmp_path: Path) -> None:
    repo = _project(tmp_path, "npm-project")
    got = _resolve(repo, "openai", "@anthropic-ai/*", "typescript")
    assert got.problems == ()  # promptfoo's nested openai 4.67.3 is not a second pin
    assert _versions(got) == {
        "openai": ("4.73.0", "package.json"),
        "@anthropic-ai/sdk": ("0.32.1", "package-lock.json"),
        "typescript": ("5.6.3", "package-lock.json"),
    }


@pytest.mark.parametrize("spec", ["^4.73.0", "~4.73.0", ">=4.0.0", "4.x", "*", "latest"])
def test_npm_ranges_are_not_pins(tmp_path: Path, spec: str) -> None:
    (tmp_path / "package.json").write_text(f'{{"dependencies": {{"openai": "{spec}"}}}}')
    got = _resolve(tmp_path, "openai")
    assert got.pinned == {} and len(got.problems) == 1


def test_requirements_with_includes_hashes_continuations_and_markers(tmp_path: Path) -> None:
    repo = _project(tmp_path, "requirements")
    got = _resolve(repo, "openai", "tiktoken", "httpx", "pydantic", "anyio", "langchain", "numpy")
    assert _versions(got) == {
        "openai": ("1.54.3", "requirements.txt"),
        "tiktoken": ("0.8.0", "requirements.txt"),
        "httpx": ("0.27.2", "requirements/base.txt"),
        "pydantic": ("2.9.2", "requirements/base.txt"),
        "anyio": ("4.6.2.post1", "requirements/constraints.txt"),
    }
    assert {p.name: p.message.split(";")[0] for p in got.problems} == {
        "langchain": "langchain: not pinned to an exact version: found '<0.4,>=0.3' in "
        "requirements.txt",
        "numpy": "numpy: not pinned to an exact version: found '==1.26.*' in requirements.txt",
    }


def test_requirements_include_that_does_not_exist_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("openai==1.0.0\n-r missing.txt\n")
    with pytest.raises(
        CachelintError, match=r"^requirements.txt:2: -r missing.txt: file not found"
    ):
        _resolve(tmp_path, "openai")


def test_pipfile_lock(tmp_path: Path) -> None:
    repo = _project(tmp_path, "pipenv")
    got = _resolve(repo, "openai", "pytest")
    assert _versions(got) == {
        "openai": ("1.54.3", "Pipfile.lock"),
        "pytest": ("8.3.3", "Pipfile.lock"),
    }


def test_package_not_found_names_the_files_looked_at(tmp_path: Path) -> None:
    repo = _project(tmp_path, "uv-project")
    got = _resolve(repo, "Microsoft.Extensions.AI.*")
    (problem,) = got.problems
    assert problem.message.startswith(
        "Microsoft.Extensions.AI.*: not found in pyproject.toml, uv.lock;"
    )


def test_configured_pins_replace_detection(tmp_path: Path) -> None:
    repo = _project(tmp_path, "dotnet-cpm")
    config = from_table(
        repo, {"pins": ["src/Evals/packages.lock.json"], "packages": ["System.*"]}, "t"
    )
    got = pins.current(config)
    assert got.files == ("src/Evals/packages.lock.json",)
    assert _versions(got) == {"System.Text.Json": ("9.0.9", "src/Evals/packages.lock.json")}


def test_configured_pin_file_missing_or_unknown_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="'pins' names 'nope.lock', which does not exist"):
        _resolve(tmp_path, "x", pin_files=("nope.lock",))
    (tmp_path / "Gemfile.lock").write_text("GEM\n")
    with pytest.raises(ConfigError, match="a format cachelint cannot read"):
        _resolve(tmp_path, "x", pin_files=("Gemfile.lock",))


@pytest.mark.parametrize(
    ("name", "text", "why"),
    [
        ("uv.lock", "[[package]\n", "invalid TOML"),
        ("package-lock.json", "{", "invalid JSON"),
        ("Directory.Packages.props", "<Project>", "invalid XML"),
    ],
)
def test_broken_pin_files_are_one_line_errors(
    tmp_path: Path, name: str, text: str, why: str
) -> None:
    (tmp_path / name).write_text(text)
    with pytest.raises(CachelintError, match=f"^{name}: {why}"):
        _resolve(tmp_path, "x")


def test_names_are_compared_per_ecosystem() -> None:
    assert pins.normalise("Inspect_AI", Ecosystem.PYPI) == "inspect-ai"
    assert pins.normalise("Microsoft.Extensions.AI", Ecosystem.NUGET) == "microsoft.extensions.ai"
    assert pins.normalise("@Scope/Pkg", Ecosystem.NPM) == "@Scope/Pkg"
