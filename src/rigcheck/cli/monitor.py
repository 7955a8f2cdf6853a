"""`rigcheck monitor`: live GPU telemetry in the terminal, optionally logged to CSV/JSONL and served to Prometheus.

The view (stdout, rich.live; drawn by rigcheck.report.monitor) shows per GPU: power against the enforced
limit, temperature against the card's slowdown threshold, SM clock against its maximum, utilisation, the
active clock-event reasons and a short sparkline history of power and temperature. Messages go to stderr.
Ctrl-C (or ``--duration``) ends it cleanly: the sampler stops, the file is flushed and closed, the endpoint
shut down; exit 0. SIGTERM ends it the same way, and exits 143. ``--json``: no view, the
``rigcheck.monitor/2`` summary at the end.

With ``--prometheus`` the endpoint (prometheus_client, dcgm-exporter's names and labels: rigcheck.monitor.prometheus)
also serves the slow readings (each NVLink's error counters, Xid events in the kernel log since the start, the
framebuffer, ECC, remapped rows and retired pages), read on scrape at most every few seconds: ``make_counters``
builds them.

Test seams: ``make_poller`` (module-level, monkeypatched by tests to poll a fake NVML), ``make_counters``
and ``_pause``.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rigcheck.cli.common import (
    IdOption,
    IndentOption,
    emit,
    interrupted_by,
    interruptible,
    json_indent,
    one_selection,
    out_console,
    parse_gpus,
)
from rigcheck.cli.exits import EXIT_TERMINATED
from rigcheck.cli.streams import note
from rigcheck.errors import ProbeError, UsageError
from rigcheck.report.render import Format, RenderOptions

if TYPE_CHECKING:
    from rich.console import RenderableType

    from rigcheck.monitor.prometheus import Counters
    from rigcheck.monitor.sampler import Sampler, TraceFormat
    from rigcheck.monitor.session import History
    from rigcheck.probe.nvml import NvmlPoller

REFRESH_S = 0.25


def make_poller(gpus: list[int] | None = None) -> NvmlPoller:
    """The poller `monitor` and `burn` use: real NVML. Tests replace this function to inject a fake."""
    from rigcheck.probe.nvml import NvmlPoller

    return NvmlPoller(gpus=gpus)


def make_counters(poller: NvmlPoller) -> Counters:
    """The Prometheus endpoint's slow readings for ``poller``'s GPUs, each cached (read at most every few
    seconds). The kernel log is read once now: the Xid lines already there are not counted."""
    from rigcheck.monitor.prometheus import Counters, cached_memory, cached_rows
    from rigcheck.probe.kernel_log import XidCounter
    from rigcheck.probe.nvml.counters import NvlinkErrorReader
    from rigcheck.probe.nvml.memory_health import MemoryHealthReader

    nvlinks = NvlinkErrorReader.for_poller(poller)
    xids = XidCounter(poller.bus_ids)
    xids.start()
    return Counters(
        nvlink_errors=cached_rows(nvlinks),
        xid_events=cached_rows(xids),
        memory=cached_memory(MemoryHealthReader.for_poller(poller)),
    )


def _pause(seconds: float) -> None:
    time.sleep(seconds)


def trace_target(csv: Path | None, jsonl: Path | None) -> tuple[Path, TraceFormat] | None:
    if csv is not None and jsonl is not None:
        raise UsageError("--csv and --jsonl cannot be used together: pick one trace file")
    if csv is not None:
        return csv, "csv"
    if jsonl is not None:
        return jsonl, "jsonl"
    return None


def open_poller(gpus: list[int] | None = None) -> NvmlPoller:
    """``make_poller`` opened; no usable GPU: one line on stderr and exit 1 (the no-GPU rule, cli/nogpu.py)."""
    poller = make_poller(gpus)
    try:
        poller.open()
    except ProbeError as exc:
        from rigcheck.cli.nogpu import NOTHING_TO_WATCH, refuse_unopened

        refuse_unopened(exc, NOTHING_TO_WATCH)
    return poller


def open_chosen_poller(gpus_text: str | None, ids: str | None) -> NvmlPoller:
    """:func:`open_poller` on the GPUs --gpus or -i names. -i is resolved as doctor resolves it
    (model/selection.resolve_ids), against what NVML lists of each GPU when the poller opens (index, UUID, PCI
    bus id): a poller of every GPU is opened for that, and kept when -i names them all."""
    one_selection(gpus_text, ids)
    chosen = parse_gpus(gpus_text)  # a malformed --gpus is exit 2 before NVML is asked anything
    if ids is None:
        return open_poller(chosen)
    from rigcheck.model.selection import resolve_ids
    from rigcheck.model.snapshot import Gpu, Snapshot

    every = open_poller()
    keep = False
    try:
        listed = [
            Gpu(index=i, name=gpu.name, uuid=every.uuids.get(i), pci_bus_id=every.bus_ids.get(i))
            for i, gpu in every.gpus.items()
        ]
        indices = resolve_ids(Snapshot(gpus=listed), ids)
        keep = indices == sorted(every.gpus)
    finally:
        if not keep:
            every.close()
    return every if keep else open_poller(indices)


def monitor(
    *,
    interval: Annotated[
        float, typer.Option("--interval", min=0.01, max=3600.0, help="Seconds between polls (default 10 Hz).")
    ] = 0.1,
    csv: Annotated[
        Path | None, typer.Option("--csv", help="Also log every sample to this CSV file.", dir_okay=False)
    ] = None,
    jsonl: Annotated[
        Path | None, typer.Option("--jsonl", help="Also log every sample to this JSONL file.", dir_okay=False)
    ] = None,
    prometheus: Annotated[
        int | None,
        typer.Option("--prometheus", min=0, max=65535, help="Serve Prometheus metrics on this port (/metrics)."),
    ] = None,
    bind: Annotated[
        str, typer.Option("--bind", help="Address for --prometheus (loopback unless you open it on purpose).")
    ] = "127.0.0.1",
    duration: Annotated[
        float | None, typer.Option("--duration", min=0.0, help="Stop after this many seconds (for scripts).")
    ] = None,
    gpus_text: Annotated[str | None, typer.Option("--gpus", help="Only these GPUs, e.g. 0,1.")] = None,
    gpu_ids: IdOption = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="No live view: print a JSON summary (rigcheck.monitor/2) at the end.")
    ] = False,
    indent: IndentOption = None,
) -> None:
    """Live telemetry per GPU: power vs limit, temperature vs slowdown, clocks, throttle reasons."""
    from rigcheck.monitor.session import TraceWriteError, run_monitor

    target = trace_target(csv, jsonl)
    poller = open_chosen_poller(gpus_text, gpu_ids)
    trace_error: TraceWriteError | None = None
    try:
        doc = run_monitor(
            poller,
            interval_s=interval,
            target=target,
            duration_s=duration,
            prometheus=(prometheus, bind) if prometheus is not None else None,
            watch=lambda sampler, history: _watch(sampler, poller, history, duration, live=not as_json),
            say=note,
            counters=make_counters(poller) if prometheus is not None else None,
        )
    except TraceWriteError as exc:  # a full disk under --csv/--jsonl: the summary still, then exit 2
        doc, trace_error = exc.result, exc
    finally:
        poller.close()
    if as_json:
        emit(doc, Format.JSON, RenderOptions(indent=json_indent(indent)))
    if trace_error is not None:
        raise trace_error
    if interrupted_by() == signal.SIGTERM:
        # Ctrl-C is how one stops a live view (exit 0); SIGTERM (Slurm, Kubernetes) ends it the same way, summary
        # included, and says so in the exit code.
        raise typer.Exit(EXIT_TERMINATED)


def _watch(sampler: Sampler, poller: NvmlPoller, history: History, duration: float | None, *, live: bool) -> bool:
    """Show the view until ``duration`` is up or Ctrl-C; returns whether Ctrl-C ended it."""
    from rich.live import Live

    from rigcheck.report.monitor import live_view

    end = None if duration is None else time.monotonic() + duration

    def render() -> RenderableType:
        from rigcheck.cli.terminal_safe import TerminalSafe  # GPU names as a terminal may be given them

        return TerminalSafe(live_view(sampler.latest(), poller.gpus, history, sampler.stats))

    def wait() -> None:
        while end is None or time.monotonic() < end:
            _pause(REFRESH_S if end is None else max(0.0, min(REFRESH_S, end - time.monotonic())))
            if shown is not None:
                shown.update(render())

    shown: Live | None = None
    try:
        if live:
            with Live(render(), console=out_console(), refresh_per_second=4, transient=False) as shown:
                wait()
        else:
            wait()
    except KeyboardInterrupt:
        note("stopped")
        return True
    return False


def register(app: typer.Typer) -> None:
    """Add `monitor` to a typer app (cli/app.py mounts it on `rigcheck`)."""
    app.command("monitor")(interruptible(monitor))
