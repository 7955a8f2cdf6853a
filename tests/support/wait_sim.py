"""A simulated fleet's per-iteration enter times for the wait-for analysis (checks/fleet/waits.py), with faults
injected: the real analysis over synthetic timelines. Synthetic by construction: no figure here is a measurement.

The model (GPU-like, NCCL margins): nodes of ``per_node`` ranks; ten collectives of 20 iterations each (200 in
all), their median iteration time from 50 us to 10 ms in a geometric sweep (an all-reduce from small to 1 GiB).
Every rank enters an iteration at the iteration's start plus its noise: normal, 5 us sigma; a hiccup (the OS, an
interrupt) on 0.5% of a healthy rank's iterations, exponential with a 30 us mean; and a clock error fixed per node
(normal, 3 us: the offsets' estimate). Faults, one at a time or together on distinct nodes:

- ``gpu``: one rank late in every iteration by 3-10% of the iteration (a slow GPU);
- ``jitter``: one rank late in 15-35% of the iterations, at random, by 0.3-2 ms at most (uniform from a fifth
  of that up: a jittery NIC or host); the analysis names a rank late in 10% of its iterations at the least, so a
  share drawn from 15% up is one it should name;
- ``host``: every rank of one node late in every iteration by 3-10% of it (a slow host).

Shared by tests/checks/test_fleet_waits.py and benchmarks/fleet_waits.py, which prints recall and false positives.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from rigcheck.checks.fleet.waits import GPU_MARGINS, Margins, Series, WaitAnalysis, analyse_waits

KINDS: tuple[str, ...] = ("gpu", "jitter", "host")
SERIES = 10
ITERATIONS = 20
NOISE_S = 5e-6
HICCUP_P = 0.005
HICCUP_S = 30e-6
CLOCK_S = 3e-6


def median_times(count: int = SERIES) -> list[float]:
    """50 us to 10 ms, geometric."""
    return [50e-6 * (10e-3 / 50e-6) ** (i / (count - 1)) for i in range(count)]


@dataclass(frozen=True)
class Fault:
    kind: str
    node: int
    rank: int | None  # None for a host
    size: float  # gpu, host: the lateness as a share of the iteration; jitter: the most, in seconds
    share: float = 1.0  # jitter: the share of iterations late


@dataclass
class Fleet:
    nodes: int
    per_node: int
    faults: list[Fault] = field(default_factory=list)

    @property
    def ranks(self) -> int:
        return self.nodes * self.per_node

    def node_of(self) -> dict[int, str]:
        return {r: f"n{r // self.per_node:04d}" for r in range(self.ranks)}


def draw_faults(fleet: Fleet, kinds: Sequence[str], rng: random.Random) -> list[Fault]:
    """One fault of each kind, each on its own node."""
    nodes = rng.sample(range(fleet.nodes), len(kinds))
    faults = []
    for kind, node in zip(kinds, nodes, strict=True):
        rank = node * fleet.per_node + rng.randrange(fleet.per_node)
        if kind == "gpu":
            faults.append(Fault("gpu", node, rank, rng.uniform(0.03, 0.10)))
        elif kind == "jitter":
            faults.append(Fault("jitter", node, rank, rng.uniform(0.3e-3, 2e-3), rng.uniform(0.15, 0.35)))
        else:
            faults.append(Fault("host", node, None, rng.uniform(0.03, 0.10)))
    return faults


def timeline(fleet: Fleet, seed: int, hiccup: tuple[float, float] = (HICCUP_P, HICCUP_S)) -> list[Series]:
    """The collectives' enter times of every rank (rank 0's clock), faults included; ``hiccup``: the healthy ranks'
    hiccups, (share of iterations, mean seconds)."""
    rng = random.Random(seed)
    clock = [rng.gauss(0.0, CLOCK_S) for _ in range(fleet.nodes)]
    late_of: dict[int, list[Fault]] = {}
    for f in fleet.faults:
        ranks = [f.rank] if f.rank is not None else range(f.node * fleet.per_node, (f.node + 1) * fleet.per_node)
        for r in ranks:
            late_of.setdefault(r, []).append(f)
    series = []
    start = 0.0
    for index, median in enumerate(median_times()):
        enters: dict[int, list[float]] = {r: [] for r in range(fleet.ranks)}
        for _ in range(ITERATIONS):
            for r in range(fleet.ranks):
                t = start + clock[r // fleet.per_node] + rng.gauss(0.0, NOISE_S)
                if rng.random() < hiccup[0]:
                    t += rng.expovariate(1 / hiccup[1])
                for f in late_of.get(r, ()):
                    if f.kind in ("gpu", "host"):
                        t += f.size * median
                    elif rng.random() < f.share:
                        t += rng.uniform(0.2, 1.0) * f.size
                enters[r].append(t)
            start += median * 2
        series.append(Series(label=f"allreduce {index}", enters=enters, median_s=median))
    return series


@dataclass
class Score:
    """Faults found (named with the right subject and kind), healthy nodes named, over the runs."""

    runs: int = 0
    faults: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    found: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    subject_only: int = 0  # named, the kind said wrong
    healthy_node_runs: int = 0
    false: int = 0
    misses: list[str] = field(default_factory=list)

    @property
    def recall(self) -> float:
        total = sum(self.faults.values())
        return sum(self.found.values()) / total if total else 1.0

    @property
    def false_rate(self) -> float:
        return self.false / self.healthy_node_runs if self.healthy_node_runs else 0.0


def _kinds_of(message: str) -> set[str]:
    """What a finding says the fault is (a node's only rank: a slow GPU or a slow host, which cannot be told)."""
    if "cannot be told apart" in message:
        return {"gpu", "host"}
    if "a slow host (" in message:
        return {"host"}
    if "jittery" in message:
        return {"jitter"}
    return {"gpu"}


def judge(fleet: Fleet, analysis: WaitAnalysis, score: Score, where: str) -> None:
    """Add one run's outcome to ``score``."""
    node_of = fleet.node_of()
    named = {(f.node, kind) for f in analysis.findings for kind in _kinds_of(f.message)}
    named_nodes = {node for node, _ in named}
    faulty = {node_of[f.rank] if f.rank is not None else f"n{f.node:04d}" for f in fleet.faults}
    score.runs += 1
    for f in fleet.faults:
        node = f"n{f.node:04d}"
        score.faults[f.kind] += 1
        if (node, f.kind) in named:
            score.found[f.kind] += 1
        elif node in named_nodes:
            score.subject_only += 1
            score.misses.append(f"{where}: {f} named as {sorted(k for n, k in named if n == node)}")
        else:
            score.misses.append(f"{where}: {f} not named")
    healthy = set(node_of.values()) - faulty
    score.healthy_node_runs += len(healthy)
    wrong = named_nodes & healthy
    score.false += len(wrong)
    score.misses += [f"{where}: healthy {n} named" for n in sorted(wrong)]


def simulate(
    runs: int,
    *,
    nodes: int = 16,
    per_node: int = 8,
    seed: int = 0,
    margins: Margins = GPU_MARGINS,
    hiccup: tuple[float, float] = (HICCUP_P, HICCUP_S),
) -> Score:
    """``runs`` fleets: a third healthy, the rest with one fault of each kind on distinct nodes (under 8 nodes, one
    fault a run, the kinds in turn: three faulty ranks of four leave no healthy middle rank to measure against)."""
    score = Score()
    for run in range(runs):
        rng = random.Random(seed * 100_003 + run)
        fleet = Fleet(nodes, per_node)
        if run % 3:
            kinds = KINDS if nodes >= 8 else (KINDS[(2 * run // 3) % len(KINDS)],)
            fleet.faults = draw_faults(fleet, kinds, rng)
        analysis = analyse_waits(timeline(fleet, rng.randrange(1 << 30), hiccup), fleet.node_of(), margins=margins)
        judge(fleet, analysis, score, f"run {run} ({nodes}x{per_node})")
    return score


# The table of docs/fleet.md: (nodes, ranks a node, runs). A third of the runs healthy, the rest with faults.
TABLE_CASES: tuple[tuple[int, int, int], ...] = ((4, 1, 30), (8, 1, 30), (16, 8, 18), (64, 8, 6))


@functools.cache
def table_rows() -> list[tuple[int, int, Score]]:
    return [
        (nodes, per_node, simulate(runs, nodes=nodes, per_node=per_node, seed=1))
        for nodes, per_node, runs in TABLE_CASES
    ]


def markdown(rows: Sequence[tuple[int, int, Score]]) -> list[str]:
    """The table of docs/fleet.md."""
    out = [
        "| fleet | runs | slow GPU named | jittery rank named | slow host named | recall | healthy nodes named |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for nodes, per_node, s in rows:
        cells = [f"{s.found[k]}/{s.faults[k]}" for k in KINDS]
        out.append(
            f"| {nodes} nodes x {per_node} rank{'s' if per_node > 1 else ''} | {s.runs} | {' | '.join(cells)} "
            f"| {s.recall:.1%} | {s.false}/{s.healthy_node_runs} ({s.false_rate:.2%}) |"
        )
    return out
