"""One `rigcheck monitor` run: sample an open poller (optionally into a trace file and a Prometheus endpoint)
until the watcher returns, then summarise it as a ``rigcheck.monitor/2`` document.

The poller comes from the caller (the CLI makes the NVML one): monitor/ does not import the probe. The
Prometheus endpoint (and with it prometheus_client and http.server) is imported only when asked for.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from rigcheck.errors import OutputError
from rigcheck.model.monitor import GpuSummary, MonitorDocument, MonitorGpu
from rigcheck.model.snapshot import Missing
from rigcheck.model.telemetry import Sample
from rigcheck.monitor.sampler import Poller, Sampler, TraceFile, TraceFormat
from rigcheck.monitor.summary import GpuRunning, RunSummary

if TYPE_CHECKING:
    from rigcheck.monitor.prometheus import Counters, ExporterSource, MetricsServer

HISTORY = 40  # samples kept per GPU for the live view's sparklines
# Polls the sampler's ring buffer keeps: the summary is aggregated as the samples arrive (monitor/summary.py) and
# the file gets every sample, so nothing reads further back; memory stays flat however long the run.
WINDOW_POLLS = HISTORY


class MonitoredPoller(Poller, Protocol):
    """A poller that also says what it could not read (rigcheck.probe.nvml.NvmlPoller)."""

    @property
    def unavailable(self) -> dict[int, dict[str, str]]: ...
    @property
    def missing_functions(self) -> set[str]: ...
    @property
    def facts_unavailable(self) -> dict[int, dict[str, str]]: ...
    @property
    def uuids(self) -> dict[int, str]: ...
    @property
    def bus_ids(self) -> dict[int, str]: ...


class History:
    """The last ``size`` power and temperature readings of each GPU (fed from the sampler thread)."""

    def __init__(self, size: int = HISTORY) -> None:
        self.size = size
        self.power: dict[int, deque[float | None]] = {}
        self.temp: dict[int, deque[float | None]] = {}

    def add(self, samples: list[Sample]) -> None:
        for s in samples:
            self.power.setdefault(s.gpu, deque(maxlen=self.size)).append(s.power_draw_w)
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
    counters: Counters | None = None,
) -> MonitorDocument:
    """Sample ``poller`` until ``watch(sampler, history)`` returns (True: it was interrupted); the file is
    flushed and closed and the endpoint shut down whatever happens. ``prometheus``: (port, bind address);
    ``counters``: the slow counters the endpoint also serves (read on scrape, cached)."""
    interrupted = False
    server: MetricsServer | None = None
    sink: TraceFile | None = None
    try:
        sink = TraceFile(target[0], target[1]) if target is not None else None
        history = History()
        running = RunSummary()

        def on_poll(samples: list[Sample]) -> None:
            history.add(samples)
            running.add(samples)

        sampler = Sampler(poller, interval_s, buffer_seconds=WINDOW_POLLS * interval_s, sink=sink, on_poll=on_poll)
        if prometheus is not None:
            from rigcheck.monitor.prometheus import MetricsServer, registry_for

            server = MetricsServer(registry_for(exporter_source(sampler, poller, counters)), *prometheus)
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
    result = monitor_result(sampler, poller, running, interrupted=interrupted)
    if sink is not None and sink.error is not None:
        raise TraceWriteError(sink.error, result)
    if sink is not None:
        say(f"{sink.rows} samples written to {sink.path}")
    return result


class TraceWriteError(OutputError):
    """The trace file could not be written to its end (sampler.TraceFile.error); ``result`` is the run's summary,
    for the CLI to print before the one-line error (exit 2)."""

    def __init__(self, message: str, result: MonitorDocument) -> None:
        super().__init__(message)
        self.result = result


def exporter_source(sampler: Sampler, poller: MonitoredPoller, counters: Counters | None) -> ExporterSource:
    """What the Prometheus collector reads of a running sampler and its poller (imports prometheus_client)."""
    from rigcheck.monitor.prometheus import Counters, ExporterSource, GpuIdentity

    def unavailable() -> dict[int, dict[str, str]]:
        merged: dict[int, dict[str, str]] = {}
        for per_gpu in (poller.facts_unavailable, poller.unavailable):
            for index, fields in per_gpu.items():
                merged.setdefault(index, {}).update(fields)
        return merged

    return ExporterSource(
        latest=sampler.latest,
        gpus=poller.gpus,
        identities={i: GpuIdentity(poller.uuids.get(i, ""), poller.bus_ids.get(i, "")) for i in poller.gpus},
        unavailable=unavailable,
        stats=sampler.stats,
        counters=counters if counters is not None else Counters(),
    )


def gpu_summary(samples: Iterable[Sample]) -> GpuSummary:
    """One GPU's samples summarised (a lost sample's readings left out)."""
    running = GpuRunning()
    for s in samples:
        running.add(s)
    return running.summary()


def monitor_result(
    sampler: Sampler, poller: MonitoredPoller, running: RunSummary, *, interrupted: bool
) -> MonitorDocument:
    """The document of a stopped sampler: per GPU the latest sample and the summary ``running`` aggregated while
    it sampled, and the sampler's costs."""
    unavailable = poller.unavailable
    gpus = [
        MonitorGpu(
            **info.model_dump(),
            latest=running.latest(i),
            summary=running.summary(i),
            unavailable={field: Missing(why) for field, why in unavailable.get(i, {}).items()},
        )
        for i, info in sorted(poller.gpus.items())
    ]
    return MonitorDocument(
        started_at=sampler.started_at,
        interval_s=sampler.interval_s,
        duration_s=running.last_t_s if running.last_t_s is not None else 0.0,
        interrupted=interrupted,
        file=str(sampler.sink.path) if sampler.sink is not None else None,
        gpus=gpus,
        sampler=sampler.stats.report(),
        missing_functions=sorted(poller.missing_functions),
    )
