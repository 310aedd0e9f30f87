"""`cachelint init`: adopt cachelint in an existing git repository, run at its root.

It writes what a team would otherwise assemble by hand from the README: the config table, the
`-text` line, the results directory ignored, the exact pin of cachelint, the pre-commit hooks, a
GitHub Actions workflow and, when the repository has no eval datasets, an example (dataset,
prompt, python target on the openai SDK) recorded through the scripted fake provider, so that
the first `cachelint run` is green offline. `--dotnet` (or a .NET repository detected) configures
Microsoft.Extensions.AI.Evaluation's disk cache instead.

Idempotent: a second run changes nothing. A file init writes whole is created when absent and
left alone when it differs (the diff is shown; `--force` overwrites it); a line, table or entry
init adds to a file the repository already has is added only when missing, never replacing one.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from cachelint import __version__
from cachelint.commands import init_text
from cachelint.commands.init_files import (
    Install,
    Report,
    append,
    ensure_pin,
    read_existing,
    read_toml,
    write_whole,
)
from cachelint.display import sanitize, shell_command
from cachelint.errors import CachelintError

WORKFLOW = ".github/workflows/cachelint.yml"
PRE_COMMIT = ".pre-commit-config.yaml"
CACHE, DATASETS, RESULTS = "eval-cache", "eval-datasets", "eval-results"
EXAMPLE = "example/default/greeting"  # the example scenario's identity
EXAMPLE_DATASET = f"{DATASETS}/{EXAMPLE}.json"
EXAMPLE_PROMPT = "prompts/example.md"
EXAMPLE_TARGET = "eval_target.py"


@dataclass(frozen=True)
class Source:
    """Where this cachelint was installed from: a git repository and commit (PEP 610's
    direct_url.json, as `pip install git+URL@REV` leaves it), else unknown."""

    url: str | None = None
    commit: str | None = None
    requested: str | None = None

    @property
    def requirement(self) -> str:
        if self.url and self.commit:
            return f"cachelint @ git+{self.url}@{self.commit}"
        return f"cachelint=={__version__}"


def add_parser(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    parents: list[argparse.ArgumentParser],
) -> None:
    parser = subparsers.add_parser(
        "init",
        parents=parents,
        help="set cachelint up in this repository (config, hooks, CI, an example)",
        description=(
            "Run at the root of a git repository: write the config, the .gitattributes line, "
            "the ignored results directory, the exact pin of cachelint, the pre-commit hooks, a "
            "GitHub Actions workflow and (without datasets) a recorded example; print the next "
            "three commands. Idempotent; never overwrites a file it would write differently "
            "without --force."
        ),
    )
    parser.add_argument(
        "--dotnet",
        action="store_true",
        default=None,
        help="configure Microsoft.Extensions.AI.Evaluation's disk cache (detected from *.csproj "
        "or Directory.Packages.props)",
    )
    parser.add_argument(
        "--force", action="store_true", help="overwrite files init writes whole when they differ"
    )
    parser.set_defaults(handler=_handle)


def _handle(ns: argparse.Namespace) -> int:
    if ns.config:
        raise CachelintError("init writes the config itself; drop --config")
    return init(Path.cwd(), dotnet=ns.dotnet, force=ns.force, out=sys.stdout)


def init(start: Path, *, dotnet: bool | None, force: bool, out: TextIO) -> int:
    """Set the repository at `start` up; print what was done and the next three commands."""
    from cachelint.gitutil import repo_root

    repo = repo_root(start)
    if start.resolve() != repo.resolve():
        raise CachelintError(
            f"{start}: not the repository's root; run `cachelint init` in {repo}, where it "
            "writes the config and the workflow"
        )
    for name in (".gitattributes", ".gitignore"):
        read_existing(repo, name)  # the git commands below read them: a FIFO would hang them
    is_dotnet = _detect_dotnet(repo) if dotnet is None else dotnet
    report = Report()
    source = _installed_from()
    example = not is_dotnet and _wants_example(repo)
    if is_dotnet:
        _write_config(repo, _dotnet_config(_meai_root(repo) or CACHE), report, force=force)
    else:
        _write_config(repo, _python_config(repo, example), report, force=force)
    config = _load(repo)
    _ensure_attributes(repo, config.cache, report)
    _ensure_ignored(repo, config.results, report)
    install = None if is_dotnet else ensure_pin(repo, report)
    if example and _write_example(repo, report, force=force):
        _record_example(repo, report)
    _ensure_precommit(repo, source, report)
    workflow = _workflow(repo, source, install, dotnet=is_dotnet)
    write_whole(repo, WORKFLOW, workflow, report, force=force)
    if is_dotnet:
        report.advice += _dotnet_advice(repo, config.cache[0])
    if source.url is None:
        report.advice.append(
            f"the workflow installs {source.requirement} from the package index, which does not "
            "serve cachelint: this cachelint was not installed from a git URL, so init cannot "
            "name its repository; edit the Install step to `pip install "
            '"cachelint @ git+https://<host>/<org>/cachelint@<commit or tag>"`'
        )
    _print(out, report, _next_steps(repo, config, report, dotnet=is_dotnet))
    return 0


# ---- what the repository is ---------------------------------------------------------------------


def _tracked(repo: Path) -> list[str]:
    from cachelint.gitutil import run_git, split_z

    listed = run_git(["ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=repo)
    return split_z(listed.out)


def _detect_dotnet(repo: Path) -> bool:
    """A .NET repository: project files or central package management, and no pyproject.toml."""
    if (repo / "pyproject.toml").is_file():
        return False
    return any(
        p.lower().endswith((".csproj", ".fsproj", "directory.packages.props"))
        for p in _tracked(repo)
    )


_MEAI_ENTRY = re.compile(r"^(?:(.+)/)?cache/[^/]+/[^/]+/[0-9A-F]{96}/entry\.json$")


def _meai_root(repo: Path) -> str | None:
    """The storage root of a MEAI disk cache the repository already holds, if any."""
    for path in _tracked(repo):
        found = _MEAI_ENTRY.match(path)
        if found:
            return found.group(1) or "."
    return None


def _scenarios(repo: Path) -> list[str]:
    root = repo / DATASETS
    if not root.is_dir():
        return []
    return sorted(p.relative_to(root).as_posix() for p in root.glob("*/*/*.json"))


def _wants_example(repo: Path) -> bool:
    """No datasets yet (or only init's own example): write and record the example."""
    return set(_scenarios(repo)) <= {f"{EXAMPLE}.json"}


def _installed_from() -> Source:
    from importlib import metadata

    try:
        text = metadata.distribution("cachelint").read_text("direct_url.json")
        data = json.loads(text or "null")
    except (metadata.PackageNotFoundError, ValueError):
        return Source()
    return source_from_direct_url(data)


def source_from_direct_url(data: object) -> Source:
    """PEP 610: `{"url": ..., "vcs_info": {"vcs": "git", "commit_id": ...}}` for a git install.
    Credentials in the URL are never copied into a committed file."""
    from cachelint.masks import redact_url

    if not isinstance(data, dict) or not isinstance(data.get("vcs_info"), dict):
        return Source()
    vcs, url = data["vcs_info"], data.get("url")
    commit = vcs.get("commit_id")
    if vcs.get("vcs") != "git" or not isinstance(url, str) or not isinstance(commit, str):
        return Source()
    if redact_url(url) != url or not re.fullmatch(r"[0-9a-f]{40}", commit):
        return Source()
    requested = vcs.get("requested_revision")
    return Source(url, commit, requested if isinstance(requested, str) else None)


def _load(repo: Path) -> Any:
    from cachelint.config import load

    return load(repo)


# ---- config, attributes, ignore ----------------------------------------------------------------

_TTL = "# A committed cache must outlive every branch that replays it: ten years.\n"


def _python_config(repo: Path, example: bool) -> tuple[str, str]:
    """(table header prefix, body) of the config: `[tool.cachelint]` or cachelint.toml's top."""
    prefix = "tool.cachelint." if (repo / "pyproject.toml").is_file() else ""
    watch = '["prompts/**"]' if example or (repo / "prompts").is_dir() else "[]"
    body = (
        f'cache = "{CACHE}"\ndatasets = "{DATASETS}"\nresults = "{RESULTS}"\n{_TTL}'
        "ttl-days = 3650\n"
        "# Prompt and model files: committing a change to one needs a green `cachelint run`.\n"
        f"watch = {watch}\n\n"
    )
    if example:
        body += (
            "# The example's target (eval_target.py), recorded from cachelint's scripted fake\n"
            "# provider. To record your agent against a real model, set url, provider, model\n"
            "# and api-key-env, then run `cachelint run --refresh-cache`.\n"
            f'[{prefix}target]\ntype = "python"\nfunction = "eval_target:answer"\n'
            'url = "http://127.0.0.1:8765/v1"\nprovider = "cachelint-fake"\n'
            'model = "scripted-v1"\napi-key-env = "CACHELINT_FAKE_API_KEY"\n'
        )
    else:
        body += (
            "# What `cachelint run --refresh-cache` records from (docs/datasets.md#targets).\n"
            f'[{prefix}target]\ntype = "openai-compatible"\nurl = "https://api.openai.com/v1"\n'
            'provider = "openai"\nmodel = "gpt-4o-mini"\napi-key-env = "OPENAI_API_KEY"\n'
        )
    return prefix, body


def _dotnet_config(cache: str) -> tuple[str, str]:
    return "", (
        "# Microsoft.Extensions.AI.Evaluation's disk cache, committed (docs/dotnet.md). `cache`\n"
        "# is MEAI's storage root relative to the repository: build it from the repository's\n"
        "# root in the tests, never from the test's working directory.\n"
        f'cache = "{cache}"\nlayout = "meai"\n'
        "# MEAI names entries by their whole 96-character key: accepted while the worst path\n"
        "# fits max-path (160).\nkey-prefix = 96\n"
        f'results = "{RESULTS}"\n'
    )


def _write_config(repo: Path, config: tuple[str, str], report: Report, *, force: bool) -> None:
    prefix, body = config
    header = "# cachelint's settings, written by `cachelint init` (README: Configuration).\n"
    if not prefix:
        pyproject = repo / "pyproject.toml"
        if pyproject.is_file() and _has_table(pyproject):
            report.did("kept", "pyproject.toml", "[tool.cachelint] is the config already")
            return
        write_whole(repo, "cachelint.toml", header + body, report, force=force)
        return
    path = repo / "pyproject.toml"
    text = read_existing(repo, "pyproject.toml") or ""
    block = f"{header}[tool.cachelint]\n{body}"
    if block in text:
        report.did("unchanged", "pyproject.toml", "[tool.cachelint]")
    elif (repo / "cachelint.toml").is_file() or _has_table(path):
        where = "cachelint.toml" if (repo / "cachelint.toml").is_file() else "pyproject.toml"
        report.did("kept", where, "the config exists; init leaves it as it is")
    else:
        append(repo, "pyproject.toml", block, report, "[tool.cachelint]")


def _has_table(pyproject: Path) -> bool:
    tool = read_toml(pyproject).get("tool")
    return isinstance(tool, dict) and "cachelint" in tool


def _ensure_attributes(repo: Path, roots: tuple[str, ...], report: Report) -> None:
    from cachelint.gitutil import run_git

    missing = []
    for root in roots:
        probe = f"{root}/cache/x/entry.json".removeprefix("./")
        attr = run_git(["check-attr", "text", "--", probe], cwd=repo).out.decode()
        if not attr.rstrip().endswith(": unset"):
            missing.append(f"{root}/** -text".removeprefix("./"))
    if not missing:
        report.did("unchanged", ".gitattributes", "the cache is -text already")
        return
    comment = "# The committed LLM response cache round-trips byte for byte: no EOL conversion.\n"
    append(repo, ".gitattributes", comment + "\n".join(missing) + "\n", report, missing[0])


def _ensure_ignored(repo: Path, results: str, report: Report) -> None:
    from cachelint.gitutil import run_git

    probe = run_git(["check-ignore", "-q", "--", f"{results}/x"], cwd=repo, ok_codes=(0, 1))
    if probe.rc == 0:
        report.did("unchanged", ".gitignore", f"{results}/ is ignored already")
        return
    block = f"# cachelint run's results (reports, JUnit, HTML): never committed.\n/{results}/\n"
    append(repo, ".gitignore", block, report, f"/{results}/")


# ---- the example --------------------------------------------------------------------------------


def _write_example(repo: Path, report: Report, *, force: bool) -> bool:
    """The example's prompt, dataset and target; True when all three are init's own."""
    files = {
        EXAMPLE_PROMPT: init_text.EXAMPLE_PROMPT_TEXT,
        EXAMPLE_DATASET: init_text.dataset_text(init_text.EXAMPLE_SCENARIO),
        EXAMPLE_TARGET: init_text.EXAMPLE_TARGET_TEXT,
    }
    return all([write_whole(repo, rel, text, report, force=force) for rel, text in files.items()])


def _record_example(repo: Path, report: Report) -> None:
    """Record the example through the scripted fake provider (127.0.0.1, in this process), unless
    its cache entries are there already."""
    from dataclasses import replace

    from cachelint.devtools.fake_provider import running
    from cachelint.devtools.fake_script import parse_script
    from cachelint.runner.options import RunOptions
    from cachelint.runner.pipeline import run
    from cachelint.runner.wiring import upstream_transport

    config = _load(repo)
    if any((repo / config.cache[0] / "cache" / EXAMPLE).glob("*/entry.json")):
        report.did("unchanged", config.cache[0], f"{EXAMPLE} is recorded")
        return
    try:
        import openai  # noqa: F401  (the example's target is written against it)
    except ImportError:
        report.advice.append(
            "the example's target needs the openai SDK, which is not installed here: "
            "`pip install openai`, then run `cachelint init` again to record the example"
        )
        return
    log = io.StringIO()
    with running(parse_script(init_text.EXAMPLE_SCRIPT)) as fake:
        options = RunOptions(
            refresh=True,
            scenarios=(EXAMPLE,),
            execution="cachelint-init",
            transport_factory=lambda target: upstream_transport(
                repo, replace(target, url=fake.url)
            ),
        )
        rc = run(repo, options, out=log, err=log)
    if rc != 0:
        why = [line.strip() for line in log.getvalue().splitlines() if line.startswith("    ")]
        raise CachelintError(
            f"recording the example {EXAMPLE} failed (exit {rc}): {'; '.join(why[:3])}; fix "
            f"it, or remove {EXAMPLE_DATASET} and rerun `cachelint init`"
        )
    report.did("recorded", config.cache[0], f"{EXAMPLE}, from the scripted fake provider")
    report.touched.append(config.cache[0])


# ---- hooks and CI -------------------------------------------------------------------------------


def _ensure_precommit(repo: Path, source: Source, report: Report) -> None:
    block = init_text.precommit_block(source.url, source.commit, source.requested)
    path = repo / PRE_COMMIT
    if not path.is_file():
        write_whole(repo, PRE_COMMIT, "repos:\n" + block, report, force=False)
        return
    text = read_existing(repo, PRE_COMMIT) or ""
    if "id: cachelint-check" in text:
        report.did("unchanged", PRE_COMMIT, "cachelint's hooks are there")
        return
    # Appending is right only when `repos:` is the last top-level key and its items sit at the
    # indentation the block uses; anything else is said, never guessed.
    keys = re.findall(r"^([A-Za-z_]+):", text, re.MULTILINE)
    items = re.findall(r"^( *)- repo:", text, re.MULTILINE)
    if keys and keys[-1] == "repos" and set(items) <= {"  "}:
        append(repo, PRE_COMMIT, block, report, "cachelint-check, cachelint-watch")
        return
    report.did("kept", PRE_COMMIT, "its layout is not one init edits (add the hooks by hand)")
    report.advice.append(f"{PRE_COMMIT}: add under `repos:`\n{block}")


def _branch(repo: Path) -> str:
    from cachelint.gitutil import run_git

    head = run_git(["symbolic-ref", "--short", "-q", "HEAD"], cwd=repo, ok_codes=(0, 1))
    name = head.out.decode("utf-8", "replace").strip()
    return name if re.fullmatch(r"[\w./-]+", name) else "main"


def _workflow(repo: Path, source: Source, install: Install | None, *, dotnet: bool) -> str:
    lines = ["python -m pip install --upgrade pip", f"python -m pip install {_quote(source)}"]
    if install is not None:
        lines += install.lines
    return init_text.workflow_text(branch=_branch(repo), install=lines, dotnet=dotnet)


def _quote(source: Source) -> str:
    return shell_command(source.requirement)


def _dotnet_advice(repo: Path, cache: str) -> list[str]:
    advice = [
        f"MEAI resolves a relative storage path against the test's bin/ directory: build it "
        f'from the repository\'s root, Path.Combine(repoRoot, "{cache}"), found by walking up '
        "from AppContext.BaseDirectory to the directory holding .git, with "
        "timeToLiveForCacheEntries: TimeSpan.FromDays(3650), and give DiskBasedResultStore "
        f'Path.Combine(repoRoot, "{RESULTS}") (docs/dotnet.md, sections 3 and 4)'
    ]
    files = [p for p in _tracked(repo) if p.lower().endswith((".props", ".csproj", ".fsproj"))]
    locked = any(
        "<restorepackageswithlockfile>true" in (read_existing(repo, p) or "").lower()
        for p in files
        if (repo / p).is_file()
    )
    if not locked:
        advice.append(
            "the cache keys depend on Microsoft.Extensions.AI's transitive packages, which only "
            "packages.lock.json pins: add <RestorePackagesWithLockFile>true"
            "</RestorePackagesWithLockFile> to a PropertyGroup of Directory.Build.props, run "
            "`dotnet restore`, commit every packages.lock.json, and restore with --locked-mode "
            "in CI"
        )
    return advice


# ---- what is left to do -------------------------------------------------------------------------


def _next_steps(repo: Path, config: Any, report: Report, *, dotnet: bool) -> list[str]:
    """The steps still to take, in cachelint's one order: record, stamp, replay, commit."""
    root = repo / config.cache[0]
    recorded = (root / "cache").is_dir() and any((root / "cache").iterdir())
    steps = []
    if not recorded:
        steps.append("dotnet test" if dotnet else "cachelint run --refresh-cache")
    if not recorded or not (root / config.stamp).is_file():
        steps.append("cachelint stamp")
    steps.append("cachelint guard -- dotnet test" if dotnet else "cachelint run")
    paths = dict.fromkeys([*report.touched, *config.cache])
    if not dotnet:
        paths[config.green_record] = None
    steps.append(shell_command("git", "add", "--", *paths))
    return steps


def _print(out: TextIO, report: Report, steps: list[str]) -> None:
    for line in report.lines:
        out.write(sanitize(line) + "\n")
    for advice in report.advice:
        first, *rest = advice.split("\n")
        out.write(sanitize(f"note: {first}") + "\n")
        out.write("".join(f"  {line}\n" for line in rest if line))
    out.write("\nNext:\n")
    for number, step in enumerate(steps[:3], 1):
        out.write(sanitize(f"  {number}. {step}") + "\n")
    then = f"{steps[3]}, then commit" if len(steps) > 3 else "commit"
    out.write(
        sanitize(f"Then {then} (run `pre-commit install` once per clone: the hooks check it).")
        + "\n"
    )
