"""Telemetry over time: what the sampler records and what `burn --analyze` reads (schema ``rigcheck.trace/1``).

Plain dataclasses, not pydantic models: a trace of 10 Hz × 8 GPUs × an hour is ~300k samples, and these
stay cheap. Units are in the field names; a value a source did not give is ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

TRACE_SCHEMA = "rigcheck.trace/1"


@dataclass(slots=True)
class Sample:
    """One reading of one GPU. ``t_s``: seconds since the trace started."""

    t_s: float
    gpu: int
    power_w: float | None = None
    power_limit_w: float | None = None
    temp_c: float | None = None
    temp_memory_c: float | None = None
    sm_clock_mhz: float | None = None
    sm_clock_max_mhz: float | None = None
    mem_clock_mhz: float | None = None
    utilization_gpu_percent: float | None = None
    # Active clock-event reasons, names from rigcheck.model.CLOCK_EVENT_REASONS; None: not read.
    reasons: list[str] | None = None
    lost: bool = False  # the GPU was lost at this moment; later samples of it are absent


@dataclass(slots=True)
class TraceGpu:
    """What is known about a GPU for the whole trace (thresholds do not change during a run)."""

    index: int
    name: str | None = None
    temp_slowdown_c: float | None = None
    temp_shutdown_c: float | None = None
    temp_max_operating_c: float | None = None
    power_default_limit_w: float | None = None


@dataclass
class Trace:
    """Samples of one or more GPUs over time, in time order per GPU."""

    source: str  # "rigcheck-sampler", "nvidia-smi-csv", "rigcheck-csv", "rigcheck-jsonl"
    samples: list[Sample] = field(default_factory=list)
    gpus: dict[int, TraceGpu] = field(default_factory=dict)
    interval_s: float | None = None
    started_at: str | None = None  # ISO 8601, UTC
    path: str | None = None
    # What a reader skipped or assumed (a truncated last line, ignored columns), one line each.
    diagnostics: list[str] = field(default_factory=list)

    def for_gpu(self, index: int) -> list[Sample]:
        return [s for s in self.samples if s.gpu == index]

    def gpu_indices(self) -> list[int]:
        return sorted({s.gpu for s in self.samples} | set(self.gpus))


@dataclass
class GpuBurnAnalysis:
    """The verdict on one GPU under load; the keys of `rigcheck burn --analyze --json` (issue #5)."""

    index: int
    loaded_s: float  # seconds the GPU was under load (utilization or power says so)
    power_w_median_loaded: float | None
    power_limit_w: float | None
    temp_c_max: float | None
    temp_slowdown_c: float | None  # None when the trace lacks it
    sm_clock_mhz_median_loaded: float | None
    reasons_time_fraction: dict[str, float]  # reason name -> fraction of loaded time
    limiter: str  # "power" | "thermal" | "none" | "unknown"
    verdict: str  # in the guide's terms: "excellent" | "good" | "hot" | "throttling" (+ what limits it)
    advice: str
    # Extra evidence (not part of the contract's minimum, but in the JSON):
    time_to_power_cap_s: float | None = None
    temp_rise_c: float | None = None
    temp_plateau_c: float | None = None
    slowdown_margin_c: float | None = None
    sm_clock_mhz_first: float | None = None  # median over the first seconds of load
    sm_clock_mhz_sustained: float | None = None  # median over the loaded samples after those first seconds
    sm_clock_max_mhz: float | None = None  # the card's max SM clock, as the trace gives it
    # Drop from the max SM clock (else from the first seconds' median) to the sustained median.
    sm_clock_drop_percent: float | None = None
    lost_at_s: float | None = None
    # Set by `rigcheck burn` (not by --analyze): throughput and silent-corruption checks.
    tflops_sustained: float | None = None
    tflops_first_10s: float | None = None
    errors: int | None = None
    # Field -> why it is None, for every None number above (rigcheck's rule: a null carries its reason).
    missing: dict[str, str] = field(default_factory=dict)
