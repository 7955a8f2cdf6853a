"""Power: is the card given the power it needs (the guide's "Power" section)?

Finding ids: power.ok, power.readings-unavailable, power.limit-below-default, power.enforced-below-limit,
power.capped-now, power.brake-active, power.cap-history, power.brake-history, power.at-cap.
"""

from __future__ import annotations

from rigcheck.checks.common import (
    GUIDE_POWER,
    NVML_REASONS,
    active_reasons,
    gpu_finding,
    has_problem,
    is_idle,
    missing_text,
    num,
    readable_gpus,
    seconds,
)
from rigcheck.model import Finding, Gpu, Severity, Snapshot
from rigcheck.units import fmt

FINDING_IDS: tuple[str, ...] = (
    "power.ok",
    "power.readings-unavailable",
    "power.limit-below-default",
    "power.enforced-below-limit",
    "power.capped-now",
    "power.brake-active",
    "power.cap-history",
    "power.brake-history",
    "power.at-cap",
)


# A limit within 1% below the default is rounding or a board's own trim, not a user's cap. rigcheck's
# tolerance (nvidia-smi prints limits to 0.01 W; some boards' defaults sit a few watts off the TDP).
LIMIT_TOLERANCE = 0.01
# Drawing >= 95% of the enforced limit means the power controller is holding the card at its cap.
# rigcheck's threshold: NVML's power reading is an average over ~1 s (nvml.h nvmlDeviceGetPowerUsage), so a
# capped card reads a little under its limit.
AT_CAP_FRACTION = 0.95
# The software power cap holds clocks down only where the card draws near its limit: with the flag set at under
# half the limit (an idle card) nothing is held back. rigcheck's threshold.
CAP_FLAG_ONLY_FRACTION = 0.5
# A power brake held for at least this long since the driver loaded is more than a single transient event.
# rigcheck's threshold.
BRAKE_HISTORY_WARN_US = 1e6

LIMIT_SOURCE = "nvml.h nvmlDeviceGetPowerManagementLimit / nvmlDeviceGetPowerManagementDefaultLimit"
BRAKE_ADVICE = (
    "the board's external power brake asserted: check that every PCIe power socket has its own independent "
    "cable (no pigtails), and the PSU's capacity — the guide: one 12 V PCIe 8-pin cable (150 W) per socket, "
    "and a PSU with enough unused watts and a stable voltage"
)


def check_power(snapshot: Snapshot) -> list[Finding]:
    findings: list[Finding] = []
    for gpu in readable_gpus(snapshot):
        findings += _check_gpu(gpu)
    return findings


def _capped_now(gpu: Gpu, draw: float | None, cap: float | None, *, idle: bool | None, at_max: bool) -> Finding:
    """The `sw_power_cap` reason active now: throttling only when the card draws near its limit."""
    draw_text = f" drawing {fmt(draw, 'W')}" if draw is not None else ""
    cap_text = f" of {fmt(cap, 'W')}" if cap is not None else ""
    share = f" ({draw / cap:.0%})" if draw is not None and cap else ""
    far_below = draw is not None and cap is not None and cap > 0 and draw < CAP_FLAG_ONLY_FRACTION * cap
    source = f"{NVML_REASONS}: nvmlClocksEventReasonSwPowerCap"
    if idle or far_below:
        return gpu_finding(
            gpu,
            "power.capped-now",
            Severity.INFO,
            f"the sw_power_cap reason is set while{draw_text}{cap_text}{share}"
            + (", idle" if idle else "")
            + ": not throttling, the card is far below its power limit",
            measured=f"sw_power_cap set{draw_text}{cap_text}",
            expected="throttling only when drawing near the limit",
            advice="nothing to do now; what matters is whether the cap holds the clocks under load (`rigcheck burn`)",
            source=f"{source}; the {CAP_FLAG_ONLY_FRACTION:.0%} cut is rigcheck's",
        )
    if at_max:
        # The card is at its design cap and the limit cannot go higher: nothing to change on this box.
        severity = Severity.INFO
        advice = (
            "the limit is already at the card's maximum, so this is the card's design cap under full load; "
            "if clocks drop far, check cooling (hotter silicon draws more power at the same clock)"
        )
    else:
        severity = Severity.WARN
        advice = (
            "power-limited under load: if the limit was lowered, raise it toward the default or maximum "
            f"(`sudo nvidia-smi -i {gpu.index} -pl WATTS`), provided the PSU has the unused watts (the guide)"
        )
    return gpu_finding(
        gpu,
        "power.capped-now",
        severity,
        f"software power cap active:{draw_text}{cap_text}, clocks reduced to stay under the limit",
        measured=f"sw_power_cap active{draw_text}{cap_text}",
        expected="not active under load",
        advice=advice,
        source=source,
    )


def _check_gpu(gpu: Gpu) -> list[Finding]:
    out: list[Finding] = []
    draw = num(gpu.power_draw_w)
    if draw is None:
        draw = num(gpu.power_draw_avg_w)
    limit = num(gpu.power_limit_w)
    enforced = num(gpu.power_enforced_limit_w)
    default = num(gpu.power_default_limit_w)
    max_limit = num(gpu.power_max_limit_w)
    set_limit = limit if limit is not None else enforced
    cap = enforced if enforced is not None else limit
    reasons = active_reasons(gpu)
    idle = is_idle(gpu)

    missing: list[tuple[str, str]] = []
    if draw is None:
        missing.append(("power_draw_w", "power draw"))
    if set_limit is None:
        missing.append(("power_limit_w", "power limit"))
    if default is None:
        missing.append(("power_default_limit_w", "default power limit"))
    if missing:
        out.append(
            gpu_finding(
                gpu,
                "power.readings-unavailable",
                Severity.UNKNOWN,
                f"cannot judge the power setup: {missing_text(gpu, missing)}",
                measured=missing_text(gpu, missing),
                advice=(
                    "common on consumer and laptop cards, whose boards do not report power to NVML; check the "
                    "cabling by hand: one independent PCIe power cable per socket, no pigtails (the guide)"
                ),
                source=LIMIT_SOURCE,
            )
        )

    # The limit against the card's default.
    if set_limit is not None and default is not None and default > 0 and set_limit < default:
        short = (default - set_limit) / default
        severity = Severity.INFO if short <= LIMIT_TOLERANCE else Severity.WARN
        out.append(
            gpu_finding(
                gpu,
                "power.limit-below-default",
                severity,
                f"power limit {fmt(set_limit, 'W')} is {short:.0%} below the default {fmt(default, 'W')}",
                measured=fmt(set_limit, "W"),
                expected=f">= {fmt(default, 'W')} (default)",
                advice=(
                    f"if this cap was not set on purpose, restore it: `sudo nvidia-smi -i {gpu.index} -pl "
                    f"{fmt(default)}` — a capped card trains slower; if it was set to spare a weak PSU, the "
                    "guide's answer is a PSU with enough unused watts"
                ),
                source=f"{LIMIT_SOURCE}; 1% tolerance is rigcheck's",
            )
        )

    # Another cap below the one the user set (board, chassis, or a management controller).
    if enforced is not None and limit is not None and enforced < limit * (1 - LIMIT_TOLERANCE):
        out.append(
            gpu_finding(
                gpu,
                "power.enforced-below-limit",
                Severity.INFO,
                f"the enforced power limit {fmt(enforced, 'W')} is below the set limit {fmt(limit, 'W')}: "
                "another cap applies",
                measured=f"enforced {fmt(enforced, 'W')}",
                expected=f"= set limit {fmt(limit, 'W')}",
                advice=(
                    "a board, chassis or BMC power cap (or a system power-capping policy) is in force; check the "
                    "server's power policy if the card should get its full limit"
                ),
                source="nvml.h nvmlDeviceGetEnforcedPowerLimit (the minimum of all limits that apply)",
            )
        )

    # Power-brake and power-cap events active now.
    if "hw_power_brake_slowdown" in reasons:
        out.append(
            gpu_finding(
                gpu,
                "power.brake-active",
                Severity.FAIL,
                "hardware power brake slowdown is active: the board's external power brake asserted, clocks cut "
                "by half or more",
                measured="hw_power_brake_slowdown active",
                expected="not active",
                advice=BRAKE_ADVICE,
                source=f"{NVML_REASONS}: nvmlClocksEventReasonHwPowerBrakeSlowdown; {GUIDE_POWER}",
            )
        )
    if "sw_power_cap" in reasons:
        out.append(
            _capped_now(
                gpu,
                draw,
                cap,
                idle=idle,
                at_max=max_limit is not None and set_limit is not None and set_limit >= max_limit,
            )
        )
    elif draw is not None and cap is not None and cap > 0 and draw >= AT_CAP_FRACTION * cap:
        out.append(
            gpu_finding(
                gpu,
                "power.at-cap",
                Severity.INFO,
                f"running at its power cap: drawing {fmt(draw, 'W')} of {fmt(cap, 'W')} ({draw / cap:.0%})",
                measured=fmt(draw, "W"),
                expected=f"< {AT_CAP_FRACTION:.0%} of {fmt(cap, 'W')}",
                advice="normal under full load at the default limit; a lower-than-default limit costs speed here",
                source=f"{LIMIT_SOURCE}; the 95% cut is rigcheck's",
            )
        )

    # Time spent capped or braked since the driver loaded.
    durations = gpu.clock_event_durations_us or {}
    brake_us = num(durations.get("hw_power_brake_slowdown"))
    if brake_us is not None and brake_us > 0:
        severity = Severity.WARN if brake_us >= BRAKE_HISTORY_WARN_US else Severity.INFO
        out.append(
            gpu_finding(
                gpu,
                "power.brake-history",
                severity,
                f"the hardware power brake held the clocks for {seconds(brake_us)} since the driver loaded",
                measured=seconds(brake_us),
                expected="0 s",
                advice=BRAKE_ADVICE,
                source="nvidia-smi -q 'Clocks Event Reasons Counters: HW Power Braking' "
                "(nvml.h nvmlDeviceGetViolationStatus); the 1 s cut is rigcheck's",
            )
        )
    cap_us = num(durations.get("sw_power_cap"))
    if cap_us is not None and cap_us > 0:
        low_now = draw is not None and cap is not None and cap > 0 and draw < CAP_FLAG_ONLY_FRACTION * cap
        out.append(
            gpu_finding(
                gpu,
                "power.cap-history",
                Severity.INFO,
                f"the software power cap reason has been set for {seconds(cap_us)} since the driver loaded",
                measured=seconds(cap_us),
                advice=(
                    f"the counter also runs while the card draws far below its limit, as now ({fmt(draw, 'W')} of "
                    f"{fmt(cap, 'W')}), when the cap holds nothing back: it is not time lost to throttling by itself; "
                    "`rigcheck burn` shows whether the cap holds the clocks under load"
                    if low_now and draw is not None and cap is not None
                    else "expected on a card that runs at its limit under load; if the limit is below the default, "
                    "this time is speed lost to the cap"
                ),
                source="nvidia-smi -q 'Clocks Event Reasons Counters: SW Power Capping' "
                "(nvml.h nvmlDeviceGetViolationStatus NVML_PERF_POLICY_POWER)",
            )
        )

    if not has_problem(out) and set_limit is not None and default is not None:
        draw_text = f", drawing {fmt(draw, 'W')}" if draw is not None else ""
        max_text = f", max {fmt(max_limit, 'W')}" if max_limit is not None else ""
        out.append(
            gpu_finding(
                gpu,
                "power.ok",
                Severity.OK,
                f"power limit {fmt(set_limit, 'W')} (default {fmt(default, 'W')}{max_text}){draw_text}"
                # the brake is said absent only where the input read its reason (-d POWER holds no reasons; a -q
                # cut inside the reasons block holds some of them)
                + ("; no power brake" if _brake_read(gpu) else ""),
                measured=fmt(set_limit, "W"),
                expected=f">= {fmt(default, 'W')} (default)",
                source=LIMIT_SOURCE,
            )
        )
    return out


def _brake_read(gpu: Gpu) -> bool:
    """Whether the input read the power-brake reason's state (so its absence from the active ones means off)."""
    if gpu.clock_event_reasons_active is None:
        return False
    supported = gpu.clock_event_reasons_supported
    return supported is None or "hw_power_brake_slowdown" in supported
