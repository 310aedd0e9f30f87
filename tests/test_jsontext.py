"""`may_hold_surrogate`, the cheap screen before `lone_surrogate` walks a decoded dataset or a
cached answer: it must never say False for a text (or its bytes) that decodes to a lone
surrogate, however the text spells it."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cachelint.jsontext import _walk, lone_surrogate, may_hold_surrogate

texts = st.text(alphabet=st.characters(codec=None), max_size=20) | st.sampled_from(
    ["\ud83d", "a\udc00b", "\U0001f600", "\\ud800", "\u00e9"]
)
values = st.recursive(
    st.none() | st.booleans() | st.integers() | texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(value=values, ascii_only=st.booleans())
def test_a_text_that_decodes_to_a_lone_surrogate_is_never_screened_out(
    value: Any, ascii_only: bool
) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return  # a raw lone surrogate: no UTF-8 file holds this text
    if lone_surrogate(json.loads(text)) is not None:
        assert may_hold_surrogate(text)
        assert may_hold_surrogate(text.encode("utf-8"))  # the store screens the file's bytes


def test_plain_text_and_paired_surrogates_are_screened() -> None:
    assert not may_hold_surrogate('{"input": "caf\\u00e9 \\u2028", "n": 1}')
    assert may_hold_surrogate('{"input": "\\ud83d"}')
    assert may_hold_surrogate('{"input": "\\uDC00"}')
    assert may_hold_surrogate('{"input": "\\uD83D\\uDE00"}')  # a pair: screened in, then passes
    assert not may_hold_surrogate(b'{"input": "caf\\u00e9"}')
    assert may_hold_surrogate(b'{"input": "\\ud83d"}')


@settings(max_examples=300, deadline=None)
@given(value=values)
def test_the_encoder_screen_says_what_the_walk_says(value: Any) -> None:
    assert lone_surrogate(value) == _walk(value)


def test_deep_nesting_falls_back_to_the_walk() -> None:
    value: Any = "\udc00"
    for _ in range(5000):
        value = [value]
    assert lone_surrogate(value) == _walk(value) is not None
