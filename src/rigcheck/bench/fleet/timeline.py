"""Per-iteration timing in `rigcheck fleet`: what each rank recorded of every timed collective (when it entered each
iteration, how long each took), what it sends rank 0 through the store, and rank 0's reading of it into the wait-for
analysis (checks/fleet/waits.py).

Each rank keeps, per timed collective (each size of the collectives, its pair in each round), its enter time per
timed iteration on its own clock and its iteration times. It sends rank 0 one message at the end (``timing/<rank>``):
its summary at the collectives' largest size (p50, p99, mean, spikes over 1.5x the mean: computed on the rank, a
few numbers) and its enter times as whole microseconds, each collective's first one from the rank's first enter
and the rest as steps from the one before (a few digits each). The message is bounded: at most ``MAX_SENT``
iterations (the earliest collectives, the smallest sizes, are dropped first): 512 iterations hold the collectives'
11 sizes x 20 iterations on NCCL and 8 rounds of pairs; about 3 KB a rank, 3 MB at 1,024 ranks, read once by rank 0.

Rank 0 puts each rank's enter times on its own clock with the rank's clock offset (rigcheck.bench.fleet.clocks) and
hands the collectives to the analysis, as read from untrusted data: a message that does not parse is dropped and
counted, never a crash.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from rigcheck.checks.fleet.waits import Series

SPIKE_FACTOR: Final = 1.5  # an iteration over 1.5x the mean is a spike
MAX_SENT: Final = 512  # iterations of enter times a rank sends rank 0


@dataclass
class Timed:
    """One timed collective on this rank: its enter time per timed iteration (this rank's clock, seconds) and
    each iteration's time (seconds, waits for the others included)."""

    label: str  # the same on every rank of the collective: "allreduce 4 KiB", "pairs round 2: a + b"
    size_bytes: int
    world: bool  # the whole world's collective (the summary's source), not a pair
    enters: list[float]
    times: list[float]


@dataclass(frozen=True)
class Summary:
    size_bytes: int
    iterations: int
    mean_s: float
    p50_s: float
    p99_s: float
    spikes: int


def nearest_rank(values: Sequence[float], pct: float) -> float:
    """The nearest-rank percentile (of 5 or 20 iterations, p99 is the slowest)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(pct / 100 * len(ordered)) - 1)]


def summarize(timed: Sequence[Timed]) -> Summary | None:
    """This rank's iteration times at the largest size of the whole world's collectives."""
    world = [t for t in timed if t.world and t.times]
    if not world:
        return None
    top = max(world, key=lambda t: t.size_bytes)
    mean = statistics.fmean(top.times)
    spikes = sum(1 for t in top.times if t > SPIKE_FACTOR * mean)
    return Summary(
        top.size_bytes, len(top.times), mean, nearest_rank(top.times, 50), nearest_rank(top.times, 99), spikes
    )


@dataclass
class Timeline:
    """What this rank timed, in order, and its clock's offset to rank 0's when it estimated one."""

    timed: list[Timed] = field(default_factory=list)
    offset_s: float | None = None

    def message(self) -> dict[str, Any]:
        """The message for rank 0 (module docstring), bounded to MAX_SENT iterations."""
        kept: list[Timed] = []
        room = MAX_SENT
        for t in reversed(self.timed):
            if len(t.enters) > room:
                break
            kept.insert(0, t)
            room -= len(t.enters)
        base = min((t.enters[0] for t in kept if t.enters), default=0.0)
        series = []
        for t in kept:
            if not t.enters:
                continue
            steps = [round((t.enters[0] - base) * 1e6)]
            steps += [round((b - a) * 1e6) for a, b in zip(t.enters, t.enters[1:], strict=False)]
            median_us = round(statistics.median(t.times) * 1e6, 1) if t.times else 0.0
            series.append([t.label, median_us, steps])
        summary = summarize(self.timed)
        return {
            "base": base,
            "offset": self.offset_s,
            "series": series,
            "dropped": len(self.timed) - len(kept),
            "summary": None
            if summary is None
            else [summary.size_bytes, summary.iterations, summary.mean_s, summary.p50_s, summary.p99_s, summary.spikes],
        }


@dataclass(frozen=True)
class Received:
    """One rank's message, read at rank 0: its enter times back in seconds on its own clock."""

    base: float
    offset_s: float | None
    series: list[tuple[str, float, list[float]]]  # (label, median iteration s, enter times s)
    summary: Summary | None
    dropped: int


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError("not a number")
    return float(value)


def read_message(value: Any) -> Received:
    """A rank's timing message; ValueError when it is not one (sealed, yet still untrusted data)."""
    if not isinstance(value, dict):
        raise ValueError("not a timing message")
    try:
        base = _number(value["base"])
        offset = None if value.get("offset") is None else _number(value["offset"])
        series = []
        for label, median_us, steps in value["series"]:
            if not isinstance(label, str) or not isinstance(steps, list) or len(steps) > MAX_SENT:
                raise ValueError("not a timed collective")
            t = base
            enters = []
            for step in steps:
                t += _number(step) / 1e6
                enters.append(t)
            series.append((label, _number(median_us) / 1e6, enters))
        raw = value.get("summary")
        summary = None
        if raw is not None:
            size, n, mean, p50, p99, spikes = raw
            summary = Summary(
                int(_number(size)), int(_number(n)), _number(mean), _number(p50), _number(p99), int(_number(spikes))
            )
        dropped = int(_number(value.get("dropped", 0)))
    except (KeyError, TypeError) as exc:
        raise ValueError(f"not a timing message: {exc}") from None
    return Received(base, offset, series, summary, dropped)


def to_series(received: Mapping[int, Received], offsets: Mapping[int, float]) -> list[Series]:
    """Every timed collective on rank 0's clock: each rank's enter times plus its clock's offset, grouped by the
    collective's label; its median iteration time the median of its ranks'. A rank without an offset is left out."""
    enters: dict[str, dict[int, list[float]]] = {}
    medians: dict[str, list[float]] = {}
    for rank, got in sorted(received.items()):
        offset = offsets.get(rank)
        if offset is None:
            continue
        for label, median_s, times in got.series:
            enters.setdefault(label, {})[rank] = [t + offset for t in times]
            medians.setdefault(label, []).append(median_s)
    return [Series(label, enters[label], statistics.median(medians[label])) for label in enters]
