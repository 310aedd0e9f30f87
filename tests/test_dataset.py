"""Dataset loading from real trees: identities, system prompts, line endings and validation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cachelint.canonical import cache_key
from cachelint.errors import CachelintError
from cachelint.runner.dataset import load_scenarios
from cachelint.runner.identities import validate_identity
from cachelint.runner.request import build_request

ROOT = "eval-datasets"
CHECK = [{"type": "contains", "value": "refund"}]


def write(repo: Path, relative: str, data: Any) -> Path:
    path = repo / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def scenario(**fields: Any) -> dict[str, Any]:
    return {"input": "I want a refund", "assert": CHECK, **fields}


def load_one(repo: Path, data: Any, identity: str = "support/acme/refund") -> Any:
    write(repo, f"{ROOT}/{identity}.json", data)
    return load_scenarios(repo, ROOT)


def key_of(s: Any) -> str:
    return cache_key(
        build_request(
            provider="openai",
            model="m",
            scenario=s.identity,
            messages=s.messages,
            options=s.options,
            tools=s.tools,
        )
    )


def test_loads_a_tree_sorted_by_identity(git_repo: Path) -> None:
    write(git_repo, "prompts/support.md", "You help customers.\n")
    write(
        git_repo,
        f"{ROOT}/support/globex/refund.json",
        {
            "messages": [
                {"role": "user", "content": "Refund?"},
                {"role": "assistant", "content": "Which order?"},
                {"role": "user", "content": "#42"},
            ],
            "system": "Be brief.",
            "options": {"temperature": 0, "max_tokens": 50},
            "tools": [
                {
                    "type": "function",
                    "function": {"name": "lookup_order", "parameters": {"type": "object"}},
                }
            ],
            "assert": [{"type": "tool-called", "name": "lookup_order"}],
            "judge": ["relevance", "coherence"],
            "trials": 3,
            "tags": ["smoke"],
            "description": "multi-turn",
        },
    )
    write(
        git_repo,
        f"{ROOT}/support/acme/refund.json",
        scenario(**{"system-file": "prompts/support.md"}),
    )
    write(git_repo, f"{ROOT}/billing/acme/invoice.json", scenario())
    found = load_scenarios(git_repo, ROOT)
    assert [s.identity for s in found] == [
        "billing/acme/invoice",
        "support/acme/refund",
        "support/globex/refund",
    ]
    acme, globex = found[1], found[2]
    assert (acme.agent, acme.tenant, acme.name) == ("support", "acme", "refund")
    assert acme.path == f"{ROOT}/support/acme/refund.json"
    assert acme.system_source == "prompts/support.md"
    assert acme.messages == (
        {"role": "system", "content": "You help customers.\n"},
        {"role": "user", "content": "I want a refund"},
    )
    assert acme.trials == 1 and acme.judges == () and acme.tags == () and acme.description is None
    assert globex.messages[0] == {"role": "system", "content": "Be brief."}
    assert [m["role"] for m in globex.messages] == ["system", "user", "assistant", "user"]
    assert globex.system_source is None
    assert globex.options == {"temperature": 0, "max_tokens": 50}
    assert globex.tools[0]["function"]["name"] == "lookup_order"
    assert globex.assertions == ({"type": "tool-called", "name": "lookup_order"},)
    assert globex.judges == ("relevance", "coherence")
    assert (globex.trials, globex.tags, globex.description) == (3, ("smoke",), "multi-turn")


def test_crlf_prompt_file_gives_the_linux_key(tmp_path: Path) -> None:
    lf, crlf = tmp_path / "lf", tmp_path / "crlf"
    write(lf, "prompts/p.md", b"Line one.\nLine two.\n")
    write(
        crlf, "prompts/p.md", b"\xef\xbb\xbfLine one.\r\nLine two.\r\n"
    )  # with a BOM, as on Windows
    data = scenario(**{"system-file": "prompts/p.md", "input": "Hi\r\nthere"})
    [a] = load_one(lf, data)
    [b] = load_one(crlf, data)
    assert b.messages[0]["content"] == "Line one.\nLine two.\n"
    assert b.messages[1]["content"] == "Hi\nthere"
    assert key_of(a) == key_of(b)


def test_same_scenario_name_in_two_tenants_gets_two_keys(tmp_path: Path) -> None:
    write(tmp_path, f"{ROOT}/support/acme/refund.json", scenario())
    write(tmp_path, f"{ROOT}/support/globex/refund.json", scenario())
    a, b = load_scenarios(tmp_path, ROOT)
    assert a.messages == b.messages
    assert key_of(a) != key_of(b)


def test_dotfiles_and_dot_directories_are_ignored(tmp_path: Path) -> None:
    write(tmp_path, f"{ROOT}/support/acme/refund.json", scenario())
    write(tmp_path, f"{ROOT}/.gitkeep", "")
    write(tmp_path, f"{ROOT}/support/acme/.draft.json", "{not json")
    write(tmp_path, f"{ROOT}/.hidden/acme/x.json", "{not json")
    write(tmp_path, f"{ROOT}/support/.wip/x.json", "{not json")
    assert [s.identity for s in load_scenarios(tmp_path, ROOT)] == ["support/acme/refund"]


@pytest.mark.parametrize("name", ["README.md", "support/acme/refund.yaml", "support/notes.txt"])
def test_a_file_that_is_not_a_scenario_is_an_error_not_skipped(tmp_path: Path, name: str) -> None:
    write(tmp_path, f"{ROOT}/support/acme/refund.json", scenario())
    write(tmp_path, f"{ROOT}/{name}", "x: 1")
    with pytest.raises(CachelintError) as err:
        load_scenarios(tmp_path, ROOT)
    message = str(err.value)
    assert message.startswith(f"{ROOT}/{name}: not a scenario")
    assert "convert it to JSON or move it out" in message


def test_missing_root_says_where_it_looked_and_how_to_configure(tmp_path: Path) -> None:
    with pytest.raises(CachelintError) as err:
        load_scenarios(tmp_path, "evals")
    message = str(err.value)
    assert "'evals'" in message and str(tmp_path / "evals") in message
    assert "datasets = " in message and "\n" not in message


def test_missing_system_file_names_file_field_and_path(tmp_path: Path) -> None:
    with pytest.raises(CachelintError) as err:
        load_one(tmp_path, scenario(**{"system-file": "prompts/nope.md"}))
    assert str(err.value).startswith(
        f"{ROOT}/support/acme/refund.json: field 'system-file': 'prompts/nope.md' not found"
    )


@pytest.mark.parametrize("value", ["../secret.md", "/etc/passwd", "C:/x.md", "a/../../x"])
def test_system_file_must_stay_in_the_repository(tmp_path: Path, value: str) -> None:
    with pytest.raises(CachelintError, match="field 'system-file': .* relative to the repository"):
        load_one(tmp_path, scenario(**{"system-file": value}))


@pytest.mark.parametrize(
    ("relative", "why"),
    [
        ("support/acme/aux.json", "reserved device name"),
        ("support/CON/refund.json", "reserved device name"),
        ("support/acme/com1.backup.json", "reserved device name"),
        ("lpt¹/acme/refund.json", "reserved device name"),
        ("support/a:b/refund.json", "contains ':', which Windows does not allow"),
        ("support/acme/q?x.json", "contains '?', which Windows does not allow"),
        ("support/trail./refund.json", "ends in a period or space"),
        ("support/trail /refund.json", "ends in a period or space"),
        ("support/acme/deep/refund.json", "has 4 levels, expected exactly 3"),
        ("support/refund.json", "has 2 levels, expected exactly 3"),
        ("refund.json", "has 1 level, expected exactly 3"),
    ],
)
def test_bad_identities_on_disk_are_rejected(tmp_path: Path, relative: str, why: str) -> None:
    write(tmp_path, f"{ROOT}/{relative}", scenario())
    with pytest.raises(CachelintError) as err:
        load_scenarios(tmp_path, ROOT)
    message = str(err.value)
    assert message.startswith(f"{ROOT}/{relative}: scenario identity")
    assert why in message


@pytest.mark.parametrize(
    ("identity", "why"),
    [
        ("support/../refund", "'..'"),
        ("../acme/refund", "'..'"),
        ("/support/acme/refund", "absolute"),
        ("C:/acme/refund", "absolute"),
        ("support\\acme\\refund", "backslash"),
        ("support//refund", "empty"),
        ("", "empty"),
        ("support/Nul/x", "reserved"),
        ("support/acme/CONOUT$", "reserved"),
    ],
)
def test_validate_identity_rejects(identity: str, why: str) -> None:
    with pytest.raises(CachelintError, match="^somewhere: scenario identity") as err:
        validate_identity(identity, "somewhere")
    assert why in str(err.value)


def test_validate_identity_accepts_ordinary_names() -> None:
    for identity in ("support/acme/refund", "a-b/c_d/e.f", "agent/tenant/console", "x/y/connect"):
        validate_identity(identity, "here")


def test_case_colliding_identities_are_rejected(tmp_path: Path) -> None:
    write(tmp_path, f"{ROOT}/support/Acme/refund.json", scenario())
    write(tmp_path, f"{ROOT}/support/acme/refund.json", scenario())
    with pytest.raises(CachelintError, match="collides with 'support/Acme/refund'"):
        load_scenarios(tmp_path, ROOT)


def test_unknown_field_is_an_error_with_a_suggestion(tmp_path: Path) -> None:
    data = {"input": "hi", "asert": CHECK}
    with pytest.raises(CachelintError) as err:
        load_one(tmp_path, data)
    assert str(err.value).startswith(
        f"{ROOT}/support/acme/refund.json: field 'asert': unknown field (did you mean 'assert'?)"
    )


@pytest.mark.parametrize(
    ("data", "field", "fragment"),
    [
        ({"assert": CHECK}, "messages", "exactly one of 'messages'"),
        (scenario(messages=[{"role": "user", "content": "x"}]), "messages", "exactly one of"),
        ({"messages": [], "assert": CHECK}, "messages", "is empty"),
        ({"messages": "hi", "assert": CHECK}, "messages", "expected a list"),
        ({"messages": [{"role": "boss", "content": "x"}]}, "messages[0].role", "expected one of"),
        ({"messages": [{"role": "user"}]}, "messages[0].content", "missing"),
        ({"messages": [{"role": "user", "content": "x", "contnet": 1}]}, "messages[0].contnet", ""),
        (
            {
                "messages": [{"role": "system", "content": "a"}, {"role": "user", "content": "b"}],
                "system": "c",
            },
            "system",
            "already a system message",
        ),
        ({"input": 3}, "input", "expected a string"),
        (scenario(system=["a"]), "system", "expected a string"),
        (scenario(system="a", **{"system-file": "p.md"}), "system-file", "not both"),
        (scenario(options=[1]), "options", "expected an object"),
        (scenario(options={"model": "x"}), "options.model", "target] model"),
        (scenario(options={"stream": True}), "options.stream", "not replayable"),
        (scenario(tools=[{"type": "web"}]), "tools[0].type", 'expected "function"'),
        (
            scenario(tools=[{"type": "function", "function": {"name": "has space"}}]),
            "tools[0].function.name",
            "1-64",
        ),
        (
            scenario(
                tools=[
                    {"type": "function", "function": {"name": "f"}},
                    {"type": "function", "function": {"name": "f"}},
                ]
            ),
            "tools[1].function.name",
            "duplicate",
        ),
        (
            scenario(tools=[{"type": "function", "function": {"name": "f", "params": {}}}]),
            "tools[0].function.params",
            "unknown function field",
        ),
        (scenario(judge=["vibes"]), "judge[0]", "unknown metric 'vibes'"),
        (scenario(judge="relevance"), "judge", "expected a list"),
        (scenario(trials=0), "trials", "from 1 to"),
        (scenario(trials="2"), "trials", "from 1 to"),
        (scenario(trials=True), "trials", "from 1 to"),
        (scenario(tags=["ok", 3]), "tags[1]", "non-empty string"),
        (scenario(description=5), "description", "expected a string"),
        (scenario(**{"assert": {"type": "contains"}}), "assert", "expected a list"),
    ],
)
def test_validation_errors_name_file_and_field(
    tmp_path: Path, data: dict[str, Any], field: str, fragment: str
) -> None:
    with pytest.raises(CachelintError) as err:
        load_one(tmp_path, data)
    message = str(err.value)
    assert message.startswith(f"{ROOT}/support/acme/refund.json: field {field!r}: "), message
    assert fragment in message
    assert "\n" not in message


def test_assertion_errors_name_file_and_position(tmp_path: Path) -> None:
    data = scenario(**{"assert": [CHECK[0], {"type": "regex", "pattern": "("}]})
    with pytest.raises(CachelintError) as err:
        load_one(tmp_path, data)
    assert str(err.value).startswith(
        f"{ROOT}/support/acme/refund.json: assert[1]: field 'pattern': invalid regular expression"
    )


def test_scenario_without_assertions_loads_and_is_failed_by_the_runner(tmp_path: Path) -> None:
    [s] = load_one(tmp_path, {"input": "hi"})
    assert s.assertions == ()


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        (b'{"input": "hi",}', "invalid JSON at line 1 column"),
        (b"[1, 2]", "a scenario must be a JSON object, got an array"),
        (b'{"input": "\xff"}', "not UTF-8"),
        (b'{"input": "hi", "options": {"temperature": NaN}}', "NaN is not a JSON value"),
    ],
)
def test_unreadable_files_are_one_line_errors(tmp_path: Path, raw: bytes, fragment: str) -> None:
    with pytest.raises(CachelintError) as err:
        load_one(tmp_path, raw)
    assert str(err.value).startswith(f"{ROOT}/support/acme/refund.json: ")
    assert fragment in str(err.value)


def test_assistant_tool_call_turn_may_have_null_content(tmp_path: Path) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    data = {
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "done"},
        ],
        "assert": CHECK,
    }
    [s] = load_one(tmp_path, data)
    assert s.messages[1]["tool_calls"] == [call]


def test_values_a_key_cannot_hold_are_rejected_at_load(tmp_path: Path) -> None:
    with pytest.raises(CachelintError) as err:
        load_one(tmp_path, scenario(options={"seed": 2**64}))
    assert str(err.value).startswith(
        f"{ROOT}/support/acme/refund.json: field 'options': cannot be part of a cache key"
    )


@pytest.mark.parametrize(
    ("field", "text"),
    [
        # A number too large for a double decodes to infinity, which no key can hold; beside a
        # null too (orjson, which the quick check encodes with, writes both as null).
        ("options", '"options": {"top_p": 1e400}'),
        ("options", '"options": {"stop": null, "top_p": -1e400}'),
        ("messages", '"messages": [{"role": "user", "content": [{"type": "x", "n": 1e999}]}]'),
        (
            "tools",
            '"tools": [{"type": "function", "function": {"name": "f", "parameters": '
            '{"maximum": 1e400}}}], "input": "hi"',
        ),
        # At and beyond 2**53 (RFC 8785's bound), under a key that is not ASCII.
        ("options", '"options": {"caf\u00e9": 9007199254740992}'),
    ],
)
def test_values_a_key_cannot_hold_are_named_by_field(tmp_path: Path, field: str, text: str) -> None:
    fields = text if '"messages"' in text or '"input"' in text else f'{text}, "input": "hi"'
    with pytest.raises(CachelintError) as err:
        load_one(tmp_path, f'{{{fields}, "assert": {json.dumps(CHECK)}}}')
    assert str(err.value).startswith(
        f"{ROOT}/support/acme/refund.json: field '{field}': cannot be part of a cache key"
    )


def test_the_largest_integer_a_key_holds_and_nulls_load(tmp_path: Path) -> None:
    options = {"seed": 2**53 - 1, "floor": -(2**53 - 1), "stop": None, "top_p": 0.5}
    [s] = load_one(tmp_path, scenario(options=options))
    assert s.options == options


def test_identity_is_nfc_whatever_the_file_system_lists(tmp_path: Path) -> None:
    nfd = "cafe\u0301"  # what HFS+ hands out for "café"
    write(tmp_path, f"{ROOT}/support/{nfd}/refund.json", scenario())
    [s] = load_scenarios(tmp_path, ROOT)
    assert s.identity == "support/caf\u00e9/refund" and s.tenant == "caf\u00e9"


def test_loading_keeps_no_directory_open(tmp_path: Path) -> None:
    """Each dataset directory is walked to once for all of its files and closed after them:
    a suite of many tenants never holds their directories open at once, nor after loading."""
    for tenant in ("acme", "globex", "initech"):
        for name in ("a", "b", "c"):
            write(tmp_path, f"{ROOT}/support/{tenant}/{name}.json", scenario())
    fds = Path("/proc/self/fd")
    if not fds.is_dir():
        pytest.skip("no /proc/self/fd to count open descriptors")
    before = len(list(fds.iterdir()))
    loaded = load_scenarios(tmp_path, ROOT)
    assert [s.identity for s in loaded][:4] == [
        "support/acme/a",
        "support/acme/b",
        "support/acme/c",
        "support/globex/a",
    ]
    assert len(list(fds.iterdir())) == before


def test_a_suite_holds_equal_options_and_assertions_once_and_keeps_their_types(
    tmp_path: Path,
) -> None:
    # Issue 44: 100,000 scenarios repeat the same options and checks; each is held once. Only
    # values equal with their types are merged: 0, false and 0.0 are different cache keys.
    temperatures: list[Any] = [0, 0, False, 0.0, -0.0]
    for n, temperature in enumerate(temperatures):
        write(tmp_path, f"{ROOT}/support/t{n}/refund.json", scenario(options={"t": temperature}))
    loaded = load_scenarios(tmp_path, ROOT)
    assert [s.options["t"] for s in loaded] == temperatures
    assert [type(s.options["t"]) for s in loaded] == [type(t) for t in temperatures]
    assert loaded[0].options is loaded[1].options
    assert len({id(s.options) for s in loaded}) == 4
    assert len({id(s.assertions[0]) for s in loaded}) == 1
    assert len({id(s.agent) for s in loaded}) == 1
    assert len({key_of(s) for s in loaded}) == len(loaded)


def test_a_suite_holds_the_keys_and_short_strings_of_distinct_assertions_once(
    tmp_path: Path,
) -> None:
    # Issue 44: each dataset file decodes its own "type", "value" and "contains"; a suite holds
    # one of each, and the long values (each scenario's own question) stay as they were.
    for n in range(3):
        check = [{"type": "contains", "value": f"refund number {n} " + "x" * 40}]
        write(tmp_path, f"{ROOT}/support/t{n}/q.json", scenario(**{"assert": check}))
    loaded = load_scenarios(tmp_path, ROOT)
    specs = [s.assertions[0] for s in loaded]
    assert specs == [
        {"type": "contains", "value": f"refund number {n} " + "x" * 40} for n in range(3)
    ]
    assert len({id(s) for s in specs}) == 3
    assert len({id(k) for spec in specs for k in spec}) == 2
    assert len({id(spec["type"]) for spec in specs}) == 1
    assert len({key_of(s) for s in loaded}) == 3


def test_a_suite_holds_each_system_prompt_message_once(tmp_path: Path) -> None:
    # Issue 44: 100,000 scenarios send a handful of system prompts; each message object is held
    # once, from a system file or a `system` field alike, and the keys stay each scenario's own.
    write(tmp_path, "prompts/support.md", "You help customers.\n")
    for n in range(3):
        write(
            tmp_path,
            f"{ROOT}/support/f{n}/q.json",
            scenario(**{"system-file": "prompts/support.md"}),
        )
        write(tmp_path, f"{ROOT}/support/s{n}/q.json", scenario(system="Be brief."))
    loaded = load_scenarios(tmp_path, ROOT)
    firsts = {s.identity.split("/")[1][0]: s.messages[0] for s in loaded}
    assert firsts == {
        "f": {"role": "system", "content": "You help customers.\n"},
        "s": {"role": "system", "content": "Be brief."},
    }
    assert len({id(s.messages[0]) for s in loaded}) == 2
    assert len({id(s.messages[1]) for s in loaded}) == len(loaded)  # the questions: their own
    assert len({key_of(s) for s in loaded}) == len(loaded)
