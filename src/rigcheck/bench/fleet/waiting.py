"""The per-iteration timing of `rigcheck fleet` at the end of the measurements: every rank sends what it timed
(rigcheck.bench.fleet.timeline), rank 0 reads it, puts it on its own clock and runs the wait-for analysis
(checks/fleet/waits.py) into the document's ``timing``, ``waits`` and ``fleet.straggler`` findings."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

from rigcheck.bench.fleet.clocks import leaders
from rigcheck.bench.fleet.state import SKEW_VAR, FleetRun, Layout, hook_pair
from rigcheck.bench.fleet.timeline import Received, read_message, to_series
from rigcheck.checks.fleet.waits import CPU_MARGINS, GPU_MARGINS, analyse_waits
from rigcheck.model.fleet import RankTiming, WaitSummary


def clock_leaders(run: FleetRun, layout: Layout) -> dict[int, int]:
    """Each rank's clock leader (rigcheck.bench.fleet.clocks), the same on every rank: the layout's hosts and the
    skew hook, which every rank reads alike."""
    skewed = hook_pair(run.environ, SKEW_VAR)
    return leaders(layout.hosts, [skewed[0]] if skewed is not None else [])


def send(run: FleetRun) -> None:
    """This rank's timing message to rank 0 (``timing/<rank>``)."""
    run.control.put(f"timing/{run.env.rank}", run.timeline.message())
    run.control.bump("timing")


def _us(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1e6, 1)


def read(run: FleetRun, layout: Layout) -> None:
    """Rank 0: every rank's timing (those not missing), by the deadline; the analysis into ``run``."""
    ctl = run.control
    gone = {m.rank for m in run.missing}
    keys = {r: f"timing/{r}" for r in range(run.env.world_size) if r not in gone}
    found = ctl.await_keys(list(keys.values()), run.clock() + run.deadline_s, hint="timing")
    received: dict[int, Received] = {}
    for rank, key in keys.items():
        if key not in found:
            continue
        try:
            received[rank] = read_message(found[key])
        except ValueError as exc:  # sealed, yet not a timing message: dropped, never a crash
            ctl.reject(key, repr(found[key]).encode(), f"a timing message that does not parse ({exc})")
    offsets = _offsets(clock_leaders(run, layout), received)
    node_of = layout.node_of()
    analysis = analyse_waits(to_series(received, offsets), node_of, margins=CPU_MARGINS if run.cpu else GPU_MARGINS)
    run.timing = [
        _row(rank, got, node_of.get(rank), offsets.get(rank), analysis.ranks) for rank, got in received.items()
    ]
    run.timing.sort(key=lambda t: t.rank)
    if analysis.iterations:
        run.waits = WaitSummary(
            iterations=analysis.iterations,
            series=analysis.series,
            noise_us=round(analysis.noise_s * 1e6, 1),
            margin_us=round(analysis.margin_s * 1e6, 1),
            clock=_clock_text(offsets, received),
        )
    run.stragglers = analysis.findings
    dropped = sum(got.dropped for got in received.values())
    if dropped:
        run.notes.append(f"timing: {dropped} timed collective(s) left out of the ranks' messages (the bound)")
    late = sorted(set(keys) - set(received))
    if late:
        run.notes.append(f"timing: no per-iteration timing from rank(s) {', '.join(map(str, late))}")


def _offsets(led: Mapping[int, int], received: Mapping[int, Received]) -> dict[int, float]:
    """Each rank's clock offset to rank 0's: 0 on rank 0's host, else its leader's estimate (absent: unknown)."""
    out: dict[int, float] = {}
    for rank, leader in led.items():
        if leader == 0:
            out[rank] = 0.0
        elif leader in received and (offset := received[leader].offset_s) is not None:
            out[rank] = offset
    return out


def _clock_text(offsets: Mapping[int, float], received: Mapping[int, Received]) -> str:
    estimated = sum(1 for r, o in offsets.items() if o != 0.0 and r in received)
    unknown = sum(1 for r in received if r not in offsets)
    text = (
        "one clock (every rank on rank 0's host)"
        if not estimated
        else (f"rank 0's host's clock; {estimated} rank(s) of other hosts by an NTP-style midpoint at the start")
    )
    return text + (f"; {unknown} rank(s) without an offset, left out" if unknown else "")


def _row(rank: int, got: Received, node: str | None, offset: float | None, waits: Mapping[int, Any]) -> RankTiming:
    s = got.summary
    w = waits.get(rank)
    late = sorted(w.late_s) if w is not None else []
    return RankTiming(
        rank=rank,
        node=node,
        size_bytes=s.size_bytes if s else None,
        iterations=s.iterations if s else 0,
        mean_us=_us(s.mean_s) if s else None,
        p50_us=_us(s.p50_s) if s else None,
        p99_us=_us(s.p99_s) if s else None,
        spikes=s.spikes if s else 0,
        clock_offset_us=_us(offset),
        analysed=w.analysed if w is not None else 0,
        last=w.last if w is not None else 0,
        late=w.late if w is not None else 0,
        late_p50_us=_us(statistics.median(late)) if late else None,
        late_max_us=_us(late[-1]) if late else None,
    )
