"""One `rigcheck monitor` run: sample an open poller (optionally into a trace file and a Prometheus endpoint)
until the watcher returns, then summarise it as a ``rigcheck.monitor/1`` document.

The poller comes from the caller (the CLI makes the NVML one): monitor/ does not import the probe. The
Prometheus endpoint (and with it http.server) is imported only when asked for.
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from rigcheck.model.monitor import GpuSummary, MonitorGpu, MonitorResult
from rigcheck.model.snapshot import Missing
from rigcheck.model.telemetry import Sample
from rigcheck.monitor.sampler import Poller, Sampler, TraceFile, TraceFormat

if TYPE_CHECKING:
    from rigcheck.monitor.prometheus import MetricsServer

HISTORY = 40  # samples kept per GPU for the live view's sparklines


class MonitoredPoller(Poller, Protocol):
    """A poller that also says what it could not read (rigcheck.probe.nvml.NvmlPoller)."""

    @property
    def unavailable(self) -> dict[int, dict[str, str]]: ...
    @property
    def missing_functions(self) -> set[str]: ...


class History:
    """The last ``size`` power and temperature readings of each GPU (fed from the sampler thread)."""

    def __init__(self, size: int = HISTORY) -> None:
        self.size = size
        self.power: dict[int, deque[float | None]] = {}
        self.temp: dict[int, deque[float | None]] = {}

    def add(self, samples: list[Sample]) -> None:
        for s in samples:
            self.power.setdefault(s.gpu, deque(maxlen=self.size)).append(s.power_w)
            self.temp.setdefault(s.gpu, deque(maxlen=self.size)).append(s.temp_c)


def run_monitor(
    poller: MonitoredPoller,
    *,
    interval_s: float,
    target: tuple[Path, TraceFormat] | None,
    duration_s: float | None,
    prometheus: tuple[int, str] | None,
    watch: Callable[[Sampler, History], bool],
    say: Callable[[str], None],
) -> MonitorResult:
    """Sample ``poller`` until ``watch(sampler, history)`` returns (True: it was interrupted); the file is
    flushed and closed and the endpoint shut down whatever happens. ``prometheus``: (port, bind address)."""
    interrupted = False
    server: MetricsServer | None = None
    sink: TraceFile | None = None
    try:
        sink = TraceFile(target[0], target[1]) if target is not None else None
        history = History()
        sampler = Sampler(
            poller, interval_s, buffer_seconds=max(600.0, (duration_s or 0.0) + 10.0), sink=sink, on_poll=history.add
        )
        if prometheus is not None:
            from rigcheck.monitor.prometheus import MetricsServer, exposition

            server = MetricsServer(lambda: exposition(sampler.latest(), poller.gpus, sampler.stats), *prometheus)
            server.start()
            say(f"Prometheus metrics at {server.url}")
        if sink is not None:
            say(f"logging every sample to {sink.path} ({sink.fmt})")
        sampler.start()
        try:
            interrupted = watch(sampler, history)
        finally:
            sampler.stop()
    finally:
        if server is not None:
            server.stop()
        if sink is not None:
            sink.close()  # also when the endpoint could not start: no file left open
    if sink is not None:
        say(f"{sink.rows} samples written to {sink.path}")
    return monitor_result(sampler, poller, interrupted=interrupted)


def gpu_summary(samples: Sequence[Sample]) -> GpuSummary:
    """One GPU's samples summarised (a lost sample's readings left out)."""

    def values(attr: str) -> list[float]:
        return [v for s in samples if not s.lost and (v := getattr(s, attr)) is not None]

    power, temp, clock = values("power_w"), values("temp_c"), values("sm_clock_mhz")
    return GpuSummary(
        samples=len(samples),
        power_w_median=statistics.median(power) if power else None,
        power_w_max=max(power) if power else None,
        temp_c_max=max(temp) if temp else None,
        sm_clock_mhz_median=statistics.median(clock) if clock else None,
        sm_clock_mhz_min=min(clock) if clock else None,
        lost_at_s=next((s.t_s for s in samples if s.lost), None),
    )


def monitor_result(sampler: Sampler, poller: MonitoredPoller, *, interrupted: bool) -> MonitorResult:
    """The document of a stopped sampler: per GPU the latest sample and a summary, and the sampler's costs."""
    samples = sampler.samples()
    latest = sampler.latest()
    unavailable = poller.unavailable
    gpus = [
        MonitorGpu(
            **info.model_dump(),
            latest=latest.get(i),
            summary=gpu_summary([s for s in samples if s.gpu == i]),
            unavailable={field: Missing(why) for field, why in unavailable.get(i, {}).items()},
        )
        for i, info in sorted(poller.gpus.items())
    ]
    return MonitorResult(
        started_at=sampler.started_at,
        interval_s=sampler.interval_s,
        duration_s=samples[-1].t_s if samples else 0.0,
        interrupted=interrupted,
        file=str(sampler.sink.path) if sampler.sink is not None else None,
        gpus=gpus,
        sampler=sampler.stats.report(),
        missing_functions=sorted(poller.missing_functions),
    )
