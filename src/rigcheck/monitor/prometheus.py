"""A Prometheus endpoint for the sampler's latest readings: text exposition format 0.0.4.

``exposition(latest, gpus, stats)`` is the pure renderer; ``MetricsServer`` serves it from a thread with
the standard library's http.server, bound to loopback unless told otherwise. Every GPU gauge carries the
labels ``gpu`` (the NVML index) and ``name``; a reading the GPU does not give is left out (Prometheus'
convention for "no value"), never written as 0.

Slow counters (``Counters``: each NVLink's error counters, Xid events since the monitor started) come from
callables the caller builds (the CLI, from the probe: monitor/ does not import it). Each returns rows of
(labels, value); ``CachedCounter`` reads one at most every ``ttl_s`` seconds, on scrape, never at the sampler's
rate. A reader that raises gives no rows (its series is left out) until a later read works; the endpoint
goes on serving everything else.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from rigcheck.errors import UsageError
from rigcheck.model.snapshot import CLOCK_EVENT_REASONS
from rigcheck.model.telemetry import Sample, TraceGpu
from rigcheck.monitor.sampler import SamplerStats

log = logging.getLogger(__name__)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# (metric name, help, the Sample attribute, scale)
_GAUGES: tuple[tuple[str, str, str, float], ...] = (
    ("rigcheck_gpu_power_watts", "Power draw of the GPU.", "power_w", 1.0),
    ("rigcheck_gpu_power_limit_watts", "Power limit the driver enforces now.", "power_limit_w", 1.0),
    ("rigcheck_gpu_temperature_celsius", "GPU core temperature.", "temp_c", 1.0),
    ("rigcheck_gpu_memory_temperature_celsius", "GPU memory (HBM) temperature.", "temp_memory_c", 1.0),
    ("rigcheck_gpu_sm_clock_mhz", "SM clock.", "sm_clock_mhz", 1.0),
    ("rigcheck_gpu_sm_clock_max_mhz", "Maximum SM clock of the card.", "sm_clock_max_mhz", 1.0),
    ("rigcheck_gpu_memory_clock_mhz", "Memory clock.", "mem_clock_mhz", 1.0),
    (
        "rigcheck_gpu_utilization_ratio",
        "Share of the last sample period a kernel ran (0-1).",
        "utilization_gpu_percent",
        0.01,
    ),
)
_THRESHOLDS: tuple[tuple[str, str, str], ...] = (
    ("rigcheck_gpu_temperature_slowdown_celsius", "Temperature at which the card slows down.", "temp_slowdown_c"),
    ("rigcheck_gpu_temperature_shutdown_celsius", "Temperature at which the card shuts down.", "temp_shutdown_c"),
    ("rigcheck_gpu_power_default_limit_watts", "The card's default power limit.", "power_default_limit_w"),
)


CounterRows = Sequence[tuple[Mapping[str, str], float]]
COUNTER_TTL_S = 5.0  # the slow counters are read again at most this often, however often Prometheus scrapes


class CachedCounter:
    """``read()`` at most every ``ttl_s`` seconds (thread-safe: the server answers scrapes in threads). A read
    that raises is logged (debug) and gives no rows until the next try, ``ttl_s`` later."""

    def __init__(
        self, read: Callable[[], CounterRows], ttl_s: float = COUNTER_TTL_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._read = read
        self.ttl_s = ttl_s
        self._clock = clock
        self._lock = threading.Lock()
        self._at: float | None = None
        self._rows: CounterRows = ()
        self.failures = 0

    def __call__(self) -> CounterRows:
        with self._lock:
            now = self._clock()
            if self._at is None or now - self._at >= self.ttl_s:
                self._at = now
                try:
                    self._rows = list(self._read())
                except Exception as exc:  # noqa: BLE001 - a counter that cannot be read never stops the endpoint
                    self.failures += 1
                    log.debug("prometheus: counter read failed: %s", exc)
                    self._rows = ()
            return self._rows


@dataclass
class Counters:
    """The slow counters: NVLink errors (labels gpu, uuid, pci_bus_id, link, type) and Xid events since the
    monitor started (labels gpu, pci_bus_id, code). None: not exported."""

    nvlink_errors: Callable[[], CounterRows] | None = None
    xid_events: Callable[[], CounterRows] | None = None


_COUNTER_FAMILIES = (
    (
        "nvlink_errors",
        "rigcheck_gpu_nvlink_errors_total",
        "NVLink error counter of the link as the driver keeps it (type: replay, recovery, crc = flit + data).",
        ("gpu", "uuid", "pci_bus_id", "link", "type"),
    ),
    (
        "xid_events",
        "rigcheck_gpu_xid_events_total",
        "Xid lines in the kernel log since the monitor started, per GPU and Xid code.",
        ("gpu", "pci_bus_id", "code"),
    ),
)


def _escape(value: str) -> str:
    """A label value as the exposition format wants it: backslash, double quote and newline escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _labels(**labels: str) -> str:
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items()) + "}"


def exposition(
    latest: Mapping[int, Sample],
    gpus: Mapping[int, TraceGpu],
    stats: SamplerStats | None = None,
    counters: Counters | None = None,
) -> str:
    """The metrics page for the newest sample of each GPU (and the slow ``counters``, where given)."""
    lines: list[str] = []
    indices = sorted(set(latest) | set(gpus))

    def gpu_labels(i: int) -> dict[str, str]:
        info = gpus.get(i)
        return {"gpu": str(i), "name": (info.name if info and info.name else "")}

    def family(name: str, help_text: str, kind: str, rows: list[tuple[str, float]]) -> None:
        if not rows:
            return
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} {kind}")
        lines.extend(f"{name}{labels} {_number(v)}" for labels, v in rows)

    for name, help_text, attr, scale in _GAUGES:
        rows: list[tuple[str, float]] = []
        for i in indices:
            s = latest.get(i)
            value = getattr(s, attr) if s is not None and not s.lost else None
            if value is not None:
                rows.append((_labels(**gpu_labels(i)), float(value) * scale))
        family(name, help_text, "gauge", rows)
    for name, help_text, attr in _THRESHOLDS:
        rows = []
        for i in indices:
            info = gpus.get(i)
            value = getattr(info, attr) if info is not None else None
            if value is not None:
                rows.append((_labels(**gpu_labels(i)), float(value)))
        family(name, help_text, "gauge", rows)
    rows = []
    for i in indices:
        s = latest.get(i)
        if s is None or s.lost or s.reasons is None:
            continue
        active = set(s.reasons)
        rows.extend(
            (_labels(gpu=str(i), reason=reason), 1.0 if reason in active else 0.0) for reason in CLOCK_EVENT_REASONS
        )
    family(
        "rigcheck_gpu_clock_event_reason_active",
        "1 while the clock-event (throttle) reason holds the clocks down.",
        "gauge",
        rows,
    )
    family(
        "rigcheck_gpu_lost",
        "1 once the GPU fell off the bus (GpuIsLost).",
        "gauge",
        [(_labels(**gpu_labels(i)), 1.0 if (s := latest.get(i)) is not None and s.lost else 0.0) for i in indices],
    )
    if counters is not None:
        for attr, name, help_text, keys in _COUNTER_FAMILIES:
            read = getattr(counters, attr)
            rows = []
            for labels, value in _counter_rows(read):
                rows.append((_labels(**{k: str(labels.get(k, "")) for k in keys}), value))
            family(name, help_text, "counter", rows)
    if stats is not None:
        family("rigcheck_sampler_polls_total", "Polls made by the sampler.", "counter", [("", float(stats.polls))])
        family(
            "rigcheck_sampler_missed_deadlines_total",
            "Poll deadlines skipped because a poll ran late.",
            "counter",
            [("", float(stats.missed_deadlines))],
        )
    return "\n".join(lines) + "\n"


def _counter_rows(read: Callable[[], CounterRows] | None) -> CounterRows:
    if read is None:
        return ()
    try:
        return read()
    except Exception as exc:  # noqa: BLE001 - an uncached reader that fails: no rows, the page still renders
        log.debug("prometheus: counter read failed: %s", exc)
        return ()


class _Handler(BaseHTTPRequestHandler):
    server: _MetricsHTTPServer

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] not in ("/", "/metrics"):
            self.send_error(404, "only /metrics is served")
            return
        body = self.server.render().encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        log.debug("prometheus: " + format, *args)


class _MetricsHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], render: Callable[[], str]) -> None:
        self.render = render
        super().__init__(address, _Handler)


class MetricsServer:
    """Serves ``render()`` at /metrics on ``bind``:``port`` (port 0: an ephemeral one; see ``port``)."""

    def __init__(self, render: Callable[[], str], port: int, bind: str = "127.0.0.1") -> None:
        try:
            self._server = _MetricsHTTPServer((bind, port), render)
        except OSError as exc:
            raise UsageError(f"cannot serve Prometheus metrics on {bind}:{port}: {exc.strerror or exc}") from None
        self._thread = threading.Thread(target=self._server.serve_forever, name="rigcheck-prometheus", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        host = str(self._server.server_address[0])
        return f"http://{host}:{self.port}/metrics"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join()
        self._server.server_close()

    def __enter__(self) -> MetricsServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
