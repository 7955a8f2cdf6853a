"""Telemetry over time: what the sampler records and what `burn --analyze` reads.

:class:`Sample` is a plain slots dataclass, not a pydantic model: a trace of 10 Hz × 8 GPUs × an hour is
~300k samples, and these stay cheap. Its annotations still carry what the trace schema says of each field
(``rigcheck.trace/1``'s ``$defs/sample``, generated from this class through pydantic: rigcheck.model.trace).
:class:`TraceGpu` (one per GPU) is a pydantic model, so the trace header and the monitor document embed it.
Units are in the field names; a value a source did not give is ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

from pydantic import ConfigDict, Field, WithJsonSchema

from rigcheck.model.document import Plain
from rigcheck.model.snapshot import CLOCK_EVENT_REASONS

# A clock-event reason's name, as the schema lists them (readers keep any name a file gives).
ReasonName = Annotated[str, WithJsonSchema({"enum": list(CLOCK_EVENT_REASONS)})]
# Where a trace came from: the sampler of this process, or the format of the file read.
TraceSource = Literal["rigcheck-sampler", "nvidia-smi-csv", "rigcheck-csv", "rigcheck-jsonl"]


@dataclass(slots=True)
class Sample:
    """One reading of one GPU; a sample line of a trace file."""

    # For the generated schema only (pydantic reads it): no other key, every field required.
    __pydantic_config__ = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True)

    t_s: Annotated[float, Field(description="seconds since the trace started")]
    gpu: Annotated[int, Field(ge=0)]
    power_w: float | None = None
    power_limit_w: float | None = None
    temp_c: float | None = None
    temp_memory_c: float | None = None
    sm_clock_mhz: float | None = None
    sm_clock_max_mhz: float | None = None
    mem_clock_mhz: float | None = None
    utilization_gpu_percent: float | None = None
    # Active clock-event reasons, names from rigcheck.model.CLOCK_EVENT_REASONS; None: not read.
    reasons: Annotated[list[ReasonName] | None, Field(description="active clock-event reasons; null: not read")] = None
    lost: Annotated[bool, Field(description="the GPU was lost at this moment; later samples of it are absent")] = False


class TraceGpu(Plain):
    """What is known about a GPU for the whole trace (thresholds do not change during a run)."""

    index: int = Field(ge=0)
    name: str | None = None
    temp_slowdown_c: float | None = None
    temp_shutdown_c: float | None = None
    temp_max_operating_c: float | None = None
    power_default_limit_w: float | None = None


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

    def for_gpu(self, index: int) -> list[Sample]:
        return [s for s in self.samples if s.gpu == index]

    def gpu_indices(self) -> list[int]:
        return sorted({s.gpu for s in self.samples} | set(self.gpus))
