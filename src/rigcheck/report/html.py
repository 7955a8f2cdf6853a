"""HTML reports (`--html FILE`): one self-contained page that opens offline and prints well.

Nothing is fetched and nothing runs: no script, the style is inline, fonts are the system's, and the
plots are inline SVG drawn by :mod:`rigcheck.report.svg`. A Content-Security-Policy in the page forbids
any network load should a future edit slip one in. Every string from the data is escaped.

- :func:`write_html` — write the page (the CLI's `--html FILE`).
"""

from __future__ import annotations

import math
from html import escape
from pathlib import Path

from rigcheck.facts.legend import LinkKind
from rigcheck.model.files_out import write_whole

__all__ = [
    "CSP",
    "GPU_PALETTE",
    "GUIDE_BANDS",
    "KIND_COLOURS",
    "REASON_COLOURS",
    "REASON_WORDS",
    "esc",
    "footer",
    "num",
    "page",
    "write_html",
]

# No network, no script: only inline style and data: images. (default-src does not cover these two.)
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"

# Link kinds, in the terminal's colour families (report/topo.py): green NVLink, cyan PCIe below the
# CPU, yellow through the CPU, red across sockets. (background, text/border)
KIND_COLOURS: dict[LinkKind, tuple[str, str]] = {
    "nvlink": ("#bbf7d0", "#14532d"),
    "pcie_switch": ("#a5f3fc", "#164e63"),
    "pcie_bridges": ("#e0f7fa", "#155e75"),
    "host_bridge": ("#fef08a", "#713f12"),
    "numa_local": ("#fde68a", "#78350f"),
    "cross_numa": ("#fecaca", "#7f1d1d"),
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
GPU_PALETTE = ("#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#a16207", "#db2777")

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


def esc(value: object) -> str:
    """Any value as HTML text, safe in content and in a quoted attribute."""
    return escape(str(value), quote=True)


def page(title: str, body: str) -> str:
    """The whole document around ``body`` (already HTML): charset, CSP, inline style, no script."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n'
        '<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(CSP)}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="referrer" content="no-referrer">\n'
        f"<title>{esc(title)}</title>\n"
        f"<style>{_CSS}</style>\n"
        "</head>\n<body>\n"
        f"{body}\n"
        "</body>\n</html>\n"
    )


def write_html(path: Path, html: str) -> None:
    """Write the page to ``path`` whole or not at all, by the one safe writer (model/files_out.py: through a
    symlink, never over a device, FIFO or directory, an existing file's mode kept).

    Raises OutputError (exit 2, one line naming the file) when it cannot be written.
    """
    write_whole(path, html)


def num(value: float | None, unit: str = "", digits: int | None = None) -> str:
    """A number for a page: ``1,234 W``, ``3.5%``; digits by its size unless given; ``n/a`` for none."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    if digits is None:
        a = abs(value)
        digits = 0 if a >= 100 else 1 if a >= 10 else 2 if a >= 1 else 3
    text = f"{value:,.{digits}f}"
    return f"{text}%" if unit == "%" else f"{text} {unit}".rstrip()


def footer(extra: str = "") -> str:
    """The page's footer: the rigcheck version, ``extra`` (already worded), and that nothing is fetched."""
    from rigcheck import __version__

    return f"<footer>rigcheck {esc(__version__)}{esc(extra)} — a self-contained page: nothing is fetched.</footer>"
