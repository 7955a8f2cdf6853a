"""Every rendering of the doctor document: the machine, a row per GPU, the topology, the findings worst first
with their advice, the passed checks, and the result.

- terminal: :func:`doctor_terminal` (rich), one line per finding;
- Markdown: :func:`doctor_markdown`, for pasting into an issue or a wiki page;
- HTML: :func:`doctor_html`, one self-contained page (the shell is report/html.py's);
- JSON: the document itself.

From saved outputs (`--from`), the `unknown` findings that only say the input lacks a kind of data are folded into
one line per missing source after the findings (checks/doctor/unknown_sources.py); ``RenderOptions.show_unknown``
(doctor's --show-unknown) lists them all again. The JSON always holds every finding.
"""

from __future__ import annotations

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text

from rigcheck.checks.doctor.unknown_sources import FoldedSource, fold_input_gaps
from rigcheck.model import Finding, Gpu, Severity, Snapshot
from rigcheck.model.doctor import DoctorDocument
from rigcheck.model.snapshot import INPUT_ENDS_EARLY
from rigcheck.model.topo import (
    SUMMARY_ABOVE,
    TopoDocument,
    TopoSummaryInput,
    snapshot_topo_document,
    snapshot_topo_summary,
)
from rigcheck.report.advice import FindingEntry, entry_lines, finding_entries, shown_counts, verdict_head
from rigcheck.report.common import (
    MISSING_WORDS,
    SEVERITY_STYLE,
    Hanging,
    counts_text,
    findings_html,
    findings_markdown,
    group_findings,
    machine_lines,
    md_cell,
    md_prose,
    md_text,
    passed_line,
    pcie_text,
    prose_html,
    result_class,
    result_line,
    td_html,
    value_text,
)
from rigcheck.report.grid import PlainGrid, drawn_width, fitting
from rigcheck.report.render import DEFAULT_OPTIONS, Renderers, RenderOptions, WithOptions, json_text
from rigcheck.report.topo import topology_renderable, topology_section_html
from rigcheck.units import plural


def doctor_topology(snap: Snapshot) -> TopoDocument | None:
    """The topology the doctor report shows: the `topo -m` table read, else one built from the pair links and
    the GPUs' NVLink state (without the affinity columns `rigcheck topo` adds: the doctor report keeps its
    matrix narrow)."""
    return snapshot_topo_document(snap, affinities=False)


def _drawn_topology(snap: Snapshot) -> TopoDocument | TopoSummaryInput | None:
    """doctor_topology as the reports draw it: above SUMMARY_ABOVE GPUs straight from the snapshot's pairs,
    without a TopoPair per pair (the doctor's JSON holds no topo document, so nothing else needs them)."""
    if len(snap.gpus) > SUMMARY_ABOVE or (snap.topology is not None and len(snap.topology.gpus) > SUMMARY_ABOVE):
        return snapshot_topo_summary(snap, affinities=False)
    return doctor_topology(snap)


def listed_findings(
    doc: DoctorDocument, options: RenderOptions = DEFAULT_OPTIONS
) -> tuple[list[Finding], list[FoldedSource]]:
    """The findings the reports list one by one, and the unknowns folded into one line per missing source
    (``options.show_unknown``: every finding listed, none folded)."""
    if options.show_unknown:
        return list(doc.findings), []
    return fold_input_gaps(doc.snapshot, doc.findings)


def _folded(groups: list[FoldedSource]) -> int:
    return sum(len(g.findings) for g in groups)


def fold_heading(doc: DoctorDocument, groups: list[FoldedSource]) -> str:
    """What the folded lines stand for, counted: nothing is hidden, only told in fewer lines."""
    return (
        f"{_folded(groups)} of the {doc.counts.unknown} unknown findings only say that this input lacks the data, "
        "one line per missing source (--show-unknown lists them)"
    )


def _shown_counts(entries: list[FindingEntry], groups: list[FoldedSource]) -> dict[str, int]:
    """Lines per severity as the terminal report prints them, worst first; the unknowns folded into the
    ``NOT IN INPUT`` lines counted as that heading counts them."""
    return shown_counts(entries, _folded(groups))


def _verdict_head(
    doc: DoctorDocument, entries: list[FindingEntry], shown: list[Finding], groups: list[FoldedSource]
) -> Text:
    """The first line: the verdict word, then what the report lists below, counted as it lists it."""
    return verdict_head(
        "doctor",
        doc.counts.model_dump(),
        doc.exit_code,
        strict=doc.strict,
        entries=entries,
        shown=shown,
        folded=_folded(groups),
        fold_lines=len(groups),
    )


def _verdict(doc: DoctorDocument, entries: list[FindingEntry], groups: list[FoldedSource]) -> Text:
    """The last line, for a script that reads it (``Result: <verdict> (<counts>) — exit N``): the counts are
    the lines the report prints, the folded unknowns as the NOT IN INPUT heading counts them."""
    return result_line(_shown_counts(entries, groups), doc.exit_code, strict=doc.strict)


def input_notes(snap: Snapshot) -> list[str]:
    """What the reader must know about the input itself: it ends early (a cut file, a table that lost GPUs).
    A combined snapshot prefixes each file's diagnostics with its name."""
    return [f"note: {d.message}" for d in snap.diagnostics if INPUT_ENDS_EARLY in d.message]


# ---------------------------------------------------------------------------------------------- terminal


_GPU_COLUMNS = ("GPU", "name", "power draw / limit", "temp / slowdown", "PCIe now / max", "P-state", "clock events")


def _gpu_cells(g: Gpu) -> list[str]:
    reasons = g.clock_event_reasons_active
    return [
        str(g.index),
        g.name or "?",
        f"{value_text(g, 'power_draw_w', 'W')} / {value_text(g, 'power_limit_w', 'W')}",
        f"{value_text(g, 'temp_c', 'C')} / {value_text(g, 'temp_slowdown_c', 'C')}",
        pcie_text(g),
        value_text(g, "pstate"),
        ", ".join(reasons)
        if reasons
        else ("none" if reasons is not None else value_text(g, "clock_event_reasons_active")),
    ]


def _unreadable_text(g: Gpu) -> Text:
    # The detail is in the health.gpu-unreadable finding; the table stays narrow.
    return Text(f"unreadable ({MISSING_WORDS[g.read_error]})" if g.read_error else "", style="bold red")


def gpu_table(snap: Snapshot) -> RenderableType:
    """One row per GPU with the figures the guide cares about, reasons shown for missing ones."""
    if len(snap.gpus) > SUMMARY_ABOVE:
        return _gpu_lines(snap)
    if all(g.read_error is None for g in snap.gpus):
        rows = [[(cell, "") for cell in _gpu_cells(g)] for g in snap.gpus]
        if PlainGrid.of(_GPU_COLUMNS, rows, ["left"] * len(_GPU_COLUMNS)) is not None:
            return _GpuGrid(snap)
    return _rich_gpu_table(snap)


# Where the table is wider than the terminal, these columns are left out first, in this order (the GPU's name is
# on the "GPUs:" line above): the GPU and its clock events (why the clocks are held back) are always shown, whole.
_LEFT_OUT_FIRST = ("name", "P-state", "PCIe now / max", "temp / slowdown", "power draw / limit")


def _table_rows(snap: Snapshot) -> list[list[str] | None]:
    return [None if g.read_error is not None else _gpu_cells(g) for g in snap.gpus]


def _kept_columns(snap: Snapshot, rows: list[list[str] | None], width: int) -> list[int]:
    """The columns that fit ``width``, leaving out _LEFT_OUT_FIRST's in order until the widest cells fit (an
    unreadable GPU's words fill its row's second column)."""
    from rich.cells import cell_len

    lost = [cell_len(_unreadable_text(g).plain) for g, row in zip(snap.gpus, rows, strict=True) if row is None]

    def drawn(kept: list[int]) -> int:
        widths = [max([cell_len(_GPU_COLUMNS[c]), *(cell_len(r[c]) for r in rows if r is not None)]) for c in kept]
        if lost and len(widths) > 1:
            widths[1] = max(widths[1], *lost)
        return drawn_width(widths)

    return fitting(_GPU_COLUMNS, _LEFT_OUT_FIRST, width, drawn)


class _GpuTable:
    """The GPU table as rich's table draws it, with the columns that fit the width (_kept_columns); a line under
    it names the ones left out."""

    direct = False

    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap
        self.rows = _table_rows(snap)

    def _drawn(self, kept: list[int], width: int) -> RenderableType:
        header = [_GPU_COLUMNS[c] for c in kept]
        if self.direct:
            cells = [[(row[c], "") for c in kept] for row in self.rows if row is not None]
            grid = PlainGrid.of(header, cells, ["left"] * len(kept))
            if grid is not None and grid.fits(width):
                return grid
        table = Table(box=None, pad_edge=False, header_style="bold")
        for col in header:
            table.add_column(col)
        for g, row in zip(self.snap.gpus, self.rows, strict=True):
            if row is None:
                table.add_row(str(g.index), _unreadable_text(g))
            else:
                table.add_row(*(row[c] for c in kept))
        return table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        kept = _kept_columns(self.snap, self.rows, options.max_width)
        yield self._drawn(kept, options.max_width)
        left_out = [name for i, name in enumerate(_GPU_COLUMNS) if i not in kept]
        if left_out:
            yield Hanging(Text(f"(left out at this width: {', '.join(left_out)})", style="dim"), 1)


class _GpuGrid(_GpuTable):
    """The same table laid out directly (report/grid.py) where it fits the width: rich measures every cell of a
    table; these cells are plain, so their widths are their lengths."""

    direct = True


def _rich_gpu_table(snap: Snapshot) -> _GpuTable:
    return _GpuTable(snap)


def _gpu_lines(snap: Snapshot) -> RenderableType:
    """The same table for a big machine, laid out once as plain lines: rich measures every cell of every row
    (half a second at 512 GPUs) for a table whose columns are known up front."""
    rows = [None if g.read_error is not None else _gpu_cells(g) for g in snap.gpus]
    widths = [len(c) for c in _GPU_COLUMNS]
    for row in rows:
        for i, cell in enumerate(row or ()):
            widths[i] = max(widths[i], len(cell))

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=False)).rstrip()

    out: list[Text] = [Text(line(list(_GPU_COLUMNS)), style="bold")]
    for g, row in zip(snap.gpus, rows, strict=True):
        if row is None:
            text = Text(str(g.index).ljust(widths[0]) + "  ")
            text.append_text(_unreadable_text(g))
            out.append(text)
        else:
            out.append(Text(line(row)))
    return Group(*out)


def _fold_lines(doc: DoctorDocument, groups: list[FoldedSource]) -> list[RenderableType]:
    """``NOT IN INPUT`` and the heading, then one line per missing source with the ids it stands for."""
    if not groups:
        return []
    head = Text("NOT IN INPUT ", style=SEVERITY_STYLE[Severity.UNKNOWN])
    head.append(fold_heading(doc, groups) + ":")
    out: list[RenderableType] = [Hanging(head, 8)]
    for g in groups:
        line = Text(f"        {g.line}")
        line.append(f"  [{', '.join(g.ids)}]", style="dim")
        out.append(Hanging(line, 10))
    return out


def doctor_terminal(doc: DoctorDocument, options: RenderOptions = DEFAULT_OPTIONS) -> RenderableType:
    """The verdict on the first line, then the findings worst first, then the machine they are about (host,
    GPUs, topology), and the result line last."""
    snap = doc.snapshot
    shown, groups = listed_findings(doc, options)
    entries = finding_entries(shown)
    parts: list[RenderableType] = [Hanging(_verdict_head(doc, entries, shown, groups), 2)]
    parts += [Hanging(Text(note, style="bold yellow"), 6) for note in input_notes(snap)]
    parts.append(Text(""))
    parts += entry_lines(entries)
    passed = passed_line(shown)
    if passed is not None:
        parts.append(Hanging(passed, 8))
    parts += _fold_lines(doc, groups)
    parts.append(Text(""))
    parts += [Hanging(line, line.find(": ") + 2) for line in machine_lines(snap)]
    if snap.missing_functions:
        lacks = Text("NVML functions this driver lacks: " + ", ".join(snap.missing_functions), style="dim")
        parts.append(Hanging(lacks, 2))
    if snap.gpus:
        parts += [Text(""), gpu_table(snap)]
    topology = _drawn_topology(snap) if len(snap.gpus) > 1 else None
    if topology is not None:
        parts += [Text(""), topology_renderable(topology, options)]
    parts += [Text(""), Hanging(_verdict(doc, entries, groups), 8)]
    return Group(*parts)


# ---------------------------------------------------------------------------------------------- Markdown


def _counts_text(doc: DoctorDocument, folded: int = 0) -> str:
    """``12 unknown (10 folded below), 9 info, 8 ok; exit code 0.``: every finding counted, the fold said."""
    text = counts_text(doc.counts.model_dump(), doc.exit_code)
    if folded:  # "N unknown" appears once: N is the unknown count itself
        unknown = f"{doc.counts.unknown} unknown"
        text = text.replace(unknown, f"{unknown} ({folded} folded below)", 1)
    return text


def _listed_counts(doc: DoctorDocument) -> dict[str, int]:
    """Entries per severity as the page lists them: the same finding about several GPUs or pairs is one entry
    (the 28 pairs of an 8-GPU NVLink box are one line), so the banner counts what the reader sees."""
    counts = doc.counts.model_dump()
    return {sev: len(group_findings([f for f in doc.findings if f.severity.value == sev])) for sev in counts}


def _html_counts_text(doc: DoctorDocument, shown: list[Finding], folded: int) -> str:
    listed, total = len(group_findings(shown)), len(shown)
    if listed == total:
        return _counts_text(doc, folded)
    return (
        f"{total} findings, listed as {plural(listed, 'entry', 'entries')} (the same finding about several GPUs or "
        "pairs is one entry): " + _counts_text(doc, folded)
    )


def _fold_html(doc: DoctorDocument, groups: list[FoldedSource]) -> str:
    from rigcheck.report.html import esc

    if not groups:
        return ""
    items = "".join(
        f'<li data-source="{esc(g.source.key)}">{prose_html(g.line)} '
        f'<code class="fid">[{esc(", ".join(g.ids))}]</code></li>'
        for g in groups
    )
    return (
        '<section id="not-in-input"><h2>Not in this input</h2>'
        f'<p class="muted">{esc(fold_heading(doc, groups).capitalize())}:</p><ul>{items}</ul></section>'
    )


def doctor_markdown(doc: DoctorDocument, options: RenderOptions = DEFAULT_OPTIONS) -> str:
    snap = doc.snapshot
    out: list[str] = ["# rigcheck doctor", ""]
    out += [f"- {md_prose(line)}" for line in machine_lines(snap)]
    out += [f"- **{md_cell(note)}**" for note in input_notes(snap)]
    out.append("")
    if snap.gpus:
        out += [
            "## GPUs",
            "",
            "| GPU | name | power draw / limit | temperature / slowdown | PCIe now / max | P-state |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for g in snap.gpus:
            if g.read_error is not None:
                detail = g.read_error_detail or g.read_error.value
                out.append(f"| {g.index} | unreadable: {md_cell(detail)} | | | | |")
                continue
            power = f"{value_text(g, 'power_draw_w', 'W')} / {value_text(g, 'power_limit_w', 'W')}"
            temp = f"{value_text(g, 'temp_c', 'C')} / {value_text(g, 'temp_slowdown_c', 'C')}"
            cells = [str(g.index), g.name or "?", power, temp, pcie_text(g), value_text(g, "pstate")]
            out.append("| " + " | ".join(md_text(c) for c in cells) + " |")  # the input's words, as text
        out.append("")
    shown, groups = listed_findings(doc, options)
    out += findings_markdown(shown, _counts_text(doc, _folded(groups)))
    if groups:
        # rigcheck's own words and ids (no input text): their backticks are meant as code.
        out += ["## Not in this input", "", fold_heading(doc, groups).capitalize() + ":", ""]
        out += [f"- {g.line} — " + ", ".join(f"`{i}`" for i in g.ids) for g in groups]
        out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------- HTML


def _gpu_table_html(snap: Snapshot) -> str:
    from rigcheck.report.html import REASON_WORDS, esc

    head = (
        "GPU",
        "name",
        "power draw / limit",
        "temp / slowdown",
        "memory used / total",
        "PCIe now / max",
        "P-state",
        "clock events",
    )
    rows = ['<table class="gpus"><thead><tr>' + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>"]
    for g in snap.gpus:
        if g.read_error is not None:
            detail = f" — {g.read_error_detail}" if g.read_error_detail else ""
            rows.append(
                f'<tr class="unreadable" data-gpu="{g.index}"><td>{g.index}</td>'
                f'<td colspan="{len(head) - 1}">unreadable ({esc(MISSING_WORDS[g.read_error])}){esc(detail)}</td></tr>'
            )
            continue
        reasons = g.clock_event_reasons_active
        events = (
            ", ".join(REASON_WORDS.get(r, r) for r in reasons)
            if reasons
            else ("none" if reasons is not None else value_text(g, "clock_event_reasons_active"))
        )
        cells = [
            str(g.index),
            g.name or "?",
            f"{value_text(g, 'power_draw_w', 'W')} / {value_text(g, 'power_limit_w', 'W')}",
            f"{value_text(g, 'temp_c', 'C')} / {value_text(g, 'temp_slowdown_c', 'C')}",
            f"{value_text(g, 'memory_used_mib', 'MiB')} / {value_text(g, 'memory_total_mib', 'MiB')}",
            pcie_text(g),
            value_text(g, "pstate"),
            events,
        ]
        rows.append(f'<tr data-gpu="{g.index}">' + "".join(td_html(c) for c in cells) + "</tr>")
    rows.append("</tbody></table>")
    return "".join(rows)


def doctor_html(doc: DoctorDocument, options: RenderOptions = DEFAULT_OPTIONS) -> str:
    """The doctor report as one self-contained HTML page."""
    from rigcheck.report.html import esc, footer, page

    snap = doc.snapshot
    banner = result_class(doc.counts.model_dump(), doc.exit_code)
    listed = result_line(_listed_counts(doc), doc.exit_code, strict=doc.strict)
    body = [
        "<header><h1>rigcheck doctor</h1>",
        '<ul class="machine">' + "".join(f"<li>{esc(line)}</li>" for line in machine_lines(snap)) + "</ul>",
        *(f'<p class="result warn note">{esc(note)}</p>' for note in input_notes(snap)),
        f'<p class="result {banner}">{esc(listed.plain)}</p></header>',
    ]
    if snap.gpus:
        body.append(f'<section id="gpus"><h2>GPUs</h2>{_gpu_table_html(snap)}</section>')
    shown, groups = listed_findings(doc, options)
    body.append(findings_html(shown, _html_counts_text(doc, shown, _folded(groups))))
    body.append(_fold_html(doc, groups))
    topology = _drawn_topology(snap) if snap.topology is not None or len(snap.gpus) > 1 else None
    if topology is not None:
        body.append(topology_section_html(topology, options))
    if snap.missing_functions or snap.diagnostics:
        items = [f"<li>NVML functions this driver lacks: {esc(', '.join(snap.missing_functions))}</li>"]
        items = items if snap.missing_functions else []
        items += [
            f"<li>{esc(d.source)}{esc(f' GPU{d.gpu}' if d.gpu is not None else '')}: {esc(d.message)}</li>"
            for d in snap.diagnostics
        ]
        body.append(
            f'<section id="diagnostics"><details><summary>Diagnostics ({len(items)})</summary>'
            f"<ul>{''.join(items)}</ul></details></section>"
        )
    body.append(footer(f"; snapshot taken {snap.created_at}" if snap.created_at else ""))
    title = f"rigcheck doctor — {snap.host.hostname}" if snap.host.hostname else "rigcheck doctor"
    return page(title, "\n".join(body))


RENDERERS: Renderers[DoctorDocument] = Renderers(
    terminal=WithOptions(doctor_terminal),
    json=json_text,
    markdown=WithOptions(doctor_markdown),
    html=WithOptions(doctor_html),
)
