"""Thermal: is the card cool enough (the guide's "Cooling" section)?

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
    fmt,
    gpu_finding,
    has_problem,
    missing_text,
    num,
    readable_gpus,
    seconds,
)
from rigcheck.model import Finding, Gpu, Severity, Snapshot

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

THRESHOLD_SOURCE = "the card's own thresholds: nvml.h nvmlDeviceGetTemperatureThreshold (SLOWDOWN, SHUTDOWN)"
COOLING_ADVICE = (
    "improve airflow: clean dust filters, leave a slot between cards or use blower-style cards in dense builds, "
    "raise the case fan curve, lower the room temperature; " + LIFESPAN
)


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
    if "hw_thermal_slowdown" in reasons:
        out.append(
            gpu_finding(
                gpu,
                "thermal.hw-thermal-slowdown",
                Severity.FAIL,
                "hardware thermal slowdown is active: the GPU or its memory is too hot and clocks are cut by half "
                "or more" + (f" at {fmt(temp, 'C')}" if temp is not None else ""),
                measured="hw_thermal_slowdown active",
                expected="not active",
                advice=COOLING_ADVICE,
                source=f"{NVML_REASONS}: nvmlClocksEventReasonHwThermalSlowdown",
            )
        )
    elif "hw_slowdown" in reasons and "hw_power_brake_slowdown" not in reasons:
        out.append(
            gpu_finding(
                gpu,
                "thermal.hw-slowdown",
                Severity.WARN,
                "hardware slowdown is active (clocks cut by half or more) without a thermal or power-brake sub-reason",
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
                Severity.WARN,
                "software thermal slowdown is active: the driver lowers clocks to keep the GPU under its maximum "
                "operating temperature" + (f" ({fmt(temp, 'C')})" if temp is not None else ""),
                measured="sw_thermal_slowdown active",
                expected="not active",
                advice=COOLING_ADVICE,
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
