"""HTML reports (`--html FILE`): one self-contained page that opens offline and prints well.

Nothing is fetched and nothing runs: no script, the style is inline, fonts are the system's, and the
plots are inline SVG drawn by :mod:`rigcheck.report.svg`. A Content-Security-Policy in the page forbids
any network load should a future edit slip one in. Every string from the data is escaped.

- :func:`doctor_html` — the doctor report: machine, GPUs, findings with advice, topology grid, passed checks.
- :func:`burn_html` — a burn trace: per GPU the verdict, the numbers and plots over time.
- :func:`bench_html` — a ``rigcheck.bench/1`` document: chart, result table, the P2P comparison.
- :func:`write_html` — write the page (the CLI's `--html FILE`).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import operator
import os
import tempfile
from collections import Counter
from collections.abc import Iterable, Sequence
from html import escape
from pathlib import Path
from typing import Any

from rigcheck.errors import InputError
from rigcheck.facts.legend import KIND_MEANING, LINK_CODES, LinkKind, kind_of
from rigcheck.model import CLOCK_EVENT_REASONS, Finding, GpuPair, Severity, TopoMatrix
from rigcheck.model.telemetry import GpuBurnAnalysis, Sample, Trace
from rigcheck.report.base import (
    MISSING_WORDS,
    SEVERITY_ORDER,
    DoctorReport,
    group_findings,
    pcie_text,
    subjects_list,
    subjects_text,
    value_text,
)
from rigcheck.report.summary import machine_lines
from rigcheck.report.svg import (
    Axis,
    Band,
    Bar,
    HLine,
    Lane,
    Series,
    bar_chart,
    lane_chart,
    lane_label_width,
    line_chart,
)
from rigcheck.report.terminal import result_line
from rigcheck.report.topology import UNKNOWN_LINK, explain_code, explain_pair, sorted_pairs, topology_from_pairs
from rigcheck.report.topology import summarize_topology as topology_summary

__all__ = [
    "CSP",
    "GUIDE_BANDS",
    "KIND_COLOURS",
    "REASON_COLOURS",
    "REASON_WORDS",
    "bench_html",
    "burn_html",
    "doctor_html",
    "page",
    "write_html",
]

# No network, no script: only inline style and data: images. (default-src does not cover these two.)
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"

# Link kinds, in the terminal's colour families (report/topology.py): green NVLink, cyan PCIe below the
# CPU, yellow through the CPU, red across sockets. (background, text/border)
KIND_COLOURS: dict[LinkKind, tuple[str, str]] = {
    "nvlink": ("#bbf7d0", "#14532d"),
    "pcie_switch": ("#a5f3fc", "#164e63"),
    "pcie_bridges": ("#e0f7fa", "#155e75"),
    "host_bridge": ("#fef08a", "#713f12"),
    "numa_local": ("#fde68a", "#78350f"),
    "cross_numa": ("#fecaca", "#7f1d1d"),
}
_KIND_WORDS: dict[LinkKind, str] = {
    "nvlink": "NVLink",
    "pcie_switch": "PCIe switch",
    "pcie_bridges": "PCIe bridges",
    "host_bridge": "CPU host bridge",
    "numa_local": "within a NUMA node",
    "cross_numa": "across NUMA nodes",
}

# The guide's temperature words (under 80 C good, 70–75 C excellent, throttling from about 84–90 C).
GUIDE_BANDS: tuple[tuple[float, float, str, str], ...] = (
    (-50.0, 75.0, "excellent ≤ 75 C", "#e7f6ec"),
    (75.0, 80.0, "good 75–80 C", "#f1f8dc"),
    (80.0, 84.0, "warm 80–84 C", "#fdf5d3"),
    (84.0, 90.0, "guide's throttling range 84–90 C", "#fde4d0"),
)

REASON_WORDS: dict[str, str] = {
    "idle": "idle",
    "applications_clocks_setting": "application clocks",
    "sw_power_cap": "power cap (SW)",
    "hw_slowdown": "HW slowdown",
    "sync_boost": "sync boost",
    "sw_thermal_slowdown": "thermal slowdown (SW)",
    "hw_thermal_slowdown": "thermal slowdown (HW)",
    "hw_power_brake_slowdown": "power brake (HW)",
    "display_clock_setting": "display clock",
}
REASON_COLOURS: dict[str, str] = {
    "idle": "#94a3b8",
    "applications_clocks_setting": "#8b5cf6",
    "sw_power_cap": "#f59e0b",
    "hw_slowdown": "#dc2626",
    "sync_boost": "#3b82f6",
    "sw_thermal_slowdown": "#ea580c",
    "hw_thermal_slowdown": "#9a3412",
    "hw_power_brake_slowdown": "#b91c1c",
    "display_clock_setting": "#64748b",
}
_GPU_PALETTE = ("#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#a16207", "#db2777")

_CSS = """
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  font-size: 15px; line-height: 1.45; color: #0f172a; background: #fff; margin: 0 auto; padding: 24px 32px;
  max-width: 1200px; }
h1 { font-size: 1.6em; margin: 0 0 .2em; }
h2 { font-size: 1.25em; margin: 1.6em 0 .5em; border-bottom: 1px solid #cbd5e1; padding-bottom: .2em; }
h3 { font-size: 1.05em; margin: 1.2em 0 .4em; }
code, .mono { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, "Liberation Mono", monospace;
  font-size: .9em; }
table { border-collapse: collapse; margin: .4em 0 1em; }
th, td { border: 1px solid #cbd5e1; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f1f5f9; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.na { color: #64748b; font-style: italic; }
.muted { color: #475569; }
ul.machine { list-style: none; padding: 0; margin: .3em 0; color: #334155; }
.result { font-weight: 600; padding: 6px 10px; border-radius: 4px; display: inline-block; margin: .4em 0; }
.result.bad { background: #fee2e2; color: #7f1d1d; }
.result.good { background: #dcfce7; color: #14532d; }
.result.warn { background: #fef3c7; color: #78350f; }
.badge { display: inline-block; min-width: 5.2em; text-align: center; font-weight: 700; font-size: .8em;
  padding: 1px 6px; border-radius: 3px; border: 1px solid currentColor; letter-spacing: .03em; }
.sev-fail { color: #991b1b; background: #fee2e2; }
.sev-warn { color: #92400e; background: #fef3c7; }
.sev-unknown { color: #6b21a8; background: #f3e8ff; }
.sev-info { color: #155e75; background: #e0f2fe; }
.sev-ok { color: #166534; background: #dcfce7; }
ol.findings { list-style: none; padding: 0; margin: 0; }
li.finding { padding: 6px 0 8px; border-bottom: 1px solid #e2e8f0; display: grid; grid-template-columns: 5.8em 1fr;
  gap: 0 .7em; align-items: start; }
li.finding .badge { margin-top: .15em; }
li.finding .subject { font-weight: 600; }
li.finding .fid { color: #64748b; }
.advice { margin: .2em 0 0; }
.advice::before { content: "→ "; }
.evidence, .subjects { margin: .1em 0 0; color: #475569; font-size: .92em; }
tr.unreadable td { background: #fee2e2; color: #7f1d1d; font-weight: 600; }
table.topo td.link { text-align: center; font-family: ui-monospace, Menlo, Consolas, monospace;
  font-weight: 600; min-width: 3.4em; }
table.topo td.k-self { background: #f1f5f9; color: #94a3b8; }
table.topo td.k-unknown { background: #fff; color: #64748b; border-style: dashed; }
ul.legend { list-style: none; padding: 0; display: flex; flex-wrap: wrap; gap: 6px 18px; }
ul.legend li.absent { opacity: .5; }
ul.pairs { list-style: none; padding: 0; }
table.gpus td:not(:nth-child(2)):not(:last-child), table.results td { white-space: nowrap; }
table.gpus td:nth-child(2) { min-width: 13em; }
.scroll { overflow-x: auto; }
.swatch { display: inline-block; width: 1.1em; height: 1.1em; vertical-align: -.2em; border: 1px solid #64748b;
  margin-right: .35em; }
.summary-line { font-weight: 600; }
section.gpu { border-top: 3px solid #e2e8f0; margin-top: 1.6em; }
.verdict { font-size: 1.05em; font-weight: 700; padding: 4px 10px; border-radius: 4px; display: inline-block; }
.v-excellent, .v-good { background: #dcfce7; color: #14532d; }
.v-hot { background: #fef3c7; color: #78350f; }
.v-throttling { background: #fee2e2; color: #7f1d1d; }
.v-unknown { background: #f1f5f9; color: #334155; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: .5em 0; }
dl.facts dt { color: #475569; }
dl.facts dd { margin: 0; font-variant-numeric: tabular-nums; }
figure { margin: .6em 0 1em; }
figcaption { font-weight: 600; margin-bottom: .2em; }
svg.chart { display: block; max-width: 100%; height: auto; }
svg.chart text { font-family: system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif; }
.banner { padding: 8px 12px; border-radius: 4px; background: #fee2e2; color: #7f1d1d; font-weight: 600; }
.banner.warn-banner { background: #fef3c7; color: #78350f; }
details.run { margin: .6em 0; }
footer { margin-top: 2.5em; color: #64748b; font-size: .85em; }
details summary { cursor: pointer; font-weight: 600; }
@media print {
  body { padding: 0; max-width: none; font-size: 11pt; }
  section.gpu, figure, table, li.finding { break-inside: avoid; }
  h2, h3 { break-after: avoid; }
  .result, .badge, .verdict, td, .swatch, svg { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
"""


# ---------------------------------------------------------------------------------------------- basics


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def page(title: str, body: str) -> str:
    """The whole document around ``body`` (already HTML): charset, CSP, inline style, no script."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n'
        '<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_e(CSP)}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="referrer" content="no-referrer">\n'
        f"<title>{_e(title)}</title>\n"
        f"<style>{_CSS}</style>\n"
        "</head>\n<body>\n"
        f"{body}\n"
        "</body>\n</html>\n"
    )


def write_html(path: Path, html: str) -> None:
    """Write the page to ``path`` whole or not at all (a temporary file renamed into place).

    Raises InputError (exit 2, one line naming the file) when it cannot be written.
    """
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    tmp_name: str | None = None
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(html)
        os.chmod(tmp_name, 0o644)
        os.replace(tmp_name, target)
        tmp_name = None
    except OSError as exc:
        raise InputError(f"cannot write the report: {exc.strerror or exc}", path=str(path)) from exc
    finally:
        if tmp_name is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)


def _num(value: float | None, unit: str = "", digits: int | None = None) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    if digits is None:
        a = abs(value)
        digits = 0 if a >= 100 else 1 if a >= 10 else 2 if a >= 1 else 3
    text = f"{value:,.{digits}f}"
    return f"{text}%" if unit == "%" else f"{text} {unit}".rstrip()


def _cell(text: str) -> str:
    """A table cell; "n/a (...)" values greyed so a missing figure stands out as missing."""
    cls = ' class="na"' if text.startswith("n/a") else ""
    return f"<td{cls}>{_e(text)}</td>"


def _footer(extra: str = "") -> str:
    from rigcheck import __version__

    return f"<footer>rigcheck {_e(__version__)}{_e(extra)} — a self-contained page: nothing is fetched.</footer>"


# ---------------------------------------------------------------------------------------------- doctor


def _gpu_table(report: DoctorReport) -> str:
    snap = report.snapshot
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
                f'<td colspan="{len(head) - 1}">unreadable ({_e(MISSING_WORDS[g.read_error])}){_e(detail)}</td></tr>'
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
        rows.append(f'<tr data-gpu="{g.index}">' + "".join(_cell(c) for c in cells) + "</tr>")
    rows.append("</tbody></table>")
    return "".join(rows)


def _prose(text: str) -> str:
    """Escaped text with `backticked` commands set as code (the checks write commands that way)."""
    parts = _e(text).split("`")
    if len(parts) % 2 == 0:  # an unmatched backtick: leave the text as it is
        return _e(text)
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def _finding_item(f: Finding, subjects: list[str]) -> str:
    sev = f.severity.value
    parts = [
        f'<li class="finding" data-severity="{_e(sev)}" data-id="{_e(f.id)}">',
        f'<span class="badge sev-{_e(sev)}">{_e(sev.upper())}</span><div class="body">',
        f'<span class="subject">{_e(subjects_text(subjects))}</span> ',
        f'<span class="message">{_prose(f.message)}</span> <code class="fid">[{_e(f.id)}]</code>',
    ]
    if len(subjects) > 1:
        parts.append(f'<div class="subjects">{_e(subjects_list(subjects, limit=28))}</div>')
    evidence = [f"measured: {f.measured}" if f.measured else "", f"expected: {f.expected}" if f.expected else ""]
    evidence = [x for x in evidence if x]
    if f.source:
        evidence.append(f"source: {f.source}")
    if evidence:
        parts.append(f'<div class="evidence">{_e("; ".join(evidence))}</div>')
    if f.advice:
        parts.append(f'<div class="advice">{_prose(f.advice)}</div>')
    parts.append("</div></li>")
    return "".join(parts)


def _findings(report: DoctorReport) -> str:
    out = ['<section id="findings"><h2>Findings</h2>']
    counts = ", ".join(f"{n} {sev}" for sev, n in report.counts.items() if n)
    out.append(f'<p class="muted">{_e(counts or "no findings")}; exit code {report.exit_code}.</p>')
    for sev in SEVERITY_ORDER:
        if sev is Severity.OK:
            continue
        groups = group_findings(report.by_severity(sev))
        if not groups:
            continue
        out.append(f'<h3 class="sev-heading" data-severity="{sev.value}">{_e(sev.value.upper())} ({len(groups)})</h3>')
        out.append('<ol class="findings">' + "".join(_finding_item(f, subs) for f, subs in groups) + "</ol>")
    out.append("</section>")
    passed = report.by_severity(Severity.OK)
    if passed:
        per = Counter(f.category for f in passed)
        cats = ", ".join(f"{c} {n}" for c, n in sorted(per.items()))
        out.append(
            f'<section id="passed"><details><summary>{len(passed)} checks passed ({_e(cats)})</summary>'
            '<ol class="findings">'
            + "".join(_finding_item(f, subs) for f, subs in group_findings(passed))
            + "</ol></details></section>"
        )
    return "".join(out)


def _link_cell(code: str, title: str) -> str:
    kind = kind_of(code)
    if code == "X":
        return '<td class="link k-self" data-kind="self" title="the GPU itself">X</td>'
    if kind is None:
        return f'<td class="link k-unknown" data-kind="unknown" title="{_e(title)}">{_e(code)}</td>'
    bg, fg = KIND_COLOURS[kind]
    return (
        f'<td class="link k-{kind}" data-kind="{kind}" style="background:{bg};color:{fg}" '
        f'title="{_e(title)}">{_e(code)}</td>'
    )


def topology_html(topo: TopoMatrix, pairs: list[GpuPair]) -> str:
    """The matrix as a grid coloured by link kind, with affinities, a legend, each link explained, a summary."""
    columns = [
        (title, attr)
        for title, attr in (
            ("CPU affinity", "cpu_affinity"),
            ("NUMA affinity", "numa_affinity"),
            ("GPU NUMA ID", "gpu_numa_id"),
        )
        if any(getattr(g, attr) is not None for g in topo.gpus)
    ]
    gpu_by_label = {f"GPU{g.index}": g for g in topo.gpus}
    out = ['<section id="topology"><h2>GPU topology</h2>']
    out.append('<table class="topo"><thead><tr><th></th>')
    out += [f'<th scope="col">{_e(label)}</th>' for label in topo.labels]
    out += [f"<th>{_e(t)}</th>" for t, _ in columns]
    out.append("</tr></thead><tbody>")
    for label, row in zip(topo.labels, topo.matrix, strict=False):
        out.append(f'<tr><th scope="row">{_e(label)}</th>')
        for other, code in zip(topo.labels, row, strict=False):
            title = f"{label} ↔ {other}: {explain_code(code)}" if code not in ("X", UNKNOWN_LINK) else code
            out.append(_link_cell(code, title))
        gpu = gpu_by_label.get(label)
        for _, attr in columns:
            value = getattr(gpu, attr) if gpu is not None else None
            out.append(f'<td class="mono">{_e(value or "")}</td>')
        out.append("</tr>")
    out.append("</tbody></table>")
    present = {kind_of(c) for row in topo.matrix for c in row}
    legend = ['<ul class="legend" aria-label="link kinds">']
    for kind, (bg, _fg) in KIND_COLOURS.items():
        codes = "/".join(c.code for c in LINK_CODES.values() if c.kind == kind)
        cls = "" if kind in present else ' class="absent"'
        legend.append(
            f'<li{cls} data-kind="{kind}"><span class="swatch" style="background:{bg}"></span>'
            f"<strong>{_e(codes)}</strong> {_e(_KIND_WORDS[kind])}: {_e(KIND_MEANING[kind])}</li>"
        )
    legend.append("</ul>")
    out += legend
    if topo.nics:
        nics = ", ".join(f"{n.label} = {n.name or 'name not printed'}" for n in topo.nics)
        out.append(f"<p>NICs: {_e(nics)}</p>")
    groups: dict[str, list[GpuPair]] = {}
    for p in sorted_pairs(pairs):
        groups.setdefault(p.link if p.link is not None else UNKNOWN_LINK, []).append(p)
    if groups:
        out.append('<ul class="pairs">')
        for code, members in groups.items():
            names = ", ".join(f"{p.a}–{p.b}" for p in members)
            sentence = explain_pair(members[0], topo.gpus) if len(members) == 1 else explain_code(code)
            sentence = sentence.removeprefix(f"{code}: ")
            code_kind = kind_of(code)
            bg = KIND_COLOURS[code_kind][0] if code_kind is not None else "#fff"
            out.append(
                f'<li><span class="swatch" style="background:{bg}"></span><code>{_e(code)}</code> '
                f"GPU pair{'s' if len(members) != 1 else ''} {_e(names)}: {_e(sentence)}</li>"
            )
        out.append("</ul>")
    out.append(f'<p class="summary-line">{_e(topology_summary(topo, pairs))}</p></section>')
    return "".join(out)


def _result_class(report: DoctorReport) -> str:
    if report.exit_code:
        return "bad"
    return "warn" if report.counts.get("warn") or report.counts.get("unknown") else "good"


def doctor_html(report: DoctorReport) -> str:
    """The doctor report as one self-contained HTML page."""
    snap = report.snapshot
    verdict = result_line(report).plain
    body = [
        "<header><h1>rigcheck doctor</h1>",
        '<ul class="machine">' + "".join(f"<li>{_e(line)}</li>" for line in machine_lines(snap)) + "</ul>",
        f'<p class="result {_result_class(report)}">{_e(verdict)}</p></header>',
    ]
    if snap.gpus:
        body.append(f'<section id="gpus"><h2>GPUs</h2>{_gpu_table(report)}</section>')
    body.append(_findings(report))
    if snap.topology is not None or len(snap.gpus) > 1:
        topo = snap.topology or topology_from_pairs(len(snap.gpus), snap.pairs, [])
        body.append(topology_html(topo, snap.pairs))
    if snap.missing_functions or snap.diagnostics:
        items = [f"<li>NVML functions this driver lacks: {_e(', '.join(snap.missing_functions))}</li>"]
        items = items if snap.missing_functions else []
        items += [
            f"<li>{_e(d.source)}{_e(f' GPU{d.gpu}' if d.gpu is not None else '')}: {_e(d.message)}</li>"
            for d in snap.diagnostics
        ]
        body.append(
            f'<section id="diagnostics"><details><summary>Diagnostics ({len(items)})</summary>'
            f"<ul>{''.join(items)}</ul></details></section>"
        )
    body.append(_footer(f"; snapshot taken {snap.created_at}" if snap.created_at else ""))
    title = f"rigcheck doctor — {snap.host.hostname}" if snap.host.hostname else "rigcheck doctor"
    return page(title, "\n".join(body))


# ---------------------------------------------------------------------------------------------- burn


def _verdict_class(verdict: str) -> str:
    word = verdict.strip().split(" ", 1)[0].lower().strip(",;:()")
    return f"v-{word}" if word in ("excellent", "good", "hot", "throttling") else "v-unknown"


def _series(samples: Sequence[Sample], attr: str, scale: float) -> list[tuple[float, float | None]]:
    """(t, value) per sample, a gap after a lost sample; ``scale`` turns seconds into the axis unit."""
    get = operator.attrgetter(attr)
    pts: list[tuple[float, float | None]] = []
    for s in samples:
        pts.append((s.t_s / scale, get(s)))
        if s.lost:
            pts.append((s.t_s / scale, None))
    return pts


def _has(samples: Sequence[Sample], attr: str) -> bool:
    return any(getattr(s, attr) is not None for s in samples)


def _reason_spans(samples: Sequence[Sample], interval: float, scale: float) -> dict[str, list[tuple[float, float]]]:
    """Per reason, the spans of time (axis units) during which it was active, a sample lasting to the next."""
    spans: dict[str, list[tuple[float, float]]] = {}
    for i, s in enumerate(samples):
        if not s.reasons:
            continue
        nxt = samples[i + 1].t_s if i + 1 < len(samples) else s.t_s + interval
        end = min(nxt, s.t_s + 5 * interval)  # a long gap in the readings is not shown as active
        for r in s.reasons:
            spans.setdefault(r, []).append((s.t_s / scale, end / scale))
    return spans


def _facts(a: GpuBurnAnalysis) -> str:
    rows: list[tuple[str, str]] = [
        ("time under load", _num(a.loaded_s, "s", 0)),
        (
            "power, median under load / limit",
            f"{_num(a.power_w_median_loaded, 'W', 0)} / {_num(a.power_limit_w, 'W', 0)}",
        ),
    ]
    if a.time_to_power_cap_s is not None:
        rows.append(("time to reach the power cap", _num(a.time_to_power_cap_s, "s", 1)))
    slowdown = _num(a.temp_slowdown_c, "C", 0) if a.temp_slowdown_c is not None else "not in this trace"
    rows.append(("temperature, peak / slowdown threshold", f"{_num(a.temp_c_max, 'C', 0)} / {slowdown}"))
    if a.slowdown_margin_c is not None:
        rows.append(("margin to slowdown", _num(a.slowdown_margin_c, "C", 0)))
    if a.temp_rise_c is not None or a.temp_plateau_c is not None:
        rows.append(("temperature rise / plateau", f"{_num(a.temp_rise_c, 'C', 0)} / {_num(a.temp_plateau_c, 'C', 0)}"))
    clock = _num(a.sm_clock_mhz_median_loaded, "MHz", 0)
    if a.sm_clock_mhz_first is not None:
        clock += f" (first seconds {_num(a.sm_clock_mhz_first, 'MHz', 0)}"
        clock += f", a drop of {_num(a.sm_clock_drop_percent, '%', 1)})" if a.sm_clock_drop_percent is not None else ")"
    rows.append(("SM clock, median under load", clock))
    shares = sorted(a.reasons_time_fraction.items(), key=lambda kv: -kv[1])
    rows.append(
        (
            "share of loaded time per reason",
            ", ".join(f"{REASON_WORDS.get(k, k)} {_share_text(v)}" for k, v in shares if v > 0) or "none",
        )
    )
    if a.tflops_sustained is not None or a.tflops_first_10s is not None:
        rows.append(
            ("TFLOPS sustained / first 10 s", f"{_num(a.tflops_sustained, '', 1)} / {_num(a.tflops_first_10s, '', 1)}")
        )
    if a.errors is not None:
        rows.append(("mismatched results (silent corruption)", str(a.errors)))
    if a.lost_at_s is not None:
        rows.append(("GPU lost at", _num(a.lost_at_s, "s", 1)))
    return '<dl class="facts">' + "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in rows) + "</dl>"


def _time_axis(duration_s: float) -> tuple[Axis, float]:
    if duration_s > 1800:
        return Axis("time since start", "min"), 60.0
    return Axis("time since start", "s"), 1.0


def _by_gpu(trace: Trace) -> dict[int, list[Sample]]:
    """The samples of each GPU, in one pass (Trace.for_gpu walks the whole trace each time)."""
    out: dict[int, list[Sample]] = {i: [] for i in trace.gpu_indices()}
    for s in trace.samples:
        out.setdefault(s.gpu, []).append(s)
    return out


def _gpu_plots(
    trace: Trace, samples: list[Sample], index: int, a: GpuBurnAnalysis | None, t_range: tuple[float, float]
) -> str:
    info = trace.gpus.get(index)
    if not samples:
        return '<p class="na">No samples of this GPU in the trace.</p>'
    x_axis, scale = _time_axis(t_range[1] - t_range[0])
    x_lo, x_hi = t_range[0] / scale, t_range[1] / scale
    x_axis = Axis(x_axis.label, x_axis.unit, lo=x_lo, hi=x_hi)
    lost = [(s.t_s / scale, "GPU lost") for s in samples if s.lost]
    uid = f"gpu{index}"
    figs: list[str] = []

    def fig(kind: str, caption: str, svg: str) -> None:
        figs.append(f'<figure class="plot" data-plot="{kind}"><figcaption>{_e(caption)}</figcaption>{svg}</figure>')

    lanes = _reason_lanes(samples, trace.interval_s or _median_step(samples), scale, t_range)
    left = lane_label_width(lanes or [])  # every chart of the GPU gets the same time axis, left edge included

    # Power against the limit.
    series = [Series("power draw", _series(samples, "power_w", scale), "#2563eb")]
    hlines: list[HLine] = []
    if _has(samples, "power_limit_w"):
        series.append(Series("power limit", _series(samples, "power_limit_w", scale), "#dc2626", dash="7 4"))
    elif a is not None and a.power_limit_w is not None:
        hlines.append(HLine(a.power_limit_w, f"power limit {a.power_limit_w:.0f} W", "#dc2626"))
    limit_now = next((s.power_limit_w for s in reversed(samples) if s.power_limit_w is not None), None)
    if info is not None and info.power_default_limit_w is not None and info.power_default_limit_w != limit_now:
        hlines.append(HLine(info.power_default_limit_w, f"default limit {info.power_default_limit_w:.0f} W", "#64748b"))
    if _has(samples, "power_w"):
        desc = "Power draw over time against the power limit."
        if a is not None:
            desc += (
                f" Median under load {_num(a.power_w_median_loaded, 'W', 0)}, limit {_num(a.power_limit_w, 'W', 0)}."
            )
        fig(
            "power",
            "Power against the limit",
            line_chart(
                uid=f"{uid}-power",
                left=left,
                title=f"GPU{index} power (W)",
                desc=desc,
                x=x_axis,
                y=Axis("power", "W"),
                series=series,
                hlines=hlines,
                vlines=lost,
                y_zero=True,
            ),
        )
    # Temperature against the card's thresholds, the guide's bands shaded.
    if _has(samples, "temp_c"):
        series = [Series("GPU temperature", _series(samples, "temp_c", scale), "#0f172a", width=1.8)]
        if _has(samples, "temp_memory_c"):
            series.append(Series("memory temperature", _series(samples, "temp_memory_c", scale), "#7c3aed", width=1.2))
        hlines = []
        slowdown = info.temp_slowdown_c if info is not None else None
        if slowdown is None and a is not None:
            slowdown = a.temp_slowdown_c
        if slowdown is not None:
            hlines.append(HLine(slowdown, f"slowdown {slowdown:.0f} C", "#c2410c"))
        if info is not None and info.temp_shutdown_c is not None:
            hlines.append(HLine(info.temp_shutdown_c, f"shutdown {info.temp_shutdown_c:.0f} C", "#7f1d1d", "2 3"))
        if info is not None and info.temp_max_operating_c is not None:
            hlines.append(
                HLine(info.temp_max_operating_c, f"max operating {info.temp_max_operating_c:.0f} C", "#a16207", "4 2")
            )
        temps = [v for s in samples for v in (s.temp_c, s.temp_memory_c) if v is not None]
        lo = min(20.0, math.floor((min(temps) - 5) / 10) * 10)
        hi = max([92.0, max(temps) + 3] + [h.value + 3 for h in hlines])
        bands = [Band(b_lo, b_hi, label, colour) for b_lo, b_hi, label, colour in GUIDE_BANDS]
        desc = (
            "Temperature over time, with the guide's bands shaded (excellent up to 75 C, good to 80 C, warm to "
            "84 C, the guide's throttling range 84 to 90 C)"
            + (
                f" and the card's slowdown threshold at {slowdown:.0f} C."
                if slowdown is not None
                else "; the card's slowdown threshold is not in this trace."
            )
        )
        caption = "Temperature against the card's thresholds"
        if slowdown is None:
            caption += " (slowdown threshold not in this trace)"
        fig(
            "temperature",
            caption,
            line_chart(
                uid=f"{uid}-temp",
                left=left,
                title=f"GPU{index} temperature (C)",
                desc=desc,
                x=x_axis,
                y=Axis("temperature", "C", lo=lo, hi=hi),
                series=series,
                hlines=hlines,
                bands=bands,
                vlines=lost,
            ),
        )
    # SM clock against its maximum.
    if _has(samples, "sm_clock_mhz"):
        series = [Series("SM clock", _series(samples, "sm_clock_mhz", scale), "#0891b2")]
        if _has(samples, "sm_clock_max_mhz"):
            series.append(Series("max SM clock", _series(samples, "sm_clock_max_mhz", scale), "#475569", dash="7 4"))
        hlines = []
        if a is not None and a.sm_clock_mhz_median_loaded is not None:
            hlines.append(
                HLine(
                    a.sm_clock_mhz_median_loaded,
                    f"median under load {a.sm_clock_mhz_median_loaded:.0f} MHz",
                    "#0e7490",
                    "2 3",
                )
            )
        fig(
            "clock",
            "SM clock against its maximum",
            line_chart(
                uid=f"{uid}-clock",
                left=left,
                title=f"GPU{index} SM clock (MHz)",
                desc="SM clock over time against the card's maximum SM clock.",
                x=x_axis,
                y=Axis("SM clock", "MHz"),
                series=series,
                hlines=hlines,
                vlines=lost,
                y_zero=True,
            ),
        )
    # Throttle reasons as bands along the time axis, one lane per reason that occurs.
    if lanes is not None:
        desc = (
            "Clock-event (throttle) reasons over time, one lane each, with their share of the trace: "
            + ("; ".join(lane.label for lane in lanes) if lanes else "none was active")
            + "."
        )
        fig(
            "reasons",
            "Throttle reasons over time (share of the whole trace)",
            lane_chart(
                uid=f"{uid}-reasons",
                title=f"GPU{index} clock-event reasons",
                desc=desc,
                x=x_axis,
                x_range=(x_lo, x_hi),
                lanes=lanes,
                left=left,
            ),
        )
    return "".join(figs)


def _reason_lanes(
    samples: Sequence[Sample], interval: float, scale: float, t_range: tuple[float, float]
) -> list[Lane] | None:
    """One lane per reason that occurs, labelled with its share of the trace; None when reasons were not read."""
    if all(s.reasons is None for s in samples):
        return None
    spans = _reason_spans(samples, interval, scale)
    duration = max(t_range[1] - t_range[0], 1e-9)
    order = [r for r in CLOCK_EVENT_REASONS if r in spans] + sorted(r for r in spans if r not in REASON_WORDS)
    lanes = []
    for r in order:
        share = sum(b - a for a, b in spans[r]) * scale / duration * 100
        lanes.append(Lane(f"{REASON_WORDS.get(r, r)} ({share:.0f}%)", spans[r], REASON_COLOURS.get(r, "#475569")))
    return lanes


def _median_step(samples: Sequence[Sample]) -> float:
    steps = sorted(b.t_s - a.t_s for a, b in itertools.pairwise(samples) if b.t_s > a.t_s)
    return steps[len(steps) // 2] if steps else 0.1


def _overview_chart(
    by_gpu: dict[int, list[Sample]], attr: str, label: str, unit: str, t_range: tuple[float, float]
) -> str:
    x_axis, scale = _time_axis(t_range[1] - t_range[0])
    x_axis = Axis(x_axis.label, x_axis.unit, lo=t_range[0] / scale, hi=t_range[1] / scale)
    series = [
        Series(
            f"GPU{i}",
            _series(samples, attr, scale),
            _GPU_PALETTE[n % len(_GPU_PALETTE)],
            dash=None if n < len(_GPU_PALETTE) else "6 3",
            width=1.3,
        )
        for n, (i, samples) in enumerate(sorted(by_gpu.items()))
    ]
    return line_chart(
        uid=f"all-{attr}",
        title=f"{label} of every GPU ({unit})",
        desc=f"{label} of every GPU over time on one chart, to spot the one that differs.",
        x=x_axis,
        y=Axis(label, unit),
        series=series,
        y_zero=attr != "temp_c",
    )


def burn_html(trace: Trace, analyses: list[GpuBurnAnalysis], title: str = "rigcheck burn") -> str:
    """A burn (or `burn --analyze`) as one page: per GPU the verdict, the numbers and plots over time."""
    by_index = {a.index: a for a in analyses}
    by_gpu = _by_gpu(trace)
    indices = sorted(set(by_gpu) | set(by_index))
    times = [s.t_s for s in trace.samples]
    t_range = (min(times), max(times)) if times else (0.0, 1.0)
    source = [f"trace: {trace.source}" + (f" ({trace.path})" if trace.path else "")]
    if trace.started_at:
        source.append(f"started {trace.started_at}")
    source.append(
        f"{len(trace.samples):,} samples of {len(indices)} GPU{'s' if len(indices) != 1 else ''} over "
        f"{t_range[1] - t_range[0]:.1f} s" + (f", every {trace.interval_s * 1000:.0f} ms" if trace.interval_s else "")
    )
    body = [f"<header><h1>{_e(title)}</h1>", '<ul class="machine">']
    body += [f"<li>{_e(line)}</li>" for line in source]
    body.append("</ul></header>")
    # Overview: one row per GPU.
    head = ("GPU", "verdict", "limited by", "power median / limit", "peak temp / slowdown", "SM clock median")
    body.append('<section id="overview"><h2>Summary</h2><table class="overview"><thead><tr>')
    body += [f"<th>{h}</th>" for h in head]
    body.append("</tr></thead><tbody>")
    for i in indices:
        a = by_index.get(i)
        if a is None:
            body.append(f'<tr><td><a href="#gpu{i}">GPU{i}</a></td><td colspan="5" class="na">not analysed</td></tr>')
            continue
        body.append(
            f'<tr><td><a href="#gpu{i}">GPU{i}</a></td>'
            f'<td><span class="verdict {_verdict_class(a.verdict)}">{_e(a.verdict)}</span></td>'
            f"<td>{_e(a.limiter)}</td>"
            f"<td>{_e(_num(a.power_w_median_loaded, 'W', 0))} / {_e(_num(a.power_limit_w, 'W', 0))}</td>"
            f"<td>{_e(_num(a.temp_c_max, 'C', 0))} / {_e(_num(a.temp_slowdown_c, 'C', 0))}</td>"
            f"<td>{_e(_num(a.sm_clock_mhz_median_loaded, 'MHz', 0))}</td></tr>"
        )
    body.append("</tbody></table></section>")
    if len(by_gpu) > 1:
        body.append('<section id="all-gpus"><h2>All GPUs together</h2>')
        for attr, label, unit in (("power_w", "power", "W"), ("temp_c", "temperature", "C")):
            if any(getattr(s, attr) is not None for s in trace.samples):
                body.append(
                    f'<figure class="plot" data-plot="all-{attr}"><figcaption>{_e(label.capitalize())} of every GPU'
                    f"</figcaption>{_overview_chart(by_gpu, attr, label, unit, t_range)}</figure>"
                )
        body.append("</section>")
    for i in indices:
        a = by_index.get(i)
        info = trace.gpus.get(i)
        name = f" — {info.name}" if info is not None and info.name else ""
        body.append(f'<section class="gpu" id="gpu{i}" data-gpu="{i}"><h2>GPU{i}{_e(name)}</h2>')
        if a is not None:
            body.append(
                f'<p><span class="verdict {_verdict_class(a.verdict)}">{_e(a.verdict)}</span> '
                f'<span class="muted">limited by: {_e(a.limiter)}</span></p>'
            )
            if a.advice:
                body.append(f'<p class="advice-text">{_e(a.advice)}</p>')
            body.append(_facts(a))
        body.append(_gpu_plots(trace, by_gpu.get(i, []), i, a, t_range))
        body.append("</section>")
    body.append(_footer())
    return page(title, "\n".join(body))


# ---------------------------------------------------------------------------------------------- bench

# Unit words in key names (DESIGN.md: units are in the names) and how a header shows them.
_KEY_UNITS: dict[str, str] = {
    "gbps": "GB/s",
    "tflops": "TFLOPS",
    "bytes": "bytes",
    "us": "µs",
    "ms": "ms",
    "s": "s",
    "w": "W",
    "c": "C",
    "mhz": "MHz",
    "gib": "GiB",
    "mib": "MiB",
    "percent": "%",
    "pct": "%",
}
_GENERIC_KEYS = ("unit", "repeats", "warmup", "sizes", "backend", "world_size", "method_version")
_STAT_KEYS = ("value", "median", "min", "max")
_SIZE_KEYS = ("size_bytes", "message_bytes", "bytes")
_Y_KEYS = ("busbw_gbps", "bandwidth_gbps", "algbw_gbps", "tflops", "value")


def _split_unit(key: str) -> tuple[str, str]:
    """``busbw_gbps`` -> ("busbw", "GB/s"), ``time_us_median`` -> ("time median", "µs"), ``samples_per_s`` ->
    ("samples/s", ""); a key without a unit word keeps its name."""
    if key.endswith("_per_s"):
        return key[: -len("_per_s")].replace("_", " ") + "/s", ""
    words = key.split("_")
    for i in range(len(words) - 1, 0, -1):
        unit = _KEY_UNITS.get(words[i].lower())
        if unit is not None:
            return " ".join(words[:i] + words[i + 1 :]), unit
    return key.replace("_", " "), ""


def _size_text(n: float) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover - the loop always returns


def _value_text(key: str, value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        if "p2p" in key.lower():
            return "Y" if value else "N"
        return "yes" if value else "NO" if key == "correct" else "no"
    if isinstance(value, int | float) and key.endswith("_bytes"):
        return _size_text(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"
    if isinstance(value, int):
        return f"{value:,}" if abs(value) >= 10000 else str(value)
    if isinstance(value, list) and all(isinstance(v, int | float) for v in value):
        shown = ", ".join(_value_text("", v) for v in value[:6])
        return shown + (f", … ({len(value)} in all)" if len(value) > 6 else "")
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, default=str)
    return str(value)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _table(rows: Sequence[dict[str, Any]], keys: Sequence[str], unit: str | None, css: str) -> str:
    out = [f'<table class="{css}"><thead><tr>']
    for k in keys:
        if k in _STAT_KEYS and unit:
            header = f"{k} ({unit})"
        else:
            name, key_unit = _split_unit(k)
            header = f"{name} ({key_unit})" if key_unit and key_unit != "bytes" else name
        out.append(f'<th data-key="{_e(k)}">{_e(header)}</th>')
    out.append("</tr></thead><tbody>")
    for r in rows:
        out.append("<tr>")
        for k in keys:
            v = r.get(k)
            cls = "num" if _is_number(v) else ""
            bad = v is False and k == "correct"
            cls = (cls + " na" if v is None else cls) + (" bad" if bad else "")
            title = f' title="{_e(v)}"' if _is_number(v) and k.endswith("_bytes") else ""
            out.append(f'<td class="{cls.strip()}"{title}>{_e(_value_text(k, v))}</td>')
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _keys(rows: Iterable[dict[str, Any]]) -> list[str]:
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    return keys


def _varying(rows: Sequence[dict[str, Any]], key: str) -> bool:
    seen = {json.dumps(r.get(key), sort_keys=True, default=str) for r in rows}
    return len(seen) > 1


def _categorical(rows: Sequence[dict[str, Any]], keys: Sequence[str], exclude: Sequence[str]) -> list[str]:
    """Keys that tell rows apart without being measurements: strings, flags, shapes (ints without a unit)."""
    out = []
    for k in keys:
        if k in exclude or k in _STAT_KEYS or k in _GENERIC_KEYS or not _varying(rows, k):
            continue
        values = [r.get(k) for r in rows if r.get(k) is not None]
        flags_or_words = all(isinstance(v, str | bool) for v in values)
        shape = all(isinstance(v, int) and not isinstance(v, bool) for v in values) and not _split_unit(k)[1]
        if flags_or_words or shape:
            out.append(k)
    return out


def _row_label(r: dict[str, Any], cats: Sequence[str], with_name: bool) -> str:
    parts = [str(r.get("name", ""))] if with_name else []
    for k in cats:
        v = r.get(k)
        if isinstance(v, bool):
            parts.append(f"{k} {_value_text(k, v)}")
        elif isinstance(v, int):
            parts.append(f"{k}={v}")
        elif v is not None:
            # A short code ("Y", "N", "on") says nothing without its key.
            parts.append(f"{k} {v}" if len(str(v)) <= 3 else str(v))
    return " ".join(p for p in parts if p) or "result"


def _bench_chart(doc_id: str, rows: Sequence[dict[str, Any]], benchmark: str) -> str:
    """A chart chosen from the rows: a size sweep on a log2 axis, else one bar per row (per unit)."""
    keys = _keys(rows)
    size_key = next(
        (k for k in _SIZE_KEYS if k in keys and len({r.get(k) for r in rows if _is_number(r.get(k))}) > 1), None
    )
    if size_key is not None:
        y_key = next((k for k in _Y_KEYS if any(_is_number(r.get(k)) for r in rows)), None)
        if y_key is None:
            return ""
        y_name, y_unit = _split_unit(y_key)
        if y_key == "value":
            units = {str(r.get("unit")) for r in rows if r.get("unit")}
            y_name, y_unit = "value", units.pop() if len(units) == 1 else ""
        cats = _categorical(rows, keys, exclude=(size_key,))
        with_name = "name" in cats
        cats = [c for c in cats if c != "name"]
        groups: dict[str, list[dict[str, Any]]] = {}
        for r in rows:
            if _is_number(r.get(size_key)) and r.get(size_key, 0) > 0:
                groups.setdefault(_row_label(r, cats, with_name) if (cats or with_name) else y_name, []).append(r)
        series = []
        for n, (label, members) in enumerate(groups.items()):
            pts: list[tuple[float, float | None]] = [
                (float(r[size_key]), float(r[y_key]) if _is_number(r.get(y_key)) else None)
                for r in sorted(members, key=lambda r: float(r[size_key]))
            ]
            series.append(Series(label, pts, _GPU_PALETTE[n % len(_GPU_PALETTE)], markers=len(pts) <= 64))
        if not series:
            return ""
        ceilings = [
            HLine(float(rows[0][k]), f"{_split_unit(k)[0]} {float(rows[0][k]):.0f} {y_unit}", "#64748b")
            for k in keys
            if k.startswith(("theoretical_", "ceiling_", "reference_"))
            and _split_unit(k)[1] == y_unit
            and _is_number(rows[0].get(k))
            and not _varying(rows, k)
        ]
        svg = line_chart(
            uid=f"{doc_id}-chart",
            title=f"{benchmark}: {y_name} by message size ({y_unit})",
            desc=f"{y_name} in {y_unit} against the message size on a log2 axis, one line per "
            + ", ".join(groups)
            + ".",
            x=Axis("message size", "log2 scale", log2=True, tick_format=_size_text),
            y=Axis(y_name, y_unit),
            series=series,
            hlines=ceilings,
            y_zero=True,
        )
        return (
            f'<figure class="plot" data-plot="bench-sweep"><figcaption>{_e(y_name)} by message size</figcaption>'
            f"{svg}</figure>"
        )
    # One bar per row, one chart per unit.
    cats = _categorical(rows, keys, exclude=())
    with_name = "name" in cats or (len({r.get("name") for r in rows}) <= 1 and not cats)
    cats = [c for c in cats if c != "name"]
    by_unit: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_unit.setdefault(str(r.get("unit") or ""), []).append(r)
    figs = []
    for n, (unit, members) in enumerate(by_unit.items()):
        bars = [
            Bar(
                _row_label(r, cats, with_name),
                float(r["value"]) if _is_number(r.get("value")) else None,
                float(r["min"]) if _is_number(r.get("min")) else None,
                float(r["max"]) if _is_number(r.get("max")) else None,
            )
            for r in members
        ]
        if not any(b.value is not None for b in bars):
            continue
        svg = bar_chart(
            uid=f"{doc_id}-bars{n}",
            title=f"{benchmark}: median per result ({unit})",
            desc=f"Median {unit} per result, with the min–max range of the repeats as whiskers: "
            + "; ".join(f"{b.label} {_num(b.value)}" for b in bars)
            + ".",
            bars=bars,
            value_axis=Axis("median, whiskers min–max", unit),
            colour=_GPU_PALETTE[n % len(_GPU_PALETTE)],
            value_format=_num,
        )
        figs.append(
            f'<figure class="plot" data-plot="bench-bars"><figcaption>Median per result ({_e(unit)})</figcaption>'
            f"{svg}</figure>"
        )
    return "".join(figs)


def _share_text(fraction: float) -> str:
    """A share of time to one decimal, never rounded up to "100%" or down to "0%" when it is not."""
    pct = fraction * 100
    if 99.95 <= pct < 100:
        return ">99.9%"
    if 0 < pct < 0.05:
        return "<0.1%"
    return f"{pct:.1f}%"


def _generic(obj: Any, key: str = "") -> str:
    """Any JSON value as HTML: lists of objects as tables, objects as definition lists."""
    if isinstance(obj, list) and obj and all(isinstance(x, dict) for x in obj):
        return _table(obj, _keys(obj), None, "comparison")
    if isinstance(obj, dict):
        items = []
        for k, v in obj.items():
            name, unit = _split_unit(str(k))
            label = f"{name} ({unit})" if unit and unit != "bytes" else name
            inner = _generic(v, str(k)) if isinstance(v, dict | list) and v else _e(_value_text(str(k), v))
            items.append(f"<dt>{_e(label)}</dt><dd>{inner}</dd>")
        return '<dl class="facts">' + "".join(items) + "</dl>"
    return _e(_value_text(key, obj))


def _bench_body(doc: dict[str, Any], doc_id: str, level: int) -> list[str]:
    h = f"h{level}"
    benchmark = str(doc.get("benchmark") or "benchmark")
    out: list[str] = []
    if doc.get("partial") or doc.get("error"):
        what = "partial results" if doc.get("partial") else "error"
        out.append(f'<p class="banner">{_e(what)}: {_e(doc.get("error") or "the run did not finish")}</p>')
    method = doc.get("method")
    line = []
    if doc.get("backend"):
        line.append(f"{doc['backend']}, world size {doc.get('world_size', '?')}")
    if isinstance(method, dict):
        line.append(
            f"{method.get('warmup', '?')} warm-up, {method.get('repeats', '?')} timed, "
            f"{method.get('statistic', 'median')} ({method.get('timer', '?')}); "
            f"method {method.get('method_version', '?')}"
        )
    if line:
        out.append(f'<p class="muted">{_e("; ".join(line))}</p>')
    versions = doc.get("versions")
    if isinstance(versions, dict) and versions:
        out.append(
            '<p class="muted">versions: '
            + _e(", ".join(f"{k} {v}" for k, v in versions.items() if v is not None) or "unknown")
            + "</p>"
        )
    for warning in doc.get("warnings") or []:
        out.append(f'<p class="banner warn-banner">warning: {_e(warning)}</p>')
    for note in doc.get("notes") or []:
        out.append(f'<p class="note">• {_e(note)}</p>')
    comparison = doc.get("comparison")
    if comparison:
        out.append(f'<{h} class="comparison">Comparison</{h}>{_generic(comparison)}')
    rows = [r for r in doc.get("results") or [] if isinstance(r, dict)]
    if rows:
        out.append(_bench_chart(doc_id, rows, benchmark))
        keys = _keys(rows)
        units = {r.get("unit") for r in rows}
        unit = str(units.pop()) if len(units) == 1 and None not in units else None
        same = [k for k in keys if k in _GENERIC_KEYS and len(rows) > 1 and not _varying(rows, k)]
        if unit is not None and "unit" not in same:
            same.append("unit")
        cols = [k for k in keys if k not in same]
        out.append(f"<{h}>Results</{h}>")
        if same:
            out.append(
                '<p class="muted">same for every row: '
                + _e("; ".join(f"{k.replace('_', ' ')} {_value_text(k, rows[0].get(k))}" for k in same))
                + "</p>"
            )
        out.append(f'<div class="scroll">{_table(rows, cols, unit, "results")}</div>')
    elif not doc.get("runs") and not comparison:
        out.append('<p class="na">No results.</p>')
    for n, run in enumerate(doc.get("runs") or []):
        if isinstance(run, dict):
            label = run.get("label") or run.get("name") or f"run {n + 1}"
            if run.get("p2p") is not None:
                label = f"{label}, P2P {_value_text('p2p', run.get('p2p'))}"
                if run.get("transport"):
                    label += f" (transport: {run['transport']})"
            out.append(f'<details class="run"><summary>{_e(label)}</summary>')
            out += _bench_body(run, f"{doc_id}-run{n}", min(level + 1, 4))
            out.append("</details>")
    return out


def bench_html(doc: dict[str, Any]) -> str:
    """A ``rigcheck.bench/1`` document as one page: chart, result table and the P2P comparison when present."""
    benchmark = str(doc.get("benchmark") or "benchmark")
    body = [f"<header><h1>rigcheck bench {_e(benchmark)}</h1></header>"]
    body += _bench_body(doc, "bench", 2)
    snapshot = doc.get("snapshot")
    if isinstance(snapshot, dict):
        gpus = [g for g in snapshot.get("gpus") or [] if isinstance(g, dict)]
        names = sorted({str(g.get("name")) for g in gpus if g.get("name")})
        host_value = snapshot.get("host")
        host: dict[str, Any] = host_value if isinstance(host_value, dict) else {}
        what = ", ".join(
            x for x in (str(host.get("hostname") or ""), f"{len(gpus)} × {' / '.join(names)}" if names else "") if x
        )
        if what:
            body.append(f'<p class="muted">machine: {_e(what)}</p>')
    body.append(_footer())
    return page(f"rigcheck bench {benchmark}", "\n".join(body))
