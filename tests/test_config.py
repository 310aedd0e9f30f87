"""config.load: where settings come from, and one clear line for every mistake a person can make."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from cachelint.config import DEFAULT_STAMP, Config, Layout, TargetConfig, load
from cachelint.errors import ConfigError

from .conftest import commit_all, run_cachelint


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _own(repo: Path, text: str) -> Config:
    _write(repo / "cachelint.toml", text)
    return load(repo)


def _error(repo: Path, text: str, *, file: str = "cachelint.toml") -> str:
    _write(repo / file, text)
    with pytest.raises(ConfigError) as info:
        load(repo)
    message = str(info.value)
    assert "\n" not in message, "a config error is one line"
    return message


# ---- where the settings come from ---------------------------------------------------------------


def test_defaults_without_any_config(tmp_path: Path) -> None:
    config = load(tmp_path)
    assert config == Config(repo=tmp_path, source="defaults")
    assert config.cache == ("eval-cache",)
    assert config.layout is Layout.AUTO
    assert config.max_path == 160
    assert config.ttl_days == 3650 and config.min_ttl_days == 365
    assert config.stamp == DEFAULT_STAMP
    assert config.target == TargetConfig()
    assert config.cache_roots() == [tmp_path / "eval-cache"]
    assert config.stamp_path("eval-cache") == f"eval-cache/{DEFAULT_STAMP}"


def test_pyproject_without_a_cachelint_table_gives_defaults(tmp_path: Path) -> None:
    _write(tmp_path / "pyproject.toml", '[project]\nname = "x"\n[tool.ruff]\nline-length = 99\n')
    assert load(tmp_path).source == "defaults"


def test_pyproject_tool_table(tmp_path: Path) -> None:
    _write(
        tmp_path / "pyproject.toml",
        '[project]\nname = "x"\n\n[tool.cachelint]\ncache = "evals/cache"\nmax-path = 150\n'
        'layout = "meai"\nttl-days = 400\n\n[tool.cachelint.target]\nmodel = "m1"\ntimeout = 5\n',
    )
    config = load(tmp_path)
    assert config.source == "pyproject.toml [tool.cachelint]"
    assert config.cache == ("evals/cache",)
    assert config.max_path == 150
    assert config.layout is Layout.MEAI
    assert config.ttl_days == 400
    assert config.target.model == "m1"
    assert config.target.timeout == 5.0 and isinstance(config.target.timeout, float)
    assert config.target.url == TargetConfig().url  # untouched keys keep their defaults


def test_cachelint_toml_beside_a_pyproject_table_is_an_error_naming_both(tmp_path: Path) -> None:
    # Issue 37: one silently replaced the other, so a reviewer reading pyproject.toml saw
    # settings that were never applied.
    _write(tmp_path / "pyproject.toml", '[tool.cachelint]\ncache = "from-pyproject"\n')
    with pytest.raises(ConfigError, match=r"cachelint.toml and pyproject.toml \[tool.cachelint\]"):
        _own(tmp_path, 'cache = "from-own"\n')


def test_cachelint_toml_beside_a_pyproject_without_the_table_is_read(tmp_path: Path) -> None:
    _write(tmp_path / "pyproject.toml", '[project]\nname = "x"\n')
    config = _own(tmp_path, 'cache = "from-own"\n')
    assert config.source == "cachelint.toml"
    assert config.cache == ("from-own",)


def test_explicit_path_wins_over_both(tmp_path: Path) -> None:
    _write(tmp_path / "pyproject.toml", '[tool.cachelint]\ncache = "from-pyproject"\n')
    _write(tmp_path / "cachelint.toml", 'cache = "from-own"\n')
    explicit = _write(tmp_path / "ci" / "strict.toml", 'cache = "from-explicit"\nmax-path = 120\n')
    config = load(tmp_path, explicit)
    assert config.source == str(explicit)
    assert (config.cache, config.max_path) == (("from-explicit",), 120)


def test_explicit_pyproject_reads_only_its_tool_table(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "sub" / "pyproject.toml",
        '[project]\nname = "x"\n[build-system]\nrequires = []\n[tool.cachelint]\ncache = "c"\n',
    )
    config = load(tmp_path, path)
    assert config.cache == ("c",)
    assert config.source == f"{path} [tool.cachelint]"


def test_explicit_pyproject_without_table_is_an_error(tmp_path: Path) -> None:
    path = _write(tmp_path / "pyproject.toml", '[project]\nname = "x"\n')
    with pytest.raises(ConfigError, match=r"pyproject\.toml: no \[tool\.cachelint\] table"):
        load(tmp_path, path)


def test_explicit_path_that_does_not_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.toml: cannot read config: No such file"):
        load(tmp_path, tmp_path / "nope.toml")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('"eval-cache"', ("eval-cache",)),
        ('["a", "b/c"]', ("a", "b/c")),
        ('"./evals/cache/"', ("evals/cache",)),
        ('"evals\\\\cache"', ("evals/cache",)),  # a Windows-style separator in the file
    ],
)
def test_cache_as_string_or_list(tmp_path: Path, value: str, expected: tuple[str, ...]) -> None:
    config = _own(tmp_path, f"cache = {value}\n")
    assert config.cache == expected
    assert config.cache_roots() == [tmp_path / c for c in expected]


def test_every_list_key_accepts_a_single_string(tmp_path: Path) -> None:
    config = _own(
        tmp_path,
        'exclude = "**/*.tmp"\npackages = "Microsoft.Extensions.AI"\n'
        'pins = "Directory.Packages.props"\nwatch = "prompts/**"\n',
    )
    assert config.exclude == ("**/*.tmp",)
    assert config.packages == ("Microsoft.Extensions.AI",)
    assert config.pins == ("Directory.Packages.props",)
    assert config.watch == ("prompts/**",)


# ---- every mistake is one line naming file, key and what is allowed -----------------------------

ERRORS = [
    pytest.param(
        "colour = 1\n",
        [
            "cachelint.toml",
            "unknown key 'colour'",
            "allowed keys: agents, allow-hosts, cache, compare, datasets,",
        ],
        id="unknown-key",
    ),
    pytest.param(
        'max-path = "160"\n',
        ["cachelint.toml", "'max-path'", "expected an integer from 20 to 259"],
        id="wrong-type",
    ),
    pytest.param(
        "max-path = true\n",
        ["'max-path' = True", "expected an integer from 20 to 259"],
        id="bool-is-not-int",
    ),
    pytest.param(
        'layout = "dotnet"\n',
        ["'layout' = 'dotnet'", "expected one of 'auto', 'cachelint', 'meai'"],
        id="bad-layout",
    ),
    pytest.param("max-path = 300\n", ["'max-path' = 300", "at most 259"], id="max-path-high"),
    pytest.param("max-path = 10\n", ["'max-path' = 10", "at least 20"], id="max-path-low"),
    pytest.param(
        "ttl-days = 14\n",
        ["'ttl-days' = 14", "at least 365", "outlive the release cycle", "14-day default"],
        id="ttl-too-short",
    ),
    pytest.param(
        "min-ttl-days = 30\n",
        ["'min-ttl-days' = 30", "at least 365", "expire entries in CI"],
        id="min-ttl-too-short",
    ),
    pytest.param("key-prefix = 4\n", ["'key-prefix' = 4", "at least 8"], id="key-prefix"),
    pytest.param(
        "cache = 5\n", ["'cache' = 5", "expected a string or a list of strings"], id="cache-type"
    ),
    pytest.param("cache = []\n", ["'cache' = []", "at least one entry"], id="cache-empty"),
    pytest.param(
        'cache = ["ok", 3]\n', ["'cache'", "expected a non-empty string"], id="cache-item-type"
    ),
    pytest.param(
        'cache = "/abs/cache"\n',
        ["'cache' = '/abs/cache'", "a relative path inside the repository"],
        id="cache-absolute",
    ),
    pytest.param('cache = "../elsewhere"\n', ["without '..'"], id="cache-parent"),
    pytest.param('cache = "C:/cache"\n', ["a relative path"], id="cache-drive"),
    pytest.param(
        'results = "eval-cache/results"\n',
        ["'results' = 'eval-cache/results'", "inside cache root 'eval-cache'", "move it outside"],
        id="results-in-cache",
    ),
    pytest.param(
        'results = "eval-cache"\n', ["inside cache root 'eval-cache'"], id="results-is-cache"
    ),
    pytest.param(
        'green-record = "eval-cache/green.json"\n',
        ["'green-record'", "inside cache root 'eval-cache'"],
        id="green-record-in-cache",
    ),
    pytest.param(
        'cache = "out/cache"\nresults = "out"\n',
        ["'cache' = 'out/cache'", "inside results directory 'out'"],
        id="cache-in-results",
    ),
    pytest.param(
        'watch = ["prompts/**", "eval-cache/**"]\n',
        ["'watch' matches 'eval-cache/.eval-cache-stamp.json'", "prompt and model files only"],
        id="watch-matches-cache",
    ),
    pytest.param('watch = "*.json"\n', ["'watch' matches", "stamp.json"], id="watch-matches-stamp"),
    pytest.param(
        'watch = "*.data"\n',
        ["'watch' matches 'eval-cache/cache/x/contents.data'"],
        id="watch-matches-contents",
    ),
    pytest.param(
        'stamp = "meta/pin.json"\nwatch = "**/meta/*.json"\n',
        ["'watch' matches 'eval-cache/meta/pin.json'"],
        id="watch-matches-moved-stamp",
    ),
    pytest.param('watch = [""]\n', ["'watch'", "non-empty string"], id="watch-empty-glob"),
    pytest.param(
        "cache = [\n",
        ["cachelint.toml: invalid TOML:", "at end of document", "fix the syntax"],
        id="invalid-toml",
    ),
    pytest.param('cache = "a"\ncache = "b"\n', ["invalid TOML", "line 2"], id="duplicate-key"),
    pytest.param(
        '[target]\nmodle = "x"\n',
        ["cachelint.toml [target]: unknown key 'modle'", "allowed keys: api-key-env,"],
        id="target-unknown-key",
    ),
    pytest.param(
        '[target]\ntimeout = "fast"\n',
        ["[target]: key 'timeout' = 'fast'", "a positive number of seconds"],
        id="target-bad-type",
    ),
    pytest.param(
        "[target]\ntimeout = 0\n", ["'timeout' = 0", "positive number"], id="target-zero-timeout"
    ),
    pytest.param(
        "[target]\nmax-retries = 99\n", ["'max-retries' = 99", "at most 20"], id="target-retries"
    ),
    pytest.param(
        '[target]\ntype = "grpc"\n',
        ["[target]: key 'type' = 'grpc'", "'openai-compatible', 'python'"],
        id="target-bad-kind",
    ),
    pytest.param(
        '[target]\ntype = "python"\n',
        ["[target]: type 'python' needs function = \"module:function\""],
        id="python-target-without-function",
    ),
    pytest.param(
        '[target]\ntype = "python"\nfunction = "mymodule.call"\n',
        ["needs function = \"module:function\", got 'mymodule.call'"],
        id="python-target-bad-function",
    ),
    pytest.param('target = "openai"\n', ["'target' = 'openai'", "expected a table"], id="target"),
    pytest.param(
        '[target]\nenv-file = "/home/me/.env"\n', ["'env-file'", "relative path"], id="env-file"
    ),
]


@pytest.mark.parametrize(("text", "expected"), ERRORS)
def test_config_errors(tmp_path: Path, text: str, expected: list[str]) -> None:
    message = _error(tmp_path, text)
    for part in expected:
        assert part in message, f"{part!r} not in {message!r}"


@pytest.mark.parametrize(("text", "expected"), ERRORS)
def test_config_errors_in_pyproject_name_the_table(
    tmp_path: Path, text: str, expected: list[str]
) -> None:
    # The same mistakes under [tool.cachelint]: TOML tables nest one level deeper there.
    body = text.replace("[target]", "[tool.cachelint.target]")
    if not body.startswith("[tool.cachelint.target]"):
        body = "[tool.cachelint]\n" + body
    message = _error(tmp_path, body, file="pyproject.toml")
    assert "pyproject.toml" in message
    for part in expected:
        part = part.replace("cachelint.toml [target]", "pyproject.toml [tool.cachelint] [target]")
        part = part.replace("cachelint.toml", "pyproject.toml")
        if "line" in part:
            continue  # line numbers shift by the added table header
        assert part in message, f"{part!r} not in {message!r}"


def test_config_that_is_not_utf8(tmp_path: Path) -> None:
    (tmp_path / "cachelint.toml").write_bytes(b'cache = "caf\xe9"\n')
    with pytest.raises(ConfigError, match=r"cachelint\.toml: invalid TOML: not UTF-8"):
        load(tmp_path)


def test_tool_cachelint_that_is_not_a_table(tmp_path: Path) -> None:
    message = _error(tmp_path, '[tool]\ncachelint = "yes"\n', file="pyproject.toml")
    assert message == "pyproject.toml: [tool.cachelint] must be a table"


def test_a_valid_full_config(tmp_path: Path) -> None:
    config = _own(
        tmp_path,
        """
cache = ["eval-cache", "legacy/cache"]
layout = "cachelint"
max-path = 200
key-prefix = 16
exclude = ["**/README.md"]
stamp = ".stamp.json"
packages = ["Microsoft.Extensions.AI.Evaluation"]
pins = ["Directory.Packages.props"]
min-ttl-days = 365
expiry-warning-days = 60
ttl-days = 730
datasets = "eval-datasets"
results = "artifacts/eval-results"
watch = ["prompts/**", "models/*.yaml"]
green-record = "artifacts/green.json"

[target]
type = "python"
function = "evals.target:call"
params = { temperature = 0 }
max-retries = 0
""",
    )
    assert config.cache == ("eval-cache", "legacy/cache")
    assert config.layout is Layout.CACHELINT
    assert config.watch == ("prompts/**", "models/*.yaml")
    assert config.target.type == "python"
    assert config.target.function == "evals.target:call"
    assert dict(config.target.params) == {"temperature": 0}
    assert config.target.max_retries == 0


# ---- through the command line -------------------------------------------------------------------


@pytest.mark.skipif(
    importlib.util.find_spec("cachelint.commands.check") is None,
    reason="the check command is not written yet",
)
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("colour = 1\n", "cachelint.toml: unknown key 'colour'"),
        ("ttl-days = 14\n", "cachelint.toml: key 'ttl-days' = 14: expected an integer of at least"),
        ("cache = [\n", "cachelint.toml: invalid TOML:"),
    ],
)
def test_check_with_a_bad_config_exits_2_with_one_line(
    git_repo: Path, text: str, expected: str
) -> None:
    (git_repo / "eval-cache").mkdir()
    _write(git_repo / "eval-cache" / "keep.txt", "x\n")
    _write(git_repo / "cachelint.toml", text)
    commit_all(git_repo)
    proc = run_cachelint(git_repo, "check")
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("cachelint: error: ")
    assert expected in lines[0]
    assert "Traceback" not in proc.stderr


# ---- bounded parsing (issue 37) -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("[target]\ntimeout = nan\n", "target.timeout"),
        ("[target]\ntimeout = inf\n", "target.timeout"),
        ("[targets.judge]\ntimeout = -inf\n", "targets.judge.timeout"),
        ("[reports]\nbudget = nan\n", "reports.budget"),
        ("[prices.gpt]\ninput = inf\n", "prices.gpt.input"),
    ],
)
def test_nan_and_inf_anywhere_are_config_errors_naming_the_key(
    tmp_path: Path, text: str, key: str
) -> None:
    message = _error(tmp_path, text)
    assert f"key {key!r}" in message and "finite" in message


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('datasets = "eval\\u0000datasets"\n', "NUL"),
        (f'results = "{"r" * 300}"\n', "at most 255 bytes"),
        (f'cache = ["eval-cache/{"é" * 200}"]\n', "at most 255 bytes"),
        (f'stamp = "{"a/" * 600}s"\n', "at most 1024 characters"),
    ],
)
def test_nul_and_over_long_paths_are_config_errors_naming_the_key(
    tmp_path: Path, text: str, why: str
) -> None:
    message = _error(tmp_path, text)
    assert why in message and text.split(" =")[0] in message


def test_a_backtracking_glob_matches_a_long_name_fast(tmp_path: Path) -> None:
    import time

    from cachelint.meai import make_skip

    pattern = "*" + "a*" * 30 + "b"
    config = _own(tmp_path, f'exclude = ["{pattern}"]\nwatch = ["{pattern}"]\n')
    skip = make_skip((), config.exclude)
    assert skip is not None
    started = time.monotonic()
    assert not skip("eval-cache/" + "a" * 4000)
    assert time.monotonic() - started < 1  # backtracking took minutes


def test_an_invalid_secret_allow_glob_is_a_config_error(tmp_path: Path) -> None:
    message = _error(tmp_path, 'secret-allow = ["**/[z-a]"]\n')
    assert "key 'secret-allow'" in message and "glob" in message
    message = _error(tmp_path, 'secret-allow = ["blake3:nothex"]\n')
    assert "fingerprint" in message


def test_an_invalid_secret_allow_glob_exits_2_from_check(git_repo: Path) -> None:
    _write(git_repo / "cachelint.toml", 'secret-allow = ["\\\\"]\n')
    (git_repo / "eval-cache").mkdir()
    proc = run_cachelint(git_repo, "check")
    assert proc.returncode == 2, proc.stderr
    assert "secret-allow" in proc.stderr and "Traceback" not in proc.stderr


def test_a_symlinked_pyproject_is_a_config_error_not_read(tmp_path: Path) -> None:
    outside = _write(tmp_path / "outside.toml", '[tool.cachelint]\ncache = "elsewhere"\n')
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "pyproject.toml").symlink_to(outside)
    with pytest.raises(ConfigError, match="pyproject.toml: is a symbolic link"):
        load(repo)


def test_a_fifo_config_is_a_config_error_not_a_hang(tmp_path: Path) -> None:
    import os

    os.mkfifo(tmp_path / "cachelint.toml")
    with pytest.raises(ConfigError, match="FIFO"):
        load(tmp_path)
