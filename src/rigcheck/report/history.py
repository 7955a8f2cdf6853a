"""Every rendering of ``rigcheck.history/1`` (:class:`rigcheck.model.history.HistoryDocument`): the offenders, the
alerts, then each GPU's timeline (one line a run: date, node, verdict, its figures)."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from rigcheck.model.history import Alert, HistoryDocument, Offender, Timeline, TimelineEntry
from rigcheck.report.common import md_cell
from rigcheck.report.html import esc, footer, page
from rigcheck.report.render import Renderers, json_text

OFFENDER_HEADERS = ("node", "excluded", "runs", "share of all excluded", "last excluded")
TIMELINE_HEADERS = ("date", "node", "bus id", "verdict", "figures")


def _summary(doc: HistoryDocument) -> str:
    asked = [f"--{k} {v}" for k, v in doc.filters.model_dump().items() if v is not None]
    return (
        f"Ledger {doc.ledger}: {doc.documents:,} documents; {doc.runs:,} runs judged a node, {doc.excluded:,} "
        f"excluded it" + (f" ({', '.join(asked)})" if asked else "")
    )


def _offender_cells(o: Offender) -> tuple[str, ...]:
    return (o.node, str(o.excluded), str(o.runs), f"{o.share:.0%}", o.last_excluded[:10])


def _alert_line(a: Alert) -> str:
    return f"{a.created_at[:10]} {a.kind}: {a.message}"


def _figures(e: TimelineEntry) -> str:
    return ", ".join(f"{k} {v:g}" for k, v in e.figures.items())


def _entry_cells(e: TimelineEntry) -> tuple[str, ...]:
    return (e.created_at[:10], e.node or "?", e.pci_bus_id or "?", e.verdict or "seen", _figures(e))


def _timeline_title(t: Timeline) -> str:
    return f"GPU {t.gpu}: {t.failures} failed run(s) on {', '.join(t.nodes) or 'no named node'}"


def _rule_line(doc: HistoryDocument) -> str:
    r = doc.rules
    return (
        f"Rules: repeat-offender at {r.repeat_failures} excluded of a node's last {r.repeat_window} runs; reissued: "
        f"a GPU that failed, seen on another node; drift: a figure's Theil-Sen change <= {r.drift_drop:.0%} over "
        f"{r.drift_window_days:g} days (>= {r.drift_min_points} runs over >= {r.drift_min_days:g} days) or corrected "
        f"ECC/s doubling; escalation: the same Xid on {r.escalation_days} days, or row remaps failing or growing"
    )


def terminal(doc: HistoryDocument) -> RenderableType:
    parts: list[RenderableType] = [Text(_summary(doc), style="bold")]
    if doc.offenders:
        table = Table(*OFFENDER_HEADERS, title="Offenders", title_justify="left")
        for o in doc.offenders:
            table.add_row(*_offender_cells(o))
        parts.append(table)
    else:
        parts.append(Text("No node was excluded."))
    parts.append(Text(f"Alerts ({len(doc.alerts)}):", style="bold"))
    parts += [Text(f"  {_alert_line(a)}", style="red") for a in doc.alerts] or [Text("  none")]
    for t in doc.timelines:
        table = Table(*TIMELINE_HEADERS, title=_timeline_title(t), title_justify="left")
        for e in t.entries:
            table.add_row(*_entry_cells(e))
        parts.append(table)
    parts += [Text(_rule_line(doc), style="dim"), *(Text(n, style="dim") for n in doc.notes)]
    return Group(*parts)


def _md_table(headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    return [
        "| " + " | ".join(headers) + " |",
        "|" + " --- |" * len(headers),
        *("| " + " | ".join(md_cell(c) for c in row) + " |" for row in rows),
    ]


def markdown(doc: HistoryDocument) -> str:
    lines = ["# rigcheck history", "", md_cell(_summary(doc)), "", "## Offenders", ""]
    if doc.offenders:
        lines += _md_table(OFFENDER_HEADERS, [_offender_cells(o) for o in doc.offenders])
    else:
        lines.append("No node was excluded.")
    lines += ["", "## Alerts", ""]
    lines += [f"- {md_cell(_alert_line(a))}" for a in doc.alerts] or ["None."]
    for t in doc.timelines:
        lines += ["", f"## {md_cell(_timeline_title(t))}", ""]
        lines += _md_table(TIMELINE_HEADERS, [_entry_cells(e) for e in t.entries])
    lines += ["", md_cell(_rule_line(doc)), *(f"- {md_cell(n)}" for n in doc.notes)]
    return "\n".join(lines) + "\n"


def _html_table(headers: tuple[str, ...], rows: list[tuple[str, ...]], classes: list[str] | None = None) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join(
        f'<tr class="{esc(classes[i]) if classes else ""}">' + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>"
        for i, row in enumerate(rows)
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def html(doc: HistoryDocument) -> str:
    body = [f"<h1>rigcheck history</h1><p>{esc(_summary(doc))}</p>", "<h2>Offenders</h2>"]
    body.append(
        _html_table(OFFENDER_HEADERS, [_offender_cells(o) for o in doc.offenders])
        if doc.offenders
        else "<p>No node was excluded.</p>"
    )
    body.append("<h2>Alerts</h2>")
    items = "".join(f'<li class="fail">{esc(_alert_line(a))}</li>' for a in doc.alerts)
    body.append(f"<ul>{items}</ul>" if items else "<p>None.</p>")
    for t in doc.timelines:
        body.append(f"<h2>{esc(_timeline_title(t))}</h2>")
        body.append(
            _html_table(
                TIMELINE_HEADERS, [_entry_cells(e) for e in t.entries], [e.verdict or "seen" for e in t.entries]
            )
        )
    body.append(f"<p>{esc(_rule_line(doc))}</p>")
    body += [f"<p>{esc(n)}</p>" for n in doc.notes]
    return page("rigcheck history", "".join(body) + footer())


RENDERERS = Renderers[HistoryDocument](terminal=terminal, json=json_text, markdown=markdown, html=html)
