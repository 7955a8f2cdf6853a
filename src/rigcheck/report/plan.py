"""Every rendering of ``rigcheck.plan/1`` (:class:`rigcheck.model.plan.PlanDocument`): terminal, JSON, Markdown,
HTML, each with the guide's explanation when the document has it. Renderers return text or a renderable."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from rigcheck.model.plan import OffloadBreakdown, PlanDocument, PlanGuide, PlanOffload, StrategyRow
from rigcheck.report.common import Hanging, md_cell
from rigcheck.report.html import esc, footer, page
from rigcheck.report.render import Renderers, json_text
from rigcheck.units import gigabytes

STRATEGY_HEADERS = ("strategy", "MB/GPU/step", "wire time", "model states/GPU")
GUIDE_TITLE = "The guide's NVLink result, explained (gpt2, 2x TITAN RTX, fp32 DDP)"
NOT_EXPLAINED = "Not explained by the bytes:"
OFFLOAD_HEADERS = ("tier", "per", "params", "grads", "optimizer", "buffers", "total")


def _offload_title(off: PlanOffload) -> str:
    return (
        f"Offload to {off.tier.upper()} ({off.strategy}, {off.nodes} node(s) x {off.gpus_per_node} GPUs): "
        f"GPU {gigabytes(off.gpu_bytes)} per GPU, CPU RAM {gigabytes(off.cpu_bytes)} "
        f"and NVMe {gigabytes(off.nvme_bytes)} "
        "per node"
        + (
            f" ({gigabytes(off.cpu_bytes * off.nodes)} and {gigabytes(off.nvme_bytes * off.nodes)} for all {off.nodes})"
            if off.nodes > 1
            else ""
        )
    )


def _offload_cells(row: OffloadBreakdown) -> tuple[str, ...]:
    numbers = (row.params_bytes, row.grads_bytes, row.optimizer_bytes, row.buffers_bytes, row.total_bytes)
    return (row.tier, row.per, *(gigabytes(n) for n in numbers))


def _offload_lines(off: PlanOffload) -> list[str]:
    """Under the table: the fit, the traffic, the bandwidths and the sources."""
    lines = [*off.notes]
    lines += [
        f"{t.what}: {gigabytes(t.bytes)} per {t.per} {t.direction} over the {t.link} link, "
        f"{t.time_s * 1e3:,.0f} ms at {t.gbps:.1f} GB/s"
        for t in off.traffic
    ]
    lines.append(f"Host link: {off.host_source}")
    if off.nvme_source is not None:
        lines.append(f"NVMe: {off.nvme_source}")
    lines.append(f"Source: {off.source}")
    return lines


def _mb(value: float) -> str:
    return f"{value / 1e6:,.2f} MB"


def _ms(value: float | None, reason: str | None = None) -> str:
    if value is None:
        return f"n/a ({reason})" if reason else "n/a"
    return f"{value * 1e3:,.1f} ms"


def _title(doc: PlanDocument) -> str:
    i = doc.inputs
    return f"{i.params:,} parameters, {i.gpus} GPUs, {doc.strategy}, {i.dtype}"


def _bandwidth(doc: PlanDocument) -> str:
    bw = doc.busbw_gbps
    return f"Bus bandwidth: {bw:g} GB/s ({doc.busbw_source})" if bw is not None else "Bus bandwidth: unknown"


def _figures(doc: PlanDocument) -> list[str]:
    """The per-step figures under the collectives, as lines."""
    lines = [
        _bandwidth(doc),
        f"Time on the wire per step: {_ms(doc.comm_time_s, doc.comm_time_reason)}",
        f"Compute per step: {_ms(doc.compute_time_s, doc.compute_time_reason)}",
    ]
    if doc.comm_share is not None:
        lines.append(f"Communication share without overlap: {doc.comm_share:.1%}")
    return lines


def _strategy_cells(row: StrategyRow) -> tuple[str, str, str, str]:
    return (
        row.strategy,
        f"{row.wire_bytes_per_gpu_per_step / 1e6:,.2f}",
        _ms(row.comm_time_s),
        f"{row.model_state_bytes_per_gpu / 2**30:,.2f} GiB",
    )


# --- terminal ----------------------------------------------------------------------------------------------------


def _bullet(line: str) -> Hanging:
    return Hanging(f"• {line}", 2)


def _assumption(line: str) -> Hanging:
    label = "assumption: "
    return Hanging(Text(label + line, style="dim"), len(label))


def _terminal_guide(guide: PlanGuide) -> list[RenderableType]:
    parts: list[RenderableType] = [Hanging(Text(GUIDE_TITLE, style="bold"), 2)]
    parts += [_bullet(line) for line in guide.explanation]
    parts.append(Hanging(Text(NOT_EXPLAINED, style="bold"), 2))
    parts += [_bullet(line) for line in guide.not_explained]
    return parts


def _terminal_offload(off: PlanOffload) -> list[RenderableType]:
    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in OFFLOAD_HEADERS:
        table.add_column(col, justify="left" if col in {"tier", "per"} else "right")
    for row in off.breakdown:
        table.add_row(*_offload_cells(row))
    parts: list[RenderableType] = [Hanging(Text(_offload_title(off), style="bold"), 2), table]
    parts += [_bullet(line) for line in _offload_lines(off)]
    parts += [_assumption(line) for line in off.assumptions]
    return parts


def terminal(doc: PlanDocument) -> RenderableType:
    parts: list[RenderableType] = [
        Hanging(Text(f"rigcheck plan: {_title(doc)}", style="bold"), 2),
        Hanging(Text(f"Bytes on the wire per GPU per step: {_mb(doc.wire_bytes_per_gpu_per_step)}", style="bold"), 2),
    ]
    parts += [Hanging(f"  {c.op} of {c.what}: {_mb(c.bytes_per_gpu)}", 4) for c in doc.collectives]
    parts += [Hanging(line, 2) for line in _figures(doc)]
    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in STRATEGY_HEADERS:
        table.add_column(col, justify="left" if col == "strategy" else "right")
    for row in doc.strategies:
        table.add_row(*_strategy_cells(row))
    parts.append(table)
    parts += [_bullet(line) for line in doc.advice]
    parts += [_assumption(line) for line in doc.assumptions]
    if doc.guide is not None:
        parts += _terminal_guide(doc.guide)
    if doc.offload is not None:
        parts += _terminal_offload(doc.offload)
    return Group(*parts)


# --- Markdown ----------------------------------------------------------------------------------------------------


def _md(value: object) -> str:
    return md_cell(str(value))


def _md_list(lines: list[str]) -> list[str]:
    return [f"- {_md(line)}" for line in lines]


def markdown(doc: PlanDocument) -> str:
    out = ["# rigcheck plan", "", f"**{_md(_title(doc))}**", ""]
    out.append(f"Bytes on the wire per GPU per step: **{_mb(doc.wire_bytes_per_gpu_per_step)}**")
    out += ["", *_md_list([f"{c.op} of {c.what}: {_mb(c.bytes_per_gpu)}" for c in doc.collectives]), ""]
    out += [f"{_md(line)}  " for line in _figures(doc)]  # two spaces: a line break in Markdown
    out += ["", "## Strategies", "", "| " + " | ".join(STRATEGY_HEADERS) + " |", "| --- | ---: | ---: | ---: |"]
    out += ["| " + " | ".join(_md(cell) for cell in _strategy_cells(row)) + " |" for row in doc.strategies]
    out += ["", "## Advice", "", *_md_list(doc.advice)]
    if doc.assumptions:
        out += ["", "## Assumptions", "", *_md_list(doc.assumptions)]
    out += ["", "## Sources", "", *_md_list(doc.sources)]
    if doc.guide is not None:
        out += ["", f"## {GUIDE_TITLE}", "", *_md_list(doc.guide.explanation), "", f"**{NOT_EXPLAINED}**", ""]
        out += _md_list(doc.guide.not_explained)
    if doc.offload is not None:
        off = doc.offload
        out += ["", "## Offload", "", f"**{_md(_offload_title(off))}**", ""]
        out += ["| " + " | ".join(OFFLOAD_HEADERS) + " |", "| --- | --- |" + " ---: |" * 5]
        out += ["| " + " | ".join(_md(c) for c in _offload_cells(row)) + " |" for row in off.breakdown]
        out += ["", *_md_list(_offload_lines(off))]
        if off.assumptions:
            out += ["", *_md_list([f"assumption: {line}" for line in off.assumptions])]
    return "\n".join(out) + "\n"


# --- HTML --------------------------------------------------------------------------------------------------------


def _ul(lines: list[str], css: str = "") -> str:
    cls = f' class="{css}"' if css else ""
    return f"<ul{cls}>" + "".join(f"<li>{esc(line)}</li>" for line in lines) + "</ul>"


def _html_row(row: StrategyRow, chosen: bool) -> str:
    name, *numbers = _strategy_cells(row)
    label = f"<strong>{esc(name)}</strong>" if chosen else esc(name)
    cells = "".join(f'<td class="num{" na" if n.startswith("n/a") else ""}">{esc(n)}</td>' for n in numbers)
    return f"<tr><td>{label}</td>{cells}</tr>"


def html(doc: PlanDocument) -> str:
    body = [
        "<h1>rigcheck plan</h1>",
        f'<p class="summary-line">{esc(_title(doc))}</p>',
        f"<p>Bytes on the wire per GPU per step: <strong>{esc(_mb(doc.wire_bytes_per_gpu_per_step))}</strong></p>",
        _ul([f"{c.op} of {c.what}: {_mb(c.bytes_per_gpu)}" for c in doc.collectives]),
        _ul(_figures(doc)),
        "<h2>Strategies</h2>",
        "<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in STRATEGY_HEADERS) + "</tr>",
        *(_html_row(row, row.strategy == doc.strategy) for row in doc.strategies),
        "</table>",
        "<h2>Advice</h2>",
        _ul(doc.advice),
    ]
    if doc.assumptions:
        body += ["<h2>Assumptions</h2>", _ul(doc.assumptions, "muted")]
    body += ["<h2>Sources</h2>", _ul(doc.sources, "muted")]
    if doc.guide is not None:
        body += [f"<h2>{esc(GUIDE_TITLE)}</h2>", _ul(doc.guide.explanation)]
        body += [f"<h3>{esc(NOT_EXPLAINED)}</h3>", _ul(doc.guide.not_explained)]
    if doc.offload is not None:
        off = doc.offload
        body += ["<h2>Offload</h2>", f"<p><strong>{esc(_offload_title(off))}</strong></p>"]
        body.append("<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in OFFLOAD_HEADERS) + "</tr>")
        for row in off.breakdown:
            name, per, *numbers = _offload_cells(row)
            cells = "".join(f'<td class="num">{esc(n)}</td>' for n in numbers)
            body.append(f"<tr><td>{esc(name)}</td><td>{esc(per)}</td>{cells}</tr>")
        body += ["</table>", _ul(_offload_lines(off))]
        if off.assumptions:
            body.append(_ul(off.assumptions, "muted"))
    return page("rigcheck plan", "\n".join([*body, footer()]))


RENDERERS: Renderers[PlanDocument] = Renderers(terminal=terminal, json=json_text, markdown=markdown, html=html)
