"""requirements*.txt, as pip reads them: `-r`/`--requirement` and `-c`/`--constraint` includes
(relative to the including file), `#` comments, backslash line continuations, `--hash` options and
environment markers. Editable, path and URL lines name no version and are skipped."""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from cachelint.pins import Pin, PinFileError
from cachelint.pins._common import pep508_pin, read_text

# pip strips a comment only where `#` starts the line or follows whitespace (a URL fragment
# `#egg=` does not start one).
_COMMENT = re.compile(r"(^|\s+)#.*$")
_INCLUDE = re.compile(r"^(-r|--requirement|-c|--constraint)(?:\s*=\s*|\s+)?(\S+)$")


def _logical_lines(text: str) -> list[tuple[int, str]]:
    lines: list[tuple[int, str]] = []
    buffer, start = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        if not buffer:
            start = number
        if raw.endswith("\\"):
            buffer += raw[:-1] + " "
            continue
        lines.append((start, buffer + raw))
        buffer = ""
    if buffer:
        lines.append((start, buffer))
    return lines


def _strip_options(line: str) -> str:
    """Drop per-requirement options (`--hash=sha256:...`, `--global-option`) after the spec."""
    return re.split(r"\s+--?[A-Za-z]", " " + line, maxsplit=1)[0].strip()


def parse(path: Path, relative: str, _seen: frozenset[str] = frozenset()) -> list[Pin]:
    if relative in _seen:
        return []  # pip itself loops forever on a cycle; reading each file once is enough
    seen = _seen | {relative}
    pins: list[Pin] = []
    for number, raw in _logical_lines(read_text(path, relative)):
        line = _COMMENT.sub("", raw).strip()
        if not line:
            continue
        include = _INCLUDE.match(line)
        if include:
            target = include.group(2)
            child_rel = str(PurePosixPath(relative).parent / target).removeprefix("./")
            child = path.parent / target
            if not child.is_file():
                raise PinFileError(
                    f"{relative}:{number}: {include.group(1)} {target}: file not found; "
                    "fix the include path"
                )
            pins += parse(child, child_rel, seen)
            continue
        if line.startswith("-"):
            continue  # -e, --index-url, --pre...: name no pinned version
        pin = pep508_pin(_strip_options(line), relative)
        if pin is not None:
            pins.append(pin)
    return pins
