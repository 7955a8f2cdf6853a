"""Every rendering of ``rigcheck.history/1`` (:class:`rigcheck.model.history.HistoryDocument`): the offenders, the
alerts, then each GPU's timeline (one line a run: date, node, verdict, its figures). The HTML page draws each
timeline too: its throughput figures as a percentage of their own median (membw and matmul on one axis), the
failed runs marked, the day it moved to another node marked, and the drift rule's line."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from itertools import pairwise
from statistics import median

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from rigcheck.model.document import utc_time
from rigcheck.model.history import (
    EXCLUDED_VERDICTS,
    Alert,
    HistoryDocument,
    Offender,
    Timeline,
    TimelineEntry,
    day_number,
)
from rigcheck.report.common import Hanging, md_cell
from rigcheck.report.html import esc, footer, page
from rigcheck.report.render import Renderers, json_text
from rigcheck.report.svg import Axis, HLine, Series, line_chart

OFFENDER_HEADERS = ("node", "excluded", "runs", "share of all excluded", "last excluded")
TIMELINE_HEADERS = ("date", "node", "bus id", "verdict", "figures")
# The figures a timeline's chart draws, each with its colour: throughputs, where a fall is the news (drift.py).
PLOTTED = {
    "membw": "#1d4ed8",
    "matmul_bf16": "#15803d",
    "matmul_fp16": "#0f766e",
    "matmul_tf32": "#65a30d",
    "hostlink": "#a16207",
}
FAILED_COLOUR = "#b91c1c"
# Offenders a terminal or Markdown table lists: the worst; a fleet where hundreds of nodes failed once would
# otherwise push the alerts off the screen (the JSON and the HTML page list them all).
OFFENDERS_SHOWN = 25


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _summary(doc: HistoryDocument) -> str:
    asked = [f"--{k} {v}" for k, v in doc.filters.model_dump().items() if v is not None]
    judged = "judged a node" if doc.runs == 1 else "judged a node each"
    return (
        f"Ledger {doc.ledger}: {_count(doc.documents, 'document')}; {_count(doc.runs, 'run')} {judged}, "
        f"{doc.excluded:,} excluded it" + (f" ({', '.join(asked)})" if asked else "")
    )


def _offender_cells(o: Offender) -> tuple[str, ...]:
    return (o.node, str(o.excluded), str(o.runs), f"{o.share:.0%}", o.last_excluded[:10])


def _alert_line(a: Alert) -> str:
    return f"{a.created_at[:10]} {a.kind}: {a.message}"


def _figures(e: TimelineEntry) -> str:
    return ", ".join(f"{k} {v:g}" for k, v in e.figures.items())


def _entry_cells(e: TimelineEntry) -> tuple[str, ...]:
    return (e.created_at[:10], e.node or "?", e.pci_bus_id or "?", e.verdict or "seen", _figures(e))


def _key_entry(t: Timeline, i: int) -> bool:
    """A run a timeline's table shows: the first and the last, each excluded run, the first on another node."""
    e = t.entries[i]
    return i in (0, len(t.entries) - 1) or e.verdict in EXCLUDED_VERDICTS or e.node != t.entries[i - 1].node


def _gap_cells(skipped: list[TimelineEntry]) -> tuple[str, ...]:
    verdicts = Counter(e.verdict or "seen" for e in skipped)
    said = ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items()))
    first, last = skipped[0].created_at[:10], skipped[-1].created_at[:10]
    return ("...", "", "", f"{len(skipped)} runs", f"{said}, {first} to {last}")


def timeline_rows(t: Timeline) -> tuple[list[tuple[str, ...]], list[str]]:
    """The timeline's table, condensed: its key runs (``_key_entry``) whole, each stretch of runs between two of
    them one row ("... | | | 4 runs | 4 pass, 2025-01-02 to 2025-01-05"); and each row's class (its verdict, "gap").
    The document (JSON) keeps every run; a year of daily runs is a few rows here."""
    rows: list[tuple[str, ...]] = []
    classes: list[str] = []
    skipped: list[TimelineEntry] = []
    for i, e in enumerate(t.entries):
        if not _key_entry(t, i):
            skipped.append(e)
            continue
        if len(skipped) == 1:
            rows.append(_entry_cells(skipped[0]))
            classes.append(skipped[0].verdict or "seen")
        elif skipped:
            rows.append(_gap_cells(skipped))
            classes.append("gap")
        skipped = []
        rows.append(_entry_cells(e))
        classes.append(e.verdict or "seen")
    return rows, classes


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


def _more_offenders(doc: HistoryDocument) -> str | None:
    more = doc.offenders[OFFENDERS_SHOWN:]
    if not more:
        return None
    runs = sum(o.excluded for o in more)
    return (
        f"and {len(more)} more node(s) with {runs} excluded run(s) between them, at most {more[0].excluded} each "
        "(--json or --html lists them all)"
    )


def terminal(doc: HistoryDocument) -> RenderableType:
    parts: list[RenderableType] = [Text(_summary(doc), style="bold")]
    if doc.offenders:
        table = Table(*OFFENDER_HEADERS, title="Offenders", title_justify="left")
        for o in doc.offenders[:OFFENDERS_SHOWN]:
            table.add_row(*_offender_cells(o))
        parts.append(table)
        if (more := _more_offenders(doc)) is not None:
            parts.append(Hanging(Text(more, style="dim"), 0))
    else:
        parts.append(Text("No node was excluded."))
    parts.append(Text(f"Alerts ({len(doc.alerts)}):", style="bold"))
    # under its own text when it wraps on a terminal: after the date and the kind
    parts += [Hanging(Text(f"  {_alert_line(a)}", style="red"), 4) for a in doc.alerts] or [Text("  none")]
    for t in doc.timelines:
        table = Table(*TIMELINE_HEADERS, title=_timeline_title(t), title_justify="left")
        for row in timeline_rows(t)[0]:
            table.add_row(*row)
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
        lines += _md_table(OFFENDER_HEADERS, [_offender_cells(o) for o in doc.offenders[:OFFENDERS_SHOWN]])
        if (more := _more_offenders(doc)) is not None:
            lines += ["", md_cell(more)]
    else:
        lines.append("No node was excluded.")
    lines += ["", "## Alerts", ""]
    lines += [f"- {md_cell(_alert_line(a))}" for a in doc.alerts] or ["None."]
    for t in doc.timelines:
        lines += ["", f"## {md_cell(_timeline_title(t))}", ""]
        lines += _md_table(TIMELINE_HEADERS, timeline_rows(t)[0])
    lines += ["", md_cell(_rule_line(doc)), *(f"- {md_cell(n)}" for n in doc.notes)]
    return "\n".join(lines) + "\n"


def _html_table(headers: tuple[str, ...], rows: list[tuple[str, ...]], classes: list[str] | None = None) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join(
        f'<tr class="{esc(classes[i]) if classes else ""}">' + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>"
        for i, row in enumerate(rows)
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def timeline_chart(t: Timeline, uid: str, drift_drop: float) -> str | None:
    """The timeline's throughput figures over time, each as % of its own median; None when it has none."""
    entries = [e for e in t.entries if any(f in e.figures for f in PLOTTED)]
    if not entries:
        return None
    day0 = utc_time(entries[0].created_at)
    one_year = entries[0].created_at[:4] == entries[-1].created_at[:4]
    ticks = "%m-%d" if one_year else "%Y-%m-%d"  # a full date's label runs past the chart's right edge
    x = {id(e): day_number(e.created_at) - day_number(entries[0].created_at) for e in entries}
    middles = {f: median(vs) for f in PLOTTED if (vs := [e.figures[f] for e in entries if f in e.figures])}
    middles = {f: m for f, m in middles.items() if m > 0}
    if not middles:
        return None

    def percent(e: TimelineEntry, figure: str) -> float:
        return 100 * e.figures[figure] / middles[figure]

    series = []
    for figure in middles:
        points = [(x[id(e)], percent(e, figure)) for e in entries if figure in e.figures]
        series.append(Series(figure, points, PLOTTED[figure], markers=len(points) <= 2))
    failed: list[tuple[float, float | None]] = []
    for e in entries:
        shown = [f for f in middles if f in e.figures]
        if e.verdict in EXCLUDED_VERDICTS and shown:  # a dot on its first figure, not joined to the next one
            failed += [(x[id(e)], percent(e, shown[0])), (x[id(e)], None)]
    if failed:
        series.append(Series("a failed run", failed, FAILED_COLOUR, width=0, markers=True))
    moves = [(x[id(e)], f"on {e.node}") for before, e in pairwise(entries) if e.node and e.node != before.node]
    return line_chart(
        uid=uid,
        title=f"GPU {t.gpu}: figures over time",
        desc=f"{', '.join(middles)} of GPU {t.gpu} in each of {len(entries)} runs, as a percentage of the figure's "
        "median over them; the failed runs marked as dots; the day it was first seen on another node marked.",
        x=Axis(
            f"date, {day0.year}" if one_year else "date",
            tick_format=lambda v: (day0 + timedelta(days=v)).strftime(ticks),
        ),
        y=Axis("% of its median"),
        series=series,
        hlines=[HLine(100 * (1 + drift_drop), f"{-drift_drop:.0%} under its median", "#64748b")],
        vlines=moves,
        plot_height=160,
    )


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
    for i, t in enumerate(doc.timelines):
        body.append(f"<h2>{esc(_timeline_title(t))}</h2>")
        if (chart := timeline_chart(t, f"timeline-{i}", doc.rules.drift_drop)) is not None:
            body.append(f"<figure>{chart}</figure>")
        rows, classes = timeline_rows(t)
        body.append(_html_table(TIMELINE_HEADERS, rows, classes))
        if len(rows) < len(t.entries):
            every = _html_table(
                TIMELINE_HEADERS, [_entry_cells(e) for e in t.entries], [e.verdict or "seen" for e in t.entries]
            )
            body.append(f"<details><summary>every run ({len(t.entries)})</summary>{every}</details>")
    body.append(f"<p>{esc(_rule_line(doc))}</p>")
    body += [f"<p>{esc(n)}</p>" for n in doc.notes]
    return page("rigcheck history", "".join(body) + footer())


RENDERERS = Renderers[HistoryDocument](terminal=terminal, json=json_text, markdown=markdown, html=html)
