"""Telemetry over time: the sampler that polls a poller at a fixed rate (the CLI passes in NVML's; monitor/
does not import the probe), one `monitor` run and its summary (session), and the Prometheus endpoint that
serves the latest readings (prometheus, imported only with --prometheus). Used by `monitor` and `burn`.

Rules: never imports probe, readers or bench; no terminal output (progress through callbacks); its I/O is the
trace file it writes and the Prometheus socket. Imports checks, plan and below."""

from rigcheck.monitor.sampler import Poller, Sampler, SamplerStats, TraceFile, TraceFormat, next_deadline

__all__ = ["Poller", "Sampler", "SamplerStats", "TraceFile", "TraceFormat", "next_deadline"]
