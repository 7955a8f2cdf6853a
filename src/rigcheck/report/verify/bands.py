"""Every rendering of ``rigcheck.verify-bands/1`` (`rigcheck verify --explain`): per GPU, each check's floor, the
peak it is a fraction of, where both come from, and the lowest published healthy figure beside the floor with
its margin, a floor near or above that figure marked."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from rigcheck.checks.verify.bands import published_mark
from rigcheck.model.verify import Band, VerifyBandsDocument
from rigcheck.report.common import md_cell, md_code
from rigcheck.report.html import esc, footer, page
from rigcheck.report.render import Renderers, json_text
from rigcheck.units import figure

HEADERS = ("check", "floor", "peak", "of peak", "peak is", "lowest published healthy", "margin", "source")


def cells(band: Band) -> tuple[str, ...]:
    share = f"{band.expected_min / band.peak:.0%}" if band.peak else "-"
    return (
        band.check,
        f"{figure(band.expected_min)} {band.unit}",
        f"{figure(band.peak)} {band.unit}" if band.peak is not None else "-",
        share,
        band.basis,
    )


def published_source(band: Band) -> str:
    """Where the lowest published healthy figure comes from: the machine, the calibration case and the URL."""
    return f"{band.lowest_healthy_on} (calibration case {band.lowest_healthy_case}): {band.lowest_healthy_source}"


def published_cells(band: Band) -> tuple[str, str, str | None]:
    """(the lowest published healthy figure, the floor's margin under it, the mark of a floor near or above it);
    dashes where no published healthy figure was judged against this floor."""
    if band.lowest_healthy is None or band.margin_pct is None:
        return "-", "-", None
    return f"{figure(band.lowest_healthy)} {band.unit}", f"{band.margin_pct:+.1f}%", published_mark(band.margin_pct)


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
            low, margin, mark = published_cells(band)
            if band.lowest_healthy is not None:
                low += f" [{sources.setdefault(published_source(band), len(sources) + 1)}]"
            margin_cell = Text(margin)
            if mark is not None:
                margin_cell.append(
                    f" {mark}", style="bold red" if band.margin_pct and band.margin_pct < 0 else "yellow"
                )
            table.add_row(*cells(band), low, margin_cell, f"[{ref}]")
        parts += [Text(""), table]
    parts += [Text(""), Text("sources", style="bold")]
    parts += [Text(f"[{ref}] {source}", style="dim") for source, ref in sources.items()]
    parts += [Text(""), *(Text(f"• {line}", style="dim") for line in doc.notes)]
    return Group(*parts)


def _md_published(band: Band) -> list[str]:
    """The lowest published healthy, margin and source cells of one band's markdown row."""
    low, margin, mark = published_cells(band)
    low_cell = md_cell(low)
    if band.lowest_healthy is not None:  # input (the manifest's words) as text, the case id as code
        case = md_code(band.lowest_healthy_case or "", in_table=True)
        low_cell += f" on {md_cell(band.lowest_healthy_on or '')} ({case}, {md_cell(band.lowest_healthy_source or '')})"
    strong = f" **{md_cell(mark)}**" if mark is not None else ""
    return [low_cell, md_cell(margin) + strong, md_cell(band.source)]


def _html_published(band: Band) -> list[str]:
    low, margin, mark = published_cells(band)
    if band.lowest_healthy is not None:
        low += f" on {published_source(band)}"
    strong = f" <strong>{esc(mark)}</strong>" if mark is not None else ""
    return [f"<td>{esc(low)}</td>", f"<td>{esc(margin)}{strong}</td>", f"<td>{esc(band.source)}</td>"]


def markdown(doc: VerifyBandsDocument) -> str:
    out = ["# rigcheck verify --explain", ""]
    if doc.site_config:
        out += [f"Site floors from {md_code(doc.site_config)}.", ""]
    for gpu in doc.gpus:
        out += [f"## {md_cell(gpu.name)}", "", "| " + " | ".join(HEADERS) + " |", "|" + " --- |" * len(HEADERS)]
        out += ["| " + " | ".join([*(md_cell(c) for c in cells(b)), *_md_published(b)]) + " |" for b in gpu.bands]
        out.append("")
    out += ["## Notes", "", *(f"- {md_cell(line)}" for line in doc.notes)]
    return "\n".join(out) + "\n"


def html(doc: VerifyBandsDocument) -> str:
    body = ["<h1>rigcheck verify --explain</h1>"]
    if doc.site_config:
        body.append(f'<p class="muted">Site floors from {esc(doc.site_config)}</p>')
    for gpu in doc.gpus:
        body += [f"<h2>{esc(gpu.name)}</h2>", "<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in HEADERS) + "</tr>"]
        body += [
            "<tr>" + "".join([*(f"<td>{esc(c)}</td>" for c in cells(b)), *_html_published(b)]) + "</tr>"
            for b in gpu.bands
        ]
        body.append("</table>")
    body += ["<h2>Notes</h2>", "<ul>", *(f"<li>{esc(line)}</li>" for line in doc.notes), "</ul>"]
    return page("rigcheck verify --explain", "\n".join([*body, footer()]))


RENDERERS: Renderers[VerifyBandsDocument] = Renderers(terminal=terminal, json=json_text, markdown=markdown, html=html)
