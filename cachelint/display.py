"""The output boundary: every string that reaches a terminal, a CI log or a report passes here.

File names, dataset text and model answers come from pull requests and from models, so they may
hold escape sequences (ESC, the 8-bit CSI U+009B), line breaks that forge extra lines, bidi
controls that reorder what a reviewer reads ("Trojan Source") and lone surrogates (git's
undecodable file names arrive surrogate-escaped, and printing one raises). `sanitize` turns each
into a visible escape; `sanitize_block` does the same for multi-line text, keeping its line feeds;
`json_dumps` writes JSON whose raw bytes are as safe while the decoded values stay exact; and
`shell_command` quotes a suggested fix command so a crafted file name cannot turn into shell code
when a person pastes it.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

# C0 controls (TAB, LF, CR, ESC included), DEL, C1 controls, the Arabic letter mark, LRM/RLM,
# U+2028/2029 (line and paragraph separators), the bidi embeddings/overrides U+202A-202E, the
# isolates U+2066-2069, and every surrogate code point (a str holding one cannot be encoded).
_ABOVE_C0 = "\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_UNSAFE = re.compile(f"[\x00-\x1f{_ABOVE_C0}]")

# json.dumps escapes C0 controls itself; what it leaves raw with ensure_ascii=False is matched here.
_JSON_UNSAFE = re.compile(f"[{_ABOVE_C0}]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # a surrogate-escaped byte: show the byte the name holds
        code -= 0xDC00
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def sanitize(text: str) -> str:
    """`text` as one safe line: each unsafe character becomes a visible escape (`\\x1b`)."""
    return _UNSAFE.sub(_visible, text)


# The same class less LF, for a whole block in one pass rather than line by line; and as the body
# of a class (`[...]`) to join with others, which `re` searches faster than the lookahead.
UNSAFE_IN_BLOCK = re.compile(f"(?!\n){_UNSAFE.pattern}")
UNSAFE_IN_BLOCK_CHARS = f"\x00-\x09\x0b-\x1f{_ABOVE_C0}"


def sanitize_block(text: str) -> str:
    """Multi-line `text` made safe line by line: only LF stays a line break (CR, U+2028 and
    the rest are shown, so a value cannot pretend to end a line it does not end)."""
    return UNSAFE_IN_BLOCK.sub(_visible, text)


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def escape_json_unsafe(text: str) -> str:
    """JSON text as `json.dumps(..., ensure_ascii=False)` wrote it, with what that leaves raw and
    a terminal could act on (DEL, C1, bidi marks, U+2028/9, lone surrogates) as `\\u` escapes."""
    if text.isascii() and "\x7f" not in text:
        return text  # of these only DEL is ASCII: two scans in C (the expression's ~6 ns a char)
    return _JSON_UNSAFE.sub(_json_escape, text)


def json_dumps(document: Any, *, compact: bool = False) -> str:
    """Deterministic JSON (sorted keys, UTF-8) with DEL, C1, bidi marks, U+2028/9 and lone
    surrogates written as `\\u` escapes: readable output, exact values for consumers, and no raw
    control reaching a terminal that shows the file. No trailing newline."""
    if compact:
        text = json.dumps(document, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    else:
        text = json.dumps(document, sort_keys=True, ensure_ascii=False, indent=2)
    return escape_json_unsafe(text)


def shell_command(*argv: str) -> str:
    """A command for a person to paste, each argument shell-quoted (`git add -- 'a b'`)."""
    return shlex.join(argv)
