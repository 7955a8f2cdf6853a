"""Every rendering of ``rigcheck.verify-bands/1`` (`rigcheck verify --explain`): per GPU, each check's floor, the
peak it is a fraction of, and where both come from."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from rigcheck.model.verify import Band, VerifyBandsDocument
from rigcheck.report.common import md_cell, md_code
from rigcheck.report.html import esc, footer, page
from rigcheck.report.render import Renderers, json_text

HEADERS = ("check", "floor", "peak", "of peak", "peak is", "source")


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def cells(band: Band) -> tuple[str, ...]:
    share = f"{band.expected_min / band.peak:.0%}" if band.peak else "-"
    return (
        band.check,
        f"{_num(band.expected_min)} {band.unit}",
        f"{_num(band.peak)} {band.unit}" if band.peak is not None else "-",
        share,
        band.basis,
        band.source,
    )


def terminal(doc: VerifyBandsDocument) -> RenderableType:
    """Each GPU's bands in a table; the sources (long, shared by many bands) numbered once below them all."""
    parts: list[RenderableType] = [Text("rigcheck verify --explain: what a healthy card reaches", style="bold")]
    if doc.site_config:
        parts.append(Text(f"site floors from {doc.site_config}", style="cyan"))
    sources: dict[str, int] = {}
    for gpu in doc.gpus:
        table = Table(box=None, pad_edge=False, header_style="bold", title=gpu.name, title_justify="left")
        for col in (*HEADERS[:-1], "src"):
            table.add_column(col, overflow="fold")
        for band in gpu.bands:
            ref = sources.setdefault(band.source, len(sources) + 1)
            table.add_row(*cells(band)[:-1], f"[{ref}]")
        parts += [Text(""), table]
    parts += [Text(""), Text("sources", style="bold")]
    parts += [Text(f"[{ref}] {source}", style="dim") for source, ref in sources.items()]
    parts += [Text(""), *(Text(f"• {line}", style="dim") for line in doc.notes)]
    return Group(*parts)


def markdown(doc: VerifyBandsDocument) -> str:
    out = ["# rigcheck verify --explain", ""]
    if doc.site_config:
        out += [f"Site floors from {md_code(doc.site_config)}.", ""]
    for gpu in doc.gpus:
        out += [f"## {md_cell(gpu.name)}", "", "| " + " | ".join(HEADERS) + " |", "|" + " --- |" * len(HEADERS)]
        out += ["| " + " | ".join(md_cell(c) for c in cells(b)) + " |" for b in gpu.bands]
        out.append("")
    out += ["## Notes", "", *(f"- {md_cell(line)}" for line in doc.notes)]
    return "\n".join(out) + "\n"


def html(doc: VerifyBandsDocument) -> str:
    body = ["<h1>rigcheck verify --explain</h1>"]
    if doc.site_config:
        body.append(f'<p class="muted">Site floors from {esc(doc.site_config)}</p>')
    for gpu in doc.gpus:
        body += [f"<h2>{esc(gpu.name)}</h2>", "<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in HEADERS) + "</tr>"]
        body += ["<tr>" + "".join(f"<td>{esc(c)}</td>" for c in cells(b)) + "</tr>" for b in gpu.bands]
        body.append("</table>")
    body += ["<h2>Notes</h2>", "<ul>", *(f"<li>{esc(line)}</li>" for line in doc.notes), "</ul>"]
    return page("rigcheck verify --explain", "\n".join([*body, footer()]))


RENDERERS: Renderers[VerifyBandsDocument] = Renderers(terminal=terminal, json=json_text, markdown=markdown, html=html)
