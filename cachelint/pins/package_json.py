"""package.json: `dependencies` and `devDependencies`; only a bare "1.2.3" is exact (npm reads
"^1.2.3", "~1.2.3", ">=", "1.x", "*", tags and URLs as ranges)."""

from __future__ import annotations

import re
from pathlib import Path

from cachelint.pins import Ecosystem, Pin
from cachelint.pins._common import load_json, table

_EXACT = re.compile(r"^=?v?(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?)$")


def parse(path: Path, relative: str) -> list[Pin]:
    data = load_json(path, relative)
    pins: list[Pin] = []
    for section in ("dependencies", "devDependencies"):
        for name, spec in table(data, section).items():
            if isinstance(spec, str):
                match = _EXACT.match(spec.strip())
                pins.append(
                    Pin(name, spec, match.group(1) if match else None, relative, Ecosystem.NPM)
                )
    return pins
