"""Under load: what held a GPU back during a trace, and the guide's verdict on it (issue #5, `burn --analyze`).

Pure: a :class:`Trace` in, one :class:`GpuBurnAnalysis` per GPU out. The rules, each rigcheck's choice
unless a source is named:

- **Loaded sample**: utilization >= 50%, or power draw >= 50% of the power limit (the default limit when
  the trace has no limit). Only when a sample has neither utilization nor power-with-a-limit, the SM clock
  decides: >= 50% of the card's max SM clock and no "idle" reason. (A light training load runs at ~45%
  utilization but well over half its power; NVML's power reading lags by about a second, so the first
  samples after a load stops may still count.)
- **Times** come from the timestamps: each sample stands for the time to the next one of its GPU (the
  median interval for the last one; gaps count at most 3 intervals). Reason shares are fractions of the
  loaded samples whose reasons were read.
- **Limiter**: "thermal" when thermal reasons (sw_thermal_slowdown, hw_thermal_slowdown, or hw_slowdown
  without a power brake while within NEAR_MARGIN_C of the slowdown threshold — or at the guide's 84 C when
  the threshold is unknown) hold >= 20% of loaded time; else "power" when sw_power_cap or
  hw_power_brake_slowdown hold >= 20% of it, or the median power while loaded is >= AT_CAP_FRACTION of the
  limit; else "none". Thermal wins when both pass: it is the one that harms the card. Without a reasons
  column: "thermal" when the peak reaches the card's slowdown threshold, "power" at the cap by power
  draw, "none" when both can be ruled out (the limit and a temperature are known), else "unknown". A GPU
  that is never loaded gets "unknown" and the verdict "not loaded".
- **Verdict** (the guide's Cooling bands on the peak temperature): "excellent" <= 75 C, "good" < 80 C,
  "hot" 80 to < 84 C, "throttling" at >= 84 C or with a thermal limiter; then "power-limited",
  "thermally limited", "not limited" or "limiter unknown".
- **Clock drop**: from the card's max SM clock (else the median over the first 3 s of load) to the median
  over the rest of the load.
- **Nulls**: every number left None gets its reason in ``missing`` (field -> a short phrase: "not in the
  trace", "the GPU was never loaded", "never reached the cap", "not measured by --analyze", "not lost", ...).
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable, Sequence

from rigcheck.checks.common import fmt
from rigcheck.checks.power import AT_CAP_FRACTION, BRAKE_ADVICE, BRAKE_HISTORY_WARN_US, LIMIT_TOLERANCE
from rigcheck.checks.thermal import COOLING_ADVICE, EXCELLENT_MAX_C, GOOD_BELOW_C, NEAR_MARGIN_C, THROTTLE_RANGE_C
from rigcheck.model.burn import GpuBurnAnalysis, Limiter
from rigcheck.model.snapshot import CLOCK_EVENT_REASONS
from rigcheck.model.telemetry import Sample, Trace, TraceGpu

LOADED_UTIL_PERCENT = 50.0
LOADED_POWER_FRACTION = 0.5
LOADED_CLOCK_FRACTION = 0.5
LIMITER_SHARE = 0.2  # a reason holding this share of loaded time names the limiter
FIRST_SECONDS_S = 3.0  # "the first seconds" of load, for the clock drop
PLATEAU_SHARE = 0.2  # the plateau is the median of the last 20% of loaded samples
MAX_GAP_INTERVALS = 3.0  # a gap longer than this many intervals counts as this many
# A GPU whose samples stop this long before the others' end is taken as lost (multi-GPU traces).
SILENT_LOSS_S = 2.0
SILENT_LOSS_INTERVALS = 5.0

POWER_REASONS = frozenset({"sw_power_cap", "hw_power_brake_slowdown"})
THERMAL_REASONS = frozenset({"sw_thermal_slowdown", "hw_thermal_slowdown"})

# Why a number of a GpuBurnAnalysis is None (its `missing` map).
NOT_IN_TRACE = "not in the trace"
NEVER_LOADED = "the GPU was never loaded"
NEVER_CAPPED = "never reached the cap"
NOT_MEASURED = "not measured by --analyze"
NOT_LOST = "not lost"
NO_THRESHOLD = "the slowdown threshold is not in the trace"
NO_TEMPERATURE = "no temperature in the trace"
NOT_WHILE_LOADED = "no reading while the GPU was loaded"
NO_FIRST_CLOCK = "no SM clock reading in the first 3 s of load"
NO_SUSTAINED_CLOCK = "no SM clock reading after the first 3 s of load"
NO_REFERENCE_CLOCK = "no usable reference clock: neither the max SM clock nor a first-seconds clock"
# The numbers that come from the loaded samples only.
LOADED_FIELDS = (
    "power_w_median_loaded",
    "sm_clock_mhz_median_loaded",
    "time_to_power_cap_s",
    "temp_rise_c",
    "temp_plateau_c",
    "sm_clock_mhz_first",
    "sm_clock_mhz_sustained",
    "sm_clock_drop_percent",
)
# Set by `rigcheck burn` (rigcheck.bench.burn), never by the analysis of a trace.
BURN_ONLY_FIELDS = ("tflops_sustained", "tflops_first_10s", "errors")

LIMITER_WORDS: dict[Limiter, str] = {
    "power": "power-limited",
    "thermal": "thermally limited",
    "none": "not limited",
    "unknown": "limiter unknown",
}
LOST_ADVICE = (
    "it fell off the bus under load: check its power cables and the PSU (a sagging supply drops cards under "
    "load — the guide: one independent cable per socket, enough unused watts), reseat the card, and look for "
    "Xid 79 in the kernel log (`sudo dmesg | grep -i xid`)"
)
NOT_LOADED_ADVICE = (
    "the trace never loads this GPU (utilization under 50% and power under half its limit throughout): record "
    "one while a sustained load runs (`rigcheck burn`, gpu-burn, or the training job itself)"
)
UNKNOWN_ADVICE = (
    "the trace has no clock-event reasons and too little else to tell what held the clocks back: record "
    "clocks_event_reasons.active, power.limit and temperature.gpu (rigcheck monitor records them all)"
)


def analyze_trace(trace: Trace) -> list[GpuBurnAnalysis]:
    """One analysis per GPU of the trace, in index order."""
    end = max((s.t_s for s in trace.samples), default=0.0)
    return [_analyze_gpu(trace, index, end) for index in trace.gpu_indices()]


def is_problem(analysis: GpuBurnAnalysis) -> bool:
    """What makes `burn --analyze` exit 1: thermal throttling, a lost GPU, or >= 1 s of hardware power brake."""
    if analysis.lost_at_s is not None or analysis.limiter == "thermal" or analysis.verdict.startswith("throttling"):
        return True
    return brake_seconds(analysis) * 1e6 >= BRAKE_HISTORY_WARN_US


def brake_seconds(analysis: GpuBurnAnalysis) -> float:
    return analysis.reasons_time_fraction.get("hw_power_brake_slowdown", 0.0) * analysis.loaded_s


# --- helpers ------------------------------------------------------------------------------------


def _median(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return float(statistics.median(known)) if known else None


def _max(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


def _durations(samples: list[Sample]) -> list[float]:
    """Seconds each sample stands for: the step to the next one, gaps capped, the last one a median step."""
    steps = [b.t_s - a.t_s for a, b in itertools.pairwise(samples)]
    positive = [s for s in steps if s > 0]
    typical = statistics.median(positive) if positive else 0.0
    cap = typical * MAX_GAP_INTERVALS
    return [max(0.0, min(s, cap)) for s in steps] + ([typical] if samples else [])


def _limit(sample: Sample, gpu: TraceGpu) -> float | None:
    if sample.power_limit_w is not None and sample.power_limit_w > 0:
        return sample.power_limit_w
    default = gpu.power_default_limit_w
    return default if default is not None and default > 0 else None


def _is_loaded(sample: Sample, gpu: TraceGpu, clock_max: float | None) -> bool:
    util = sample.utilization_gpu_percent
    limit = _limit(sample, gpu)
    has_power = sample.power_w is not None and limit is not None
    if util is not None and util >= LOADED_UTIL_PERCENT:
        return True
    if (
        has_power
        and sample.power_w is not None
        and limit is not None
        and sample.power_w >= LOADED_POWER_FRACTION * limit
    ):
        return True
    if util is not None or has_power:
        return False
    ceiling = sample.sm_clock_max_mhz if sample.sm_clock_max_mhz is not None else clock_max
    if sample.sm_clock_mhz is None or ceiling is None or ceiling <= 0:
        return False
    idle = sample.reasons is not None and "idle" in sample.reasons
    return not idle and sample.sm_clock_mhz >= LOADED_CLOCK_FRACTION * ceiling


def _thermal_sample(sample: Sample, slowdown: float | None) -> bool:
    reasons = set(sample.reasons or [])
    if reasons & THERMAL_REASONS:
        return True
    if "hw_slowdown" in reasons and "hw_power_brake_slowdown" not in reasons and sample.temp_c is not None:
        hot_at = slowdown - NEAR_MARGIN_C if slowdown is not None else THROTTLE_RANGE_C
        return sample.temp_c >= hot_at
    return False


def _lost_at(samples: list[Sample], trace_end: float, interval: float | None) -> tuple[list[Sample], float | None]:
    """The samples before the GPU was lost, and when it was (an explicit lost sample, or silence)."""
    for k, sample in enumerate(samples):
        if sample.lost:
            return samples[:k], sample.t_s
    if not samples:
        return samples, None
    step = interval or 0.0
    last = samples[-1].t_s
    if trace_end - last >= max(SILENT_LOSS_S, SILENT_LOSS_INTERVALS * step):
        return samples, last + step
    return samples, None


# --- one GPU ------------------------------------------------------------------------------------


def _analyze_gpu(trace: Trace, index: int, trace_end: float) -> GpuBurnAnalysis:
    gpu = trace.gpus.get(index) or TraceGpu(index=index)
    samples = sorted(trace.for_gpu(index), key=lambda s: s.t_s)
    samples, lost_at = _lost_at(samples, trace_end, trace.interval_s)
    durations = _durations(samples)
    clock_max = _max([s.sm_clock_max_mhz for s in samples])
    slowdown = gpu.temp_slowdown_c

    loaded = [k for k, s in enumerate(samples) if _is_loaded(s, gpu, clock_max)]
    loaded_samples = [samples[k] for k in loaded]
    loaded_s = round(sum(durations[k] for k in loaded), 3)
    temp_max = _max([s.temp_c for s in samples])
    limit = _median([_limit(s, gpu) for s in (loaded_samples or samples)])

    result = GpuBurnAnalysis(
        index=index,
        loaded_s=loaded_s,
        power_w_median_loaded=_median([s.power_w for s in loaded_samples]),
        power_limit_w=limit,
        temp_c_max=temp_max,
        temp_slowdown_c=slowdown,
        sm_clock_mhz_median_loaded=_median([s.sm_clock_mhz for s in loaded_samples]),
        reasons_time_fraction={},
        limiter="unknown",
        verdict="",
        advice="",
        slowdown_margin_c=(slowdown - temp_max) if slowdown is not None and temp_max is not None else None,
        sm_clock_max_mhz=clock_max,
        lost_at_s=lost_at,
    )
    if not loaded_samples:
        result.verdict = "not loaded" + _lost_words(lost_at)
        result.advice = _join([LOST_ADVICE if lost_at is not None else None, NOT_LOADED_ADVICE])
        _explain_nulls(result, samples, loaded_samples, gpu)
        return result

    start = loaded_samples[0].t_s
    with_reasons = [s for s in loaded_samples if s.reasons is not None]
    if with_reasons:
        result.reasons_time_fraction = {
            name: sum(1 for s in with_reasons if name in (s.reasons or [])) / len(with_reasons)
            for name in CLOCK_EVENT_REASONS
        }
    _temperatures(result, loaded_samples)
    _clocks(result, loaded_samples, start)
    for s in loaded_samples:
        at_cap = s.power_w is not None and (lim := _limit(s, gpu)) is not None and s.power_w >= AT_CAP_FRACTION * lim
        if at_cap or "sw_power_cap" in (s.reasons or []):
            result.time_to_power_cap_s = round(s.t_s - start, 3)
            break

    result.limiter = _limiter(result, with_reasons, slowdown)
    band = _band(result)
    result.verdict = f"{band}, {LIMITER_WORDS[result.limiter]}" + _lost_words(lost_at)
    result.advice = _advice(result, gpu, band)
    _explain_nulls(result, samples, loaded_samples, gpu)
    return result


def _explain_nulls(result: GpuBurnAnalysis, samples: list[Sample], loaded: list[Sample], gpu: TraceGpu) -> None:
    """Fill ``result.missing``: a reason for each number of the analysis that is None, and only for those."""

    def absent(read: Callable[[Sample], float | None]) -> str:
        """Why a loaded-sample figure is None: the column is not in the trace, or it is but not while loaded."""
        return NOT_WHILE_LOADED if any(read(s) is not None for s in samples) else NOT_IN_TRACE

    reasons = dict.fromkeys(("power_limit_w", "temp_c_max", "temp_slowdown_c", "sm_clock_max_mhz"), NOT_IN_TRACE)
    reasons["slowdown_margin_c"] = NO_THRESHOLD if result.temp_slowdown_c is None else NO_TEMPERATURE
    reasons["lost_at_s"] = NOT_LOST
    reasons.update(dict.fromkeys(BURN_ONLY_FIELDS, NOT_MEASURED))
    if not loaded:
        reasons.update(dict.fromkeys(LOADED_FIELDS, NEVER_LOADED))
    else:
        reasons["power_limit_w"] = absent(lambda s: _limit(s, gpu))
        reasons["power_w_median_loaded"] = absent(lambda s: s.power_w)
        clocks = absent(lambda s: s.sm_clock_mhz)
        reasons["sm_clock_mhz_median_loaded"] = clocks
        temps = absent(lambda s: s.temp_c)
        reasons["temp_rise_c"] = temps
        reasons["temp_plateau_c"] = temps
        clocked_while_loaded = any(s.sm_clock_mhz is not None for s in loaded)
        reasons["sm_clock_mhz_first"] = NO_FIRST_CLOCK if clocked_while_loaded else clocks
        reasons["sm_clock_mhz_sustained"] = NO_SUSTAINED_CLOCK if clocked_while_loaded else clocks
        reasons["sm_clock_drop_percent"] = NO_REFERENCE_CLOCK if clocked_while_loaded else clocks
        can_tell = any(s.reasons is not None or (s.power_w is not None and _limit(s, gpu) is not None) for s in loaded)
        reasons["time_to_power_cap_s"] = NEVER_CAPPED if can_tell else NOT_IN_TRACE
    result.missing = {
        name: reasons[name] for name in type(result).model_fields if name in reasons and getattr(result, name) is None
    }


def _temperatures(result: GpuBurnAnalysis, loaded: list[Sample]) -> None:
    temps = [s.temp_c for s in loaded if s.temp_c is not None]
    if not temps:
        return
    peak = max(temps)
    result.temp_rise_c = peak - temps[0]
    tail = temps[-max(1, round(len(temps) * PLATEAU_SHARE)) :]
    result.temp_plateau_c = float(statistics.median(tail))


def _clocks(result: GpuBurnAnalysis, loaded: list[Sample], start: float) -> None:
    first = [s.sm_clock_mhz for s in loaded if s.t_s - start < FIRST_SECONDS_S]
    rest = [s.sm_clock_mhz for s in loaded if s.t_s - start >= FIRST_SECONDS_S]
    result.sm_clock_mhz_first = _median(first)
    result.sm_clock_mhz_sustained = _median(rest)
    reference = result.sm_clock_max_mhz if result.sm_clock_max_mhz is not None else result.sm_clock_mhz_first
    sustained = (
        result.sm_clock_mhz_sustained
        if result.sm_clock_mhz_sustained is not None
        else result.sm_clock_mhz_median_loaded
    )
    if reference is not None and reference > 0 and sustained is not None:
        result.sm_clock_drop_percent = round((reference - sustained) / reference * 100, 1)


def _limiter(result: GpuBurnAnalysis, with_reasons: list[Sample], slowdown: float | None) -> Limiter:
    power, limit, peak = result.power_w_median_loaded, result.power_limit_w, result.temp_c_max
    power_at_cap = power is not None and limit is not None and power >= AT_CAP_FRACTION * limit
    if with_reasons:
        thermal_share = sum(1 for s in with_reasons if _thermal_sample(s, slowdown)) / len(with_reasons)
        power_share = sum(1 for s in with_reasons if POWER_REASONS & set(s.reasons or [])) / len(with_reasons)
        if thermal_share >= LIMITER_SHARE:
            return "thermal"
        if power_share >= LIMITER_SHARE or power_at_cap:
            return "power"
        return "none"
    if slowdown is not None and peak is not None and peak >= slowdown:
        return "thermal"
    if power_at_cap:
        return "power"
    cool = peak is not None and peak < (slowdown if slowdown is not None else THROTTLE_RANGE_C)
    if limit is not None and power is not None and cool:
        return "none"
    return "unknown"


def _band(result: GpuBurnAnalysis) -> str:
    peak = result.temp_c_max
    if result.limiter == "thermal" or (peak is not None and peak >= THROTTLE_RANGE_C):
        return "throttling"
    if peak is None:
        return "temperature unknown"
    if peak <= EXCELLENT_MAX_C:
        return "excellent"
    if peak < GOOD_BELOW_C:
        return "good"
    return "hot"


def _lost_words(lost_at: float | None) -> str:
    return f"; GPU lost at {lost_at:.1f} s" if lost_at is not None else ""


def _join(parts: list[str | None]) -> str:
    return "; ".join(p for p in parts if p)


def _power_advice(result: GpuBurnAnalysis, gpu: TraceGpu) -> str:
    if brake_seconds(result) > 0 and result.reasons_time_fraction.get("hw_power_brake_slowdown", 0.0) >= (
        result.reasons_time_fraction.get("sw_power_cap", 0.0)
    ):
        return BRAKE_ADVICE
    limit, default = result.power_limit_w, gpu.power_default_limit_w
    set_to = f"`sudo nvidia-smi -i {result.index} -pl {fmt(default) if default is not None else 'WATTS'}`"
    if limit is not None and default is not None and limit < default * (1 - LIMIT_TOLERANCE):
        text = (
            f"the power limit {fmt(limit, 'W')} is below the card's default {fmt(default, 'W')}: raise it with "
            f"{set_to}, provided the PSU has the unused watts (the guide)"
        )
    elif limit is not None and default is not None:
        text = (
            f"this is the card's power cap at work: it runs at its {fmt(limit, 'W')} default limit, as a "
            "datacenter card does under full load; nothing to fix"
        )
    else:
        at = f" at its {fmt(limit, 'W')} limit" if limit is not None else ""
        text = (
            f"this is the card's power cap at work{at}: expected for a datacenter card at its default limit; if "
            f"`nvidia-smi -q -d POWER` shows the limit below the default, raise it ({set_to}), provided the PSU "
            "has the unused watts (the guide)"
        )
    if brake_seconds(result) > 0:
        text += "; the hardware power brake also fired: " + BRAKE_ADVICE
    return text


def _advice(result: GpuBurnAnalysis, gpu: TraceGpu, band: str) -> str:
    parts: list[str | None] = [LOST_ADVICE if result.lost_at_s is not None else None]
    if result.limiter == "thermal" or band == "throttling":
        parts.append(COOLING_ADVICE)
    if result.limiter == "power":
        parts.append(_power_advice(result, gpu))
    elif result.limiter == "none":
        power = result.power_w_median_loaded
        drew = (
            f" (median {fmt(power, 'W')} of {fmt(result.power_limit_w, 'W')})"
            if power is not None and (result.power_limit_w is not None)
            else ""
        )
        parts.append(f"nothing held the clocks back under this load{drew}")
    elif result.limiter == "unknown":
        parts.append(UNKNOWN_ADVICE)
    if band == "hot":
        parts.append("above the guide's 80 C 'good' band, close to where throttling starts; " + COOLING_ADVICE)
    return _join(parts)
