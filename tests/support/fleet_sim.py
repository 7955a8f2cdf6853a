"""A simulated fabric for the slow-node search: the real planner and judge (checks/fleet/pairs.py) driven round by
round as the runtime drives them (rigcheck.bench.fleet.run), each pair's figure from a bandwidth model instead of an
all-reduce. Synthetic by construction: no figure here is a measurement.

The model: a pair's bus bandwidth is the healthy rate times its slower node's speed factor (1 healthy, 0.3-0.6
slow: half its NICs down, a NIC at half rate, traffic over the CPU sockets) times the link's factor (0.5 on a slow
link), with +-3% noise fixed per pair and round (a hash, so every run is the same).

Shared by tests/checks/test_fleet_search_sim.py and ``python benchmarks/fleet_scale.py --search-table``, which writes
the table of docs/fleet.md; the test checks the document's table is the one this module makes.
"""

from __future__ import annotations

import functools
import random
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from rigcheck.checks.fleet.pairs import (
    MAX_ROUNDS,
    SLOW_FRACTION,
    PairJudgement,
    groups,
    pair_verdict,
    plan_round,
    reference_busbw,
    search_judgement,
    wants_more,
)
from rigcheck.model.fleet import FleetPair

RATE = 180.0  # GB/s: a healthy pair's bus bandwidth in the model
NOISE = 0.03
SLOW_LINK = 0.5

SIZES: tuple[int, ...] = (2, 3, 4, 5, 8, 16, 64, 256, 1024)
SHARES: tuple[float, ...] = (0.0, 0.125, 0.25, 0.5)
PLACEMENTS: tuple[str, ...] = ("spread", "rack", "random")


def names(n: int) -> list[str]:
    return [f"n{i:04d}" for i in range(n)]


@dataclass(frozen=True)
class Fabric:
    nodes: list[str]
    speed: dict[str, float] = field(default_factory=dict)  # a slow node's factor; absent: 1
    links: dict[frozenset[str], float] = field(default_factory=dict)  # a slow link's factor; absent: 1
    rate_scale: float = 1.0  # the healthy rate's multiple (another fabric)

    def busbw(self, a: str, b: str, round_no: int) -> float:
        noise = zlib.crc32(f"{a}|{b}|{round_no}".encode()) / 0xFFFFFFFF * 2 - 1  # -1 .. 1
        slowest = min(self.speed.get(a, 1.0), self.speed.get(b, 1.0))
        return RATE * self.rate_scale * slowest * self.links.get(frozenset((a, b)), 1.0) * (1 + NOISE * noise)

    @property
    def slow(self) -> list[str]:
        return sorted(self.speed)


def search(fabric: Fabric, fraction: float = SLOW_FRACTION) -> tuple[list[FleetPair], PairJudgement]:
    """The rounds as the runtime runs them: round 1 always, a later one while the judge wants more and the planner
    plans a pair; each pair's verdict against the reference of the pairs before it."""
    pairs: list[FleetPair] = []
    for round_no in range(1, MAX_ROUNDS + 1):
        if round_no > 1 and not wants_more(pairs, nodes=fabric.nodes, fraction=fraction):
            break
        plan = plan_round(fabric.nodes, round_no, pairs, fraction=fraction)
        if not plan:
            break
        in_round = [n for pair in plan for n in pair]
        assert len(in_round) == len(set(in_round)), f"round {round_no} uses a node twice"
        reference = reference_busbw(pairs, fraction)
        for a, b in plan:
            busbw = fabric.busbw(a, b, round_no)
            verdict = pair_verdict(busbw, reference, fraction)
            pairs.append(FleetPair(round=round_no, a=a, b=b, busbw_gbps=busbw, time_us=1e3, verdict=verdict))
    return pairs, search_judgement(pairs, nodes=fabric.nodes, fraction=fraction)


def slow_set(nodes: Sequence[str], count: int, placement: str, seed: int) -> list[str]:
    """``spread``: one node in every round-1 pair first (the pairs then all read alike), ``rack``: consecutive
    nodes (a leaf switch), ``random``: anywhere."""
    if placement == "spread":
        order = list(nodes[0::2]) + list(nodes[1::2])
        return order[:count]
    if placement == "rack":
        start = random.Random(seed).randrange(len(nodes))
        return [nodes[(start + i) % len(nodes)] for i in range(count)]
    return random.Random(seed).sample(list(nodes), count)


def slow_links(nodes: Sequence[str], slow: Sequence[str], count: int, seed: int) -> list[frozenset[str]]:
    """``count`` slow links between healthy nodes, no node in two: the first inside a block (measured in the first
    rounds), the others anywhere."""
    rng = random.Random(seed + 1)
    healthy = [n for n in nodes if n not in set(slow)]
    used: set[str] = set()
    out: list[frozenset[str]] = []
    candidates = [g for g in groups(nodes) if len(set(g) & set(healthy)) >= 2]
    if count and candidates:
        block = [n for n in rng.choice(candidates) if n in healthy][:2]
        out.append(frozenset(block))
        used.update(block)
    pool = [n for n in healthy if n not in used]
    rng.shuffle(pool)
    while len(out) < count and len(pool) >= 2:
        out.append(frozenset((pool.pop(), pool.pop())))
    return out


def fabric(n: int, share: float, placement: str, links: int, seed: int) -> Fabric:
    nodes = names(n)
    count = int(share * n)
    slow = slow_set(nodes, count, placement, seed)
    rng = random.Random(seed + 2)
    speed = {s: round(rng.uniform(0.3, 0.6), 2) for s in slow}
    return Fabric(nodes, speed, dict.fromkeys(slow_links(nodes, slow, links, seed), SLOW_LINK))


@dataclass
class Row:
    """One line of the table: every case of one fleet size and slow share, summed."""

    n: int
    share: float
    cases: int = 0
    slow: int = 0
    named: int = 0
    false: int = 0
    links: int = 0  # slow links between healthy nodes that the rounds measured
    links_named: int = 0
    links_false: int = 0
    rounds: list[int] = field(default_factory=list)


def cases(n: int, share: float) -> list[tuple[str, int, int]]:
    """(placement, slow links, seed) for a fleet of ``n``: fewer for the largest fleets, to keep the test fast.

    No slow link where half of four or five nodes are slow: a slow link between the two or three healthy ones
    leaves no healthy pair to measure (the fleet reads as uniformly slow; only the NICs' ceiling can tell)."""
    if n >= 1024:
        return [("spread", n // 32, 1), ("random", n // 32, 1)]
    seeds = (1,) if n >= 256 else (1, 2, 3)
    link_counts = (0, max(1, n // 32)) if n >= 8 or (n >= 4 and share < 0.5) else (0,)
    return [(p, k, s) for p in PLACEMENTS for k in link_counts for s in (seeds if p != "spread" else (1,))]


@functools.cache
def run_row(n: int, share: float) -> tuple[Row, list[str]]:
    """The row, and what went wrong (empty when every slow node is named, no healthy one, and every measured slow
    link between healthy nodes is named as a link)."""
    row = Row(n, share)
    problems: list[str] = []
    for placement, link_count, seed in cases(n, share):
        f = fabric(n, share, placement, link_count, seed)
        pairs, judgement = search(f)
        row.cases += 1
        row.rounds.append(judgement.rounds)
        row.slow += len(f.slow)
        named = set(judgement.slow)
        row.named += len(named & set(f.slow))
        row.false += len(named - set(f.slow))
        measured = {frozenset((p.a, p.b)) for p in pairs}
        visible = {k for k in f.links if k in measured}
        said = {frozenset(link) for link in judgement.links}
        row.links += len(visible)
        row.links_named += len(visible & said)
        row.links_false += len(said - set(f.links))
        where = f"n={n} share={share} {placement} links={link_count} seed={seed}"
        expected = set(f.slow) if n > 2 else set()  # two nodes: no reference, the pair is all it can say
        if named != expected:
            problems.append(f"{where}: named {sorted(named)}, slow {f.slow}")
        if visible != said:
            problems.append(
                f"{where}: links named {sorted(map(sorted, said))}, slow and measured {sorted(map(sorted, visible))}"
            )
        if judgement.more and n > 2:
            problems.append(f"{where}: still unsettled after {judgement.rounds} rounds")
    return row, problems


def table_rows() -> list[Row]:
    return [run_row(n, share)[0] for n in SIZES for share in SHARES if int(share * n) or share == 0.0]


def markdown(rows: Sequence[Row]) -> list[str]:
    """The table of docs/fleet.md."""
    out = [
        "| nodes | slow share | slow nodes | cases | rounds | slow named | healthy named | slow links named |",
        "| ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |",
    ]
    for r in rows:
        low, high = min(r.rounds), max(r.rounds)
        rounds = str(low) if low == high else f"{low}–{high}"
        named = f"{r.named}/{r.slow}" if r.n > 2 or not r.slow else f"0/{r.slow} (no reference)"
        links = f"{r.links_named}/{r.links}" if r.links else "—"
        out.append(
            f"| {r.n} | {r.share:.1%} | {r.slow // r.cases if r.cases else 0} | {r.cases} | {rounds} | {named} "
            f"| {r.false} | {links} |"
        )
    return out
