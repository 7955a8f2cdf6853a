"""Inline SVG charts for the HTML reports: line charts, lane (band) charts and bar charts.

Plain strings, no plotting library: the page must open offline, so nothing is fetched and nothing runs.
Every chart carries a <title> and <desc> (screen readers, hover), axes with ticks and units, and a legend
in words, so no fact is told by colour alone. Long series are decimated (min and max per pixel bucket)
before drawing, so an hour at 10 Hz stays a few thousand points per line.

Each chart is well-formed XML (a test parses it with xml.etree); every string from the data is escaped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

__all__ = [
    "Axis",
    "Band",
    "Bar",
    "HLine",
    "Lane",
    "Series",
    "bar_chart",
    "decimate",
    "lane_chart",
    "lane_label_width",
    "line_chart",
    "log2_ticks",
    "merge_spans",
    "nice_ticks",
]

Point = tuple[float, float | None]

WIDTH = 1100  # px; the page is laid out for 1200 px and the SVGs scale down with it
_LEFT, _RIGHT, _TOP_PAD, _BOTTOM = 78, 24, 10, 46
_CHAR_W = 7.2  # average width of a 12 px system-font character, for laying out legends and labels
_AXIS_COLOUR = "#475569"
_GRID_COLOUR = "#e2e8f0"


@dataclass(frozen=True)
class Axis:
    """An axis: its label, its unit (shown in the label), its range (None: from the data), log2 or linear."""

    label: str
    unit: str = ""
    lo: float | None = None
    hi: float | None = None
    log2: bool = False
    tick_format: Callable[[float], str] | None = None

    @property
    def title(self) -> str:
        return f"{self.label} ({self.unit})" if self.unit else self.label


@dataclass(frozen=True)
class Series:
    """A line: points in x order; a ``None`` y breaks the line (a gap in the readings)."""

    label: str
    points: Sequence[Point]
    colour: str
    dash: str | None = None
    width: float = 1.6
    markers: bool = False  # draw a dot at each point (short series such as a size sweep)


@dataclass(frozen=True)
class HLine:
    """A horizontal reference line (a limit or a threshold), labelled on the chart."""

    value: float
    label: str
    colour: str
    dash: str | None = "7 4"


@dataclass(frozen=True)
class Band:
    """A horizontal band between two y values, shaded and labelled at the right edge."""

    lo: float
    hi: float
    label: str
    colour: str


@dataclass(frozen=True)
class Lane:
    """One row of a lane chart: the x spans during which something was true."""

    label: str
    spans: Sequence[tuple[float, float]]
    colour: str


@dataclass(frozen=True)
class Bar:
    label: str
    value: float | None
    lo: float | None = None  # whisker (min), optional
    hi: float | None = None  # whisker (max), optional
    note: str = ""  # shown after the value, e.g. "n/a (not measured)"


# ---------------------------------------------------------------------------------------------- helpers


def _f(v: float) -> str:
    """A coordinate: one decimal, no trailing ".0" noise."""
    text = f"{v:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _e(text: str) -> str:
    return escape(text, quote=True)


def nice_ticks(lo: float, hi: float, target: int = 6) -> list[float]:
    """Round tick values covering [lo, hi]: steps of 1, 2, 2.5 or 5 × 10^k."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return []
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / max(target, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    ticks: list[float] = []
    v = first
    while v <= hi + step * 1e-9:
        ticks.append(round(v, 10))
        v += step
    return ticks


def log2_ticks(lo: float, hi: float, most: int = 12) -> list[float]:
    """Powers of two within [lo, hi], thinned to at most ``most`` (every 2nd, 4th ... power)."""
    if lo <= 0 or hi <= 0:
        return []
    a, b = math.ceil(math.log2(lo) - 1e-9), math.floor(math.log2(hi) + 1e-9)
    exps = list(range(a, b + 1))
    stride = 1
    while len(exps[::stride]) > most:
        stride *= 2
    return [2.0**e for e in exps[::stride]]


def tick_text(v: float) -> str:
    """A tick label: as few digits as it needs (ticks are already rounded)."""
    if abs(v) >= 1e6:
        return f"{v:.0f}"
    return f"{round(v, 6):g}"


def decimate(points: Sequence[Point], buckets: int) -> list[Point]:
    """At most ~3 points per bucket of x: the min and the max (in their order), and a gap if one occurs.

    Peaks survive (a one-sample spike to the power brake still shows), and the size of a chart depends
    on its width in pixels, not on the length of the trace. ``points`` must be in x order.
    """
    if len(points) <= 2 * buckets or buckets <= 0:
        return list(points)
    x0, x1 = points[0][0], points[-1][0]
    per_x = buckets / ((x1 - x0) or 1.0)
    last = buckets - 1
    out: list[Point] = []
    current = -1
    lo_p: Point | None = None
    hi_p: Point | None = None
    lo_y = hi_y = 0.0
    gap: Point | None = None

    def flush() -> None:
        chosen = [p for p in (lo_p, hi_p) if p is not None]
        if lo_p is not None and lo_p is hi_p:
            chosen = [lo_p]
        chosen.sort(key=lambda p: p[0])
        if gap is not None:
            # Put the gap where it happened relative to the values, so a break is drawn in the right place.
            before = [p for p in chosen if p[0] <= gap[0]]
            after = [p for p in chosen if p[0] > gap[0]]
            chosen = [*before, gap, *after]
        out.extend(chosen)

    for p in points:
        x, y = p
        b = int((x - x0) * per_x)
        b = min(b, last)
        if b != current:
            if current >= 0:
                flush()
            current, lo_p, hi_p, gap = b, None, None, None
        if y is None:
            if gap is None:
                gap = p
            continue
        if lo_p is None or y < lo_y:
            lo_p, lo_y = p, y
        if hi_p is None or y > hi_y:
            hi_p, hi_y = p, y
    if current >= 0:
        flush()
    return out


def merge_spans(spans: Sequence[tuple[float, float]], min_gap: float) -> list[tuple[float, float]]:
    """Spans sorted and merged where less than ``min_gap`` apart (a pixel), bounding their number."""
    merged: list[tuple[float, float]] = []
    for a, b in sorted(spans):
        if merged and a - merged[-1][1] <= min_gap:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


class _Scale:
    def __init__(self, lo: float, hi: float, p0: float, p1: float, log2: bool = False) -> None:
        self.log2 = log2
        self.lo, self.hi = (math.log2(lo), math.log2(hi)) if log2 else (lo, hi)
        if self.hi == self.lo:
            self.lo, self.hi = self.lo - 1, self.hi + 1
        self.p0, self.p1 = p0, p1

    def __call__(self, v: float) -> float:
        u = math.log2(v) if self.log2 else v
        return self.p0 + (u - self.lo) / (self.hi - self.lo) * (self.p1 - self.p0)


def _range(axis: Axis, values: Sequence[float], *, zero: bool = False, pad: float = 0.05) -> tuple[float, float]:
    finite = [v for v in values if math.isfinite(v) and (v > 0 or not axis.log2)]
    lo = axis.lo if axis.lo is not None else (min(finite) if finite else 0.0)
    hi = axis.hi if axis.hi is not None else (max(finite) if finite else 1.0)
    if zero and axis.lo is None and not axis.log2:
        lo = min(lo, 0.0)
    if axis.hi is None and not axis.log2 and hi > lo:
        hi += (hi - lo) * pad
    if hi <= lo:
        hi = lo + (1.0 if not axis.log2 else lo)
    return lo, hi


def _ticks(axis: Axis, lo: float, hi: float, target: int) -> list[tuple[float, str]]:
    if axis.log2:
        values = log2_ticks(lo, hi)
        return [(v, axis.tick_format(v) if axis.tick_format else f"{v:g}") for v in values]
    return [(v, axis.tick_format(v) if axis.tick_format else tick_text(v)) for v in nice_ticks(lo, hi, target)]


def _open(uid: str, *, width: float, height: float, title: str, desc: str, css_class: str) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="{_e(css_class)}" role="img" '
        f'aria-labelledby="{_e(uid)}-t {_e(uid)}-d" viewBox="0 0 {_f(width)} {_f(height)}" '
        f'width="{_f(width)}" height="{_f(height)}" font-size="12">',
        f'<title id="{_e(uid)}-t">{_e(title)}</title>',
        f'<desc id="{_e(uid)}-d">{_e(desc)}</desc>',
    ]


def _legend(items: Sequence[tuple[str, str, str | None, str]], x0: float, width: float) -> tuple[list[str], float]:
    """Legend entries (label, colour, dash, kind: line|box) laid out in rows; returns (elements, height)."""
    out: list[str] = []
    x, y, row_h = x0, 14.0, 18.0
    for label, colour, dash, kind in items:
        w = 26 + len(label) * _CHAR_W + 18
        if x + w > x0 + width and x > x0:
            x, y = x0, y + row_h
        if kind == "box":
            out.append(
                f'<rect x="{_f(x)}" y="{_f(y - 9)}" width="18" height="11" fill="{_e(colour)}" stroke="#94a3b8" '
                'stroke-width="0.5"/>'
            )
        else:
            dash_attr = f' stroke-dasharray="{_e(dash)}"' if dash else ""
            out.append(
                f'<line x1="{_f(x)}" y1="{_f(y - 4)}" x2="{_f(x + 18)}" y2="{_f(y - 4)}" stroke="{_e(colour)}" '
                f'stroke-width="2.2"{dash_attr}/>'
            )
        out.append(f'<text x="{_f(x + 24)}" y="{_f(y)}" fill="#1e293b">{_e(label)}</text>')
        x += w
    return out, y + 10


def _path(points: Sequence[Point], sx: _Scale, sy: _Scale) -> str:
    parts: list[str] = []
    pen_up = True
    for x, y in points:
        if y is None:
            pen_up = True
            continue
        parts.append(("M" if pen_up else "L") + f"{_f(sx(x))} {_f(sy(y))}")
        pen_up = False
    return " ".join(parts)


# ---------------------------------------------------------------------------------------------- charts


def line_chart(
    *,
    uid: str,
    title: str,
    desc: str,
    x: Axis,
    y: Axis,
    series: Sequence[Series],
    hlines: Sequence[HLine] = (),
    bands: Sequence[Band] = (),
    vlines: Sequence[tuple[float, str]] = (),
    width: float = WIDTH,
    plot_height: float = 220,
    y_zero: bool = False,
    left: float = _LEFT,
) -> str:
    """A line chart with optional reference lines, shaded bands and marked moments (vlines)."""
    items: list[tuple[str, str, str | None, str]] = [(s.label, s.colour, s.dash, "line") for s in series]
    items += [(h.label, h.colour, h.dash, "line") for h in hlines]
    items += [(b.label, b.colour, None, "box") for b in bands]
    legend, legend_h = _legend(items, left, width - left - _RIGHT)
    top = legend_h + _TOP_PAD
    height = top + plot_height + _BOTTOM
    px0, px1, py0, py1 = left, width - _RIGHT, top + plot_height, top
    # Decimate first: min and max per pixel survive, so the ranges below are those of the whole data.
    drawn = [decimate(s.points, int(px1 - px0)) for s in series]

    xs = [p[0] for pts in drawn for p in pts]
    ys = [p[1] for pts in drawn for p in pts if p[1] is not None]
    ys += [h.value for h in hlines]
    xlo, xhi = _range(x, xs, pad=0.0)
    ylo, yhi = _range(y, ys, zero=y_zero)
    sx = _Scale(xlo, xhi, px0, px1, x.log2)
    sy = _Scale(ylo, yhi, py0, py1, y.log2)
    clip = f"{uid}-clip"

    out = _open(uid, width=width, height=height, title=title, desc=desc, css_class="chart")
    out += legend
    out.append(
        f'<defs><clipPath id="{_e(clip)}"><rect x="{_f(px0)}" y="{_f(py1)}" width="{_f(px1 - px0)}" '
        f'height="{_f(py0 - py1)}"/></clipPath></defs>'
    )
    # Bands first, under everything, labelled inside at the right.
    for b in bands:
        lo, hi = max(b.lo, ylo), min(b.hi, yhi)
        if hi <= lo:
            continue
        y_top, y_bot = sy(hi), sy(lo)
        out.append(
            f'<rect class="band" x="{_f(px0)}" y="{_f(y_top)}" width="{_f(px1 - px0)}" height="{_f(y_bot - y_top)}" '
            f'fill="{_e(b.colour)}"><title>{_e(b.label)}</title></rect>'
        )
        if y_bot - y_top >= 11:
            out.append(
                f'<text x="{_f(px1 - 6)}" y="{_f((y_top + y_bot) / 2 + 4)}" text-anchor="end" fill="#475569" '
                f'font-size="11">{_e(b.label)}</text>'
            )
    # Grid and y ticks.
    for v, label in _ticks(y, ylo, yhi, 5):
        py = sy(v)
        out.append(f'<line x1="{_f(px0)}" y1="{_f(py)}" x2="{_f(px1)}" y2="{_f(py)}" stroke="{_GRID_COLOUR}"/>')
        out.append(f'<text x="{_f(px0 - 6)}" y="{_f(py + 4)}" text-anchor="end" fill="#334155">{_e(label)}</text>')
    for v, label in _ticks(x, xlo, xhi, 10):
        px = sx(v)
        out.append(
            f'<line x1="{_f(px)}" y1="{_f(py0)}" x2="{_f(px)}" y2="{_f(py0 + 5)}" stroke="{_AXIS_COLOUR}"/>'
            f'<text x="{_f(px)}" y="{_f(py0 + 18)}" text-anchor="middle" fill="#334155">{_e(label)}</text>'
        )
    # Axes and their titles.
    out.append(
        f'<path d="M{_f(px0)} {_f(py1)} L{_f(px0)} {_f(py0)} L{_f(px1)} {_f(py0)}" fill="none" '
        f'stroke="{_AXIS_COLOUR}"/>'
    )
    out.append(
        f'<text x="{_f((px0 + px1) / 2)}" y="{_f(py0 + 38)}" text-anchor="middle" fill="#1e293b">{_e(x.title)}</text>'
    )
    cy = (py0 + py1) / 2
    out.append(
        f'<text x="{_f(px0 - 62)}" y="{_f(cy)}" text-anchor="middle" transform="rotate(-90 {_f(px0 - 62)} {_f(cy)})" '
        f'fill="#1e293b">{_e(y.title)}</text>'
    )
    # Reference lines, labelled at their left end inside the plot (the labels drawn over the data).
    labels: list[str] = []
    for h in hlines:
        if not ylo <= h.value <= yhi:
            continue
        py = sy(h.value)
        dash_attr = f' stroke-dasharray="{_e(h.dash)}"' if h.dash else ""
        out.append(
            f'<line class="hline" x1="{_f(px0)}" y1="{_f(py)}" x2="{_f(px1)}" y2="{_f(py)}" '
            f'stroke="{_e(h.colour)}" stroke-width="1.6"{dash_attr}><title>{_e(h.label)}</title></line>'
        )
        labels.append(
            # a white halo keeps the label readable where the data runs through it
            f'<text x="{_f(px0 + 6)}" y="{_f(py - 4)}" fill="{_e(h.colour)}" font-size="11" stroke="#ffffff" '
            f'stroke-width="3" paint-order="stroke">{_e(h.label)}</text>'
        )
    for vx, label in vlines:
        if not xlo <= vx <= xhi:
            continue
        px = sx(vx)
        out.append(
            f'<line class="vline" x1="{_f(px)}" y1="{_f(py1)}" x2="{_f(px)}" y2="{_f(py0)}" stroke="#7f1d1d" '
            f'stroke-dasharray="3 3"><title>{_e(label)}</title></line>'
            f'<text x="{_f(px + 4)}" y="{_f(py1 + 12)}" fill="#7f1d1d" font-size="11">{_e(label)}</text>'
        )
    # The data, clipped to the plot area.
    out.append(f'<g clip-path="url(#{_e(clip)})">')
    for s, pts in zip(series, drawn, strict=True):
        d = _path(pts, sx, sy)
        if d:
            dash_attr = f' stroke-dasharray="{_e(s.dash)}"' if s.dash else ""
            out.append(
                f'<path class="series" d="{d}" fill="none" stroke="{_e(s.colour)}" stroke-width="{_f(s.width)}" '
                f'stroke-linejoin="round"{dash_attr}><title>{_e(s.label)}</title></path>'
            )
        if s.markers:
            for px_, py_ in pts:
                if py_ is not None:
                    out.append(f'<circle cx="{_f(sx(px_))}" cy="{_f(sy(py_))}" r="3" fill="{_e(s.colour)}"/>')
    out.append("</g>")
    out += labels
    out.append("</svg>")
    return "".join(out)


def lane_label_width(lanes: Sequence[Lane]) -> float:
    """The left margin a lane chart needs for its labels (at least a line chart's, so time axes align)."""
    return max(_LEFT, max([len(lane.label) for lane in lanes] + [0]) * _CHAR_W + 16)


def lane_chart(
    *,
    uid: str,
    title: str,
    desc: str,
    x: Axis,
    x_range: tuple[float, float],
    lanes: Sequence[Lane],
    width: float = WIDTH,
    lane_height: float = 22,
    left: float | None = None,
) -> str:
    """Spans along the time axis, one labelled lane each (throttle reasons): what was active, and when."""
    xlo, xhi = x_range
    if xhi <= xlo:
        xhi = xlo + 1.0
    top = 8.0
    plot_h = max(len(lanes), 1) * lane_height
    height = top + plot_h + _BOTTOM
    px0, px1 = (left if left is not None else lane_label_width(lanes)), width - _RIGHT
    py0 = top + plot_h
    sx = _Scale(xlo, xhi, px0, px1)
    min_gap = (xhi - xlo) / max(px1 - px0, 1)  # one pixel of time

    out = _open(uid, width=width, height=height, title=title, desc=desc, css_class="chart lanes")
    for i, lane in enumerate(lanes):
        y = top + i * lane_height
        out.append(
            f'<rect x="{_f(px0)}" y="{_f(y + 2)}" width="{_f(px1 - px0)}" height="{_f(lane_height - 4)}" '
            'fill="#f8fafc"/>'
        )
        out.append(f'<text x="{_f(px0 - 8)}" y="{_f(y + lane_height / 2 + 4)}" text-anchor="end" fill="#1e293b">')
        out.append(f"{_e(lane.label)}</text>")
        out.append(f'<g class="lane" data-lane="{_e(lane.label)}">')
        for a, b in merge_spans(lane.spans, min_gap):
            x_a, x_b = sx(max(a, xlo)), sx(min(b, xhi))
            out.append(
                f'<rect x="{_f(x_a)}" y="{_f(y + 3)}" width="{_f(max(x_b - x_a, 1.0))}" '
                f'height="{_f(lane_height - 6)}" fill="{_e(lane.colour)}"><title>{_e(lane.label)}: '
                f"{a:.1f}–{b:.1f} {_e(x.unit)}</title></rect>"
            )
        out.append("</g>")
    if not lanes:
        out.append(
            f'<text x="{_f((px0 + px1) / 2)}" y="{_f(top + lane_height / 2 + 4)}" text-anchor="middle" '
            'fill="#475569">no clock-event reason was active</text>'
        )
    for v, label in _ticks(x, xlo, xhi, 10):
        px = sx(v)
        out.append(
            f'<line x1="{_f(px)}" y1="{_f(py0)}" x2="{_f(px)}" y2="{_f(py0 + 5)}" stroke="{_AXIS_COLOUR}"/>'
            f'<text x="{_f(px)}" y="{_f(py0 + 18)}" text-anchor="middle" fill="#334155">{_e(label)}</text>'
        )
    out.append(f'<line x1="{_f(px0)}" y1="{_f(py0)}" x2="{_f(px1)}" y2="{_f(py0)}" stroke="{_AXIS_COLOUR}"/>')
    out.append(
        f'<text x="{_f((px0 + px1) / 2)}" y="{_f(py0 + 38)}" text-anchor="middle" fill="#1e293b">{_e(x.title)}</text>'
    )
    out.append("</svg>")
    return "".join(out)


def bar_chart(
    *,
    uid: str,
    title: str,
    desc: str,
    bars: Sequence[Bar],
    value_axis: Axis,
    colour: str = "#2563eb",
    width: float = WIDTH,
    bar_height: float = 22,
    value_format: Callable[[float], str] = lambda v: f"{v:.3g}",
) -> str:
    """Horizontal bars (labels can be long), with min–max whiskers where given and the value written out."""
    top = 8.0
    plot_h = max(len(bars), 1) * bar_height
    height = top + plot_h + _BOTTOM
    label_w = min(max([len(b.label) for b in bars] + [6]) * (_CHAR_W + 0.6) + 16, width * 0.4)
    px0, px1 = max(_LEFT, label_w), width - _RIGHT - 90  # room for the value text
    py1, py0 = top, top + plot_h
    values = [v for b in bars for v in (b.value, b.hi) if v is not None]
    lo, hi = _range(value_axis, values, zero=True)
    sx = _Scale(lo, hi, px0, px1, value_axis.log2)

    out = _open(uid, width=width, height=height, title=title, desc=desc, css_class="chart bars")
    for v, label in _ticks(value_axis, lo, hi, 8):
        px = sx(v)
        out.append(
            f'<line x1="{_f(px)}" y1="{_f(py1)}" x2="{_f(px)}" y2="{_f(py0)}" stroke="{_GRID_COLOUR}"/>'
            f'<text x="{_f(px)}" y="{_f(py0 + 18)}" text-anchor="middle" fill="#334155">{_e(label)}</text>'
        )
    for i, b in enumerate(bars):
        y = top + i * bar_height
        cy = y + bar_height / 2
        out.append(f'<text x="{_f(px0 - 8)}" y="{_f(cy + 4)}" text-anchor="end" fill="#1e293b">{_e(b.label)}</text>')
        if b.value is None:
            out.append(f'<text x="{_f(px0 + 6)}" y="{_f(cy + 4)}" fill="#64748b">{_e(b.note or "n/a")}</text>')
            continue
        x_end = sx(b.value)
        out.append(
            f'<rect class="bar" x="{_f(px0)}" y="{_f(y + 4)}" width="{_f(max(x_end - px0, 1.0))}" '
            f'height="{_f(bar_height - 8)}" fill="{_e(colour)}"><title>{_e(b.label)}: {_e(value_format(b.value))} '
            f"{_e(value_axis.unit)}</title></rect>"
        )
        text_x = x_end
        if b.lo is not None and b.hi is not None and b.hi > b.lo:
            xl, xh = sx(b.lo), sx(b.hi)
            out.append(
                f'<path d="M{_f(xl)} {_f(cy)} L{_f(xh)} {_f(cy)} M{_f(xl)} {_f(cy - 5)} L{_f(xl)} {_f(cy + 5)} '
                f'M{_f(xh)} {_f(cy - 5)} L{_f(xh)} {_f(cy + 5)}" stroke="#0f172a" stroke-width="1.2" fill="none">'
                f"<title>min {_e(value_format(b.lo))}, max {_e(value_format(b.hi))}</title></path>"
            )
            text_x = max(text_x, xh)
        note = f" {b.note}" if b.note else ""
        out.append(
            f'<text x="{_f(text_x + 6)}" y="{_f(cy + 4)}" fill="#0f172a">{_e(value_format(b.value))}'
            f"{_e(' ' + value_axis.unit if value_axis.unit else '')}{_e(note)}</text>"
        )
    out.append(f'<line x1="{_f(px0)}" y1="{_f(py0)}" x2="{_f(px1)}" y2="{_f(py0)}" stroke="{_AXIS_COLOUR}"/>')
    out.append(f'<line x1="{_f(px0)}" y1="{_f(py1)}" x2="{_f(px0)}" y2="{_f(py0)}" stroke="{_AXIS_COLOUR}"/>')
    out.append(
        f'<text x="{_f((px0 + px1) / 2)}" y="{_f(py0 + 38)}" text-anchor="middle" fill="#1e293b">'
        f"{_e(value_axis.title)}</text>"
    )
    out.append("</svg>")
    return "".join(out)
