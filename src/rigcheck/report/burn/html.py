"""The HTML page of a burn (`burn --html FILE`, `burn --analyze FILE --html FILE`): per GPU the verdict, the
numbers, and plots over time of power against the limit, temperature against the card's thresholds (the
guide's bands shaded), the SM clock against its maximum, and the clock-event reasons as lanes.

The page shell (CSP, style, escaping, palettes) is rigcheck.report.html; the charts are rigcheck.report.svg.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Mapping, Sequence

from rigcheck.model.burn import GpuBurnAnalysis
from rigcheck.model.snapshot import CLOCK_EVENT_REASONS
from rigcheck.model.telemetry import GpuPlot, Sample, Trace, TracePlot
from rigcheck.report.burn.load_lines import finding_lines, under_load
from rigcheck.report.html import GPU_PALETTE, GUIDE_BANDS, REASON_COLOURS, REASON_WORDS, esc, footer, num, page
from rigcheck.report.svg import Axis, Band, HLine, Lane, Series, lane_chart, lane_label_width, line_chart


def _verdict_class(verdict: str) -> str:
    word = verdict.strip().split(" ", 1)[0].lower().strip(",;:()")
    return f"v-{word}" if word in ("excellent", "good", "hot", "throttling") else "v-unknown"


def _series(g: GpuPlot, attr: str, scale: float) -> list[tuple[float, float | None]]:
    """(t, value) per sample, a gap after a lost sample (per bucket its extremes once thinned); ``scale`` turns
    seconds into the axis unit."""
    samples = g.raw
    if samples is None:
        return [(t / scale, v) for t, v in g.points(attr)]
    get = operator.attrgetter(attr)
    pts: list[tuple[float, float | None]] = []
    for s in samples:
        pts.append((s.t_s / scale, get(s)))
        if s.lost:
            pts.append((s.t_s / scale, None))
    return pts


def _has(g: GpuPlot, attr: str) -> bool:
    if g.raw is None:
        return attr in g.has
    return any(getattr(s, attr) is not None for s in g.raw)


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


def _share_text(fraction: float) -> str:
    """A share of time to one decimal, never rounded up to "100%" or down to "0%" when it is not."""
    pct = fraction * 100
    if 99.95 <= pct < 100:
        return ">99.9%"
    if 0 < pct < 0.05:
        return "<0.1%"
    return f"{pct:.1f}%"


def _facts(a: GpuBurnAnalysis) -> str:
    rows: list[tuple[str, str]] = [
        ("time under load", num(a.loaded_s, "s", 0)),
        (
            "power, median under load / limit",
            f"{num(a.power_draw_w_median_loaded, 'W', 0)} / {num(a.power_enforced_limit_w, 'W', 0)}",
        ),
    ]
    if a.time_to_power_cap_s is not None:
        rows.append(("time to reach the power cap", num(a.time_to_power_cap_s, "s", 1)))
    slowdown = num(a.temp_slowdown_c, "C", 0) if a.temp_slowdown_c is not None else "not in this trace"
    rows.append(("temperature, peak / slowdown threshold", f"{num(a.temp_c_max, 'C', 0)} / {slowdown}"))
    if a.slowdown_margin_c is not None:
        rows.append(("margin to slowdown", num(a.slowdown_margin_c, "C", 0)))
    if a.temp_rise_c is not None or a.temp_plateau_c is not None:
        rows.append(("temperature rise / plateau", f"{num(a.temp_rise_c, 'C', 0)} / {num(a.temp_plateau_c, 'C', 0)}"))
    clock = num(a.sm_clock_mhz_median_loaded, "MHz", 0)
    if a.sm_clock_mhz_first is not None:
        clock += f" (first seconds {num(a.sm_clock_mhz_first, 'MHz', 0)})"
    if a.sm_clock_drop_percent is not None:
        # The drop is measured from the card's max SM clock where the trace gives it, else from the first
        # seconds' median, to the sustained median (checks/burn/judge.py): say which.
        ref = (
            f"the card's max SM clock {num(a.sm_clock_max_mhz, 'MHz', 0)}"
            if a.sm_clock_max_mhz is not None
            else "the first seconds' median"
        )
        sustained = a.sm_clock_mhz_sustained if a.sm_clock_mhz_sustained is not None else a.sm_clock_mhz_median_loaded
        side = "above" if a.sm_clock_drop_percent < 0 else "below"  # negative: it ran above the reference
        drop = num(abs(a.sm_clock_drop_percent), "%", 1)
        clock += f"; {drop} {side} {ref} (sustained median {num(sustained, 'MHz', 0)})"
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
            ("TFLOPS sustained / first 10 s", f"{num(a.tflops_sustained, '', 1)} / {num(a.tflops_first_10s, '', 1)}")
        )
    if a.errors is not None:
        rows.append(("mismatched results (silent corruption)", str(a.errors)))
    if a.lost_at_s is not None:
        rows.append(("GPU lost at", num(a.lost_at_s, "s", 1)))
    for line in under_load(a):  # "what: figures"
        what, _, figures = line.partition(": ")
        rows.append((what, figures))
    return '<dl class="facts">' + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in rows) + "</dl>"


def _time_axis(duration_s: float) -> tuple[Axis, float]:
    if duration_s > 1800:
        return Axis("time since start", "min"), 60.0
    return Axis("time since start", "s"), 1.0


def _by_gpu(trace: Trace, plot: TracePlot) -> dict[int, GpuPlot]:
    """The samples of each GPU (an empty GpuPlot for a GPU the header names without samples), in index order."""
    return {i: plot.gpus.get(i) or GpuPlot() for i in sorted(set(trace.gpu_indices()) | set(plot.gpus))}


def _gpu_plots(trace: Trace, g: GpuPlot, index: int, a: GpuBurnAnalysis | None, t_range: tuple[float, float]) -> str:
    info = trace.gpus.get(index)
    samples = g.raw
    if not g.count:
        return '<p class="na">No samples of this GPU in the trace.</p>'
    x_axis, scale = _time_axis(t_range[1] - t_range[0])
    x_lo, x_hi = t_range[0] / scale, t_range[1] / scale
    x_axis = Axis(x_axis.label, x_axis.unit, lo=x_lo, hi=x_hi)
    if samples is None:
        lost = [(t / scale, "GPU lost") for t in g.lost_times()]
    else:
        lost = [(s.t_s / scale, "GPU lost") for s in samples if s.lost]
    uid = f"gpu{index}"
    figs: list[str] = []

    def fig(kind: str, caption: str, svg: str) -> None:
        figs.append(f'<figure class="plot" data-plot="{kind}"><figcaption>{esc(caption)}</figcaption>{svg}</figure>')

    step = g.median_step() if samples is None else _median_step(samples)
    lanes = _reason_lanes(g, trace.interval_s or step, scale, t_range)
    left = lane_label_width(lanes or [])  # every chart of the GPU gets the same time axis, left edge included

    # Power against the limit.
    series = [Series("power draw", _series(g, "power_draw_w", scale), "#2563eb")]
    hlines: list[HLine] = []
    if _has(g, "power_enforced_limit_w"):
        series.append(Series("power limit", _series(g, "power_enforced_limit_w", scale), "#dc2626", dash="7 4"))
    elif a is not None and a.power_enforced_limit_w is not None:
        hlines.append(HLine(a.power_enforced_limit_w, f"power limit {a.power_enforced_limit_w:.0f} W", "#dc2626"))
    if samples is None:
        limit_now = g.limit_last
    else:
        limits = (s.power_enforced_limit_w for s in reversed(samples))
        limit_now = next((limit for limit in limits if limit is not None), None)
    if info is not None and info.power_default_limit_w is not None and info.power_default_limit_w != limit_now:
        hlines.append(HLine(info.power_default_limit_w, f"default limit {info.power_default_limit_w:.0f} W", "#64748b"))
    if _has(g, "power_draw_w"):
        desc = "Power draw over time against the power limit."
        if a is not None:
            desc += (
                f" Median under load {num(a.power_draw_w_median_loaded, 'W', 0)},"
                f" limit {num(a.power_enforced_limit_w, 'W', 0)}."
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
    if _has(g, "temp_c"):
        series = [Series("GPU temperature", _series(g, "temp_c", scale), "#0f172a", width=1.8)]
        if _has(g, "temp_memory_c"):
            series.append(Series("memory temperature", _series(g, "temp_memory_c", scale), "#7c3aed", width=1.2))
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
        if samples is None:
            t_lo, t_hi = g.temp_lo, g.temp_hi
        else:
            temps = [v for s in samples for v in (s.temp_c, s.temp_memory_c) if v is not None]
            t_lo, t_hi = min(temps), max(temps)
        assert t_lo is not None
        assert t_hi is not None
        lo = min(20.0, math.floor((t_lo - 5) / 10) * 10)
        hi = max([92.0, t_hi + 3] + [h.value + 3 for h in hlines])
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
    if _has(g, "sm_clock_mhz"):
        series = [Series("SM clock", _series(g, "sm_clock_mhz", scale), "#0891b2")]
        if _has(g, "sm_clock_max_mhz"):
            series.append(Series("max SM clock", _series(g, "sm_clock_max_mhz", scale), "#475569", dash="7 4"))
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


def _reason_lanes(g: GpuPlot, interval: float, scale: float, t_range: tuple[float, float]) -> list[Lane] | None:
    """One lane per reason that occurs, labelled with its share of the trace; None when reasons were not read.

    Once thinned, the lanes are drawn per time bucket but the shares are the exact running sums (a bucket
    half active would otherwise count whole)."""
    samples = g.raw
    seconds: dict[str, float] | None = None
    if samples is None:
        if not g.reasons_read:
            return None
        spans = {r: [(a / scale, b / scale) for a, b in s] for r, s in g.reason_spans(interval).items()}
        seconds = g.reason_seconds(interval)
    else:
        if all(s.reasons is None for s in samples):
            return None
        spans = _reason_spans(samples, interval, scale)
    duration = max(t_range[1] - t_range[0], 1e-9)
    order = [r for r in CLOCK_EVENT_REASONS if r in spans] + sorted(r for r in spans if r not in REASON_WORDS)
    lanes = []
    for r in order:
        if seconds is not None:
            share = seconds.get(r, 0.0) / duration * 100
        else:
            share = sum(b - a for a, b in spans[r]) * scale / duration * 100
        lanes.append(Lane(f"{REASON_WORDS.get(r, r)} ({share:.0f}%)", spans[r], REASON_COLOURS.get(r, "#475569")))
    return lanes


def _median_step(samples: Sequence[Sample]) -> float:
    steps = sorted(b.t_s - a.t_s for a, b in itertools.pairwise(samples) if b.t_s > a.t_s)
    return steps[len(steps) // 2] if steps else 0.1


def _overview_chart(by_gpu: dict[int, GpuPlot], attr: str, label: str, unit: str, t_range: tuple[float, float]) -> str:
    x_axis, scale = _time_axis(t_range[1] - t_range[0])
    x_axis = Axis(x_axis.label, x_axis.unit, lo=t_range[0] / scale, hi=t_range[1] / scale)
    series = [
        Series(
            f"GPU{i}",
            _series(g, attr, scale),
            GPU_PALETTE[n % len(GPU_PALETTE)],
            dash=None if n < len(GPU_PALETTE) else "6 3",
            width=1.3,
        )
        for n, (i, g) in enumerate(sorted(by_gpu.items()))
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


def burn_html(
    trace: Trace,
    analyses: list[GpuBurnAnalysis],
    title: str = "rigcheck burn",
    *,
    checks: Mapping[int, list[str]] | None = None,
    notes: Sequence[str] = (),
) -> str:
    """A burn (or `burn --analyze`) as one page: per GPU the verdict, the numbers and plots over time. ``checks``:
    per GPU, a burn's lines beyond its trace (fingerprint, kernel log); ``notes``: the run's lines of no one GPU."""
    by_index = {a.index: a for a in analyses}
    # Streamed (`burn --analyze --html`): thinned as it was read; in memory: thinned here, whole when short.
    plot = trace.plot if trace.plot is not None else TracePlot.of(trace.samples)
    by_gpu = _by_gpu(trace, plot)
    indices = sorted(set(by_gpu) | set(by_index))
    t_range = (plot.t_lo, plot.t_hi) if plot.t_lo is not None and plot.t_hi is not None else (0.0, 1.0)
    source = [f"trace: {trace.source}" + (f" ({trace.path})" if trace.path else "")]
    if trace.started_at:
        source.append(f"started {trace.started_at}")
    source.append(
        f"{plot.count:,} samples of {len(indices)} GPU{'s' if len(indices) != 1 else ''} over "
        f"{t_range[1] - t_range[0]:.1f} s" + (f", every {trace.interval_s * 1000:.0f} ms" if trace.interval_s else "")
    )
    body = [f"<header><h1>{esc(title)}</h1>", '<ul class="machine">']
    body += [f"<li>{esc(line)}</li>" for line in source]
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
            f'<td><span class="verdict {_verdict_class(a.verdict)}">{esc(a.verdict)}</span></td>'
            f"<td>{esc(a.limiter)}</td>"
            f"<td>{esc(num(a.power_draw_w_median_loaded, 'W', 0))} / {esc(num(a.power_enforced_limit_w, 'W', 0))}</td>"
            f"<td>{esc(num(a.temp_c_max, 'C', 0))} / {esc(num(a.temp_slowdown_c, 'C', 0))}</td>"
            f"<td>{esc(num(a.sm_clock_mhz_median_loaded, 'MHz', 0))}</td></tr>"
        )
    body.append("</tbody></table></section>")
    if notes:
        body.append('<section id="run-notes"><h2>The run</h2><ul>')
        body += [f"<li>{esc(line)}</li>" for line in notes]
        body.append("</ul></section>")
    if len(by_gpu) > 1:
        body.append('<section id="all-gpus"><h2>All GPUs together</h2>')
        for attr, label, unit in (("power_draw_w", "power", "W"), ("temp_c", "temperature", "C")):
            if plot.any_read(attr):
                body.append(
                    f'<figure class="plot" data-plot="all-{attr}"><figcaption>{esc(label.capitalize())} of every GPU'
                    f"</figcaption>{_overview_chart(by_gpu, attr, label, unit, t_range)}</figure>"
                )
        body.append("</section>")
    for i in indices:
        a = by_index.get(i)
        info = trace.gpus.get(i)
        name = f" — {info.name}" if info is not None and info.name else ""
        body.append(f'<section class="gpu" id="gpu{i}" data-gpu="{i}"><h2>GPU{i}{esc(name)}</h2>')
        if a is not None:
            body.append(
                f'<p><span class="verdict {_verdict_class(a.verdict)}">{esc(a.verdict)}</span> '
                f'<span class="muted">limited by: {esc(a.limiter)}</span></p>'
            )
            if a.advice:
                body.append(f'<p class="advice-text">{esc(a.advice)}</p>')
            body += [f'<p class="run-check">{esc(line)}</p>' for line in (checks or {}).get(i, [])]
            for f in a.findings:
                text, advice = finding_lines(f)
                body.append(f'<p class="finding {esc(f.severity.value)}">{esc(text)}</p>')
                if advice:
                    body.append(f'<p class="advice-text">{esc(advice)}</p>')
            body.append(_facts(a))
        body.append(_gpu_plots(trace, by_gpu.get(i) or GpuPlot(), i, a, t_range))
        body.append("</section>")
    body.append(footer())
    return page(title, "\n".join(body))
