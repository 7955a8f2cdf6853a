"""One GPU's running figures in a burn analysis (:class:`GpuTally`) and the rules that judge one reading: the
interface the two ways of feeding the verdict share. judge.py feeds a tally a sample at a time and turns it into
the GPU's analysis; columns.py feeds it a SampleBatch, judging each distinct reading once with the same rules.
Pure, as checks/.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from rigcheck.checks.burn.counters import CounterTrack, counts_of
from rigcheck.checks.burn.plateau import Rle
from rigcheck.checks.doctor.power import AT_CAP_FRACTION
from rigcheck.checks.doctor.thermal import LOADED_POWER_FRACTION, LOADED_UTIL_PERCENT, NEAR_MARGIN_C, THROTTLE_RANGE_C
from rigcheck.model.telemetry import Reading, Sample, TraceGpu, counter_median

LOADED_CLOCK_FRACTION = 0.5
FIRST_SECONDS_S = 3.0  # "the first seconds" of load, for the clock drop
MAX_GAP_INTERVALS = 3.0  # a gap longer than this many intervals counts as this many

POWER_REASONS = frozenset({"sw_power_cap", "hw_power_brake_slowdown"})
THERMAL_REASONS = frozenset({"sw_thermal_slowdown", "hw_thermal_slowdown"})


# --- one reading -------------------------------------------------------------------------------


def limit_of(sample: Sample | Reading, gpu: TraceGpu) -> float | None:
    if sample.power_enforced_limit_w is not None and sample.power_enforced_limit_w > 0:
        return sample.power_enforced_limit_w
    default = gpu.power_default_limit_w
    return default if default is not None and default > 0 else None


def is_loaded(sample: Sample | Reading, gpu: TraceGpu, clock_max: float | None) -> bool:
    util = sample.utilization_gpu_percent
    limit = limit_of(sample, gpu)
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


def thermal_sample(sample: Sample | Reading, slowdown: float | None) -> bool:
    reasons = set(sample.reasons or [])
    if reasons & THERMAL_REASONS:
        return True
    if "hw_slowdown" in reasons and "hw_power_brake_slowdown" not in reasons and sample.temp_c is not None:
        hot_at = slowdown - NEAR_MARGIN_C if slowdown is not None else THROTTLE_RANGE_C
        return sample.temp_c >= hot_at
    return False


def reason_facts(reasons: Sequence[str]) -> tuple[frozenset[str], bool, bool, bool, bool]:
    """What a sample's reasons say whatever its temperature: the distinct names; thermal for sure; thermal if
    hot enough (hw_slowdown without the power brake: thermal_sample then asks the temperature); power
    capped; sw_power_cap among them."""
    names = frozenset(reasons)
    thermal = bool(names & THERMAL_REASONS)
    near = "hw_slowdown" in names and "hw_power_brake_slowdown" not in names
    return names, thermal, near, bool(POWER_REASONS & names), "sw_power_cap" in names


# --- one GPU, a sample at a time ---------------------------------------------------------------


class GpuTally:
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
        self.any = {"limit": False, "power": False, "clock": False, "temp": False, "temp_memory": False}
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
        self.temps = Rle()
        self.temp_first: float | None = None
        self.temp_peak: float | None = None
        self.gradients: Counter[float] = Counter()  # memory minus GPU temperature, loaded samples with both
        self.counters = CounterTrack()  # the error counters over the loaded samples (counters.py)
        self.time_to_cap: float | None = None
        self.clocked_while_loaded = False
        self.can_tell_cap = False
        self.reason_facts: dict[tuple[str, ...], tuple[frozenset[str], bool, bool, bool, bool]] = {}

    def add(self, s: Sample) -> bool:
        """Take one sample; False when it came before the previous one (the one-pass figures would be wrong)."""
        # Run for every row of a long trace: the rules of limit_of, is_loaded and thermal_sample are spelled
        # out here on locals (the functions stay the reference), and what a set of reasons implies is worked
        # out once per distinct set (reason_facts).
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
        memory = s.temp_memory_c
        if memory is not None:
            seen["temp_memory"] = True
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
            loaded = is_loaded(s, gpu, self.clock_max)
        self.last_loaded = loaded
        track = self.counters
        if track.last or (
            s.ecc_corrected_volatile is not None
            or s.ecc_uncorrected_volatile is not None
            or s.pcie_replays is not None
            or s.nvlink_crc_errors is not None
            or s.nvlink_replay_errors is not None
            or s.nvlink_recovery_errors is not None
        ):
            track.add(t, loaded, counts_of(s))
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
                facts = self.reason_facts[key] = reason_facts(reasons)
            _, thermal, near, capped, sw_cap = facts
            self.reason_sets[key] += 1  # one count per row; per name only at the end (reason_counts)
            if thermal or (near and temp is not None and thermal_sample(s, gpu.temp_slowdown_c)):
                self.thermal += 1
            if capped:
                self.power_capped += 1
            self.can_tell_cap = True
        else:
            sw_cap = False
            if has_power:
                self.can_tell_cap = True
        if temp is not None:
            if memory is not None:
                self.gradients[memory - temp] += 1
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
