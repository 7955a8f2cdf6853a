"""What fails a GPU under load: the one rule for `rigcheck burn`, `burn --analyze FILE`, and the burn stage of
`verify` (rigcheck.checks.burn.judge builds the analysis these read; each rule is documented there, under Problems).

- a lost GPU;
- hardware thermal slowdown, hardware slowdown without its thermal or power-brake sub-reason, or the hardware
  power brake, held for >= HW_SLOWDOWN_FAIL_S of loaded time: clocks cut by half or more;
- software thermal slowdown in >= SW_THERMAL_FAIL_SHARE of the loaded samples (rigcheck.checks.doctor.thermal says why
  10%), else a thermal limiter;
- a peak in the guide's 84-90 C throttling range;
- a finding of severity fail from the counters and the peer comparisons (rates.py: corrected ECC at a rate its
  peers do not share, new uncorrected ECC, NVLink CRC/replay/recovery, an SM clock far under its peers').
"""

from __future__ import annotations

from rigcheck.checks.doctor.power import BRAKE_HISTORY_WARN_US
from rigcheck.checks.doctor.thermal import SW_THERMAL_FAIL_SHARE
from rigcheck.model.burn import GpuBurnAnalysis, gpu_burn_problem
from rigcheck.model.finding import Severity

# A hardware slowdown (clocks cut by half or more) held this long under load fails the burn; shorter is a flicker
# (NVML: hw_slowdown can flicker during P-state changes). rigcheck's: the power check's brake cut.
HW_SLOWDOWN_FAIL_S = BRAKE_HISTORY_WARN_US / 1e6


def is_problem(analysis: GpuBurnAnalysis) -> bool:
    """What makes `burn` / `burn --analyze` exit 1: any of :func:`load_problems`."""
    return bool(load_problems(analysis))


def _seconds(analysis: GpuBurnAnalysis, reason: str) -> float:
    return analysis.reasons_time_fraction.get(reason, 0.0) * analysis.loaded_s


def bare_hw_slowdown_seconds(analysis: GpuBurnAnalysis) -> float:
    """Loaded seconds of hw_slowdown without its sub-reasons (at least: the shares of the power brake and of the
    hardware thermal slowdown, which NVML raises with it, are taken off)."""
    share = analysis.reasons_time_fraction
    bare = share.get("hw_slowdown", 0.0) - share.get("hw_power_brake_slowdown", 0.0)
    bare -= share.get("hw_thermal_slowdown", 0.0)
    return max(0.0, bare) * analysis.loaded_s


def load_problems(analysis: GpuBurnAnalysis) -> list[str]:
    """What failed under load, one phrase each (empty: nothing). The one rule for `burn`, `burn --analyze`, and
    the burn stage of `verify`."""
    problems: list[str] = []
    if gpu_burn_problem(analysis.verdict):  # a saved gpu-burn run, read back by verify --from as well
        problems.append(analysis.verdict)
    if analysis.lost_at_s is not None:
        problems.append(f"GPU lost at {analysis.lost_at_s:.1f} s")
    hw_thermal = _seconds(analysis, "hw_thermal_slowdown")
    if hw_thermal >= HW_SLOWDOWN_FAIL_S:
        problems.append(f"hardware thermal slowdown for {hw_thermal:.1f} s under load")
    bare = bare_hw_slowdown_seconds(analysis)
    if bare >= HW_SLOWDOWN_FAIL_S:
        problems.append(f"hardware slowdown for {bare:.1f} s under load")
    brake = brake_seconds(analysis)
    if brake >= HW_SLOWDOWN_FAIL_S:
        problems.append(f"hardware power brake for {brake:.1f} s under load")
    sw_thermal = analysis.reasons_time_fraction.get("sw_thermal_slowdown", 0.0)
    if sw_thermal >= SW_THERMAL_FAIL_SHARE:
        problems.append(
            f"software thermal slowdown in {sw_thermal:.0%} of the loaded time (fails at {SW_THERMAL_FAIL_SHARE:.0%})"
        )
    elif analysis.limiter == "thermal":
        problems.append("thermal slowdown limited the clocks")
    if analysis.verdict.startswith("throttling") and not problems:
        peak = analysis.temp_c_max
        problems.append(
            f"peak {peak:.0f} C, in the guide's 84-90 C throttling range" if peak is not None else "throttling"
        )
    problems += [f.message for f in analysis.findings if f.severity is Severity.FAIL]
    return problems


def brake_seconds(analysis: GpuBurnAnalysis) -> float:
    return analysis.reasons_time_fraction.get("hw_power_brake_slowdown", 0.0) * analysis.loaded_s
