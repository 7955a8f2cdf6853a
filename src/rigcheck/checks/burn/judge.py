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
  the threshold is unknown) hold >= SW_THERMAL_FAIL_SHARE (10%, rigcheck.checks.doctor.thermal says why) of loaded
  time; else "power" when sw_power_cap or
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
- **Problems** (:func:`load_problems`, what makes `burn` and its verify stage exit 1; each named): a lost GPU;
  hardware thermal slowdown, hardware slowdown without its thermal or power-brake sub-reason, or the hardware
  power brake held for >= 1 s of loaded time (HW_SLOWDOWN_FAIL_S: clocks cut by half or more; shorter is a
  flicker); software thermal slowdown in >= 10% of the loaded samples; a thermal limiter, or a peak in the
  guide's 84-90 C throttling range.
- **Counters and peers** (rates.py, issue 28): the error counters' rates over the loaded samples (corrected
  and uncorrected ECC, PCIe replays, NVLink CRC/replay/recovery per link), the HBM-minus-core gradient, and each
  GPU's SM clock and power against the other loaded GPUs of its model; their findings (``burn.*``) are on each
  analysis, and a fail among them is a problem too.
- **Nulls**: every number left None gets its reason in ``missing`` (field -> a short phrase: "not in the
  trace", "the GPU was never loaded", "never reached the cap", "not measured by --analyze", "not lost", ...).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from rigcheck.checks.burn.columns import GpuColumns
from rigcheck.checks.burn.problems import HW_SLOWDOWN_FAIL_S, bare_hw_slowdown_seconds

# Re-exported: the verdict's rule lives in problems.py, its callers import it from here.
from rigcheck.checks.burn.problems import brake_seconds as brake_seconds  # noqa: PLC0414
from rigcheck.checks.burn.problems import is_problem as is_problem  # noqa: PLC0414
from rigcheck.checks.burn.problems import load_problems as load_problems  # noqa: PLC0414
from rigcheck.checks.burn.rates import judge_peers, own_figures
from rigcheck.checks.burn.tally import GpuTally
from rigcheck.checks.doctor.power import AT_CAP_FRACTION, BRAKE_ADVICE, LIMIT_TOLERANCE
from rigcheck.checks.doctor.thermal import (
    COOLING_ADVICE,
    EXCELLENT_MAX_C,
    GOOD_BELOW_C,
    SW_THERMAL_FAIL_SHARE,
    THROTTLE_ADVICE,
    THROTTLE_RANGE_C,
)
from rigcheck.model.burn import GpuBurnAnalysis, Limiter
from rigcheck.model.snapshot import CLOCK_EVENT_REASONS
from rigcheck.model.telemetry import Sample, SampleBatch, Trace, TraceGpu, counter_median
from rigcheck.units import fmt

LIMITER_SHARE = 0.2  # a power reason holding this share of loaded time names the limiter
# A GPU whose samples stop this long before the others' end is taken as lost (multi-GPU traces).
SILENT_LOSS_S = 2.0
SILENT_LOSS_INTERVALS = 5.0

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
    "power_draw_w_median_loaded",
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
HW_SLOWDOWN_ADVICE = (
    "hardware slowdown without a thermal or power-brake sub-reason under load: NVML raises it for high "
    "temperature, an external power brake, or power draw high enough for fast-trigger protection; check the "
    "cooling and the power cables (one independent cable per socket, no pigtails) and the PSU"
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
    """One analysis per GPU of a trace held in memory, in index order (each GPU's samples sorted by time)."""
    by_gpu: dict[int, list[Sample]] = {}
    for s in trace.samples:
        by_gpu.setdefault(s.gpu, []).append(s)
    clock_max: dict[int, float | None] = {}
    ordered: list[Sample] = []
    for index, samples in by_gpu.items():
        samples.sort(key=lambda s: s.t_s)
        kept = next((samples[:k] for k, s in enumerate(samples) if s.lost), samples)
        clock_max[index] = _max([s.sm_clock_max_mhz for s in kept])
        ordered += samples
    agg = BurnAggregator(trace.gpus, clock_max=clock_max)
    for s in ordered:
        agg.add(s)
    result = agg.finish(trace.interval_s)
    assert result is not None, "time-ordered samples and known clock ceilings always give an exact analysis"
    return result


# --- helpers ------------------------------------------------------------------------------------


def _max(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


class BurnAggregator:
    """The burn verdict fed one sample at a time (pure: no I/O), in memory that does not grow with the trace.

    Samples of each GPU must come in time order (those of different GPUs may interleave). :meth:`finish`
    returns None when one pass cannot give the exact figures: a GPU's samples went back in time, a sample's
    load was judged on its clock alone against a ceiling that rose later (a trace without utilization or
    power), or a default limit first appeared after samples needed it. The caller then analyses the trace
    held in memory (:func:`analyze_trace` sorts, and knows the ceilings up front). :meth:`feed_batches` takes a
    GPU's samples as columns too (columns.py: each distinct reading judged once, the same figures). Both feed
    a :class:`GpuTally` per GPU (tally.py).
    """

    def __init__(self, gpus: Mapping[int, TraceGpu], *, clock_max: Mapping[int, float | None] | None = None) -> None:
        self.gpus = gpus  # read live: a reader may fill it in as it goes
        self.clock_max = clock_max
        self.states: dict[int, GpuTally] = {}
        self.end = 0.0
        self.seen = False
        self.in_order = True
        self.columns: dict[int, GpuColumns] = {}  # the GPUs fed SampleBatches

    def add(self, sample: Sample) -> None:
        state = self.states.get(sample.gpu) or self._state(sample.gpu)
        if not self.seen or sample.t_s > self.end:
            self.end = sample.t_s
            self.seen = True
        if not state.add(sample):
            self.in_order = False

    def feed(self, samples: Iterable[Sample]) -> None:
        """:meth:`add` of each sample in turn, in one loop on locals: a long trace is hundreds of thousands of
        rows, and a call of add per row is a fair share of the time."""
        states, end, seen, in_order = self.states, self.end, self.seen, self.in_order
        try:
            for sample in samples:
                state = states.get(sample.gpu) or self._state(sample.gpu)
                t = sample.t_s
                if not seen or t > end:
                    end, seen = t, True
                if not state.add(sample):
                    in_order = False
        finally:  # a reader's error ends the loop: what was taken stays as add would have left it
            self.end, self.seen, self.in_order = end, seen, in_order

    def feed_batches(self, items: Iterable[Sample | SampleBatch]) -> None:
        """:meth:`add` of every sample, given one at a time or as a GPU's columns (TraceStream.batches)."""
        columns = self.columns
        for item in items:
            if isinstance(item, Sample):
                self.add(item)
                continue
            ts = item.t_s
            if not ts:
                continue
            top = max(ts)
            if not self.seen or top > self.end:
                self.end, self.seen = top, True
            gpu = columns.get(item.gpu)
            if gpu is None:
                gpu = columns[item.gpu] = GpuColumns(self.states.get(item.gpu) or self._state(item.gpu))
            if not gpu.add(ts, item.readings):
                self.in_order = False

    def _state(self, index: int) -> GpuTally:
        gpu = self.gpus.get(index) or TraceGpu(index=index)
        preset = self.clock_max is not None and index in self.clock_max
        ceiling = self.clock_max[index] if self.clock_max is not None and preset else None
        state = self.states[index] = GpuTally(index, gpu, ceiling, preset)
        return state

    def finish(self, interval_s: float | None) -> list[GpuBurnAnalysis] | None:
        """One analysis per GPU (those with samples, and those the header names), in index order."""
        if not self.in_order:
            return None
        for columns in self.columns.values():
            columns.fold()
        out: list[GpuBurnAnalysis] = []
        for index in sorted(set(self.states) | set(self.gpus)):
            gpu = self.gpus.get(index) or TraceGpu(index=index)
            state = self.states.get(index) or GpuTally(index, gpu, None, False)
            if not state.exact(gpu):
                return None
            out.append(_analysis(state, gpu, self.end, interval_s))
        judge_peers(out, self.gpus)
        return out


def _silent_loss(state: GpuTally, trace_end: float, interval: float | None) -> float | None:
    if state.lost_at is not None:
        return state.lost_at
    if state.last_t is None:
        return None
    step = interval or 0.0
    if trace_end - state.last_t >= max(SILENT_LOSS_S, SILENT_LOSS_INTERVALS * step):
        return state.last_t + step
    return None


def _analysis(st: GpuTally, gpu: TraceGpu, trace_end: float, interval: float | None) -> GpuBurnAnalysis:
    index = st.index
    lost_at = _silent_loss(st, trace_end, interval)
    slowdown = gpu.temp_slowdown_c
    temp_max = st.temp_max
    result = GpuBurnAnalysis(
        index=index,
        loaded_s=st.loaded_seconds(),
        power_draw_w_median_loaded=counter_median(st.power),
        power_enforced_limit_w=counter_median(st.limits if st.loaded else st.limits_all),
        temp_c_max=temp_max,
        temp_slowdown_c=slowdown,
        sm_clock_mhz_median_loaded=counter_median(st.clock),
        reasons_time_fraction={},
        limiter="unknown",
        verdict="",
        advice="",
        slowdown_margin_c=(slowdown - temp_max) if slowdown is not None and temp_max is not None else None,
        sm_clock_max_mhz=st.clock_max,
        lost_at_s=lost_at,
    )
    if not st.loaded:
        result.verdict = "not loaded" + _lost_words(lost_at)
        result.advice = _join([LOST_ADVICE if lost_at is not None else None, NOT_LOADED_ADVICE])
        _explain_nulls(result, st)
        own_figures(result, st)
        return result

    if st.with_reasons:
        counts = st.reason_counts
        result.reasons_time_fraction = {name: counts[name] / st.with_reasons for name in CLOCK_EVENT_REASONS}
    if st.temp_peak is not None and st.temp_first is not None:
        result.temp_rise_c = st.temp_peak - st.temp_first
        result.temp_plateau_c = st.temps.plateau()
    _clocks(result, st)
    result.time_to_power_cap_s = st.time_to_cap
    result.limiter = _limiter(result, st)
    band = _band(result)
    bare = bare_hw_slowdown_seconds(result)
    hw_words = f"; hardware slowdown for {bare:.1f} s" if bare >= HW_SLOWDOWN_FAIL_S else ""
    result.verdict = f"{band}, {LIMITER_WORDS[result.limiter]}{hw_words}" + _lost_words(lost_at)
    result.advice = _advice(result, gpu, band)
    _explain_nulls(result, st)
    own_figures(result, st)
    return result


def _explain_nulls(result: GpuBurnAnalysis, st: GpuTally) -> None:
    """Fill ``result.missing``: a reason for each number of the analysis that is None, and only for those."""

    def absent(key: str) -> str:
        """Why a loaded-sample figure is None: the column is not in the trace, or it is but not while loaded."""
        return NOT_WHILE_LOADED if st.any[key] else NOT_IN_TRACE

    reasons = dict.fromkeys(
        ("power_enforced_limit_w", "temp_c_max", "temp_slowdown_c", "sm_clock_max_mhz"), NOT_IN_TRACE
    )
    reasons["slowdown_margin_c"] = NO_THRESHOLD if result.temp_slowdown_c is None else NO_TEMPERATURE
    reasons["lost_at_s"] = NOT_LOST
    reasons.update(dict.fromkeys(BURN_ONLY_FIELDS, NOT_MEASURED))
    if not st.loaded:
        reasons.update(dict.fromkeys(LOADED_FIELDS, NEVER_LOADED))
    else:
        reasons["power_enforced_limit_w"] = absent("limit")
        reasons["power_draw_w_median_loaded"] = absent("power")
        clocks = absent("clock")
        reasons["sm_clock_mhz_median_loaded"] = clocks
        temps = absent("temp")
        reasons["temp_rise_c"] = temps
        reasons["temp_plateau_c"] = temps
        reasons["sm_clock_mhz_first"] = NO_FIRST_CLOCK if st.clocked_while_loaded else clocks
        reasons["sm_clock_mhz_sustained"] = NO_SUSTAINED_CLOCK if st.clocked_while_loaded else clocks
        reasons["sm_clock_drop_percent"] = NO_REFERENCE_CLOCK if st.clocked_while_loaded else clocks
        reasons["time_to_power_cap_s"] = NEVER_CAPPED if st.can_tell_cap else NOT_IN_TRACE
    result.missing = {
        name: reasons[name] for name in type(result).model_fields if name in reasons and getattr(result, name) is None
    }


def _clocks(result: GpuBurnAnalysis, st: GpuTally) -> None:
    result.sm_clock_mhz_first = counter_median(st.clock_first)
    result.sm_clock_mhz_sustained = counter_median(st.clock_rest)
    reference = result.sm_clock_max_mhz if result.sm_clock_max_mhz is not None else result.sm_clock_mhz_first
    sustained = (
        result.sm_clock_mhz_sustained
        if result.sm_clock_mhz_sustained is not None
        else result.sm_clock_mhz_median_loaded
    )
    if reference is not None and reference > 0 and sustained is not None:
        result.sm_clock_drop_percent = round((reference - sustained) / reference * 100, 1)


def _limiter(result: GpuBurnAnalysis, st: GpuTally) -> Limiter:
    power, limit, peak = result.power_draw_w_median_loaded, result.power_enforced_limit_w, result.temp_c_max
    slowdown = result.temp_slowdown_c
    power_at_cap = power is not None and limit is not None and power >= AT_CAP_FRACTION * limit
    if st.with_reasons:
        if st.thermal / st.with_reasons >= SW_THERMAL_FAIL_SHARE:
            return "thermal"
        if st.power_capped / st.with_reasons >= LIMITER_SHARE or power_at_cap:
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
    limit, default = result.power_enforced_limit_w, gpu.power_default_limit_w
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
        parts.append(THROTTLE_ADVICE)
    if bare_hw_slowdown_seconds(result) >= HW_SLOWDOWN_FAIL_S:
        parts.append(HW_SLOWDOWN_ADVICE)
    if result.limiter == "power":
        parts.append(_power_advice(result, gpu))
    elif result.limiter == "none":
        power = result.power_draw_w_median_loaded
        drew = (
            f" (median {fmt(power, 'W')} of {fmt(result.power_enforced_limit_w, 'W')})"
            if power is not None and (result.power_enforced_limit_w is not None)
            else ""
        )
        parts.append(f"nothing held the clocks back under this load{drew}")
    elif result.limiter == "unknown":
        parts.append(UNKNOWN_ADVICE)
    if band == "hot":
        parts.append("above the guide's 80 C 'good' band, close to where throttling starts; " + COOLING_ADVICE)
    return _join(parts)
