"""The canonical request and its key: what goes in, what never does, and how a miss is explained."""

from __future__ import annotations

import inspect
from types import MappingProxyType

import pytest

from cachelint.canonical import cache_key, canonical_bytes
from cachelint.runner.request import build_request, closeness, request_diff

SYSTEM = "You are a support agent.\nBe polite.\nBe brief.\nNever promise refunds."


def _request(**overrides: object) -> dict:
    args: dict = {
        "provider": "openai",
        "model": "gpt-4o-mini",
        "scenario": "support/acme/refund",
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "I want my money back."},
        ],
        "options": {"temperature": 0, "max_tokens": 200},
    }
    args.update(overrides)
    return build_request(**args)


GOLDEN = "ab162c58355ac6da89aabd36d1c94172bf41ad6b4a5e34b718f3d7104e0f91f6"


def test_golden_key() -> None:
    # If this fails, every committed cache in the world becomes a miss: bump store.FORMAT on purpose
    # and say so in the changelog, never update this hex casually.
    request = _request()
    assert canonical_bytes(request) == (
        b'{"format":1,"messages":[{"content":"You are a support agent.\\nBe polite.\\nBe brief.'
        b'\\nNever promise refunds.","role":"system"},{"content":"I want my money back.",'
        b'"role":"user"}],"model":"gpt-4o-mini","options":{"max_tokens":200,"temperature":0},'
        b'"provider":"openai","scenario":"support/acme/refund"}'
    )
    assert cache_key(request) == GOLDEN


def test_request_fields_exactly() -> None:
    assert set(_request()) == {"format", "provider", "model", "scenario", "messages", "options"}
    with_all = _request(tools=[{"type": "function", "function": {"name": "f"}}], trial=2)
    assert set(with_all) - set(_request()) == {"tools", "trial"}


def test_dict_order_does_not_change_the_key() -> None:
    a = _request(options={"temperature": 0, "max_tokens": 200, "seed": 7})
    b = _request(
        options={"seed": 7, "max_tokens": 200, "temperature": 0},
        messages=[
            {"content": SYSTEM, "role": "system"},
            {"content": "I want my money back.", "role": "user"},
        ],
    )
    assert cache_key(a) == cache_key(b)


def test_crlf_and_lf_content_give_one_key() -> None:
    crlf = _request(
        messages=[
            {"role": "system", "content": SYSTEM.replace("\n", "\r\n")},
            {"role": "user", "content": "I want my money back."},
        ]
    )
    cr = _request(
        messages=[
            {"role": "system", "content": SYSTEM.replace("\n", "\r")},
            {"role": "user", "content": "I want my money back."},
        ]
    )
    assert cache_key(crlf) == cache_key(cr) == cache_key(_request())


def test_trial_zero_is_the_single_trial_key_and_later_trials_rekey() -> None:
    keys = [cache_key(_request(trial=t)) for t in range(3)]
    assert keys[0] == cache_key(_request())
    assert "trial" not in _request(trial=0)
    assert len(set(keys)) == 3
    with pytest.raises(ValueError, match="trial"):
        _request(trial=-1)


def test_tenants_with_same_scenario_name_never_share_a_key() -> None:
    assert cache_key(_request(scenario="support/acme/refund")) != cache_key(
        _request(scenario="support/globex/refund")
    )


def test_unset_optional_fields_are_omitted() -> None:
    bare = _request(options=None)
    assert "options" not in bare and "tools" not in bare
    assert cache_key(bare) == cache_key(_request(options={}, tools=[]))
    # An option explicitly set to None is "not set", so a new config field cannot change old keys.
    assert cache_key(_request(options={"temperature": 0, "max_tokens": 200, "top_p": None})) == (
        cache_key(_request())
    )
    assert cache_key(_request(options={"temperature": 0.2, "max_tokens": 200})) != cache_key(
        _request()
    )


def test_provider_model_and_tools_are_in_the_key() -> None:
    base = cache_key(_request())
    assert cache_key(_request(provider="azure")) != base
    assert cache_key(_request(model="gpt-4o")) != base
    tools = [{"type": "function", "function": {"name": "refund", "parameters": {}}}]
    assert cache_key(_request(tools=tools)) != base


def test_tuples_and_read_only_mappings_hash_like_lists_and_dicts() -> None:
    frozen = _request(
        messages=tuple(
            MappingProxyType(m)
            for m in (
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": "I want my money back."},
            )
        ),
        options=MappingProxyType({"temperature": 0, "max_tokens": 200}),
    )
    assert cache_key(frozen) == cache_key(_request())


def test_transport_details_cannot_enter_the_key() -> None:
    params = set(inspect.signature(build_request).parameters)
    assert params == {"provider", "model", "scenario", "messages", "options", "tools", "trial"}
    text = canonical_bytes(_request()).decode()
    for secret in ("http", "api_key", "Authorization", "timeout", "retries"):
        assert secret not in text


def test_diff_names_a_changed_system_prompt_line() -> None:
    new = _request(
        messages=[
            {"role": "system", "content": SYSTEM.replace("Be brief.", "Be concise.")},
            {"role": "user", "content": "I want my money back."},
        ]
    )
    assert request_diff(_request(), new) == [
        "messages[0] (system): line 3: '- Be brief.' -> '+ Be concise.'"
    ]


def test_diff_names_model_and_option_changes_in_request_order() -> None:
    new = _request(model="gpt-4o", options={"temperature": 0.2, "max_tokens": 200, "seed": 1})
    assert request_diff(_request(), new) == [
        "model: 'gpt-4o-mini' -> 'gpt-4o'",
        "options.seed: added 1",
        "options.temperature: 0 -> 0.2",
    ]


def test_diff_added_removed_lines_messages_and_fields() -> None:
    longer = SYSTEM + "\nAlways sign off."
    new = _request(
        messages=[
            {"role": "system", "content": longer},
            {"role": "user", "content": "I want my money back."},
            {"role": "assistant", "content": "Sure."},
        ],
        options=None,
        trial=1,
    )
    assert request_diff(_request(), new) == [
        "trial: added 1",
        "messages[0] (system): line 5 added: '+ Always sign off.'",
        "messages[2] (assistant): added {'role': 'assistant', 'content': 'Sure.'}",
        "options: removed (was {'temperature': 0, 'max_tokens': 200})",
    ]
    assert request_diff(new, _request())[1] == (
        "messages[0] (system): line 5 removed: '- Always sign off.'"
    )


def test_diff_of_equal_requests_is_empty() -> None:
    assert request_diff(_request(), _request()) == []


def test_diff_of_a_long_prompt_rewrite_is_capped() -> None:
    old = "\n".join(f"rule {i}" for i in range(40))
    new = "\n".join(f"RULE {i}" for i in range(40))
    lines = request_diff(
        _request(messages=[{"role": "system", "content": old}]),
        _request(messages=[{"role": "system", "content": new}]),
    )
    assert len(lines) == 9
    assert lines[-1] == "messages[0] (system): ... and 32 more changed line(s)"


def test_closeness_ranks_the_nearest_recording_first() -> None:
    wanted = _request(options={"temperature": 0.2, "max_tokens": 200})
    recorded = [
        _request(model="other-model", scenario="support/globex/refund", options=None),
        _request(),
        _request(messages=[{"role": "user", "content": "Unrelated question"}]),
    ]
    ranked = sorted(recorded, key=lambda r: closeness(r, wanted), reverse=True)
    assert ranked[0] == _request()
    assert closeness(wanted, wanted) == 1.0
    assert 0.0 <= closeness(recorded[0], wanted) < closeness(recorded[1], wanted) < 1.0
    assert closeness(_request(), wanted) == closeness(wanted, _request())
