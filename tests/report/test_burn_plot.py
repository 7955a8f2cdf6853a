"""The burn page's plots from thinned samples (issue #13): a long trace is drawn from at most PLOT_BUCKETS time
buckets per GPU, peaks and shares kept exact; a short one, streamed or not, gives the page it always gave."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from rigcheck.checks.burn.judge import analyze_trace
from rigcheck.cli.burn_analyze import _analyze
from rigcheck.errors import InputError
from rigcheck.model.burn import BurnDocument
from rigcheck.model.telemetry import PLOT_BUCKETS, PLOT_FIELDS, PLOT_RAW, Sample, Trace, TracePlot
from rigcheck.readers.trace.stream import read_trace
from rigcheck.report.burn.html import _reason_spans, burn_html
from rigcheck.report.burn.render import html

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
TRACES = sorted([*(FIXTURES / "corpus" / "telemetry").iterdir(), *(FIXTURES / "traces").iterdir()])


def _readable(path: Path) -> bool:
    try:
        read_trace(str(path))
    except InputError:
        return False
    return True


@pytest.mark.parametrize("path", [p for p in TRACES if _readable(p)], ids=lambda p: p.name)
def test_streamed_page_is_the_page_of_the_trace_in_memory(path: Path) -> None:
    streamed, analyses = _analyze(str(path), plot=True)
    whole = read_trace(str(path))
    assert not streamed.samples
    assert streamed.plot is not None
    assert streamed.plot.count == len(whole.samples)
    pages = []
    for trace, found in ((streamed, analyses), (whole, analyze_trace(whole))):
        doc = BurnDocument.of_analysis(trace, found, 0)
        pages.append(html(doc))
    assert pages[0] == pages[1]


def _long(seconds: float, hz: float = 10.0) -> list[Sample]:
    """One GPU: a sine of power with one spike and one dip, flickering power-cap reason, a long pause, a loss."""
    out = []
    n = int(seconds * hz)
    for i in range(n):
        t = i / hz + (30.0 if i > n // 2 else 0.0)  # a 30 s gap in the readings half way
        power = 500 + 100 * math.sin(i / 50)
        if i == 12_345:
            power = 999.0
        if i == 23_456:
            power = 3.0
        out.append(
            Sample(
                t_s=t,
                gpu=0,
                power_draw_w=power,
                power_enforced_limit_w=700.0,
                temp_c=40 + i * 40 / n,
                sm_clock_mhz=1980.0 if i % 3 else None,
                reasons=["sw_power_cap"] if (i // 7) % 3 == 0 else [],
                lost=i == n - 1,
            )
        )
    return out


def test_a_long_trace_is_bounded_and_keeps_each_series_extremes() -> None:
    samples = _long(3600)  # 36,000 samples: several doublings
    plot = TracePlot.of(samples)
    g = plot.gpus[0]
    assert g.raw is None
    assert g.count == len(samples)
    for name in ("power_draw_w", "temp_c", "sm_clock_mhz"):
        points = g.points(name)
        assert len(points) <= 3 * PLOT_BUCKETS
        values = [v for _, v in points if v is not None]
        read = [getattr(s, name) for s in samples if getattr(s, name) is not None]
        assert min(values) == min(read)
        assert max(values) == max(read)
        assert [t for t, _ in points] == sorted(t for t, _ in points)
    assert all(len(b) == PLOT_BUCKETS for b in g.buckets.values())
    assert g.lost_times() == [samples[-1].t_s]
    assert g.temp_lo == samples[0].temp_c
    assert g.temp_hi == samples[-1].temp_c
    assert g.median_step() == pytest.approx(0.1)


def test_thinned_reason_shares_are_exact() -> None:
    samples = _long(3600)
    g = TracePlot.of(samples).gpus[0]
    spans = _reason_spans(samples, 0.1, 1.0)
    exact = {r: sum(b - a for a, b in s) for r, s in spans.items()}
    assert g.reason_seconds(0.1) == pytest.approx(exact, rel=1e-9)
    # The 30 s pause is not drawn as active: no span covers its middle.
    pause = samples[len(samples) // 2].t_s + 15
    assert not any(a <= pause <= b for a, b in g.reason_spans(0.1)["sw_power_cap"])


def test_a_short_trace_is_kept_whole_and_a_long_page_is_drawn_from_the_buckets() -> None:
    short = _long(PLOT_RAW / 10)
    assert TracePlot.of(short).gpus[0].raw == short
    samples = _long(3600)
    page = burn_html(Trace(source="nvidia-smi-csv", samples=samples, interval_s=0.1), [])
    streamed = Trace(source="nvidia-smi-csv", interval_s=0.1, plot=TracePlot.of(samples))
    assert burn_html(streamed, []) == page
    assert f"{len(samples):,} samples" in page
    # The share from every row (33.1% of the time), not from the buckets a flickering reason half fills.
    spans = _reason_spans(samples, 0.1, 1.0)
    share = sum(b - a for a, b in spans["sw_power_cap"]) / (samples[-1].t_s - samples[0].t_s) * 100
    assert f"power cap (SW) ({share:.0f}%)" in page
    for name in PLOT_FIELDS:  # every plotted series is bounded, those never read are empty
        assert len(TracePlot.of(samples).gpus[0].points(name)) <= 3 * PLOT_BUCKETS
