"""Heat and slowdowns under load fail a burn (checks/burn/problems.py). Synthetic traces
(tests/checks/test_burn_analysis's ramp: samples 0.1 s apart), each beside its healthy counterpart; the real
traces' verdicts stay in test_burn_analysis (the LMS bf16 burn is power-capped, not a problem)."""

from __future__ import annotations

from rigcheck.checks.burn.judge import analyze_trace, is_problem, load_problems
from rigcheck.checks.doctor.thermal import COOLING_ADVICE, SW_THERMAL_FAIL_SHARE
from rigcheck.model.burn import GpuBurnAnalysis
from rigcheck.model.telemetry import Sample, Trace, TraceGpu
from tests.checks.test_burn_analysis import ramp


def _one(samples: list[Sample]) -> GpuBurnAnalysis:
    trace = Trace(source="test", samples=samples, gpus={0: TraceGpu(index=0, temp_slowdown_c=93.0)}, interval_s=0.1)
    [result] = analyze_trace(trace)
    return result


def test_the_share_is_ten_percent() -> None:
    assert SW_THERMAL_FAIL_SHARE == 0.10


def test_sw_thermal_slowdown_in_15_percent_of_the_loaded_time_fails() -> None:
    """Under the old 20% limiter share and under 84 C, this passed (exit 0)."""
    cool = ramp(85, power=280, temp=(70, 82), reasons=["sw_power_cap"])
    slowed = ramp(15, t0=8.5, power=270, temp=(82, 82), reasons=["sw_power_cap", "sw_thermal_slowdown"])
    result = _one(cool + slowed)
    assert result.reasons_time_fraction["sw_thermal_slowdown"] == 0.15
    assert result.temp_c_max is not None
    assert result.temp_c_max < 84
    assert is_problem(result)
    assert load_problems(result) == ["software thermal slowdown in 15% of the loaded time (fails at 10%)"]
    assert result.limiter == "thermal"  # what verify's burn stage reads
    assert result.verdict == "throttling, thermally limited"
    assert COOLING_ADVICE in result.advice
    assert "84-90 C" in result.advice


def test_sw_thermal_slowdown_in_5_percent_of_the_loaded_time_passes() -> None:
    cool = ramp(95, power=280, temp=(65, 75), reasons=["sw_power_cap"])
    touch = ramp(5, t0=9.5, power=270, temp=(75, 75), reasons=["sw_power_cap", "sw_thermal_slowdown"])
    result = _one(cool + touch)
    assert not is_problem(result)
    assert result.limiter == "power"


def test_bare_hw_slowdown_for_a_second_under_load_fails_and_is_named() -> None:
    ok = ramp(80, power=280, temp=(60, 70), reasons=[])
    slowed = ramp(12, t0=8.0, power=150, temp=(70, 70), clock=900, reasons=["hw_slowdown"])
    result = _one(ok + slowed)
    assert is_problem(result)
    assert load_problems(result) == ["hardware slowdown for 1.2 s under load"]
    assert result.verdict.endswith("; hardware slowdown for 1.2 s")
    assert "power cables" in result.advice


def test_a_hw_slowdown_flicker_under_a_second_passes() -> None:
    ok = ramp(95, power=280, temp=(60, 70), reasons=[])
    flicker = ramp(2, t0=9.5, power=280, temp=(70, 70), reasons=["hw_slowdown"])
    assert not is_problem(_one(ok + flicker))


def test_hw_thermal_slowdown_for_a_second_fails() -> None:
    ok = ramp(90, power=280, temp=(60, 75), reasons=[])
    hot = ramp(10, t0=9.0, power=200, temp=(75, 75), reasons=["hw_slowdown", "hw_thermal_slowdown"])
    result = _one(ok + hot)
    assert "hardware thermal slowdown for 1.0 s under load" in load_problems(result)
    assert not any(p.startswith("hardware slowdown") for p in load_problems(result))  # its sub-reason named instead


def test_healthy_loaded_gpu_at_75_c_without_slowdown_passes() -> None:
    result = _one(ramp(100, power=290, temp=(55, 75), reasons=["sw_power_cap"]))
    assert load_problems(result) == []
    assert result.verdict == "excellent, power-limited"
