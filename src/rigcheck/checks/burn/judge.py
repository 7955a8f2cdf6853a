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
- **Nulls**: every number left None gets its reason in ``missing`` (field -> a short phrase: "not in the
  trace", "the GPU was never loaded", "never reached the cap", "not measured by --analyze", "not lost", ...).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from rigcheck.checks.burn.plateau import _Rle
from rigcheck.checks.burn.problems import HW_SLOWDOWN_FAIL_S, bare_hw_slowdown_seconds

# Re-exported: the verdict's rule lives in burn_problems, its callers import it from here.
from rigcheck.checks.burn.problems import brake_seconds as brake_seconds  # noqa: PLC0414
from rigcheck.checks.burn.problems import is_problem as is_problem  # noqa: PLC0414
from rigcheck.checks.burn.problems import load_problems as load_problems  # noqa: PLC0414
from rigcheck.checks.common import fmt
from rigcheck.checks.doctor.power import AT_CAP_FRACTION, BRAKE_ADVICE, LIMIT_TOLERANCE
from rigcheck.checks.doctor.thermal import (
    COOLING_ADVICE,
    EXCELLENT_MAX_C,
    GOOD_BELOW_C,
    LOADED_POWER_FRACTION,
    LOADED_UTIL_PERCENT,
    NEAR_MARGIN_C,
    SW_THERMAL_FAIL_SHARE,
    THROTTLE_ADVICE,
    THROTTLE_RANGE_C,
)
from rigcheck.model.burn import GpuBurnAnalysis, Limiter
from rigcheck.model.snapshot import CLOCK_EVENT_REASONS
from rigcheck.model.telemetry import Reading, Sample, SampleBatch, Trace, TraceGpu, counter_median

if TYPE_CHECKING:
    from rigcheck.checks.burn.columns import GpuColumns

LOADED_CLOCK_FRACTION = 0.5
LIMITER_SHARE = 0.2  # a power reason holding this share of loaded time names the limiter
FIRST_SECONDS_S = 3.0  # "the first seconds" of load, for the clock drop
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


def _limit(sample: Sample | Reading, gpu: TraceGpu) -> float | None:
    if sample.power_enforced_limit_w is not None and sample.power_enforced_limit_w > 0:
        return sample.power_enforced_limit_w
    default = gpu.power_default_limit_w
    return default if default is not None and default > 0 else None


def _is_loaded(sample: Sample | Reading, gpu: TraceGpu, clock_max: float | None) -> bool:
    util = sample.utilization_gpu_percent
    limit = _limit(sample, gpu)
    has_power = sample.power_draw_w is not None and limit is not None
    if util is not None and util >= LOADED_UTIL_PERCENT:
        return True
    if (
        has_power
        and sample.power_draw_w is not None
        and limit is not None
        and sample.power_draw_w >= LOADED_POWER_FRACTION * limit
    ):
        return True
    if util is not None or has_power:
        return False
    ceiling = sample.sm_clock_max_mhz if sample.sm_clock_max_mhz is not None else clock_max
    if sample.sm_clock_mhz is None or ceiling is None or ceiling <= 0:
        return False
    idle = sample.reasons is not None and "idle" in sample.reasons
    return not idle and sample.sm_clock_mhz >= LOADED_CLOCK_FRACTION * ceiling


def _thermal_sample(sample: Sample | Reading, slowdown: float | None) -> bool:
    reasons = set(sample.reasons or [])
    if reasons & THERMAL_REASONS:
        return True
    if "hw_slowdown" in reasons and "hw_power_brake_slowdown" not in reasons and sample.temp_c is not None:
        hot_at = slowdown - NEAR_MARGIN_C if slowdown is not None else THROTTLE_RANGE_C
        return sample.temp_c >= hot_at
    return False


def _reason_facts(reasons: Sequence[str]) -> tuple[frozenset[str], bool, bool, bool, bool]:
    """What a sample's reasons say whatever its temperature: the distinct names; thermal for sure; thermal if
    hot enough (hw_slowdown without the power brake: _thermal_sample then asks the temperature); power
    capped; sw_power_cap among them."""
    names = frozenset(reasons)
    thermal = bool(names & THERMAL_REASONS)
    near = "hw_slowdown" in names and "hw_power_brake_slowdown" not in names
    return names, thermal, near, bool(POWER_REASONS & names), "sw_power_cap" in names


# --- one GPU, a sample at a time ---------------------------------------------------------------


class _GpuState:
    """Running figures of one GPU: counts of the values whose median is asked (readings repeat, so these stay
    small), maxima, first times, shares, and flags for the reasons of nulls."""

    def __init__(self, index: int, gpu: TraceGpu, clock_max: float | None, preset: bool) -> None:
        self.index = index
        self.gpu = gpu
        self.default_limit = gpu.power_default_limit_w
        self.clock_max = clock_max
        self.clock_preset = preset
        self.deferred_clock: list[float | None] = []  # the ceiling the first clock-only load decision used
        self.lost_at: float | None = None
        self.done = False
        self.n = 0
        self.last_t: float | None = None
        self.last_loaded = False
        self.steps: Counter[float] = Counter()  # positive steps between samples
        self.loaded_steps: Counter[float] = Counter()  # steps after loaded samples
        self.loaded_sum = 0.0  # those steps summed in order, as if no cap applied
        self.temp_max: float | None = None
        self.limits_all: Counter[float] = Counter()
        self.any = {"limit": False, "power": False, "clock": False, "temp": False}
        # Loaded samples.
        self.loaded = 0
        self.start: float | None = None
        self.limits: Counter[float] = Counter()
        self.power: Counter[float] = Counter()
        self.clock: Counter[float] = Counter()
        self.clock_first: Counter[float] = Counter()
        self.clock_rest: Counter[float] = Counter()
        self.with_reasons = 0
        self.reason_sets: Counter[tuple[str, ...]] = Counter()  # loaded samples per distinct set of reasons
        self.thermal = 0
        self.power_capped = 0
        self.temps = _Rle()
        self.temp_first: float | None = None
        self.temp_peak: float | None = None
        self.time_to_cap: float | None = None
        self.clocked_while_loaded = False
        self.can_tell_cap = False
        self.reason_facts: dict[tuple[str, ...], tuple[frozenset[str], bool, bool, bool, bool]] = {}

    def add(self, s: Sample) -> bool:
        """Take one sample; False when it came before the previous one (the one-pass figures would be wrong)."""
        # Run for every row of a long trace: the rules of _limit, _is_loaded and _thermal_sample are spelled
        # out here on locals (the functions stay the reference), and what a set of reasons implies is worked
        # out once per distinct set (_reason_facts).
        if self.done:
            return True
        t = s.t_s
        if s.lost:
            self.lost_at = t
            self.done = True
            return True
        in_order = True
        last_t = self.last_t
        if last_t is not None:
            step = t - last_t
            in_order = step >= 0
            if step > 0:
                self.steps[step] += 1
            if self.last_loaded:
                self.loaded_sum += max(0.0, step)
                self.loaded_steps[step] += 1
        self.last_t = t
        self.n += 1
        gpu = self.gpu
        ceiling = s.sm_clock_max_mhz
        if ceiling is not None and not self.clock_preset and (self.clock_max is None or ceiling > self.clock_max):
            self.clock_max = ceiling
        limit = s.power_enforced_limit_w
        if limit is None or not limit > 0:
            limit = gpu.power_default_limit_w
            if limit is not None and not limit > 0:
                limit = None
        seen = self.any
        if limit is not None:
            self.limits_all[limit] += 1
            seen["limit"] = True
        power, clock, temp = s.power_draw_w, s.sm_clock_mhz, s.temp_c
        if power is not None:
            seen["power"] = True
        if clock is not None:
            seen["clock"] = True
        if temp is not None:
            seen["temp"] = True
            if self.temp_max is None or temp > self.temp_max:
                self.temp_max = temp
        util = s.utilization_gpu_percent
        has_power = power is not None and limit is not None
        if util is not None and util >= LOADED_UTIL_PERCENT:
            loaded = True
        elif has_power:
            loaded = power >= LOADED_POWER_FRACTION * limit  # type: ignore[operator]  # has_power: both known
        elif util is not None:
            loaded = False
        else:
            if ceiling is None and not self.deferred_clock:
                # Only here does "loaded" lean on the GPU's clock ceiling over the whole trace, known at the end.
                self.deferred_clock.append(self.clock_max)
            loaded = _is_loaded(s, gpu, self.clock_max)
        self.last_loaded = loaded
        if not loaded:
            return in_order
        self.loaded += 1
        start = self.start
        if start is None:
            start = self.start = t
        if limit is not None:
            self.limits[limit] += 1
        if power is not None:
            self.power[power] += 1
        if clock is not None:
            self.clock[clock] += 1
            self.clocked_while_loaded = True
            (self.clock_first if t - start < FIRST_SECONDS_S else self.clock_rest)[clock] += 1
        reasons = s.reasons
        if reasons is not None:
            self.with_reasons += 1
            key = tuple(reasons)
            facts = self.reason_facts.get(key)
            if facts is None:
                facts = self.reason_facts[key] = _reason_facts(reasons)
            _, thermal, near, capped, sw_cap = facts
            self.reason_sets[key] += 1  # one count per row; per name only at the end (reason_counts)
            if thermal or (near and temp is not None and _thermal_sample(s, gpu.temp_slowdown_c)):
                self.thermal += 1
            if capped:
                self.power_capped += 1
            self.can_tell_cap = True
        else:
            sw_cap = False
            if has_power:
                self.can_tell_cap = True
        if temp is not None:
            self.temps.add(temp)
            if self.temp_first is None:
                self.temp_first = temp
            if self.temp_peak is None or temp > self.temp_peak:
                self.temp_peak = temp
        if self.time_to_cap is None:
            at_cap = has_power and power >= AT_CAP_FRACTION * limit  # type: ignore[operator]  # both known
            if at_cap or sw_cap:
                self.time_to_cap = round(t - start, 3)
        return in_order

    @property
    def reason_counts(self) -> Counter[str]:
        """Loaded samples per reason name."""
        counts: Counter[str] = Counter()
        for key, n in self.reason_sets.items():
            for name in self.reason_facts[key][0]:
                counts[name] += n
        return counts

    def exact(self, gpu: TraceGpu) -> bool:
        """Whether one pass saw what the whole trace would have told: the clock ceiling and the default limit
        used along the way are the final ones."""
        if self.deferred_clock and self.deferred_clock[0] != self.clock_max:
            return False
        return gpu.power_default_limit_w == self.default_limit

    def loaded_seconds(self) -> float:
        """Each loaded sample stands for the step to the next (gaps capped at MAX_GAP_INTERVALS steps), the last
        sample for a median step."""
        if not self.loaded:
            return 0  # as sum() of no durations: an int, which the JSON prints as 0, not 0.0
        typical = counter_median(self.steps) or 0.0
        cap = typical * MAX_GAP_INTERVALS
        if any(step > cap for step in self.loaded_steps):
            total = 0.0
            for step, count in sorted(self.loaded_steps.items()):
                total += max(0.0, min(step, cap)) * count
        else:
            total = self.loaded_sum  # the same additions in the same order as summing the list of durations
        if self.last_loaded and self.n:
            total += typical
        return round(total, 3)


class BurnAggregator:
    """The burn verdict fed one sample at a time (pure: no I/O), in memory that does not grow with the trace.

    Samples of each GPU must come in time order (those of different GPUs may interleave). :meth:`finish`
    returns None when one pass cannot give the exact figures: a GPU's samples went back in time, a sample's
    load was judged on its clock alone against a ceiling that rose later (a trace without utilization or
    power), or a default limit first appeared after samples needed it. The caller then analyses the trace
    held in memory (:func:`analyze_trace` sorts, and knows the ceilings up front). :meth:`feed_batches` takes a
    GPU's samples as columns too (burn_columns.py: each distinct reading judged once, the same figures).
    """

    def __init__(self, gpus: Mapping[int, TraceGpu], *, clock_max: Mapping[int, float | None] | None = None) -> None:
        self.gpus = gpus  # read live: a reader may fill it in as it goes
        self.clock_max = clock_max
        self.states: dict[int, _GpuState] = {}
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
        from rigcheck.checks.burn.columns import GpuColumns

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

    def _state(self, index: int) -> _GpuState:
        gpu = self.gpus.get(index) or TraceGpu(index=index)
        preset = self.clock_max is not None and index in self.clock_max
        ceiling = self.clock_max[index] if self.clock_max is not None and preset else None
        state = self.states[index] = _GpuState(index, gpu, ceiling, preset)
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
            state = self.states.get(index) or _GpuState(index, gpu, None, False)
            if not state.exact(gpu):
                return None
            out.append(_analysis(state, gpu, self.end, interval_s))
        return out


def _silent_loss(state: _GpuState, trace_end: float, interval: float | None) -> float | None:
    if state.lost_at is not None:
        return state.lost_at
    if state.last_t is None:
        return None
    step = interval or 0.0
    if trace_end - state.last_t >= max(SILENT_LOSS_S, SILENT_LOSS_INTERVALS * step):
        return state.last_t + step
    return None


def _analysis(st: _GpuState, gpu: TraceGpu, trace_end: float, interval: float | None) -> GpuBurnAnalysis:
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
    return result


def _explain_nulls(result: GpuBurnAnalysis, st: _GpuState) -> None:
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


def _clocks(result: GpuBurnAnalysis, st: _GpuState) -> None:
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


def _limiter(result: GpuBurnAnalysis, st: _GpuState) -> Limiter:
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
