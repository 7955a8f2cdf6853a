"""Every rendering of ``rigcheck.power-plan/1`` (:class:`rigcheck.model.power_plan.PowerPlanDocument`): terminal, JSON,
Markdown, HTML. Renderers return text or a renderable; the CLI prints (and decides the exit code)."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from rigcheck.model.power_plan import ConnectorUse, GpuCables, PowerPlanDocument
from rigcheck.report.common import md_cell
from rigcheck.report.html import esc, footer, page
from rigcheck.report.render import Renderers, json_text

HEADERS = ("GPU", "power sockets on the card", "sockets")
NO_SOCKETS = "none (powered by the baseboard or the slot)"


def _connector_text(conn: ConnectorUse) -> str:
    rating = f" ({conn.watts_each:g} W each)" if conn.watts_each is not None else ""
    return f"{conn.count} × {conn.kind}{rating}"


def _row(entry: GpuCables) -> tuple[str, str, str]:
    sockets = ", ".join(_connector_text(c) for c in entry.connectors) or NO_SOCKETS
    return str(entry.gpu), sockets, str(sum(c.count for c in entry.connectors))


def _totals(plan: PowerPlanDocument) -> list[str]:
    return [
        f"GPUs draw up to {plan.total_gpu_power_w:g} W ({_drawn_at(plan)}).",
        f"Independent PCIe power cables from the PSU: {plan.independent_cables_total} (no pigtails).",
    ]


def _drawn_at(plan: PowerPlanDocument) -> str:
    limit = plan.gpu.power_limit_w
    return "board power" if limit is None else f"{plan.gpu.count} × the {limit:g} W power limit"


def _card(plan: PowerPlanDocument) -> str:
    """The card's heading: count, name, board power, and the limit it runs at."""
    gpu = plan.gpu
    limit = "" if gpu.power_limit_w is None else f", run at a {gpu.power_limit_w:g} W power limit"
    return f"{gpu.count} × {gpu.name} ({gpu.board_power_w:g} W board power{limit})"


def _recommended(plan: PowerPlanDocument) -> str:
    return f"Recommended PSU: {plan.recommended_psu_w:g} W."


def _verdict(plan: PowerPlanDocument) -> str | None:
    """What the command says of the user's PSU; None without --psu-watts."""
    if plan.psu_ok is None:
        return None
    return "Your PSU is enough." if plan.psu_ok else "Your PSU is NOT enough for this load."


# --- terminal ----------------------------------------------------------------------------------------------------


def terminal(plan: PowerPlanDocument) -> RenderableType:
    parts: list[RenderableType] = [Text("rigcheck power plan", style="bold")]
    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in HEADERS:
        table.add_column(col)
    for entry in plan.cables:
        table.add_row(*_row(entry))
    parts += [table, Text("")]
    parts += [Text(line) for line in _totals(plan)]
    parts.append(Text(_recommended(plan), style="bold"))
    verdict = _verdict(plan)
    if verdict is not None:
        parts.append(Text(verdict, style="green" if plan.psu_ok else "bold red"))
    parts += [Text(f"• {line}", style="dim") for line in plan.notes]
    return Group(*parts)


# --- Markdown ----------------------------------------------------------------------------------------------------


def _md(value: object) -> str:
    return md_cell(str(value))


def markdown(plan: PowerPlanDocument) -> str:
    out = ["# rigcheck power plan", "", _md(_card(plan)), ""]
    out += ["| " + " | ".join(HEADERS) + " |", "| --- | --- | ---: |"]
    out += ["| " + " | ".join(_md(cell) for cell in _row(entry)) + " |" for entry in plan.cables]
    out += ["", *(f"- {_md(line)}" for line in _totals(plan)), f"- **{_recommended(plan)}**"]
    verdict = _verdict(plan)
    if verdict is not None:
        out.append(f"- **{verdict}** ({plan.psu_watts:g} W given)")
    out += ["", "## Notes", "", *(f"- {_md(line)}" for line in plan.notes), "", "## Headroom", ""]
    out.append(_md(plan.headroom_source))
    return "\n".join(out) + "\n"


# --- HTML --------------------------------------------------------------------------------------------------------


def html(plan: PowerPlanDocument) -> str:
    body = [
        "<h1>rigcheck power plan</h1>",
        f'<p class="muted">{esc(_card(plan))}</p>',
        "<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in HEADERS) + "</tr>",
    ]
    for entry in plan.cables:
        gpu_cell, sockets, count = _row(entry)
        body.append(
            f'<tr><td class="num">{esc(gpu_cell)}</td><td>{esc(sockets)}</td><td class="num">{esc(count)}</td></tr>'
        )
    body += ["</table>", "<ul>", *(f"<li>{esc(line)}</li>" for line in _totals(plan)), "</ul>"]
    body.append(f'<p class="summary-line">{esc(_recommended(plan))}</p>')
    verdict = _verdict(plan)
    if verdict is not None:
        body.append(
            f'<p class="result {"good" if plan.psu_ok else "bad"}">{esc(verdict)} ({plan.psu_watts:g} W given)</p>'
        )
    body += ["<h2>Notes</h2>", "<ul>", *(f"<li>{esc(line)}</li>" for line in plan.notes), "</ul>"]
    body += ["<h2>Headroom</h2>", f'<p class="muted">{esc(plan.headroom_source)}</p>']
    return page("rigcheck power plan", "\n".join([*body, footer()]))


RENDERERS: Renderers[PowerPlanDocument] = Renderers(terminal=terminal, json=json_text, markdown=markdown, html=html)
