"""The target matrix (`runner.matrix.Matrix`) in Markdown and HTML: one column per target, a row
per scenario (pass, cost, latency, tokens, judge scores), then each target's pass rate and cost.
The text and JSON forms live beside the model (`matrix_lines`, `Matrix.as_dict`)."""

from __future__ import annotations

from collections.abc import Callable

from cachelint.runner.matrix import Cell, Column, Matrix


def _judges(c: Cell) -> str:
    return ", ".join(
        f"{m} {score:.1f}" if score is not None else f"{m} no score"
        for m, score in sorted(c.judges.items())
    )


def _head(c: Column) -> str:
    return f"{c.target} ({c.model})" if c.model else c.target


def matrix_markdown(m: Matrix, md: Callable[[object], str]) -> list[str]:
    """A Markdown table; `md` escapes repository text (`prformats.md`)."""
    out = [f"### Target matrix (primary: {md(m.columns[0].target)})", ""]
    out.append("| scenario | " + " | ".join(md(_head(c)) for c in m.columns) + " |")
    out.append("| --- |" + " --- |" * len(m.columns))
    rates = (f"**{c.passed}/{c.total} ({c.pass_rate:.0%})**" for c in m.columns)
    out.append("| **pass rate** | " + " | ".join(rates) + " |")
    if m.priced:
        costs = (f"**{md(c.spend.text())}**" for c in m.columns)
        out.append("| **cost** | " + " | ".join(costs) + " |")
    for identity, cells in m.rows:
        shown = []
        for c in m.columns:
            cell = cells.get(c.target)
            if cell is None:
                shown.append("-")
                continue
            judges = f" {md(_judges(cell))}" if cell.judges else ""
            cost = f" {md(cell.spend.text())}" if m.priced else ""
            shown.append(
                f"{'✅' if cell.passed else '❌'}{cost} {cell.latency_s:.2f}s "
                f"{cell.tokens[0]}/{cell.tokens[1]} tok{judges}"
            )
        out.append(f"| {md(identity)} | " + " | ".join(shown) + " |")
    return [*out, ""]


def matrix_html(m: Matrix, e: Callable[[object], str]) -> str:
    """An HTML table (`e` escapes, `htmlreport._e`); each cell links to its pair's scenario."""
    head = "".join(f"<th>{e(_head(c))}</th>" for c in m.columns)
    rates = "".join(
        f'<td data-testid="matrix-rate">{c.passed}/{c.total} ({c.pass_rate:.0%})</td>'
        for c in m.columns
    )
    costs = "".join(f"<td>{e(c.spend.text())}</td>" for c in m.columns)
    cost_row = f"<tr><th>cost</th>{costs}</tr>" if m.priced else ""
    rows = [
        f'<section data-testid="matrix"><h2>target matrix <span class="meta">primary '
        f"{e(m.columns[0].target)}</span></h2>"
        f'<table class="matrix"><thead><tr><th>scenario</th>{head}</tr></thead>'
        f"<tbody><tr><th>pass rate</th>{rates}</tr>{cost_row}"
    ]
    for identity, cells in m.rows:
        tds = []
        for c in m.columns:
            cell = cells.get(c.target)
            tds.append("<td>-</td>" if cell is None else _cell(cell, e, m.priced))
        rows.append(f'<tr class="row" data-search="{e(identity.lower())}"><td>{e(identity)}</td>')
        rows.append("".join(tds) + "</tr>")
    rows.append("</tbody></table></section>")
    return "".join(rows)


def _cell(c: Cell, e: Callable[[object], str], priced: bool) -> str:
    verdict = '<span class="pass">PASS</span>' if c.passed else '<span class="fail">FAIL</span>'
    judges = f"<br>{e(_judges(c))}" if c.judges else ""
    cost = f" {e(c.spend.text())}" if priced else ""
    return (
        f'<td class="{"passed" if c.passed else "failed"}"><a href="#s-{e(c.identity)}">'
        f"{verdict}</a>{cost}<br>"
        f'<span class="meta">{c.latency_s:.2f}s, {c.tokens[0]}/{c.tokens[1]} tokens</span>'
        f"{judges}</td>"
    )
