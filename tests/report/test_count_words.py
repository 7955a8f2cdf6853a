"""Counts and comparisons in the reports say what is true: one of a thing is singular ("1 check passed", not "1 checks
passed"), and a clock that ran above its reference is "above" it, not "-4.2% below"."""

from __future__ import annotations

from rigcheck.model import Finding, Severity
from rigcheck.model.burn import GpuBurnAnalysis
from rigcheck.report.burn.html import _facts
from rigcheck.report.burn.render import evidence
from rigcheck.report.common import findings_html, passed_line
from rigcheck.units import plural


def test_plural() -> None:
    assert [plural(n, "check") for n in (0, 1, 2)] == ["0 checks", "1 check", "2 checks"]
    assert [plural(n, "entry", "entries") for n in (1, 3)] == ["1 entry", "3 entries"]


def _ok(n: int) -> list[Finding]:
    return [
        Finding(id="thermal.ok", severity=Severity.OK, category="thermal", subject=f"GPU{i}", message="cool")
        for i in range(n)
    ]


def test_one_check_passed_is_singular() -> None:
    one, two = passed_line(_ok(1)), passed_line(_ok(2))
    assert one is not None
    assert two is not None
    assert one.plain.endswith("1 check passed (thermal 1)")
    assert two.plain.endswith("2 checks passed (thermal 2)")
    assert "<summary>1 check passed (thermal 1)</summary>" in findings_html(_ok(1), "")


def _clock(median: float, reference: float, drop: float) -> GpuBurnAnalysis:
    return GpuBurnAnalysis(
        index=0,
        loaded_s=60.0,
        power_draw_w_median_loaded=300.0,
        power_enforced_limit_w=350.0,
        temp_c_max=70.0,
        temp_slowdown_c=None,
        sm_clock_mhz_median_loaded=median,
        reasons_time_fraction={},
        limiter="none",
        verdict="good",
        advice="",
        sm_clock_max_mhz=reference,
        sm_clock_mhz_sustained=median,
        sm_clock_drop_percent=drop,
    )


def test_a_clock_above_its_reference_is_above_it() -> None:
    # 1500 MHz against a max of 1440 MHz: (1440 - 1500) / 1440 = -4.2% "drop", i.e. 4.2% above.
    a = _clock(1500.0, 1440.0, -4.2)
    line = next(t for t in evidence(a) if t.startswith("SM clock"))
    assert line == "SM clock 1500 MHz median while loaded, 4.2% above 1440 MHz max"
    html = _facts(a)
    assert "1,500 MHz; 4.2% above the card&#x27;s max SM clock 1,440 MHz (sustained median 1,500 MHz)" in html
    assert "below" not in html
    assert "-4.2" not in html


def test_a_clock_below_its_reference_is_below_it() -> None:
    line = next(t for t in evidence(_clock(1365.0, 1980.0, 31.1)) if t.startswith("SM clock"))
    assert line == "SM clock 1365 MHz median while loaded, 31.1% below 1980 MHz max"
    assert "31.1% below" in _facts(_clock(1365.0, 1980.0, 31.1))
