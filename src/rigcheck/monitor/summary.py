"""The summary of a `monitor` run, built as the samples arrive: memory bounded by the GPU count, not the run's length.

A 24 h run at 10 Hz on 8 GPUs is ~7M samples; keeping them to summarise at the end would hold gigabytes. Each GPU
keeps instead its counts, maxima and minima, its newest sample, and two bounded histograms (power, SM clock) whose
medians equal statistics.median of every reading as long as a GPU's readings take at most ``MAX_DISTINCT``
distinct values (clocks and temperatures always do; power in 10 mW steps does for hours). Past that the
histogram merges its values to a coarser decimal grid (0.01, 0.1, 1, 10 …), so the median is off by at most half
a grid step: under 0.5 W for any power a GPU draws, below what the report shows (whole watts).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from rigcheck.model.monitor import GpuSummary
from rigcheck.model.telemetry import Sample, counter_median

MAX_DISTINCT = 4096  # per histogram: ~0.5 MB at most for 8 GPUs × 2 fields


class Histogram:
    """Readings counted by value, merged to a coarser grid when they take more than ``max_distinct`` values."""

    __slots__ = ("counts", "digits", "max_distinct")

    def __init__(self, max_distinct: int = MAX_DISTINCT) -> None:
        self.counts: Counter[float] = Counter()
        self.digits: int | None = None  # None: exact values; n: rounded to n decimals (negative: tens, hundreds)
        self.max_distinct = max_distinct

    def add(self, value: float) -> None:
        counts = self.counts
        counts[value if self.digits is None else round(value, self.digits)] += 1
        if len(counts) > self.max_distinct:
            self._coarsen()

    def _coarsen(self) -> None:
        # Each step divides the grid's resolution by ten; a few steps at most for any physical reading.
        digits = 2 if self.digits is None else self.digits - 1
        while True:
            merged: Counter[float] = Counter()
            for value, n in self.counts.items():
                merged[round(value, digits)] += n
            if len(merged) <= self.max_distinct:
                break
            digits -= 1
        self.counts, self.digits = merged, digits

    def median(self) -> float | None:
        return counter_median(self.counts)


class GpuRunning:
    """One GPU's figures so far (what rigcheck.model.monitor.GpuSummary reports)."""

    __slots__ = ("clock", "clock_min", "latest", "lost_at_s", "power", "power_max", "samples", "temp_max")

    def __init__(self) -> None:
        self.samples = 0
        self.power = Histogram()
        self.clock = Histogram()
        self.power_max: float | None = None
        self.temp_max: float | None = None
        self.clock_min: float | None = None
        self.lost_at_s: float | None = None
        self.latest: Sample | None = None

    def add(self, s: Sample) -> None:
        self.samples += 1
        self.latest = s
        if s.lost:
            # A lost sample has no readings; the first one says when (the poller stops asking after it).
            if self.lost_at_s is None:
                self.lost_at_s = s.t_s
            return
        if (p := s.power_draw_w) is not None:
            self.power.add(p)
            if self.power_max is None or p > self.power_max:
                self.power_max = p
        if (t := s.temp_c) is not None and (self.temp_max is None or t > self.temp_max):
            self.temp_max = t
        if (c := s.sm_clock_mhz) is not None:
            self.clock.add(c)
            if self.clock_min is None or c < self.clock_min:
                self.clock_min = c

    def summary(self) -> GpuSummary:
        return GpuSummary(
            samples=self.samples,
            power_draw_w_median=self.power.median(),
            power_draw_w_max=self.power_max,
            temp_c_max=self.temp_max,
            sm_clock_mhz_median=self.clock.median(),
            sm_clock_mhz_min=self.clock_min,
            lost_at_s=self.lost_at_s,
        )


class RunSummary:
    """Every GPU's running figures and the newest sample time; ``add`` is the sampler's ``on_poll``."""

    def __init__(self) -> None:
        self.gpus: dict[int, GpuRunning] = {}
        self.last_t_s: float | None = None

    def add(self, samples: Iterable[Sample]) -> None:
        gpus = self.gpus
        for s in samples:
            running = gpus.get(s.gpu)
            if running is None:
                running = gpus[s.gpu] = GpuRunning()
            running.add(s)
            self.last_t_s = s.t_s

    def summary(self, gpu: int) -> GpuSummary:
        """The GPU's summary; a GPU never sampled has zero samples and no figures."""
        return self.gpus.get(gpu, GpuRunning()).summary()

    def latest(self, gpu: int) -> Sample | None:
        running = self.gpus.get(gpu)
        return running.latest if running is not None else None

    @classmethod
    def of(cls, samples: Iterable[Sample]) -> RunSummary:
        out = cls()
        out.add(samples)
        return out
