"""`rigcheck monitor --json` (``rigcheck.monitor/2``): per GPU its trace-header facts, the latest sample, a
summary over the run and what NVML could not give; the sampler's own costs (shared with ``rigcheck.burn/2``).

Built by rigcheck.monitor.session from a stopped sampler; drawn by rigcheck.report.monitor.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, WithJsonSchema

from rigcheck.model.document import EXTERNAL_REF, Document, Plain
from rigcheck.model.snapshot import Missing
from rigcheck.model.telemetry import Sample, TraceGpu

MONITOR_SCHEMA: Literal["rigcheck.monitor/2"] = "rigcheck.monitor/2"

# The latest sample of a GPU: in the schema, a reference to the trace schema's sample line.
LatestSample = Annotated[
    Sample | None,
    WithJsonSchema({"anyOf": [{EXTERNAL_REF: "../rigcheck.trace/2#/$defs/sample"}, {"type": "null"}]}),
]
Count = Annotated[int, Field(ge=0)]


class SamplerReport(Plain):
    """What sampling cost: polls, samples, deadlines missed, time per poll, CPU time of the sampling thread.

    The two poll times are null before the first poll (the one null without a reason: there is nothing to
    be missing)."""

    polls: Count
    samples: Count
    missed_deadlines: Count
    poll_us_mean: float | None
    poll_us_max: float | None
    cpu_s: float


class GpuSummary(Plain):
    """One GPU over the run; null where no sample gave the figure."""

    samples: Count
    power_draw_w_median: float | None
    power_draw_w_max: float | None
    temp_c_max: float | None
    sm_clock_mhz_median: float | None
    sm_clock_mhz_min: float | None
    lost_at_s: float | None


class MonitorGpu(TraceGpu):
    """A GPU of the monitor: its trace-header facts, then what the run saw of it."""

    latest: LatestSample
    summary: GpuSummary = Field(description="over the run; null where no sample gave the figure")
    unavailable: dict[str, Missing] = Field(description="field -> why NVML could not give it")


class MonitorDocument(Document):
    """The summary `rigcheck monitor --json` prints at the end."""

    schema_: Literal["rigcheck.monitor/2"] = Field(MONITOR_SCHEMA, alias="schema")
    started_at: str | None = Field(json_schema_extra={"format": "date-time"})
    interval_s: float
    duration_s: float
    interrupted: bool
    file: str | None = Field(description="the --csv / --jsonl trace file; null without one")
    gpus: list[MonitorGpu]
    sampler: SamplerReport
    missing_functions: list[str] = Field(description="NVML functions this driver lacks")
