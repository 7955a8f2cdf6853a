"""Telemetry over time: what the sampler records and what `burn --analyze` reads.

:class:`Sample` is a plain slots dataclass, not a pydantic model: a trace of 10 Hz × 8 GPUs × an hour is
~300k samples, and these stay cheap. Its annotations still carry what the trace schema says of each field
(``rigcheck.trace/2``'s ``$defs/sample``, generated from this class through pydantic: rigcheck.model.trace).
:class:`TraceGpu` (one per GPU) is a pydantic model, so the trace header and the monitor document embed it.
Units are in the field names; a value a source did not give is ``None``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, WithJsonSchema

from rigcheck.model.document import Plain
from rigcheck.model.snapshot import CLOCK_EVENT_REASONS

# A clock-event reason's name, as the schema lists them (readers keep any name a file gives).
ReasonName = Annotated[str, WithJsonSchema({"enum": list(CLOCK_EVENT_REASONS)})]
# Where a trace came from: the sampler of this process, or the format of the file read.
TraceSource = Literal[
    "rigcheck-sampler", "nvidia-smi-csv", "nvidia-smi-dmon", "rigcheck-csv", "rigcheck-jsonl", "gpu-burn"
]
PowerSource = Literal["instant", "average"]


def _never_null(schema: dict[str, Any]) -> None:
    """A key that is absent rather than null: its schema without the null alternative nor the default."""
    alternatives = [alt for alt in schema.pop("anyOf", []) if alt.get("type") != "null"]
    if len(alternatives) == 1:
        schema.update(alternatives[0])
    schema.pop("default", None)


@dataclass(slots=True)
class Sample:
    """One reading of one GPU; a sample line of a trace file."""

    # For the generated schema only (pydantic reads it): no other key, every field required.
    __pydantic_config__ = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True)

    t_s: Annotated[float, Field(description="seconds since the trace started")]
    gpu: Annotated[int, Field(ge=0)]
    power_draw_w: float | None = None
    power_enforced_limit_w: float | None = None
    temp_c: float | None = None
    temp_memory_c: float | None = None
    sm_clock_mhz: float | None = None
    sm_clock_max_mhz: float | None = None
    mem_clock_mhz: float | None = None
    utilization_gpu_percent: float | None = None
    # Active clock-event reasons, names from rigcheck.model.CLOCK_EVENT_REASONS; None: not read.
    reasons: Annotated[list[ReasonName] | None, Field(description="active clock-event reasons; null: not read")] = None
    lost: Annotated[bool, Field(description="the GPU was lost at this moment; later samples of it are absent")] = False
    # Error counters since the driver loaded, where the source read them (issue 28: judged as rates under load by
    # rigcheck.checks.burn.rates). Optional keys of the trace: absent, not null, where not read (COUNTER_FIELDS).
    ecc_corrected_volatile: Annotated[
        int | None, Field(ge=0, description="corrected ECC errors since the driver loaded (volatile total)")
    ] = None
    ecc_uncorrected_volatile: Annotated[
        int | None, Field(ge=0, description="uncorrected ECC errors since the driver loaded (volatile total)")
    ] = None
    pcie_replays: Annotated[int | None, Field(ge=0, description="PCIe replay counter")] = None
    nvlink_crc_errors: Annotated[
        list[Annotated[int, Field(ge=0)] | None] | None,
        Field(description="per NVLink (index = link; null: that link not read): DL CRC errors (flit + data)"),
    ] = None
    nvlink_replay_errors: Annotated[
        list[Annotated[int, Field(ge=0)] | None] | None, Field(description="per NVLink: DL replay errors")
    ] = None
    nvlink_recovery_errors: Annotated[
        list[Annotated[int, Field(ge=0)] | None] | None, Field(description="per NVLink: DL recovery errors")
    ] = None


# The error counters of a Sample (and a Reading): optional keys of rigcheck.trace/2, absent where not read.
COUNTER_FIELDS = (
    "ecc_corrected_volatile",
    "ecc_uncorrected_volatile",
    "pcie_replays",
    "nvlink_crc_errors",
    "nvlink_replay_errors",
    "nvlink_recovery_errors",
)
# Those counted per NVLink (a list per sample), and those of the whole GPU (one count).
LINK_COUNTER_FIELDS = COUNTER_FIELDS[3:]
GPU_COUNTER_FIELDS = COUNTER_FIELDS[:3]
LinkCounts = tuple[int | None, ...]


@dataclass(slots=True, eq=False)
class Reading:
    """What one sample of a GPU says besides its time. A reader hands out one object for every sample that
    prints the same (an identity-hashed key: a consumer may remember what it made of it)."""

    gpu: int
    power_draw_w: float | None = None
    power_enforced_limit_w: float | None = None
    temp_c: float | None = None
    temp_memory_c: float | None = None
    sm_clock_mhz: float | None = None
    sm_clock_max_mhz: float | None = None
    mem_clock_mhz: float | None = None
    utilization_gpu_percent: float | None = None
    reasons: tuple[str, ...] | None = None
    lost: bool = False
    ecc_corrected_volatile: int | None = None
    ecc_uncorrected_volatile: int | None = None
    pcie_replays: int | None = None
    nvlink_crc_errors: LinkCounts | None = None
    nvlink_replay_errors: LinkCounts | None = None
    nvlink_recovery_errors: LinkCounts | None = None

    def sample(self, t_s: float) -> Sample:
        reasons = self.reasons
        crc, replay, recovery = self.nvlink_crc_errors, self.nvlink_replay_errors, self.nvlink_recovery_errors
        return Sample(
            t_s,
            self.gpu,
            self.power_draw_w,
            self.power_enforced_limit_w,
            self.temp_c,
            self.temp_memory_c,
            self.sm_clock_mhz,
            self.sm_clock_max_mhz,
            self.mem_clock_mhz,
            self.utilization_gpu_percent,
            list(reasons) if reasons is not None else None,
            self.lost,
            self.ecc_corrected_volatile,
            self.ecc_uncorrected_volatile,
            self.pcie_replays,
            list(crc) if crc is not None else None,
            list(replay) if replay is not None else None,
            list(recovery) if recovery is not None else None,
        )


@dataclass(slots=True)
class SampleBatch:
    """Consecutive samples of one GPU as columns, in file order (times finite): ``t_s[i]`` goes with
    ``readings[i]``."""

    gpu: int
    t_s: list[float]
    readings: list[Reading]

    def samples(self) -> list[Sample]:
        return [r.sample(t) for t, r in zip(self.t_s, self.readings, strict=True)]


class TraceGpu(Plain):
    """What is known about a GPU for the whole trace (thresholds do not change during a run)."""

    index: int = Field(ge=0)
    name: str | None = None
    temp_slowdown_c: float | None = None
    temp_shutdown_c: float | None = None
    temp_max_operating_c: float | None = None
    power_default_limit_w: float | None = None
    # Which NVML reading the samples' power_draw_w is: the instant field, or nvmlDeviceGetPowerUsage (a 1 s average
    # on Ampere but GA100 and newer). Set by the live poller; absent (not null) in traces read from files, so
    # what rigcheck printed for those before stays as it was.
    power_source: PowerSource | None = Field(
        None,
        exclude_if=lambda value: value is None,
        json_schema_extra=_never_null,
        description="instant: NVML_FI_DEV_POWER_INSTANT; average: nvmlDeviceGetPowerUsage (1 s on Hopper)",
    )


@dataclass
class Trace:
    """Samples of one or more GPUs over time, in time order per GPU."""

    source: TraceSource
    samples: list[Sample] = field(default_factory=list)
    gpus: dict[int, TraceGpu] = field(default_factory=dict)
    interval_s: float | None = None
    started_at: str | None = None  # ISO 8601, UTC
    path: str | None = None
    # What a reader skipped or assumed (a truncated last line, ignored columns), one line each.
    diagnostics: list[str] = field(default_factory=list)
    # The samples thinned for plots, when they were streamed rather than kept (`burn --analyze --html`).
    plot: TracePlot | None = None

    def for_gpu(self, index: int) -> list[Sample]:
        return [s for s in self.samples if s.gpu == index]

    def gpu_indices(self) -> list[int]:
        return sorted({s.gpu for s in self.samples} | set(self.gpus))


def counter_median(counts: Mapping[float, int]) -> float | None:
    """The median of the values counted (value -> how many times), exactly as statistics.median of the values
    themselves: the middle one, or the mean of the two middle ones. None when nothing was counted.

    Readings repeat (a temperature in whole degrees, a clock in MHz), so the counts stay small however long
    the trace is, where the list of values would grow with it.
    """
    n = sum(counts.values())
    if n == 0:
        return None
    want = (n // 2,) if n % 2 else (n // 2 - 1, n // 2)
    found: list[float] = []
    seen = 0
    for value in sorted(counts):
        seen += counts[value]
        while len(found) < len(want) and want[len(found)] < seen:
            found.append(value)
        if len(found) == len(want):
            break
    return float(found[0]) if len(found) == 1 else float((found[0] + found[1]) / 2)


# --- thinned samples for plots ----------------------------------------------------------------------

# The series a burn page plots, per GPU.
PLOT_FIELDS = ("power_draw_w", "power_enforced_limit_w", "temp_c", "temp_memory_c", "sm_clock_mhz", "sm_clock_max_mhz")
# Time buckets per GPU at most: past this the width doubles and neighbours merge. A chart is ~1000 px wide, so
# 1000 to 2000 buckets keep a peak of one sample visible while a 24 h trace costs the same as a 10 min one.
PLOT_BUCKETS = 2000
# A GPU's samples kept whole up to this many (a short trace is drawn from every sample, as before thinning).
PLOT_RAW = 2 * PLOT_BUCKETS
# A gap in the readings longer than this many intervals is not drawn as a reason active (report/burn/html.py).
REASON_GAP_INTERVALS = 5.0


class GpuPlot:
    """One GPU's samples for the plots: every sample while there are at most PLOT_RAW (``raw``), then per
    series and time bucket the lowest and highest reading and the first gap, so global peaks survive.

    What the page needs besides the lines is kept exactly as running figures from every sample: the
    fields ever read, the temperature range, the last power limit, the time each reason was active (per
    distinct gap to the next sample, capped only once the interval is known), the steps between samples
    (their median is the interval where the trace gives none).
    """

    def __init__(self) -> None:
        self.count = 0
        self.raw: list[Sample] | None = []
        self.t0 = 0.0
        self.width = 1.0
        # field -> per bucket [lo_t, lo_v, hi_t, hi_v, gap_t] (lo_v None: only gaps so far) or None
        self.buckets: dict[str, list[list[float | None] | None]] = {}
        self.reason_buckets: dict[str, set[int]] = {}
        self.lost_buckets: dict[int, float] = {}
        self.has: set[str] = set()
        self.reasons_read = False
        self.temp_lo: float | None = None
        self.temp_hi: float | None = None
        self.limit_last: float | None = None
        self.steps: Counter[float] = Counter()
        self.reason_steps: dict[str, Counter[float]] = {}
        self.min_step: float | None = None
        self.prev: Sample | None = None
        self.t_last = 0.0

    def add(self, s: Sample) -> None:
        self.count += 1
        raw = self.raw
        if raw is not None:
            raw.append(s)
            if len(raw) > PLOT_RAW:
                self._thin(raw)
            return
        self._add(s)

    def _thin(self, raw: list[Sample]) -> None:
        """From every sample to buckets: half the bound used, room to grow before the first doubling."""
        self.raw = None
        self.t0 = min(s.t_s for s in raw)
        span = max(s.t_s for s in raw) - self.t0
        self.width = span / (PLOT_BUCKETS // 2) if span > 0 else 1.0
        self.buckets = {name: [None] * PLOT_BUCKETS for name in PLOT_FIELDS}
        for s in raw:
            self._add(s)

    def _add(self, s: Sample) -> None:
        t = s.t_s
        b = max(int((t - self.t0) / self.width), 0)
        while b >= PLOT_BUCKETS:
            self._double()
            b = int((t - self.t0) / self.width)
        for name in PLOT_FIELDS:
            v = getattr(s, name)
            if v is not None:
                self.has.add(name)
            _put(self.buckets[name], b, t, v)
            if s.lost:
                _put(self.buckets[name], b, t, None)  # the line breaks after a lost sample
        if s.lost and b not in self.lost_buckets:
            self.lost_buckets[b] = t
        for v in (s.temp_c, s.temp_memory_c):
            if v is not None:
                self.temp_lo = v if self.temp_lo is None else min(self.temp_lo, v)
                self.temp_hi = v if self.temp_hi is None else max(self.temp_hi, v)
        if s.power_enforced_limit_w is not None:
            self.limit_last = s.power_enforced_limit_w
        prev = self.prev
        if prev is not None:
            step = t - prev.t_s
            if step > 0:
                self.steps[step] += 1
                self.min_step = step if self.min_step is None else min(self.min_step, step)
            if prev.reasons:
                b_prev = max(int((prev.t_s - self.t0) / self.width), 0)
                # Fill the buckets up to this sample unless the gap is long (not shown as active).
                near = self.min_step is not None and step <= REASON_GAP_INTERVALS * self.min_step
                for r in prev.reasons:
                    self.reason_steps.setdefault(r, Counter())[step] += 1
                    self.reason_buckets.setdefault(r, set()).update(range(b_prev, (b if near else b_prev) + 1))
        if s.reasons is not None:
            self.reasons_read = True
            for r in s.reasons:
                self.reason_buckets.setdefault(r, set()).add(b)
        self.prev = s
        self.t_last = t

    def _double(self) -> None:
        self.width *= 2
        for name, buckets in self.buckets.items():
            merged: list[list[float | None] | None] = [None] * PLOT_BUCKETS
            for i in range(0, PLOT_BUCKETS, 2):
                merged[i // 2] = _merge(buckets[i], buckets[i + 1])
            self.buckets[name] = merged
        self.reason_buckets = {r: {b // 2 for b in bs} for r, bs in self.reason_buckets.items()}
        lost: dict[int, float] = {}
        for b, t in self.lost_buckets.items():
            lost[b // 2] = min(t, lost.get(b // 2, t))
        self.lost_buckets = lost

    # What the page draws once thinned (times in seconds).

    def points(self, name: str) -> list[tuple[float, float | None]]:
        """Per bucket in time order its lowest and highest reading (in their order) and its first gap."""
        out: list[tuple[float, float | None]] = []
        for entry in self.buckets.get(name, []):
            if entry is None:
                continue
            lo_t, lo_v, hi_t, hi_v, gap_t = entry
            chosen: list[tuple[float, float | None]] = []
            if lo_t is not None:
                chosen.append((lo_t, lo_v))
                if hi_t is not None and (hi_t, hi_v) != (lo_t, lo_v):
                    chosen.append((hi_t, hi_v))
                chosen.sort(key=lambda p: p[0])
            if gap_t is not None:
                chosen = [p for p in chosen if p[0] <= gap_t] + [(gap_t, None)] + [p for p in chosen if p[0] > gap_t]
            out += chosen
        return out

    def lost_times(self) -> list[float]:
        return [self.lost_buckets[b] for b in sorted(self.lost_buckets)]

    def reason_spans(self, interval: float) -> dict[str, list[tuple[float, float]]]:
        """Per reason, runs of buckets in which it was active, ending no later than the last sample's time."""
        end = self.t_last + interval
        out: dict[str, list[tuple[float, float]]] = {}
        for r, marked in self.reason_buckets.items():
            spans: list[tuple[float, float]] = []
            for b in sorted(marked):
                lo, hi = self.t0 + b * self.width, min(self.t0 + (b + 1) * self.width, end)
                if spans and spans[-1][1] >= lo:
                    spans[-1] = (spans[-1][0], hi)
                else:
                    spans.append((lo, hi))
            out[r] = spans
        return out

    def reason_seconds(self, interval: float) -> dict[str, float]:
        """Per reason, the time it was active, each sample lasting to the next (at most REASON_GAP_INTERVALS
        intervals), the last one an interval: exactly the sum the spans of every sample would give."""
        cap = REASON_GAP_INTERVALS * interval
        out: dict[str, float] = {}
        for r, steps in self.reason_steps.items():
            out[r] = sum(min(step, cap) * n for step, n in steps.items())
        if self.prev is not None and self.prev.reasons:
            for r in self.prev.reasons:
                out[r] = out.get(r, 0.0) + interval
        return out

    def median_step(self) -> float:
        """The middle step between samples (the upper one of two), as the page takes it without an interval."""
        n = sum(self.steps.values())
        seen = 0
        for step in sorted(self.steps):
            seen += self.steps[step]
            if seen > n // 2:
                return step
        return 0.1


def _put(buckets: list[list[float | None] | None], b: int, t: float, v: float | None) -> None:
    entry = buckets[b]
    if entry is None:
        buckets[b] = [t, v, t, v, None] if v is not None else [None, None, None, None, t]
        return
    if v is None:
        if entry[4] is None:
            entry[4] = t
        return
    lo_v, hi_v = entry[1], entry[3]
    if lo_v is None or v < lo_v:
        entry[0], entry[1] = t, v
    if hi_v is None or v > hi_v:
        entry[2], entry[3] = t, v


def _merge(a: list[float | None] | None, b: list[float | None] | None) -> list[float | None] | None:
    if a is None or b is None:
        return a if b is None else b
    out = list(a)
    if b[1] is not None and (a[1] is None or b[1] < a[1]):
        out[0], out[1] = b[0], b[1]
    if b[3] is not None and (a[3] is None or b[3] > a[3]):
        out[2], out[3] = b[2], b[3]
    if out[4] is None:
        out[4] = b[4]
    return out


class TracePlot:
    """A trace thinned for its plots, fed one sample at a time as it is read (`burn --analyze --html`): memory
    bounded by GPUs x PLOT_BUCKETS, however long the trace."""

    def __init__(self) -> None:
        self.gpus: dict[int, GpuPlot] = {}
        self.count = 0
        self.t_lo: float | None = None
        self.t_hi: float | None = None

    def add(self, s: Sample) -> None:
        g = self.gpus.get(s.gpu)
        if g is None:
            g = self.gpus[s.gpu] = GpuPlot()
        g.add(s)
        self.count += 1
        t = s.t_s
        if self.t_lo is None or t < self.t_lo:
            self.t_lo = t
        if self.t_hi is None or t > self.t_hi:
            self.t_hi = t

    @classmethod
    def of(cls, samples: list[Sample]) -> TracePlot:
        plot = cls()
        for s in samples:
            plot.add(s)
        return plot

    def any_read(self, name: str) -> bool:
        """Whether any GPU's samples hold this field."""
        for g in self.gpus.values():
            if g.raw is None:
                if name in g.has:
                    return True
            elif any(getattr(s, name) is not None for s in g.raw):
                return True
        return False
