"""The page's escaping (htmlscenario.escape for attributes, htmlscenario.text for an element's
text): each searches for what needs escaping with one class, which finds exactly the characters of
the alternations it stands for (`[&<>"']` or `[&<>]`, then display.UNSAFE_IN_BLOCK), so every value
is written as escaping it whole writes it."""

from __future__ import annotations

import html
import re

from cachelint.display import UNSAFE_IN_BLOCK, sanitize_block
from cachelint.runner.reports import htmlscenario

# Every code point, surrogates included, each once.
_ALL = "".join(map(chr, range(0x110000)))

_SOME = [_ALL, "plain answer", "a\nb", 'it\'s "quoted"', "x < y & z", "tab\there", "\u202e"]
_SOME += [chr(c) for c in (0x0A, 0x0D, 0x22, 0x26, 0x27, 0x3C, 0x7F, 0x2028, 0xD800, 0xDCFF, 0xE9)]


def test_the_searches_find_the_characters_of_the_alternations() -> None:
    text_reference = re.compile(f"[&<>]|{UNSAFE_IN_BLOCK.pattern}")
    assert htmlscenario._TEXT_NEEDS_ESCAPE.findall(_ALL) == text_reference.findall(_ALL)
    reference = re.compile(f"[&<>\"']|{UNSAFE_IN_BLOCK.pattern}")
    assert htmlscenario._NEEDS_ESCAPE.findall(_ALL) == reference.findall(_ALL)


def test_each_value_is_written_as_escaping_it_whole_writes_it() -> None:
    for value in _SOME:
        assert htmlscenario.text(value) == html.escape(sanitize_block(value), quote=False)
        assert htmlscenario.escape(value) == html.escape(sanitize_block(value), quote=True)
    assert htmlscenario.text(7) == htmlscenario.escape(7) == "7"
