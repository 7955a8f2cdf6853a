"""Telemetry over time: the sampler that polls NVML (rigcheck.probe.nvml.NvmlPoller) at a fixed rate,
and the Prometheus endpoint that serves its latest readings. Used by `monitor`, `burn` and training."""

from rigcheck.monitor.sampler import Poller, Sampler, SamplerStats, TraceFile, TraceFormat, next_deadline

__all__ = ["Poller", "Sampler", "SamplerStats", "TraceFile", "TraceFormat", "next_deadline"]
