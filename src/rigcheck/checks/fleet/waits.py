"""The wait-for analysis: which rank the others waited for, iteration by iteration, and whether one (or a node) is a
straggler. Pure: rank 0 (rigcheck.bench.fleet.run) hands over every timed collective's enter times, already on its
own clock; nothing here reads a clock or the store.

In a collective every rank waits for the last one to enter: the last is the iteration's cause, the others its
victims. A rank's lateness in an iteration is its enter time minus the iteration's lower median (the middle rank's,
the earlier of two: a pair's healthy rank). Healthy ranks spread around that by the noise (the barrier's exit, the
scheduler, the clocks' estimate); the noise is read from the data, 1.4826 x the median absolute lateness (the MAD
of normal data scaled to its standard deviation), and a rank is *late* in an iteration when its lateness is above
the margin: ``max(floor, NOISE_K x noise, relative x the collective's median iteration)``.

A rank is a straggler (``fleet.straggler``) when it is late in a share of its iterations that noise cannot explain:
at least ``MIN_LATE`` iterations and ``MIN_SHARE`` of them, and a binomial tail under ``ALPHA`` over the ranks
(Bonferroni) against the background rate, the median rank's late share (``P_FLOOR`` at least). Each straggler is
told apart from the evidence, and the message says which:

- **a slow GPU** (or its rank's process): late in nearly every iteration (``STEADY_SHARE``) of the collectives in
  which it is late at all, by a steady margin;
- **a jittery NIC or host**: late in scattered iterations, on time in the rest (spikes, not a margin);
- **a slow host**: every rank of one node late, in the same iterations; named once, as the node.

A node of one rank cannot tell its host from its GPU: the message says so.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from rigcheck.model.finding import Severity
from rigcheck.model.fleet import FleetFinding

FINDING_IDS: tuple[str, ...] = ("fleet.straggler",)

MAD_TO_SIGMA: Final = 1.4826


@dataclass(frozen=True)
class Margins:
    """What makes an iteration late: ``max(floor_s, noise_k x noise, relative x the collective's median time)``."""

    floor_s: float
    noise_k: float
    relative: float
    p_floor: float  # the least background rate a rank is held against


# NCCL: the enter times are CUDA events anchored to the host clock once per collective, so a few microseconds apart
# on one GPU; 50 us is over that and over a small all-reduce's own time jitter, and 2% of an iteration is the least
# lateness worth naming (a GPU 2% slower than its peers). Background: a healthy rank is late by 5 sigma in well
# under 2% of iterations.
GPU_MARGINS: Final = Margins(floor_s=50e-6, noise_k=5.0, relative=0.02, p_floor=0.02)
# gloo on CPU processes (`fleet --cpu`): the ranks share a few cores with everything else on the machine, and the
# scheduler parks one for a time slice or more (4 ranks on a busy 2-core machine: a healthy rank 5-15 ms late in
# about 2% of iterations, now and then 30 ms). 20 ms is over nearly all of that; background 5% at least. As the
# pairs' CPU_SLOW_FRACTION, `--cpu` checks that the analysis works, not a fabric.
CPU_MARGINS: Final = Margins(floor_s=20e-3, noise_k=6.0, relative=0.0, p_floor=0.05)

MIN_LATE: Final = 3  # iterations: fewer is an anecdote
MIN_SHARE: Final = 0.10  # of its iterations: under one in ten, not worth an operator's time
ALPHA: Final = 0.01  # the chance, over all the ranks together, of naming a healthy one for noise
STEADY_SHARE: Final = 0.8  # of its late iterations in collectives where it is late as a rule: a steady margin
HOST_SHARE: Final = 0.5  # a node's ranks late together in half its late iterations at least: the host
# Severity. A straggler makes every other rank wait; the time they lost waiting for it, as a share of the time
# measured, is what a training job would lose on every step (each collective waits for it). burn fails a GPU whose
# throughput is 5% under its peers'; a straggler that costs the fleet 5% fails the same way. Under 5% it is named
# as a warning: real, measured, and small beside a run-to-run spread of a few percent.
FAIL_LOST_SHARE: Final = 0.05


@dataclass(frozen=True)
class Series:
    """One timed collective: each taking part rank's enter time per iteration, on rank 0's clock (seconds), and
    its median iteration time (the relative margin's scale)."""

    label: str
    enters: Mapping[int, Sequence[float]]
    median_s: float


@dataclass
class RankWaits:
    """What the analysis found of one rank over every iteration it took part in."""

    rank: int
    analysed: int = 0
    last: int = 0  # iterations it entered last by more than the margin
    late: int = 0  # iterations it entered late by more than the margin
    late_s: list[float] = field(default_factory=list)
    lost_s: float = 0.0  # the middle rank's wait for it, in the iterations it was the cause
    late_at: set[tuple[int, int]] = field(default_factory=set)  # (series, iteration) where it was late
    # per collective: its late iterations, and whether its median lateness there is over the margin (late as a rule)
    per_series: dict[int, tuple[int, bool]] = field(default_factory=dict)


@dataclass
class WaitAnalysis:
    ranks: dict[int, RankWaits]
    iterations: int
    series: int
    noise_s: float
    margin_s: float  # the floor-and-noise part (the relative part differs per collective)
    measured_s: float  # the time measured: each collective's median iteration x its iterations
    findings: list[FleetFinding]


def lower_median(values: Sequence[float]) -> float:
    return sorted(values)[(len(values) - 1) // 2]


def binomial_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), summed in log space (n up to thousands)."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    if p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    log_p, log_q = math.log(p), math.log1p(-p)
    total = 0.0
    for j in range(k, n + 1):
        log_term = math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1) + j * log_p + (n - j) * log_q
        total += math.exp(log_term)
    return min(1.0, total)


def _lateness(series: Sequence[Series]) -> list[tuple[list[int], list[list[float]]]]:
    """Per collective: its ranks, and per iteration each rank's lateness (enter minus the lower median)."""
    out = []
    for s in series:
        ranks = sorted(r for r, e in s.enters.items() if e)
        if len(ranks) < 2:
            continue
        n = min(len(s.enters[r]) for r in ranks)
        rows = []
        for i in range(n):
            column = [s.enters[r][i] for r in ranks]
            base = lower_median(column)
            rows.append([e - base for e in column])
        out.append((ranks, rows))
    return out


def _noise(table: Sequence[tuple[list[int], list[list[float]]]]) -> float:
    """1.4826 x the median absolute lateness over every rank and iteration, the middle rank's own zero left out."""
    values = [abs(x) for _, rows in table for row in rows for x in row if x != 0.0]
    return MAD_TO_SIGMA * statistics.median(values) if values else 0.0


def analyse_waits(
    series: Sequence[Series], node_of: Mapping[int, str], *, margins: Margins = GPU_MARGINS
) -> WaitAnalysis:
    """Who the others waited for, and the stragglers (module docstring). ``node_of``: each rank's node."""
    table = _lateness(series)
    kept = [s for s in series if len([r for r, e in s.enters.items() if e]) >= 2]
    noise = _noise(table)
    base_margin = max(margins.floor_s, margins.noise_k * noise)
    waits: dict[int, RankWaits] = {}
    iterations = 0
    measured = 0.0
    for index, ((ranks, rows), s) in enumerate(zip(table, kept, strict=True)):
        margin = max(base_margin, margins.relative * s.median_s)
        measured += s.median_s * len(rows)
        iterations += len(rows)
        mine = [waits.setdefault(r, RankWaits(r)) for r in ranks]
        counts = [0] * len(ranks)
        for i, row in enumerate(rows):
            cause = max(range(len(row)), key=row.__getitem__)
            for j, x in enumerate(row):
                if x > margin:
                    counts[j] += 1
                    mine[j].late += 1
                    mine[j].late_s.append(x)
                    mine[j].late_at.add((index, i))
            if row[cause] > margin:
                mine[cause].last += 1
                mine[cause].lost_s += row[cause]
        for j, w in enumerate(mine):
            w.analysed += len(rows)
            w.per_series[index] = (counts[j], lower_median([row[j] for row in rows]) > margin)
    findings = _findings(waits, node_of, margins, measured, base_margin) if waits else []
    return WaitAnalysis(waits, iterations, len(table), noise, base_margin, measured, findings)


def _named(waits: Mapping[int, RankWaits], margins: Margins) -> list[int]:
    """The ranks late in a share of their iterations that noise cannot explain."""
    background = max(margins.p_floor, statistics.median(w.late / w.analysed for w in waits.values() if w.analysed))
    cut = ALPHA / len(waits)
    return [
        r
        for r, w in sorted(waits.items())
        if w.late >= MIN_LATE
        and w.late >= MIN_SHARE * w.analysed
        and binomial_tail(w.late, w.analysed, background) < cut
    ]


def _steady(w: RankWaits) -> bool:
    """Late as a rule: most of its late iterations (STEADY_SHARE) are in collectives where it is late in most
    iterations (its median lateness there over the margin). A jittery rank, late now and then, has none such;
    a slow GPU is late in every iteration of the collectives long enough for its margin to show."""
    steady = sum(k for k, as_a_rule in w.per_series.values() if as_a_rule)
    return w.late > 0 and steady >= STEADY_SHARE * w.late


def _ms(seconds: float) -> str:
    ms = seconds * 1e3
    return f"{ms:.3g} ms" if ms < 100 else f"{ms:.0f} ms"


def _ranks_text(ranks: Sequence[int]) -> str:
    if len(ranks) > 2 and list(ranks) == list(range(ranks[0], ranks[-1] + 1)):
        return f"{ranks[0]}-{ranks[-1]}"
    return ", ".join(str(r) for r in ranks)


def _cost(lost_s: float, measured_s: float) -> tuple[Severity, str]:
    share = lost_s / measured_s if measured_s > 0 else 0.0
    severity = Severity.FAIL if share >= FAIL_LOST_SHARE else Severity.WARN
    return severity, f"the others waited {_ms(lost_s)} for it ({share:.0%} of the time measured)"


def _host_nodes(
    named: Sequence[int], waits: Mapping[int, RankWaits], node_of: Mapping[int, str]
) -> dict[str, list[int]]:
    """Nodes of two ranks or more, every one of them named, late together in HOST_SHARE of their late iterations."""
    by_node: dict[str, list[int]] = defaultdict(list)
    for r in waits:
        if (node := node_of.get(r)) is not None:
            by_node[node].append(r)
    hosts = {}
    for node, ranks in by_node.items():
        if len(ranks) < 2 or not set(ranks) <= set(named):
            continue
        union = set().union(*(waits[r].late_at for r in ranks))
        together = sum(1 for at in union if sum(at in waits[r].late_at for r in ranks) >= 0.75 * len(ranks))
        if union and together >= HOST_SHARE * len(union):
            hosts[node] = sorted(ranks)
    return hosts


def _rank_finding(w: RankWaits, node: str | None, *, alone: bool, measured_s: float, margin_s: float) -> FleetFinding:
    severity, cost = _cost(w.lost_s, measured_s)
    median = statistics.median(w.late_s)
    where = f"rank {w.rank}" + (f" (node {node})" if node else "")
    share = f"late in {w.late} of {w.analysed} iterations ({w.late / w.analysed:.0%}; the last to enter in {w.last})"
    if _steady(w):
        spread = f"{_ms(min(w.late_s))}-{_ms(max(w.late_s))}"
        kind = f"by a steady {_ms(median)} ({spread}) in nearly every iteration of the collectives it is late in"
        cause = (
            "a slow GPU or a slow host: the node's only rank, so the two cannot be told apart"
            if alone
            else "a slow GPU (or its rank's process): its node's other ranks are on time"
        )
    else:
        kind = f"by up to {_ms(max(w.late_s))} (median {_ms(median)}) in scattered iterations, on time in the rest"
        cause = "a jittery NIC or host (spikes, not a steady margin), not a slow GPU"
    return FleetFinding(
        id="fleet.straggler",
        severity=severity,
        node=node,
        gpu=None,
        message=f"{where}: {share}, {kind}: {cause}; {cost}",
        measured=round(median * 1e3, 3),
        expected=round(margin_s * 1e3, 3),
    )


def _host_finding(
    node: str, ranks: Sequence[int], waits: Mapping[int, RankWaits], measured_s: float, margin_s: float
) -> FleetFinding:
    lost = sum(waits[r].lost_s for r in ranks)
    severity, cost = _cost(lost, measured_s)
    union = set().union(*(waits[r].late_at for r in ranks))
    analysed = max(waits[r].analysed for r in ranks)
    late = [x for r in ranks for x in waits[r].late_s]
    median = statistics.median(late)
    return FleetFinding(
        id="fleet.straggler",
        severity=severity,
        node=node,
        gpu=None,
        message=(
            f"node {node}: all {len(ranks)} of its ranks ({_ranks_text(ranks)}) late together in {len(union)} of "
            f"{analysed} iterations ({len(union) / analysed:.0%}), by {_ms(median)} median (up to {_ms(max(late))}): "
            f"a slow host (its CPU, memory, NIC or PCIe switch), not one GPU; {cost.replace('for it', 'for them')}"
        ),
        measured=round(median * 1e3, 3),
        expected=round(margin_s * 1e3, 3),
    )


def _findings(
    waits: Mapping[int, RankWaits], node_of: Mapping[int, str], margins: Margins, measured_s: float, margin_s: float
) -> list[FleetFinding]:
    named = _named(waits, margins)
    hosts = _host_nodes(named, waits, node_of)
    in_host = {r for ranks in hosts.values() for r in ranks}
    per_node: dict[str, int] = defaultdict(int)
    for r in waits:
        per_node[node_of.get(r, f"rank {r}")] += 1
    found = [_host_finding(node, ranks, waits, measured_s, margin_s) for node, ranks in sorted(hosts.items())]
    for r in named:
        if r in in_host:
            continue
        node = node_of.get(r)
        alone = per_node[node_of.get(r, f"rank {r}")] == 1
        found.append(_rank_finding(waits[r], node, alone=alone, measured_s=measured_s, margin_s=margin_s))
    return found
