"""Thermal: is the card cool enough (the guide's "Cooling" section)?

Under load (the snapshot shows the GPU loaded: :func:`is_loaded`), a slowdown is a verdict, not a hint:
hardware slowdown and hardware thermal slowdown fail, and so does software thermal slowdown, since one loaded
reading with it active is all of the loaded time the snapshot saw (over SW_THERMAL_FAIL_SHARE). On an idle or
lightly used GPU the software slowdown and the bare hardware slowdown stay warnings (nothing is held back).
The hardware power brake fails in the power check (power.brake-active).

Finding ids: thermal.ok, thermal.warm, thermal.throttle-range, thermal.near-slowdown, thermal.at-slowdown,
thermal.near-shutdown, thermal.hw-thermal-slowdown, thermal.sw-thermal-slowdown, thermal.hw-slowdown,
thermal.slowdown-history, thermal.fan-at-max, thermal.temperature-unavailable.
"""

from __future__ import annotations

from rigcheck.checks.common import (
    GUIDE_COOLING,
    LIFESPAN,
    NVML_REASONS,
    active_reasons,
    gpu_finding,
    has_problem,
    missing_text,
    num,
    readable_gpus,
    seconds,
)
from rigcheck.model import Finding, Gpu, Severity, Snapshot
from rigcheck.units import fmt

FINDING_IDS: tuple[str, ...] = (
    "thermal.ok",
    "thermal.warm",
    "thermal.throttle-range",
    "thermal.near-slowdown",
    "thermal.at-slowdown",
    "thermal.near-shutdown",
    "thermal.hw-thermal-slowdown",
    "thermal.sw-thermal-slowdown",
    "thermal.hw-slowdown",
    "thermal.slowdown-history",
    "thermal.fan-at-max",
    "thermal.temperature-unavailable",
)


# The guide's bands (Cooling): "70-75C is an excellent range", "anything under +80C is good",
# "throttling down is likely to start at around 84-90C".
EXCELLENT_MAX_C = 75.0
GOOD_BELOW_C = 80.0
THROTTLE_RANGE_C = 84.0
THROTTLE_RANGE_TOP_C = 90.0
# Margin to the card's own slowdown / shutdown threshold that rigcheck calls "near" (rigcheck's choice:
# a few degrees is what one load step or a warmer afternoon adds).
NEAR_MARGIN_C = 5.0
# Fan duty at or above this is the cooler's limit. nvml.h nvmlDeviceGetFanSpeed reports percent of max.
FAN_MAX_PERCENT = 100.0

# A GPU is loaded when its utilization is >= 50% or it draws >= 50% of its power limit: the rule of a loaded sample
# of `rigcheck burn --analyze` (checks/burn/judge.py), rigcheck's (a light training load runs at ~45% utilization but
# well over half its power).
LOADED_UTIL_PERCENT = 50.0
LOADED_POWER_FRACTION = 0.5
# Software thermal slowdown over this share of the loaded time fails a burn (and a loaded snapshot, where the one
# reading is all of it). rigcheck's choice: the driver steps clocks down a bin or two under it, so a brief touch on
# a warm afternoon costs little, but one loaded sample in ten means the cooler cannot hold the card below its
# target under sustained load, and the guide's advice (airflow, spacing, fan curve) applies.
SW_THERMAL_FAIL_SHARE = 0.10
THRESHOLD_SOURCE = "the card's own thresholds: nvml.h nvmlDeviceGetTemperatureThreshold (SLOWDOWN, SHUTDOWN)"
COOLING_ADVICE = (
    "improve airflow: clean dust filters, leave a slot between cards or use blower-style cards in dense builds, "
    "raise the case fan curve, lower the room temperature; " + LIFESPAN
)


THROTTLE_ADVICE = (
    "the guide puts the start of throttling at 84-90 C: " + COOLING_ADVICE + "; check the fan curve lets the fans "
    "ramp before the card reaches its target temperature"
)


def is_loaded(gpu: Gpu) -> bool:
    """Whether the reading shows the GPU under load (LOADED_UTIL_PERCENT, LOADED_POWER_FRACTION); False when
    neither utilization nor power with a limit is known."""
    util = num(gpu.utilization_gpu_percent)
    if util is not None and util >= LOADED_UTIL_PERCENT:
        return True
    draw = num(gpu.power_draw_w)
    limit = num(gpu.power_enforced_limit_w) or num(gpu.power_limit_w)
    return draw is not None and limit is not None and limit > 0 and draw >= LOADED_POWER_FRACTION * limit


def _load_words(gpu: Gpu) -> str:
    """ "at 100% utilization, 279 W of 280 W" (what the reading shows of the load)."""
    parts = []
    if gpu.utilization_gpu_percent is not None:
        parts.append(f"{fmt(gpu.utilization_gpu_percent, '%')} utilization")
    limit = gpu.power_enforced_limit_w or gpu.power_limit_w
    if gpu.power_draw_w is not None and limit is not None:
        parts.append(f"{fmt(gpu.power_draw_w, 'W')} of {fmt(limit, 'W')}")
    return ", ".join(parts)


def _heat_words(gpu: Gpu, temp: float | None) -> str:
    """ " (86 C, fan at 100%)", " (86 C)", " (fan at 100%)" or ""."""
    parts = [fmt(temp, "C")] if temp is not None else []
    if gpu.fan_percent is not None:
        parts.append(f"fan at {fmt(gpu.fan_percent, '%')}")
    return f" ({', '.join(parts)})" if parts else ""


def check_thermal(snapshot: Snapshot) -> list[Finding]:
    findings: list[Finding] = []
    for gpu in readable_gpus(snapshot):
        findings += _check_gpu(gpu)
    return findings


def _band(gpu: Gpu, temp: float) -> Finding:
    if temp <= EXCELLENT_MAX_C:
        return gpu_finding(
            gpu,
            "thermal.ok",
            Severity.OK,
            f"{fmt(temp, 'C')}: in the guide's excellent range (70-75 C or below)",
            measured=fmt(temp, "C"),
            expected=f"<= {fmt(EXCELLENT_MAX_C, 'C')} excellent, < {fmt(GOOD_BELOW_C, 'C')} good",
            source=GUIDE_COOLING,
        )
    if temp < GOOD_BELOW_C:
        return gpu_finding(
            gpu,
            "thermal.ok",
            Severity.OK,
            f"{fmt(temp, 'C')}: in the guide's good range (under 80 C)",
            measured=fmt(temp, "C"),
            expected=f"< {fmt(GOOD_BELOW_C, 'C')} good",
            source=GUIDE_COOLING,
        )
    if temp < THROTTLE_RANGE_C:
        return gpu_finding(
            gpu,
            "thermal.warm",
            Severity.INFO,
            f"{fmt(temp, 'C')}: above the guide's 80 C 'good' band, below its 84-90 C throttling range",
            measured=fmt(temp, "C"),
            expected=f"< {fmt(GOOD_BELOW_C, 'C')}",
            advice="not throttling yet, but little headroom; " + COOLING_ADVICE,
            source=GUIDE_COOLING,
        )
    where = "within" if temp <= THROTTLE_RANGE_TOP_C else "above"
    return gpu_finding(
        gpu,
        "thermal.throttle-range",
        Severity.WARN,
        f"{fmt(temp, 'C')}: {where} the guide's 84-90 C range where throttling starts",
        measured=fmt(temp, "C"),
        expected=f"< {fmt(GOOD_BELOW_C, 'C')}",
        advice="expect reduced clocks; " + COOLING_ADVICE,
        source=GUIDE_COOLING,
    )


def _thresholds(gpu: Gpu, temp: float) -> Finding | None:
    slowdown = num(gpu.temp_slowdown_c)
    shutdown = num(gpu.temp_shutdown_c)
    if shutdown is not None and temp >= shutdown - NEAR_MARGIN_C:
        return gpu_finding(
            gpu,
            "thermal.near-shutdown",
            Severity.FAIL,
            f"{fmt(temp, 'C')} is {fmt(shutdown - temp, 'C', 1)} from the card's {fmt(shutdown, 'C')} shutdown "
            "threshold",
            measured=fmt(temp, "C"),
            expected=f"< {fmt(shutdown - NEAR_MARGIN_C, 'C')} (shutdown {fmt(shutdown, 'C')} - "
            f"{fmt(NEAR_MARGIN_C, 'C')})",
            advice="stop the load and fix the cooling before the card shuts itself down; " + COOLING_ADVICE,
            source=f"{THRESHOLD_SOURCE}; the 5 C margin is rigcheck's",
        )
    if slowdown is None:
        return None
    if temp >= slowdown:
        return gpu_finding(
            gpu,
            "thermal.at-slowdown",
            Severity.FAIL,
            f"{fmt(temp, 'C')} is at or above the card's {fmt(slowdown, 'C')} slowdown threshold: it is throttling",
            measured=fmt(temp, "C"),
            expected=f"< {fmt(slowdown, 'C')}",
            advice=COOLING_ADVICE,
            source=THRESHOLD_SOURCE,
        )
    if slowdown - temp < NEAR_MARGIN_C:
        return gpu_finding(
            gpu,
            "thermal.near-slowdown",
            Severity.WARN,
            f"{fmt(temp, 'C')} is only {fmt(slowdown - temp, 'C', 1)} below the card's {fmt(slowdown, 'C')} "
            "slowdown threshold",
            measured=fmt(temp, "C"),
            expected=f"<= {fmt(slowdown - NEAR_MARGIN_C, 'C')} ({fmt(NEAR_MARGIN_C, 'C')} margin)",
            advice=COOLING_ADVICE,
            source=f"{THRESHOLD_SOURCE}; the 5 C margin is rigcheck's",
        )
    return None


def _check_gpu(gpu: Gpu) -> list[Finding]:
    out: list[Finding] = []
    temp = num(gpu.temp_c)
    if temp is None:
        out.append(
            gpu_finding(
                gpu,
                "thermal.temperature-unavailable",
                Severity.UNKNOWN,
                f"cannot judge cooling: {missing_text(gpu, [('temp_c', 'GPU temperature')])}",
                measured=missing_text(gpu, [("temp_c", "GPU temperature")]),
                advice="read the temperature with `nvidia-smi -q -d TEMPERATURE` while the GPU is under load",
                source=GUIDE_COOLING,
            )
        )
    else:
        threshold = _thresholds(gpu, temp)
        if threshold is not None:
            out.append(threshold)

    reasons = active_reasons(gpu)
    loaded = is_loaded(gpu)
    under = f" under load ({_load_words(gpu)})" if loaded else ""
    if "hw_thermal_slowdown" in reasons:
        out.append(
            gpu_finding(
                gpu,
                "thermal.hw-thermal-slowdown",
                Severity.FAIL,
                f"hardware thermal slowdown is active{under}: the GPU or its memory is too hot and clocks are cut by "
                "half or more" + (f" at {fmt(temp, 'C')}" if temp is not None else ""),
                measured="hw_thermal_slowdown active",
                expected="not active",
                advice=THROTTLE_ADVICE,
                source=f"{NVML_REASONS}: nvmlClocksEventReasonHwThermalSlowdown",
            )
        )
    elif "hw_slowdown" in reasons and "hw_power_brake_slowdown" not in reasons:
        out.append(
            gpu_finding(
                gpu,
                "thermal.hw-slowdown",
                # Under load it costs half the clocks or more; idle, it can be a flicker of a P-state change.
                Severity.FAIL if loaded else Severity.WARN,
                f"hardware slowdown is active{under} (clocks cut by half or more) without a thermal or power-brake "
                "sub-reason",
                measured="hw_slowdown active",
                expected="not active",
                advice=(
                    "NVML raises this for high temperature, an external power brake, or power draw so high that "
                    "fast-trigger protection steps in (it can also flicker during P-state changes): re-read under "
                    "steady load, and check cooling and the power cables (one cable per socket, no pigtails)"
                ),
                source=f"{NVML_REASONS}: nvmlClocksEventReasonHwSlowdown",
            )
        )
    if "sw_thermal_slowdown" in reasons:
        out.append(
            gpu_finding(
                gpu,
                "thermal.sw-thermal-slowdown",
                # A loaded reading with it active is all of the loaded time seen: over SW_THERMAL_FAIL_SHARE.
                Severity.FAIL if loaded else Severity.WARN,
                f"software thermal slowdown is active{under}: the cooling cannot hold the card, so the driver "
                f"lowers clocks to keep it under its maximum operating temperature{_heat_words(gpu, temp)}",
                measured="sw_thermal_slowdown active" + (" under load" if loaded else ""),
                expected="not active"
                + (f" (under load: under {SW_THERMAL_FAIL_SHARE:.0%} of the loaded time)" if loaded else ""),
                advice=THROTTLE_ADVICE if loaded else COOLING_ADVICE,
                source=f"{NVML_REASONS}: nvmlClocksEventReasonSwThermalSlowdown",
            )
        )

    durations = gpu.clock_event_durations_us or {}
    thermal_us = sum(
        v for v in (num(durations.get("hw_thermal_slowdown")), num(durations.get("sw_thermal_slowdown"))) if v
    )
    if thermal_us > 0:
        out.append(
            gpu_finding(
                gpu,
                "thermal.slowdown-history",
                Severity.INFO,
                f"thermal slowdown has held the clocks for {seconds(thermal_us)} since the driver loaded",
                measured=seconds(thermal_us),
                expected="0 s",
                advice="the card has throttled for heat before; run `rigcheck burn` to see when. " + COOLING_ADVICE,
                source="nvidia-smi -q 'Clocks Event Reasons Counters' (nvml.h nvmlDeviceGetViolationStatus)",
            )
        )

    fan = num(gpu.fan_percent)
    if fan is not None and fan >= FAN_MAX_PERCENT:
        out.append(
            gpu_finding(
                gpu,
                "thermal.fan-at-max",
                Severity.WARN,
                f"fan at {fmt(fan, '%')}: the cooler is at its limit"
                + (f" holding {fmt(temp, 'C')}" if temp is not None else ""),
                measured=fmt(fan, "%"),
                expected=f"< {fmt(FAN_MAX_PERCENT, '%')}",
                advice="no headroom left for a hotter day or a longer run; " + COOLING_ADVICE,
                source="nvml.h nvmlDeviceGetFanSpeed (percent of the fan's maximum)",
            )
        )

    if temp is not None:
        band = _band(gpu, temp)
        if band.severity is not Severity.OK or not has_problem(out):
            out.insert(0, band)
    return out
