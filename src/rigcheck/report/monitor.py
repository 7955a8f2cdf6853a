"""Every rendering of `rigcheck monitor`: the live view (a rich table refreshed while sampling) and the
``rigcheck.monitor/2`` summary in the four formats (terminal, JSON, Markdown, HTML)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from rigcheck.model.monitor import MonitorDocument, MonitorGpu
from rigcheck.model.telemetry import Sample, TraceGpu
from rigcheck.report.common import md_cell, md_prose
from rigcheck.report.render import Renderers, json_text
from rigcheck.units import fmt_or_na, plural

if TYPE_CHECKING:
    from rigcheck.monitor.sampler import SamplerStats
    from rigcheck.monitor.session import History

_BLOCKS = "▁▂▃▄▅▆▇█"
_LIVE_HEADERS = ("GPU", "name", "power", "temp", "SM clock", "util", "clock-event reasons", "power hist.", "temp hist.")


# --- the live view -----------------------------------------------------------------------------------------
def sparkline(values: list[float | None], lo: float, hi: float) -> str:
    """One block character per value, scaled from ``lo`` to ``hi``; a blank for a missing value."""
    span = hi - lo if hi > lo else 1.0
    out = []
    for v in values:
        if v is None:
            out.append(" ")
            continue
        level = round((min(max(v, lo), hi) - lo) / span * (len(_BLOCKS) - 1))
        out.append(_BLOCKS[level])
    return "".join(out)


def _of(value: float | None, limit: float | None, unit: str) -> Text:
    if value is None:
        return Text("n/a", style="dim")
    text = f"{value:.0f}"
    text += f" / {limit:.0f} {unit}" if limit is not None else f" {unit}"
    style = ""
    if limit:
        share = value / limit
        style = "bold red" if share >= 0.98 else "yellow" if share >= 0.9 else ""
    return Text(text, style=style)


def live_view(
    latest: Mapping[int, Sample], gpus: Mapping[int, TraceGpu], history: History, stats: SamplerStats
) -> Group:
    """The live table: one row per GPU, and the sampler's counts."""
    table = Table(box=None, pad_edge=False, header_style="bold")
    for header in _LIVE_HEADERS:
        table.add_column(header, no_wrap=True)
    for i in sorted(set(gpus) | set(latest)):
        info = gpus.get(i, TraceGpu(index=i))
        s = latest.get(i)
        if s is None:
            table.add_row(str(i), info.name or "", Text("waiting for the first poll", style="dim"))
            continue
        if s.lost:
            table.add_row(str(i), info.name or "", Text(f"LOST at {s.t_s:.1f} s (fell off the bus)", style="bold red"))
            continue
        reasons = [r for r in (s.reasons or []) if r != "idle"]
        reason_text = (
            Text("n/a", style="dim")
            if s.reasons is None
            else Text(", ".join(reasons) or ("idle" if s.reasons else "none"), style="yellow" if reasons else "")
        )
        limit = s.power_enforced_limit_w or info.power_default_limit_w
        slowdown = info.temp_slowdown_c
        table.add_row(
            str(i),
            info.name or "",
            _of(s.power_draw_w, limit, "W"),
            _of(s.temp_c, slowdown, "C"),
            _of(s.sm_clock_mhz, s.sm_clock_max_mhz, "MHz"),
            Text(f"{s.utilization_gpu_percent:.0f} %") if s.utilization_gpu_percent is not None else Text("n/a"),
            reason_text,
            sparkline(list(history.power.get(i, [])), 0.0, limit or 1000.0),
            sparkline(list(history.temp.get(i, [])), 20.0, slowdown or 100.0),
        )
    footer = Text(f"{stats.polls} polls, {stats.missed_deadlines} missed deadlines; Ctrl-C to stop", style="dim")
    return Group(table, footer)


# --- the summary document ----------------------------------------------------------------------------------
_SUMMARY_HEADERS = ("GPU", "name", "samples", "power median / max", "temp max / slowdown", "SM clock median / min")


def _row(g: MonitorGpu) -> tuple[str, ...]:
    s = g.summary
    return (
        f"GPU{g.index}",
        g.name or "",
        str(s.samples),
        f"{fmt_or_na(s.power_draw_w_median, 'W')} / {fmt_or_na(s.power_draw_w_max, 'W')}",
        f"{fmt_or_na(s.temp_c_max, 'C')} / {fmt_or_na(g.temp_slowdown_c, 'C')}",
        f"{fmt_or_na(s.sm_clock_mhz_median, 'MHz')} / {fmt_or_na(s.sm_clock_mhz_min, 'MHz')}",
    )


def _notes(doc: MonitorDocument) -> list[str]:
    """What the table does not show: lost GPUs, unreadable fields, the file, the sampler's costs."""
    lines = [f"GPU{g.index} lost at {g.summary.lost_at_s:.1f} s" for g in doc.gpus if g.summary.lost_at_s is not None]
    lines += [
        f"GPU{g.index} could not give: " + ", ".join(f"{k} ({v.value})" for k, v in g.unavailable.items())
        for g in doc.gpus
        if g.unavailable
    ]
    if doc.missing_functions:
        lines.append("NVML functions this driver lacks: " + ", ".join(doc.missing_functions))
    if doc.file is not None:
        lines.append(f"every sample logged to {doc.file}")
    st = doc.sampler
    mean = f", {st.poll_us_mean:.0f} µs a poll" if st.poll_us_mean is not None else ""
    lines.append(
        f"{plural(st.polls, 'poll')}, {plural(st.samples, 'sample')}, "
        f"{plural(st.missed_deadlines, 'missed deadline')}{mean}"
    )
    return lines


def _title(doc: MonitorDocument) -> str:
    every = f"every {doc.interval_s:g} s"
    cut = " (interrupted)" if doc.interrupted else ""
    return f"rigcheck monitor: {doc.duration_s:.1f} s, {every}{cut}"


def terminal(doc: MonitorDocument) -> RenderableType:
    table = Table(box=None, pad_edge=False, header_style="bold")
    for header in _SUMMARY_HEADERS:
        table.add_column(header, no_wrap=True)
    for g in doc.gpus:
        table.add_row(*_row(g))
    return Group(Text(_title(doc), style="bold"), table, *(Text(line, style="dim") for line in _notes(doc)))


def markdown(doc: MonitorDocument) -> str:
    out = [f"# {_title(doc)}", ""]
    if doc.started_at:
        out += [f"Started {doc.started_at}.", ""]
    out.append("| " + " | ".join(_SUMMARY_HEADERS) + " |")
    out.append("|" + "---|" * len(_SUMMARY_HEADERS))
    out += ["| " + " | ".join(md_cell(cell) for cell in _row(g)) + " |" for g in doc.gpus]
    out += ["", *(f"- {md_prose(line)}" for line in _notes(doc))]
    return "\n".join(out) + "\n"


def html(doc: MonitorDocument) -> str:
    from rigcheck.report.html import esc, footer, page

    head = "".join(f"<th>{esc(h)}</th>" for h in _SUMMARY_HEADERS)
    rows = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in _row(g)) + "</tr>" for g in doc.gpus)
    notes = "".join(f"<li>{esc(line)}</li>" for line in _notes(doc))
    started = f"<p class='muted'>started {esc(doc.started_at)}</p>" if doc.started_at else ""
    body = (
        f"<header><h1>{esc(_title(doc))}</h1>{started}</header>"
        f'<section id="summary"><table class="overview"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'
        f"<ul>{notes}</ul></section>{footer()}"
    )
    return page("rigcheck monitor", body)


RENDERERS: Renderers[MonitorDocument] = Renderers(terminal=terminal, json=json_text, markdown=markdown, html=html)
