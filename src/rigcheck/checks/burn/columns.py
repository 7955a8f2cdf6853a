"""The burn aggregator fed a GPU's samples as columns (SampleBatch): the same figures as GpuTally.add, cheaper.

A long trace repeats its rows, and what GpuTally.add makes of a row apart from its time (loaded or not, its
limit, thermal, capped, ...) depends only on the row and on what stays fixed for the GPU in a pass that
finish() accepts as exact (its TraceGpu; its clock ceiling, where a clock-only decision used it). So each
distinct Reading is judged once (_Judged), and rows only count judgements; the counts go into the GPU's
counters at the end (sums and maxima: order does not change them). What depends on time or order is done on
the columns: the steps, the loaded steps and their sum in order, the plateau's runs, the first temperature, the
time to the cap. The first seconds of load (the clock's first/rest split) go through GpuTally.add row by row.
"""

from __future__ import annotations

from collections import Counter
from functools import reduce
from itertools import compress, repeat
from operator import add, attrgetter, is_not, ne, sub
from typing import cast

from rigcheck.checks.burn.counters import counts_of
from rigcheck.checks.burn.tally import FIRST_SECONDS_S, GpuTally, is_loaded, limit_of, reason_facts, thermal_sample
from rigcheck.checks.doctor.power import AT_CAP_FRACTION
from rigcheck.model.telemetry import Reading

# Judgements remembered per GPU, and distinct ones counted before they go into the counters: bounds that keep
# memory flat when rows do not repeat.
_MEMO_MAX = 1 << 12
_TALLY_MAX = 1 << 12


class _Judged:
    """What GpuTally.add makes of a reading, apart from its time."""

    __slots__ = (
        "capped",
        "caps",
        "clock",
        "counts",
        "gradient",
        "has_power",
        "key",
        "limit",
        "loaded",
        "lost",
        "power",
        "temp",
        "temp_loaded",
        "thermal",
    )

    def __init__(
        self,
        limit: float | None,
        power: float | None,
        clock: float | None,
        temp: float | None,
        *,
        lost: bool = False,
        loaded: bool = False,
        has_power: bool = False,
        key: tuple[str, ...] | None = None,
        thermal: bool = False,
        capped: bool = False,
        caps: bool = False,
        counts: dict[str, int] | None = None,
        gradient: float | None = None,
    ) -> None:
        self.limit = limit
        self.power = power
        self.clock = clock
        self.temp = temp
        self.lost = lost
        self.loaded = loaded
        self.temp_loaded = temp if loaded else None  # the plateau's runs
        self.has_power = has_power
        self.key = key  # the reasons of a loaded reading
        self.thermal = thermal
        self.capped = capped
        self.caps = caps  # loaded and at the cap (by power or sw_power_cap): the time to the cap
        self.counts = counts  # the error counters it read (counters.py), None: none
        self.gradient = gradient  # loaded: memory minus GPU temperature, where both were read


_LOADED = attrgetter("loaded")
_CAPS = attrgetter("caps")
_TEMP_LOADED = attrgetter("temp_loaded")
_COUNTS = attrgetter("counts")


class GpuColumns:
    """One GPU fed SampleBatch columns: its GpuTally, the judgement of each reading, and the counts of them."""

    def __init__(self, state: GpuTally) -> None:
        self.state = state
        self.memo: dict[Reading, _Judged] = {}
        self.tally: Counter[_Judged] = Counter()
        self.steps: Counter[float] = Counter()  # every step; the positive ones go into state.steps
        self.row_by_row = True  # until the first seconds of load are over
        self.taken = 0  # rows of the last batch that _first_seconds took

    def add(self, ts: list[float], readings: list[Reading]) -> bool:
        """Take a GPU's samples in columns; False when one came before the previous one."""
        st = self.state
        if st.done:
            return True
        get = self.memo.get
        found = list(map(get, readings))
        size = len(found)
        if found.count(None) * 4 > size * 3 and len(set(readings)) * 4 > size * 3:
            return self._one_by_one(ts, readings)  # rows that seldom repeat, here or before
        lost_at: float | None = None
        if None in found:
            k = found.index(None)
            while True:
                j = found[k] = get(readings[k]) or self._judge(readings[k])
                if j.lost:  # the GPU's last sample: what follows it is not read (nor judged)
                    lost_at = ts[k]
                    ts, readings, found = ts[:k], readings[:k], found[:k]
                    break
                try:
                    k = found.index(None, k + 1)
                except ValueError:
                    break
        judged = cast(list[_Judged], found)
        in_order = True
        if self.row_by_row and ts:
            in_order = self._first_seconds(ts, readings, judged)
            ts, judged = ts[self.taken :], judged[self.taken :]
        if ts and not self._columns(ts, judged):
            in_order = False
        if lost_at is not None:
            st.lost_at, st.done = lost_at, True
        return in_order

    def _one_by_one(self, ts: list[float], readings: list[Reading]) -> bool:
        """Rows that mostly do not repeat, each through GpuTally.add: judging and counting each distinct
        reading would cost more than it saves."""
        st = self.state
        if self.tally:
            self.fold()  # what came before first, as add() would have counted it
        in_order = True
        take = st.add
        for t, reading in zip(ts, readings, strict=True):
            if not take(reading.sample(t)):
                in_order = False
        start = st.start
        if start is not None and ts[-1] - start >= FIRST_SECONDS_S:
            self.row_by_row = False
        return in_order

    def _first_seconds(self, ts: list[float], readings: list[Reading], judged: list[_Judged]) -> bool:
        """The rows up to the end of the first seconds of load: those before the first loaded one in columns,
        the loaded ones through GpuTally.add (the clock's first/rest split is by time). Sets ``taken``."""
        st = self.state
        if self.tally:
            self.fold()  # what came before first, as add() would have counted it (the first of equal keys stays)
        in_order = True
        start = 0
        if st.start is None:
            try:
                start = list(map(_LOADED, judged)).index(True)
            except ValueError:
                start = len(ts)
            if start and not self._columns(ts[:start], judged[:start]):
                in_order = False
        self.taken = len(ts)
        take = st.add
        for i in range(start, len(ts)):
            t = ts[i]
            if not take(readings[i].sample(t)):
                in_order = False
            first = st.start
            if first is not None and t - first >= FIRST_SECONDS_S:
                # Later loaded samples (in order) are all past the first seconds: no row needs its own test.
                self.row_by_row = False
                self.taken = i + 1
                break
        return in_order

    def _columns(self, ts: list[float], judged: list[_Judged]) -> bool:
        st = self.state
        loaded = list(map(_LOADED, judged))
        if st.last_t is None:  # the GPU's first sample: no step before it
            steps = list(map(sub, ts[1:], ts))
            after_loaded = list(compress(steps, loaded))
        else:
            steps = list(map(sub, ts, [st.last_t, *ts[:-1]]))
            after_loaded = list(compress(steps, [st.last_loaded, *loaded[:-1]]))
        in_order = not steps or min(steps) >= 0
        track = st.counters
        if track.last or any(map(_COUNTS, judged)):  # the counters' steps, row by row: only traces that read them
            take = track.add
            for t, j in zip(ts, judged, strict=True):
                take(t, j.loaded, j.counts)
        self.steps.update(steps)
        if after_loaded:
            st.loaded_steps.update(after_loaded)
            # add() adds max(0.0, step): the step itself while in order (else finish() gives up anyway).
            st.loaded_sum = reduce(add, after_loaded, st.loaded_sum)
        st.last_t, st.last_loaded = ts[-1], loaded[-1]
        self.tally.update(judged)
        if len(self.tally) > _TALLY_MAX:
            self.fold()
        if st.time_to_cap is None:
            capped_at = next(compress(ts, map(_CAPS, judged)), None)
            if capped_at is not None:
                st.time_to_cap = round(capped_at - st.start, 3)  # type: ignore[operator]  # set in the first seconds
        temps = list(map(_TEMP_LOADED, judged))
        # The loaded temperatures in order, as runs of equal values: no Python step per row.
        values = list(compress(temps, map(is_not, temps, repeat(None))))
        if values:
            if st.temp_first is None:
                st.temp_first = values[0]
            size = len(values)
            cuts = list(compress(range(1, size), map(ne, values[1:], values)))
            starts = [0, *cuts]
            st.temps.add_runs(list(map(values.__getitem__, starts)), list(map(sub, [*cuts, size], starts)))
        return in_order

    def _judge(self, r: Reading) -> _Judged:
        """GpuTally.add's rules for one reading, without its time (the side effects it has once: the ceiling,
        the columns seen, the deferred clock ceiling)."""
        if r.lost:  # not remembered: the GPU's samples end here
            return _Judged(None, None, None, None, lost=True)
        st = self.state
        gpu = st.gpu
        ceiling = r.sm_clock_max_mhz
        if ceiling is not None and not st.clock_preset and (st.clock_max is None or ceiling > st.clock_max):
            st.clock_max = ceiling
        # Once per distinct reading, not per row: the reference rules (limit_of, is_loaded), which add() spells
        # out inline for its per-row speed.
        limit = limit_of(r, gpu)
        seen = st.any
        if limit is not None:
            seen["limit"] = True
        power, clock, temp = r.power_draw_w, r.sm_clock_mhz, r.temp_c
        if power is not None:
            seen["power"] = True
        if clock is not None:
            seen["clock"] = True
        if temp is not None:
            seen["temp"] = True
        memory = r.temp_memory_c
        if memory is not None:
            seen["temp_memory"] = True
        counts = counts_of(r)
        has_power = power is not None and limit is not None
        if r.utilization_gpu_percent is None and not has_power and ceiling is None and not st.deferred_clock:
            # The load is judged on the clock alone, against the ceiling known so far (finish() checks it held).
            st.deferred_clock.append(st.clock_max)
        loaded = is_loaded(r, gpu, st.clock_max)
        if not loaded:
            j = _Judged(limit, power, clock, temp, has_power=has_power, counts=counts)
        else:
            reasons = r.reasons
            thermal = capped = sw_cap = False
            if reasons is not None:
                facts = st.reason_facts.get(reasons)
                if facts is None:
                    facts = st.reason_facts[reasons] = reason_facts(reasons)
                _, thermal, near, capped, sw_cap = facts
                thermal = thermal or (near and temp is not None and thermal_sample(r, gpu.temp_slowdown_c))
            at_cap = has_power and power >= AT_CAP_FRACTION * limit  # type: ignore[operator]  # both known
            j = _Judged(
                limit,
                power,
                clock,
                temp,
                loaded=True,
                has_power=has_power,
                key=reasons,
                thermal=thermal,
                capped=capped,
                caps=at_cap or sw_cap,
                counts=counts,
                gradient=memory - temp if memory is not None and temp is not None else None,
            )
        if len(self.memo) >= _MEMO_MAX:
            self.memo.clear()
        self.memo[r] = j
        return j

    def fold(self) -> None:
        """The counts so far into the GPU's counters (what add() would have counted row by row, in the order
        the judgements first came: the running maxima and the counters' keys come out the same)."""
        st = self.state
        tally = self.tally
        if tally:
            st.n += sum(tally.values())
            limits_all, limits, power_counts, clock_counts = st.limits_all, st.limits, st.power, st.clock
            clock_rest, reason_sets, gradients = st.clock_rest, st.reason_sets, st.gradients
            temp_max, temp_peak = st.temp_max, st.temp_peak
            loaded = with_reasons = thermal = capped = 0
            clocked = tell_cap = False
            for j, c in tally.items():
                limit, temp = j.limit, j.temp
                if limit is not None:
                    limits_all[limit] += c
                if temp is not None and (temp_max is None or temp > temp_max):
                    temp_max = temp
                if not j.loaded:
                    continue
                loaded += c
                if limit is not None:
                    limits[limit] += c
                if j.power is not None:
                    power_counts[j.power] += c
                clock = j.clock
                if clock is not None:
                    clock_counts[clock] += c
                    clock_rest[clock] += c
                    clocked = True
                if j.key is not None:
                    with_reasons += c
                    reason_sets[j.key] += c
                    if j.thermal:
                        thermal += c
                    if j.capped:
                        capped += c
                    tell_cap = True
                elif j.has_power:
                    tell_cap = True
                if temp is not None and (temp_peak is None or temp > temp_peak):
                    temp_peak = temp
                if j.gradient is not None:
                    gradients[j.gradient] += c
            st.loaded += loaded
            st.with_reasons += with_reasons
            st.thermal += thermal
            st.power_capped += capped
            st.clocked_while_loaded |= clocked
            st.can_tell_cap |= tell_cap
            st.temp_max, st.temp_peak = temp_max, temp_peak
            tally.clear()
        for step, c in self.steps.items():
            if step > 0:
                st.steps[step] += c
        self.steps.clear()
