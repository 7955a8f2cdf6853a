"""Every rendering of the power and thermal documents: a row per GPU with the concern's figures (a missing one
says why), the concern's clock events active now, its findings, and the result."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from rigcheck.model.doctor import count_severities
from rigcheck.model.power_thermal import PowerDocument, StateDocument, StateGpu, figure_names
from rigcheck.report.advice import entry_lines, finding_entries, shown_counts, verdict_head
from rigcheck.report.common import (
    MISSING_WORDS,
    Hanging,
    counts_text,
    findings_html,
    findings_markdown,
    md_cell,
    md_prose,
    passed_line,
    result_class,
    result_line,
    td_html,
    value_text,
)
from rigcheck.report.grid import Cell, FoldingTable
from rigcheck.report.render import Renderers, json_text

# Column header and unit per figure; the JSON has the same fields.
HEADERS: dict[str, tuple[str, str]] = {
    "power_draw_w": ("draw", "W"),
    "power_limit_w": ("limit", "W"),
    "power_default_limit_w": ("default", "W"),
    "power_enforced_limit_w": ("enforced", "W"),
    "power_min_limit_w": ("min", "W"),
    "power_max_limit_w": ("max", "W"),
    "temp_c": ("GPU", "C"),
    "temp_memory_c": ("memory", "C"),
    "temp_slowdown_c": ("slowdown", "C"),
    "temp_shutdown_c": ("shutdown", "C"),
    "temp_max_operating_c": ("max operating", "C"),
    "fan_percent": ("fan", "%"),
}

# The guide's temperature bands, shown under the thermal table.
THERMAL_GUIDE = "guide: ≤75 C excellent, <80 C good, throttling likely from 84–90 C; the card's own thresholds rule."


def _category(doc: StateDocument) -> str:
    return "power" if isinstance(doc, PowerDocument) else "thermal"


def _guide(doc: StateDocument) -> str | None:
    return None if isinstance(doc, PowerDocument) else THERMAL_GUIDE


def _figures(doc: StateDocument) -> list[str]:
    return figure_names(type(doc.gpus[0])) if doc.gpus else []


def _header(field: str) -> str:
    header, unit = HEADERS[field]
    return f"{header} ({unit})" if unit else header


def _events(row: StateGpu) -> str:
    active = row.events_active
    return ", ".join(active) if active else ("none" if active is not None else "n/a")


def _no_gpus(doc: StateDocument) -> str:
    return f"no GPUs: {doc.gpu_absent_reason or 'none in this input'}"


def _result(doc: StateDocument) -> Text:
    return result_line(count_severities(doc.findings).model_dump(), doc.exit_code, strict=doc.strict)


def _counts(doc: StateDocument) -> str:
    return counts_text(count_severities(doc.findings).model_dump(), doc.exit_code)


def _unreadable(row: StateGpu) -> str | None:
    return f"unreadable: {row.read_error.value}" if row.read_error is not None else None


def _why_missing(row: StateGpu, figures: list[str]) -> str | None:
    """``GPU0 n/a: not supported (memory, fan)``: the reasons of a row's missing figures, one clause a reason."""
    why: dict[str, list[str]] = {}
    for f in figures:
        reason = row.missing.get(f)
        if getattr(row, f) is None and reason is not None:
            why.setdefault(MISSING_WORDS[reason], []).append(HEADERS[f][0])
    if not why:
        return None
    return f"GPU{row.index} n/a: " + "; ".join(f"{r} ({', '.join(h)})" for r, h in why.items())


# ---------------------------------------------------------------------------------------------- terminal


# Where the table is wider than the terminal, these columns are left out first, in this order (the model is the
# least needed, then the figures furthest from the concern's question): the GPU and its active events are always
# shown, whole.
LEFT_OUT_FIRST: dict[str, tuple[str, ...]] = {
    "power": (
        "name",
        "power_min_limit_w",
        "power_max_limit_w",
        "power_enforced_limit_w",
        "power_default_limit_w",
        "power_limit_w",
        "power_draw_w",
    ),
    "thermal": (
        "name",
        "temp_max_operating_c",
        "temp_shutdown_c",
        "temp_memory_c",
        "fan_percent",
        "temp_slowdown_c",
        "temp_c",
    ),
}


def _gpu_table(doc: StateDocument) -> FoldingTable:
    """A row per GPU (a missing figure says just "n/a"; the notes under the table say why) with the columns that
    fit the width and a line naming those left out, so no cell is cut; a GPU that could not be read says so where
    its events would be (a column always kept)."""
    figures = _figures(doc)
    header = ["GPU", "name", *(_header(f) for f in figures), "active events"]
    names = ["GPU", "name", *figures, "active events"]
    rows: list[list[Cell]] = []
    for row in doc.gpus:
        unreadable = _unreadable(row)
        if unreadable is not None:
            rows.append([(str(row.index), ""), (row.name or "?", ""), *[("", "")] * len(figures), (unreadable, "red")])
            continue
        cells = [value_text(row, f, digits=0) if getattr(row, f) is not None else "n/a" for f in figures]
        rows.append([(c, "") for c in (str(row.index), row.name or "?", *cells, _events(row))])
    left_out_first = [header[names.index(n)] for n in LEFT_OUT_FIRST[_category(doc)]]
    return FoldingTable(header, rows, left_out_first=left_out_first, right=header[2:-1])


def state_terminal(doc: StateDocument) -> RenderableType:
    """The verdict on the first line, then the findings worst first (each advice sentence once, naming the GPUs
    it is for), the checks that passed, the GPU table with why figures are missing, and the result line last."""
    entries = finding_entries(list(doc.findings))
    counts = count_severities(doc.findings).model_dump()
    head = verdict_head(
        _category(doc), counts, doc.exit_code, strict=doc.strict, entries=entries, shown=list(doc.findings)
    )
    parts: list[RenderableType] = [Hanging(head, 2), Text("")]
    parts += entry_lines(entries)
    passed = passed_line(doc.findings)
    if passed is not None:
        parts.append(Hanging(passed, 8))
    if entries or passed is not None:
        parts.append(Text(""))
    if doc.gpus:
        parts.append(_gpu_table(doc))
        parts += [Hanging(Text(n, style="dim"), n.index(": ") + 2) for n in _missing_notes(doc)]
    else:
        parts.append(Hanging(_no_gpus(doc), len("no GPUs: ")))
    guide = _guide(doc)
    if guide:
        parts.append(Hanging(Text(guide, style="dim"), len("guide: ")))
    result = result_line(shown_counts(entries, passed=counts["ok"]), doc.exit_code, strict=doc.strict)
    parts += [Text(""), Hanging(result, 8)]
    return Group(*parts)


def _missing_notes(doc: StateDocument) -> list[str]:
    """One line per GPU naming why its missing figures are missing."""
    figures = _figures(doc)
    notes = [_why_missing(row, figures) for row in doc.gpus if _unreadable(row) is None]
    return [n for n in notes if n is not None]


# ---------------------------------------------------------------------------------------------- Markdown


def state_markdown(doc: StateDocument) -> str:
    """The table with each missing figure's reason in its cell, the guide's bands, the findings."""
    out = [f"# rigcheck {_category(doc)}", ""]
    figures = _figures(doc)
    if doc.gpus:
        head = ["GPU", "name", *(_header(f) for f in figures), "active events"]
        out += ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
        for row in doc.gpus:
            unreadable = _unreadable(row)
            cells = (
                [str(row.index), unreadable, *[""] * (len(head) - 2)]
                if unreadable is not None
                else [str(row.index), row.name or "?", *(value_text(row, f) for f in figures), _events(row)]
            )
            out.append("| " + " | ".join(md_cell(c) for c in cells) + " |")
    else:
        out.append(md_prose(_no_gpus(doc)))
    guide = _guide(doc)
    out += ["", *([guide, ""] if guide else [])]
    out += [_result(doc).plain, ""]
    out += findings_markdown(doc.findings, _counts(doc))
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------- HTML


def state_html(doc: StateDocument) -> str:
    """The power or thermal document as one self-contained page."""
    from rigcheck.report.html import esc, footer, page

    title = f"rigcheck {_category(doc)}"
    counts = count_severities(doc.findings).model_dump()
    body = [
        f"<header><h1>{esc(title)}</h1>",
        f'<p class="result {result_class(counts, doc.exit_code)}">{esc(_result(doc).plain)}</p></header>',
    ]
    figures = _figures(doc)
    if doc.gpus:
        head = ["GPU", "name", *(_header(f) for f in figures), "active events"]
        rows = ['<table class="gpus"><thead><tr>' + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr></thead>"]
        rows.append("<tbody>")
        for row in doc.gpus:
            unreadable = _unreadable(row)
            if unreadable is not None:
                rows.append(
                    f'<tr class="unreadable" data-gpu="{row.index}"><td>{row.index}</td>'
                    f'<td colspan="{len(head) - 1}">{esc(unreadable)}</td></tr>'
                )
                continue
            cells = [str(row.index), row.name or "?", *(value_text(row, f) for f in figures), _events(row)]
            rows.append(f'<tr data-gpu="{row.index}">' + "".join(td_html(c) for c in cells) + "</tr>")
        rows.append("</tbody></table>")
        body.append(f'<section id="gpus"><h2>GPUs</h2><div class="scroll">{"".join(rows)}</div></section>')
    else:
        body.append(f'<p class="na">{esc(_no_gpus(doc))}</p>')
    guide = _guide(doc)
    if guide:
        body.append(f'<p class="muted">{esc(guide)}</p>')
    body.append(findings_html(doc.findings, _counts(doc)))
    body.append(footer())
    return page(title, "\n".join(body))


RENDERERS: Renderers[StateDocument] = Renderers(
    terminal=state_terminal, json=json_text, markdown=state_markdown, html=state_html
)
