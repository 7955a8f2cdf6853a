"""`rigcheck monitor`: live GPU telemetry in the terminal, optionally logged to CSV/JSONL and served to Prometheus.

The view (stdout, rich.live) shows per GPU: power against the enforced limit, temperature against the
card's slowdown threshold, SM clock against its maximum, utilisation, the active clock-event reasons and a
short sparkline history of power and temperature. Messages go to stderr. Ctrl-C (or ``--duration``) ends
it cleanly: the sampler stops, the file is flushed and closed, the endpoint shut down; exit 0.

Test seams: ``make_poller`` (module-level, monkeypatched by tests to poll a fake NVML) and ``_pause``.
"""

from __future__ import annotations

import statistics
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from rigcheck.cli.common import interruptible, note, out_console, print_json
from rigcheck.errors import ProbeError, UsageError
from rigcheck.model.telemetry import Sample, TraceGpu
from rigcheck.monitor.prometheus import MetricsServer, exposition
from rigcheck.monitor.sampler import Sampler, SamplerStats, TraceFile, TraceFormat
from rigcheck.probe.nvml import NvmlPoller

MONITOR_SCHEMA = "rigcheck.monitor/1"
HISTORY = 40  # samples in the sparklines
REFRESH_S = 0.25
_BLOCKS = "▁▂▃▄▅▆▇█"


def make_poller(gpus: list[int] | None = None) -> NvmlPoller:
    """The poller `monitor` and `burn` use: real NVML. Tests replace this function to inject a fake."""
    return NvmlPoller(gpus=gpus)


def _pause(seconds: float) -> None:
    time.sleep(seconds)


def parse_gpus(text: str | None) -> list[int] | None:
    """ "0,2" -> [0, 2]; None or "" -> None (every GPU)."""
    if not text:
        return None
    try:
        out = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UsageError(f"--gpus takes GPU indices separated by commas (e.g. 0,1), not {text!r}") from None
    if any(i < 0 for i in out) or len(set(out)) != len(out):
        raise UsageError(f"--gpus: indices must be distinct and not negative: {text!r}")
    return out


def trace_target(csv: Path | None, jsonl: Path | None) -> tuple[Path, TraceFormat] | None:
    if csv is not None and jsonl is not None:
        raise UsageError("--csv and --jsonl cannot be used together: pick one trace file")
    if csv is not None:
        return csv, "csv"
    if jsonl is not None:
        return jsonl, "jsonl"
    return None


def open_poller(gpus: list[int] | None = None) -> NvmlPoller:
    """``make_poller`` opened; no GPU: one line on stderr and exit 1."""
    poller = make_poller(gpus)
    try:
        poller.open()
    except ProbeError as exc:
        note(f"no NVIDIA GPU visible: {exc}")
        raise typer.Exit(1) from None
    return poller


# --- the view ----------------------------------------------------------------------------------------
def sparkline(values: list[float | None], lo: float, hi: float) -> str:
    """One block character per value, scaled from ``lo`` to ``hi``; a blank for a missing value."""
    span = hi - lo if hi > lo else 1.0
    out = []
    for v in values:
        if v is None:
            out.append(" ")
            continue
        level = round((min(max(v, lo), hi) - lo) / span * (len(_BLOCKS) - 1))
        out.append(_BLOCKS[level])
    return "".join(out)


class History:
    """The last ``HISTORY`` power and temperature readings of each GPU (fed from the sampler thread)."""

    def __init__(self, size: int = HISTORY) -> None:
        self.size = size
        self.power: dict[int, deque[float | None]] = {}
        self.temp: dict[int, deque[float | None]] = {}

    def add(self, samples: list[Sample]) -> None:
        for s in samples:
            self.power.setdefault(s.gpu, deque(maxlen=self.size)).append(s.power_w)
            self.temp.setdefault(s.gpu, deque(maxlen=self.size)).append(s.temp_c)


def _of(value: float | None, limit: float | None, unit: str) -> Text:
    if value is None:
        return Text("n/a", style="dim")
    text = f"{value:.0f}"
    text += f" / {limit:.0f} {unit}" if limit is not None else f" {unit}"
    style = ""
    if limit:
        share = value / limit
        style = "bold red" if share >= 0.98 else "yellow" if share >= 0.9 else ""
    return Text(text, style=style)


_HEADERS = ("GPU", "name", "power", "temp", "SM clock", "util", "clock-event reasons", "power hist.", "temp hist.")


def view(latest: Mapping[int, Sample], gpus: Mapping[int, TraceGpu], history: History, stats: SamplerStats) -> Group:
    """The live table: one row per GPU."""
    table = Table(box=None, pad_edge=False, header_style="bold")
    for header in (
        "GPU",
        "name",
        "power",
        "temp",
        "SM clock",
        "util",
        "clock-event reasons",
        "power hist.",
        "temp hist.",
    ):
        table.add_column(header, no_wrap=True)
    for i in sorted(set(gpus) | set(latest)):
        info = gpus.get(i, TraceGpu(index=i))
        s = latest.get(i)
        if s is None:
            table.add_row(str(i), info.name or "", Text("waiting for the first poll", style="dim"))
            continue
        if s.lost:
            table.add_row(str(i), info.name or "", Text(f"LOST at {s.t_s:.1f} s (fell off the bus)", style="bold red"))
            continue
        reasons = [r for r in (s.reasons or []) if r != "idle"]
        reason_text = (
            Text("n/a", style="dim")
            if s.reasons is None
            else Text(", ".join(reasons) or ("idle" if s.reasons else "none"), style="yellow" if reasons else "")
        )
        limit = s.power_limit_w or info.power_default_limit_w
        slowdown = info.temp_slowdown_c
        table.add_row(
            str(i),
            info.name or "",
            _of(s.power_w, limit, "W"),
            _of(s.temp_c, slowdown, "C"),
            _of(s.sm_clock_mhz, s.sm_clock_max_mhz, "MHz"),
            Text(f"{s.utilization_gpu_percent:.0f} %") if s.utilization_gpu_percent is not None else Text("n/a"),
            reason_text,
            sparkline(list(history.power.get(i, [])), 0.0, limit or 1000.0),
            sparkline(list(history.temp.get(i, [])), 20.0, slowdown or 100.0),
        )
    footer = Text(
        f"{stats.polls} polls, {stats.missed_deadlines} missed deadlines; Ctrl-C to stop",
        style="dim",
    )
    return Group(table, footer)


# --- the document ------------------------------------------------------------------------------------
def _summary(samples: list[Sample]) -> dict[str, Any]:
    def values(attr: str) -> list[float]:
        return [v for s in samples if not s.lost and (v := getattr(s, attr)) is not None]

    power, temp, clock = values("power_w"), values("temp_c"), values("sm_clock_mhz")
    lost = next((s.t_s for s in samples if s.lost), None)
    return {
        "samples": len(samples),
        "power_w_median": statistics.median(power) if power else None,
        "power_w_max": max(power) if power else None,
        "temp_c_max": max(temp) if temp else None,
        "sm_clock_mhz_median": statistics.median(clock) if clock else None,
        "sm_clock_mhz_min": min(clock) if clock else None,
        "lost_at_s": lost,
    }


def monitor_document(sampler: Sampler, poller: NvmlPoller, *, interrupted: bool) -> dict[str, Any]:
    samples = sampler.samples()
    latest = sampler.latest()
    gpus = []
    for i, info in sorted(poller.gpus.items()):
        mine = [s for s in samples if s.gpu == i]
        newest = latest.get(i)
        gpus.append(
            {
                **asdict(info),
                "latest": asdict(newest) if newest is not None else None,
                "summary": _summary(mine),
                "unavailable": poller.unavailable.get(i, {}),
            }
        )
    return {
        "schema": MONITOR_SCHEMA,
        "started_at": sampler.started_at,
        "interval_s": sampler.interval_s,
        "duration_s": samples[-1].t_s if samples else 0.0,
        "interrupted": interrupted,
        "file": str(sampler.sink.path) if sampler.sink is not None else None,
        "gpus": gpus,
        "sampler": sampler.stats.to_dict(),
        "missing_functions": sorted(poller.missing_functions),
    }


# --- the command -------------------------------------------------------------------------------------
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
    as_json: Annotated[
        bool, typer.Option("--json", help="No live view: print a JSON summary (rigcheck.monitor/1) at the end.")
    ] = False,
) -> None:
    """Live telemetry per GPU: power vs limit, temperature vs slowdown, clocks, throttle reasons."""
    target = trace_target(csv, jsonl)
    wanted = parse_gpus(gpus_text)
    poller = open_poller(wanted)
    interrupted = False
    server: MetricsServer | None = None
    sink: TraceFile | None = None
    try:
        sink = TraceFile(target[0], target[1]) if target is not None else None
        history = History()
        sampler = Sampler(
            poller, interval, buffer_seconds=max(600.0, (duration or 0.0) + 10.0), sink=sink, on_poll=history.add
        )
        if prometheus is not None:
            server = MetricsServer(lambda: exposition(sampler.latest(), poller.gpus, sampler.stats), prometheus, bind)
            server.start()
            note(f"Prometheus metrics at {server.url}")
        if sink is not None:
            note(f"logging every sample to {sink.path} ({sink.fmt})")
        sampler.start()
        try:
            interrupted = _watch(sampler, poller, history, duration, live=not as_json)
        finally:
            sampler.stop()
    finally:
        if server is not None:
            server.stop()
        if sink is not None:
            sink.close()  # also when the endpoint could not start: no file left open
        poller.close()
    if sampler.sink is not None:
        note(f"{sampler.sink.rows} samples written to {sampler.sink.path}")
    if as_json:
        print_json(monitor_document(sampler, poller, interrupted=interrupted))


def _watch(sampler: Sampler, poller: NvmlPoller, history: History, duration: float | None, *, live: bool) -> bool:
    """Show the view until ``duration`` is up or Ctrl-C; returns whether Ctrl-C ended it."""
    end = None if duration is None else time.monotonic() + duration

    def render() -> Group:
        return view(sampler.latest(), poller.gpus, history, sampler.stats)

    def wait() -> None:
        while end is None or time.monotonic() < end:
            _pause(REFRESH_S if end is None else max(0.0, min(REFRESH_S, end - time.monotonic())))
            if live_view is not None:
                live_view.update(render())

    live_view: Live | None = None
    try:
        if live:
            with Live(render(), console=out_console(), refresh_per_second=4, transient=False) as live_view:
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
