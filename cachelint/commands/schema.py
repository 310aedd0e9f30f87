"""`cachelint schema`: print the JSON Schema (draft 2020-12) of a dataset scenario file.

The schema ships in the package (`cachelint/data/dataset.schema.json`) so an editor can complete
and check scenario files offline: point `"$schema"`-aware editors or `json.schemas` at the output.
The loader's own checks stay the authority; the schema is tested against every bundled dataset.
"""

from __future__ import annotations

import argparse
import sys
from importlib.resources import files
from typing import TextIO

SCHEMA = "dataset.schema.json"


def add_parser(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    parents: list[argparse.ArgumentParser],
) -> None:
    parser = subparsers.add_parser(
        "schema",
        parents=parents,
        help="print the JSON Schema of a dataset scenario file",
        description="Print the JSON Schema (draft 2020-12) of <agent>/<tenant>/<scenario>.json.",
    )
    parser.set_defaults(handler=lambda ns: schema(out=sys.stdout))


def schema_text() -> str:
    return files("cachelint").joinpath("data").joinpath(SCHEMA).read_text(encoding="utf-8")


def schema(*, out: TextIO) -> int:
    out.write(schema_text())
    return 0
