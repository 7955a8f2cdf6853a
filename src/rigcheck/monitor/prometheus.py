"""`rigcheck monitor --prometheus`: the sampler's latest readings as Prometheus metrics, through prometheus_client.

``GpuCollector`` is a custom collector (prometheus_client calls ``collect()`` on every scrape) over what the
sampler read last; ``MetricsServer`` serves a registry of its own (never the global one, so tests and several
monitors in one process do not collide) with prometheus_client's HTTP server, bound to loopback unless told
otherwise. This module, and with it prometheus_client and http.server, is imported only with --prometheus.

Names and labels follow dcgm-exporter, so its dashboards and alerts work on rigcheck's series and the two join:
every GPU series carries ``gpu`` (the NVML index), ``UUID``, ``pci_bus_id``, ``device`` ("nvidia0"),
``modelName`` and ``Hostname``, and a reading DCGM has a field for is served under that field's name in DCGM's
unit (W, MHz, C, %, MiB). DCGM_* series are all served as gauges: prometheus_client appends ``_total`` to a
counter's name, which would break the name dcgm-exporter gives its counters (PromQL's rate() and increase() work
on them alike). What DCGM has no field for is ``rigcheck_*``; rigcheck's own counters end in ``_total``.

A reading NVML did not give is left out (never written as 0), and ``rigcheck_reading_missing`` (labels of the
GPU, ``field``: the series left out, ``reason``: rigcheck's missing reason) says why. The table of every series
is in docs/commands.md (monitor).

Slow readings (``Counters``: each NVLink's error counters, Xid lines in the kernel log since the monitor started,
the framebuffer, ECC, remapped rows and retired pages) come from callables the caller builds (the CLI, from the
probe: monitor/ does not import it). ``Cached`` reads one at most every ``ttl_s`` seconds, on scrape, never at the
sampler's rate; a reader that raises gives nothing (its series are left out, with reason ``error``) until a later
read works, and the endpoint goes on serving everything else.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, TypeVar

from prometheus_client import CollectorRegistry, generate_latest, start_http_server
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

from rigcheck.errors import UsageError
from rigcheck.model.snapshot import CLOCK_EVENT_REASONS, Missing
from rigcheck.model.telemetry import Sample, TraceGpu
from rigcheck.monitor.sampler import SamplerStats

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

log = logging.getLogger(__name__)

T = TypeVar("T")

# dcgm-exporter's label names, in its spelling.
GPU_LABELS = ("gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname")
MISSING = "rigcheck_reading_missing"

# Sample attribute -> (series, help). Units are DCGM's, which are the Sample's own.
_READINGS: tuple[tuple[str, str, str], ...] = (
    ("power_draw_w", "DCGM_FI_DEV_POWER_USAGE", "Power draw (in W)."),
    ("power_enforced_limit_w", "DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "Power limit the driver enforces (in W)."),
    ("temp_c", "DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C)."),
    ("temp_memory_c", "DCGM_FI_DEV_MEMORY_TEMP", "Memory temperature (in C)."),
    ("sm_clock_mhz", "DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz)."),
    ("sm_clock_max_mhz", "DCGM_FI_DEV_MAX_SM_CLOCK", "Maximum SM clock of the GPU (in MHz)."),
    ("mem_clock_mhz", "DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz)."),
    ("utilization_gpu_percent", "DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %)."),
)
REASONS_SERIES = "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"
# TraceGpu attribute -> (series, help): read once when the monitor starts.
_THRESHOLDS: tuple[tuple[str, str, str], ...] = (
    ("temp_slowdown_c", "DCGM_FI_DEV_SLOWDOWN_TEMP", "Temperature at which the GPU slows down (in C)."),
    ("temp_shutdown_c", "DCGM_FI_DEV_SHUTDOWN_TEMP", "Temperature at which the GPU shuts down (in C)."),
    ("temp_max_operating_c", "DCGM_FI_DEV_GPU_MAX_OP_TEMP", "Maximum operating temperature of the GPU (in C)."),
    ("power_default_limit_w", "DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF", "Default power limit of the GPU (in W)."),
)
# Memory reader field (rigcheck.probe.nvml.memory_health) -> (series, help).
_MEMORY: tuple[tuple[str, str, str], ...] = (
    ("memory_used_mib", "DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB)."),
    ("memory_free_mib", "DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB)."),
    ("ecc_corrected_volatile", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "Single-bit (corrected) volatile ECC errors."),
    ("ecc_uncorrected_volatile", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "Double-bit (uncorrected) volatile ECC errors."),
    (
        "ecc_uncorrected_aggregate",
        "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
        "Double-bit (uncorrected) persistent ECC errors.",
    ),
    ("remapped_rows_correctable", "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "Rows remapped for correctable errors."),
    (
        "remapped_rows_uncorrectable",
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "Rows remapped for uncorrectable errors.",
    ),
    ("remapped_rows_failure", "DCGM_FI_DEV_ROW_REMAP_FAILURE", "1 when remapping a row has failed."),
    ("remapped_rows_pending", "DCGM_FI_DEV_ROW_REMAP_PENDING", "1 when a row remap waits for a GPU reset."),
    ("retired_pages_sbe", "DCGM_FI_DEV_RETIRED_SBE", "Pages retired for single-bit errors."),
    ("retired_pages_dbe", "DCGM_FI_DEV_RETIRED_DBE", "Pages retired for double-bit errors."),
    ("retired_pages_pending", "DCGM_FI_DEV_RETIRED_PENDING", "1 when pages wait to be retired."),
)
# NVLink counter type -> the per-GPU total DCGM has for it (CRC is flit + data summed, which DCGM keeps apart).
_NVLINK_TOTALS = (
    ("replay", "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "NVLink retries, all links."),
    ("recovery", "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "NVLink recovery errors, all links."),
)
XID_SERIES = "DCGM_FI_DEV_XID_ERRORS"

CounterRows = Sequence[tuple[Mapping[str, str], float]]
MemoryReadings = Mapping[int, Mapping[str, float | Missing]]
COUNTER_TTL_S = 5.0  # the slow readings are read again at most this often, however often Prometheus scrapes


class Cached(Generic[T]):
    """``read()`` at most every ``ttl_s`` seconds (thread-safe: the server answers scrapes in threads). A read
    that raises is logged (debug), kept in ``error`` and gives ``empty`` until the next try, ``ttl_s`` later."""

    def __init__(
        self,
        read: Callable[[], T],
        empty: T,
        ttl_s: float = COUNTER_TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._read = read
        self._empty = empty
        self.ttl_s = ttl_s
        self._clock = clock
        self._lock = threading.Lock()
        self._at: float | None = None
        self._value: T = empty
        self.error: str | None = None
        self.failures = 0

    def __call__(self) -> T:
        with self._lock:
            now = self._clock()
            if self._at is None or now - self._at >= self.ttl_s:
                self._at = now
                try:
                    self._value = self._read()
                    self.error = None
                except Exception as exc:  # noqa: BLE001 - a reading that fails never stops the endpoint
                    self.failures += 1
                    self.error = str(exc) or type(exc).__name__
                    log.debug("prometheus: slow reading failed: %s", self.error)
                    self._value = self._empty
            return self._value


def cached_rows(read: Callable[[], CounterRows], ttl_s: float = COUNTER_TTL_S) -> Cached[CounterRows]:
    """A counter reader (NVLink errors, Xid events) cached: no rows while it fails."""
    return Cached(read, (), ttl_s)


def cached_memory(read: Callable[[], MemoryReadings], ttl_s: float = COUNTER_TTL_S) -> Cached[MemoryReadings]:
    """The memory reader (framebuffer, ECC, remapped rows, retired pages) cached: no readings while it fails."""
    return Cached(read, {}, ttl_s)


@dataclass
class Counters:
    """The slow readings; None: not served. ``nvlink_errors`` rows carry labels gpu, link, type (replay,
    recovery, crc); ``xid_events`` rows gpu, pci_bus_id, code (Xid lines since the start); ``memory`` maps a
    GPU index to each field's value or its missing reason."""

    nvlink_errors: Cached[CounterRows] | None = None
    xid_events: Cached[CounterRows] | None = None
    memory: Cached[MemoryReadings] | None = None


@dataclass(frozen=True)
class GpuIdentity:
    """What names a GPU in every series: its UUID and PCI bus id as NVML gives them ("" when it did not)."""

    uuid: str = ""
    pci_bus_id: str = ""


@dataclass
class ExporterSource:
    """Where the collector reads: the sampler's newest samples, the GPUs' facts and identities, what the poller
    could not read (GPU -> field -> reason), the sampler's counts and the slow readings."""

    latest: Callable[[], Mapping[int, Sample]]
    gpus: Mapping[int, TraceGpu]
    identities: Mapping[int, GpuIdentity] = field(default_factory=dict)
    unavailable: Callable[[], Mapping[int, Mapping[str, str]]] = dict
    stats: SamplerStats | None = None
    counters: Counters = field(default_factory=Counters)
    hostname: str = field(default_factory=socket.gethostname)


class GpuCollector:
    """The custom collector: every series, built afresh from ``source`` on each scrape."""

    def __init__(self, source: ExporterSource) -> None:
        self.source = source
        self._lock = threading.Lock()
        self._xid_seen: dict[tuple[str, str], float] = {}  # (gpu, code) -> count at the last scrape
        self._xid_last: dict[str, int] = {}  # gpu -> the last Xid code since the start

    # -- labels -----------------------------------------------------------------------------------------
    def labels(self, index: int) -> list[str]:
        src = self.source
        ident = src.identities.get(index, GpuIdentity())
        info = src.gpus.get(index)
        name = info.name if info is not None and info.name else ""
        return [str(index), ident.uuid, ident.pci_bus_id, f"nvidia{index}", name, src.hostname]

    def _gauge(self, name: str, help_text: str, extra: Sequence[str] = ()) -> GaugeMetricFamily:
        return GaugeMetricFamily(name, help_text, labels=[*GPU_LABELS, *extra])

    # -- collect ----------------------------------------------------------------------------------------
    def collect(self) -> Iterator[Metric]:
        src = self.source
        latest = src.latest()
        indices = sorted(set(latest) | set(src.gpus))
        unavailable = src.unavailable()
        missing = self._gauge(
            MISSING, "1 for a series left out of this GPU: field names the series, reason why.", ("field", "reason")
        )

        def absent(index: int, series: str, reason: str) -> None:
            missing.add_metric([*self.labels(index), series, reason], 1.0)

        yield from self._readings(indices, latest, unavailable, absent)
        yield from self._thresholds(indices, unavailable, absent)
        yield from self._memory(indices, absent)
        yield from self._nvlink(indices, absent)
        yield from self._xid(indices, absent)
        yield missing
        if src.stats is not None:
            polls = CounterMetricFamily("rigcheck_sampler_polls", "Polls made by the sampler.")
            polls.add_metric([], float(src.stats.polls))
            missed = CounterMetricFamily(
                "rigcheck_sampler_missed_deadlines", "Poll deadlines skipped because a poll ran late."
            )
            missed.add_metric([], float(src.stats.missed_deadlines))
            yield polls
            yield missed

    def _readings(
        self,
        indices: list[int],
        latest: Mapping[int, Sample],
        unavailable: Mapping[int, Mapping[str, str]],
        absent: Callable[[int, str, str], None],
    ) -> Iterator[Metric]:
        for attr, name, help_text in _READINGS:
            family = self._gauge(name, help_text)
            for i in indices:
                s = latest.get(i)
                if s is None:
                    continue  # not polled yet
                value = getattr(s, attr)
                if value is not None and not s.lost:
                    family.add_metric(self.labels(i), float(value))
                else:
                    absent(i, name, _why(s, attr, unavailable.get(i, {})))
            yield family
        mask = self._gauge(REASONS_SERIES, "Clock event (throttle) reasons active, NVML's bit mask.")
        active = self._gauge(
            "rigcheck_gpu_clock_event_reason_active",
            "1 while the clock-event (throttle) reason holds the clocks down.",
            ("reason",),
        )
        ratio = self._gauge("rigcheck_gpu_power_limit_ratio", "Power draw over the enforced power limit (0-1).")
        lost = self._gauge("rigcheck_gpu_lost", "1 once the GPU fell off the bus (GpuIsLost).")
        for i in indices:
            s = latest.get(i)
            lost.add_metric(self.labels(i), 1.0 if s is not None and s.lost else 0.0)
            if s is None:
                continue
            if s.reasons is None or s.lost:
                absent(i, REASONS_SERIES, _why(s, "reasons", unavailable.get(i, {})))
            else:
                names = set(s.reasons)
                mask.add_metric(self.labels(i), float(_mask(names)))
                for reason in CLOCK_EVENT_REASONS:
                    active.add_metric([*self.labels(i), reason], 1.0 if reason in names else 0.0)
            if not s.lost and s.power_draw_w is not None and s.power_enforced_limit_w:
                ratio.add_metric(self.labels(i), s.power_draw_w / s.power_enforced_limit_w)
        yield from (mask, active, ratio, lost)

    def _thresholds(
        self, indices: list[int], unavailable: Mapping[int, Mapping[str, str]], absent: Callable[[int, str, str], None]
    ) -> Iterator[Metric]:
        for attr, name, help_text in _THRESHOLDS:
            family = self._gauge(name, help_text)
            for i in indices:
                info = self.source.gpus.get(i)
                value = getattr(info, attr) if info is not None else None
                if value is not None:
                    family.add_metric(self.labels(i), float(value))
                else:
                    absent(i, name, unavailable.get(i, {}).get(attr, Missing.ERROR.value))
            yield family

    def _memory(self, indices: list[int], absent: Callable[[int, str, str], None]) -> Iterator[Metric]:
        read = self.source.counters.memory
        if read is None:
            return
        readings = read()
        for attr, name, help_text in _MEMORY:
            family = self._gauge(name, help_text)
            for i in indices:
                value = readings.get(i, {}).get(attr) if read.error is None else Missing.ERROR
                if isinstance(value, Missing):
                    absent(i, name, value.value)
                elif value is not None:
                    family.add_metric(self.labels(i), float(value))
            yield family

    def _nvlink(self, indices: list[int], absent: Callable[[int, str, str], None]) -> Iterator[Metric]:
        read = self.source.counters.nvlink_errors
        if read is None:
            return
        rows = read()
        per_link = CounterMetricFamily(
            "rigcheck_gpu_nvlink_errors",
            "NVLink error counter of the link as the driver keeps it (type: replay, recovery, crc = flit + data).",
            labels=[*GPU_LABELS, "link", "type"],
        )
        totals: dict[tuple[int, str], float] = {}
        for labels, value in rows:
            index = _index(labels.get("gpu", ""))
            if index is None:
                continue
            kind = labels.get("type", "")
            per_link.add_metric([*self.labels(index), labels.get("link", ""), kind], value)
            totals[index, kind] = totals.get((index, kind), 0.0) + value
        yield per_link
        for kind, name, help_text in _NVLINK_TOTALS:
            family = self._gauge(name, help_text)
            for i in indices:
                if (i, kind) in totals:
                    family.add_metric(self.labels(i), totals[i, kind])
                else:
                    # No link of this GPU gave the counter: no NVLink, or none the driver lets us read.
                    absent(i, name, Missing.ERROR.value if read.error is not None else Missing.NOT_SUPPORTED.value)
            yield family

    def _xid(self, indices: list[int], absent: Callable[[int, str, str], None]) -> Iterator[Metric]:
        read = self.source.counters.xid_events
        if read is None:
            return
        rows = read()
        events = CounterMetricFamily(
            "rigcheck_gpu_xid_events",
            "Xid lines in the kernel log since the monitor started, per GPU and Xid code (label xid).",
            labels=[*GPU_LABELS, "xid"],
        )
        last = self._gauge(XID_SERIES, "Value of the last Xid error since the monitor started (0: none).")
        other = [""] * len(GPU_LABELS)
        for labels, value in rows:
            index = _index(labels.get("gpu", ""))
            if index is not None:
                names = self.labels(index)
            else:  # an Xid on a bus that is not one of the monitored GPUs: named by its bus id alone
                names = [*other[:2], labels.get("pci_bus_id", ""), *other[3:5], self.source.hostname]
            events.add_metric([*names, labels.get("code", "")], value)
        yield events
        latest = self._last_xids(rows)
        for i in indices:
            if read.error is not None:
                absent(i, XID_SERIES, Missing.ERROR.value)
            else:
                last.add_metric(self.labels(i), float(latest.get(str(i), 0)))
        yield last

    def _last_xids(self, rows: CounterRows) -> dict[str, int]:
        """The last Xid code of each GPU: the code whose count grew at the latest scrape that saw one grow (of
        several that grew between two reads, the highest)."""
        with self._lock:
            grew: dict[str, int] = {}
            for labels, value in rows:
                key = (labels.get("gpu", ""), labels.get("code", ""))
                if value > self._xid_seen.get(key, 0.0) and key[1].isdigit():
                    grew[key[0]] = max(grew.get(key[0], -1), int(key[1]))
                self._xid_seen[key] = value
            self._xid_last.update(grew)
            return dict(self._xid_last)


def _why(sample: Sample, attr: str, unavailable: Mapping[str, str]) -> str:
    """Why a polled reading is None: lost, the reason the poller kept, else a read that failed this poll."""
    if sample.lost:
        return Missing.GPU_LOST.value
    return unavailable.get(attr, Missing.ERROR.value)


def _mask(reasons: Iterable[str]) -> int:
    """Reason names -> NVML's bit mask (bit i = CLOCK_EVENT_REASONS[i]), as DCGM serves it."""
    return sum(1 << bit for bit, name in enumerate(CLOCK_EVENT_REASONS) if name in set(reasons))


def _index(text: str) -> int | None:
    return int(text) if text.isdigit() else None


def registry_for(source: ExporterSource) -> CollectorRegistry:
    """A registry of its own holding one collector over ``source``."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(GpuCollector(source))
    return registry


def exposition(source: ExporterSource) -> str:
    """The metrics page, as a scrape would get it (text format)."""
    return generate_latest(registry_for(source)).decode("utf-8")


class MetricsServer:
    """Serves ``registry`` at /metrics on ``bind``:``port`` (port 0: an ephemeral one; see ``port``), with
    prometheus_client's own HTTP server in a daemon thread."""

    def __init__(self, registry: CollectorRegistry, port: int, bind: str = "127.0.0.1") -> None:
        self.registry = registry
        self.bind = bind
        self.requested_port = port
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None
        self._port: int | None = None

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("the metrics server is not started")
        return self._port

    @property
    def url(self) -> str:
        host = f"[{self.bind}]" if ":" in self.bind else self.bind
        return f"http://{host}:{self.port}/metrics"

    def start(self) -> None:
        try:
            server, thread = start_http_server(self.requested_port, addr=self.bind, registry=self.registry)
        except OSError as exc:
            where = f"{self.bind}:{self.requested_port}"
            raise UsageError(f"cannot serve Prometheus metrics on {where}: {exc.strerror or exc}") from None
        self._server, self._thread, self._port = server, thread, int(server.server_port)

    def stop(self) -> None:
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        self._server = self._thread = None
        server.shutdown()
        server.server_close()
        thread.join()

    def __enter__(self) -> MetricsServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
