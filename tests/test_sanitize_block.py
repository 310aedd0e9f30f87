"""`sanitize_block` makes a whole block safe in one pass: the same text as sanitizing each line and
joining them with LF, for any text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cachelint.display import sanitize, sanitize_block


@settings(max_examples=500, deadline=None)
@given(text=st.text(alphabet=st.characters(codec=None)) | st.just("a\nb\r\n\x1b[31m\u2028\udc80\n"))
def test_a_block_is_its_lines_sanitized_and_joined_by_lf(text: str) -> None:
    assert sanitize_block(text) == "\n".join(sanitize(line) for line in text.split("\n"))
