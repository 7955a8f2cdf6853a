"""The telemetry sampler: polls a poller at a fixed rate in a background thread.

Polls are scheduled on absolute deadlines (start + k × interval), so the time a poll takes does not
accumulate into drift; a deadline that has already passed when the previous poll ends is skipped and
counted in ``stats.missed_deadlines`` (the sampler never bursts to catch up). Samples go into a bounded
ring buffer (``buffer_seconds`` of history for every GPU: memory flat however long the run; `monitor`
aggregates its summary through ``on_poll`` instead, monitor/summary.py) and, optionally, into a CSV or JSONL file
written through rigcheck.model.trace's row formatters and flushed at least every ``flush_interval_s``
(1 s): a crash or Ctrl-C loses at most the last second. A GPU lost mid-run appears once with
``lost=True`` (the poller stops asking it); the others go on.

The clock and the wait are injectable (``clock``, ``wait``) so tests can drive the schedule with a
fake clock; ``run()`` runs the loop in the calling thread, ``start()`` in a daemon thread.
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal, Protocol, TextIO

from rigcheck.errors import OutputError, UsageError
from rigcheck.model.monitor import SamplerReport
from rigcheck.model.telemetry import Sample, Trace, TraceGpu
from rigcheck.model.trace import (
    CSV_COLUMNS,
    CSV_COUNTER_COLUMNS,
    format_csv_row,
    format_jsonl_row,
    write_csv_header,
    write_jsonl_header,
)

log = logging.getLogger(__name__)

TraceFormat = Literal["csv", "jsonl"]


class Poller(Protocol):
    """What the sampler polls: rigcheck.probe.nvml.NvmlPoller (the CLI makes it and passes it in), or a test's
    stand-in. monitor/ never imports the probe. A poller that reads the error counters (ECC, PCIe replays, NVLink)
    says so with a true ``reads_counters`` attribute: a CSV trace then names their columns."""

    @property
    def gpus(self) -> dict[int, TraceGpu]: ...
    def poll(self, t_s: float) -> list[Sample]: ...


def next_deadline(start: float, interval_s: float, k: int, now: float) -> tuple[int, int]:
    """The next poll number after poll ``k`` whose deadline (start + n × interval) has not passed at
    ``now``, and how many deadlines were skipped to get there."""
    nxt = k + 1
    if start + nxt * interval_s < now:
        behind = math.floor((now - start) / interval_s) + 1
        return behind, behind - nxt
    return nxt, 0


class TraceFile:
    """A trace file being written: the header, one row per sample, flushed on a schedule.

    Opened (and so checked) at construction; the sampler writes the header when it starts. A stream, not a
    whole file (model/files_out.py): it grows as the run goes, so it is opened in place (an old file of that name
    is replaced from its first byte) and a crash leaves the rows flushed so far. A write that fails (a full or
    read-only disk) ends the file there, never the sampling: ``error`` says why, the rows before it stay, and the
    command reports it as an output error (exit 2) after its summary.
    """

    def __init__(self, path: Path, fmt: TraceFormat, *, flush_interval_s: float = 1.0) -> None:
        if fmt not in ("csv", "jsonl"):
            raise UsageError(f"unknown trace format {fmt!r}: csv or jsonl")
        self.path = path
        self.fmt: TraceFormat = fmt
        self.flush_interval_s = flush_interval_s
        self.rows = 0
        self.error: str | None = None
        self.columns: tuple[str, ...] = CSV_COLUMNS  # the CSV's columns, the counters' too where they are read
        try:
            self._fh: TextIO | None = path.open("w", encoding="utf-8", newline="")
        except OSError as exc:
            raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
        self._flushed_at = time.monotonic()

    def _failed(self, exc: OSError | OutputError) -> None:
        """Stop writing: keep the first error, close the file without another write."""
        if self.error is None:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            self.error = f"cannot write {self.path}: {why}; the trace ends there (the rows written before stay)"
        fh, self._fh = self._fh, None
        if fh is not None:
            with contextlib.suppress(OSError):  # its buffer cannot be written either
                fh.close()

    def begin(
        self, gpus: dict[int, TraceGpu], *, interval_s: float | None, started_at: str | None, counters: bool = False
    ) -> None:
        """Write the header (flushed at once: a file cut short after it still reads as a trace). ``counters``: the
        samples carry the error counters (a CSV names their columns after the others; JSONL writes the keys a
        sample has)."""
        if self._fh is None:
            return
        listed = [gpus[i] for i in sorted(gpus)]
        try:
            if self.fmt == "csv":
                self.columns = CSV_COLUMNS + CSV_COUNTER_COLUMNS if counters else CSV_COLUMNS
                write_csv_header(self._fh, listed, interval_s=interval_s, started_at=started_at, columns=self.columns)
            else:
                write_jsonl_header(self._fh, listed, interval_s=interval_s, started_at=started_at)
        except (OSError, OutputError) as exc:  # the .meta.json sidecar is written whole, or OutputError
            self._failed(exc)
        self.flush()

    def write(self, samples: list[Sample]) -> None:
        fh = self._fh
        if fh is None:
            return
        try:
            if self.fmt == "csv":
                columns = self.columns
                fh.write("".join(format_csv_row(s, columns) for s in samples))
            else:
                fh.write("".join(format_jsonl_row(s) for s in samples))
            self.rows += len(samples)
            now = time.monotonic()
            if now - self._flushed_at >= self.flush_interval_s:
                fh.flush()
                self._flushed_at = now
        except OSError as exc:
            self._failed(exc)

    def flush(self) -> None:
        if self._fh is not None:
            try:
                self._fh.flush()
            except OSError as exc:
                self._failed(exc)
            self._flushed_at = time.monotonic()

    def close(self) -> None:
        if self._fh is not None:
            fh = self._fh
            try:
                fh.flush()
            except OSError as exc:
                self._failed(exc)
                return
            self._fh = None
            try:
                fh.close()
            except OSError as exc:
                self._failed(exc)


@dataclass
class SamplerStats:
    polls: int = 0
    samples: int = 0
    missed_deadlines: int = 0
    poll_us_total: float = 0.0
    poll_us_max: float = 0.0
    cpu_s: float = 0.0  # CPU time of the sampling thread (time.thread_time), polls and bookkeeping

    @property
    def poll_us_mean(self) -> float | None:
        return self.poll_us_total / self.polls if self.polls else None

    def report(self) -> SamplerReport:
        """The counts as the documents give them (``sampler`` in ``rigcheck.monitor/2`` and ``rigcheck.burn/2``)."""
        return SamplerReport(
            polls=self.polls,
            samples=self.samples,
            missed_deadlines=self.missed_deadlines,
            poll_us_mean=self.poll_us_mean,
            poll_us_max=self.poll_us_max if self.polls else None,
            cpu_s=self.cpu_s,
        )


class Sampler:
    """Polls ``poller`` every ``interval_s`` seconds into a ring buffer and, optionally, a trace file.

    ``sink``: a TraceFile to write to; ``stop()`` flushes and closes it.
    ``on_poll``: called from the sampling thread with each poll's samples (keep it short).
    """

    def __init__(
        self,
        poller: Poller,
        interval_s: float = 0.1,
        buffer_seconds: float = 600.0,
        sink: TraceFile | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        wait: Callable[[float], bool] | None = None,
        on_poll: Callable[[list[Sample]], None] | None = None,
    ) -> None:
        if interval_s <= 0:
            raise UsageError("the sampling interval must be positive")
        self.poller = poller
        self.interval_s = interval_s
        self.sink = sink
        self.on_poll = on_poll
        gpus = max(1, len(poller.gpus))
        self._buffer: deque[Sample] = deque(maxlen=max(1, math.ceil(buffer_seconds / interval_s)) * gpus)
        # The newest sample of each GPU, kept apart from the ring buffer: a GPU lost long ago (no longer polled)
        # would otherwise fall out of a short buffer, and latest() would scan the whole buffer looking for it.
        self._latest: dict[int, Sample] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._clock = clock
        self._wait = wait if wait is not None else self._stop.wait
        self._thread: threading.Thread | None = None
        self.stats = SamplerStats()
        self.started_at: str | None = None
        self.t0: float | None = None  # the clock's reading at t_s = 0

    # -- control --------------------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("the sampler was already started")
        self._thread = threading.Thread(target=self.run, name="rigcheck-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop polling, wait for the thread, flush and close the file. Safe to call twice."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        if self.sink is not None:
            self.sink.close()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def __enter__(self) -> Sampler:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the loop -------------------------------------------------------------------------------
    def run(self) -> None:
        """Poll until ``stop()``; the first poll at t_s = 0, then on every deadline."""
        cpu0 = time.thread_time()
        start = self._clock()
        self.t0 = start
        self.started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
        if self.sink is not None:
            counters = bool(getattr(self.poller, "reads_counters", False))
            self.sink.begin(
                dict(self.poller.gpus), interval_s=self.interval_s, started_at=self.started_at, counters=counters
            )
        k = 0
        try:
            while not self._stop.is_set():
                self._poll_once(self._clock() - start)
                k, missed = next_deadline(start, self.interval_s, k, self._clock())
                self.stats.missed_deadlines += missed
                delay = start + k * self.interval_s - self._clock()
                if delay > 0 and self._wait(delay):
                    break
        finally:
            self.stats.cpu_s = time.thread_time() - cpu0
            if self.sink is not None:
                self.sink.flush()

    def _poll_once(self, t_s: float) -> None:
        before = time.perf_counter()
        samples = self.poller.poll(round(t_s, 6))
        took_us = (time.perf_counter() - before) * 1e6
        with self._lock:
            self._buffer.extend(samples)
            for s in samples:
                self._latest[s.gpu] = s
        st = self.stats
        st.polls += 1
        st.samples += len(samples)
        st.poll_us_total += took_us
        st.poll_us_max = max(st.poll_us_max, took_us)
        if self.sink is not None:
            self.sink.write(samples)
        if self.on_poll is not None:
            self.on_poll(samples)

    # -- results --------------------------------------------------------------------------------
    def samples(self) -> list[Sample]:
        """The buffered samples, oldest first (at most ``buffer_seconds`` of them per GPU)."""
        with self._lock:
            return list(self._buffer)

    def latest(self) -> dict[int, Sample]:
        """The newest sample of each GPU polled so far (a lost GPU: the sample that said so)."""
        with self._lock:
            return dict(self._latest)

    def trace(self) -> Trace:
        return Trace(
            source="rigcheck-sampler",
            samples=self.samples(),
            gpus=dict(self.poller.gpus),
            interval_s=self.interval_s,
            started_at=self.started_at,
            path=str(self.sink.path) if self.sink is not None else None,
        )
