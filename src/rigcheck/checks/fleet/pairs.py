"""The slow node: pairwise all-reduce rounds over the nodes, in blocks, then the unsettled re-paired with good nodes.

NCCL has no "which node is slow"; the field's answer is to run all-reduce across node pairs. A pair can go no
faster than its slower node (or the path between the two), so a slow node makes every pair it is in slow. The
search is right for any number of slow nodes up to half the fleet:

- **blocks** (rounds 1-3): the nodes in name order in groups of four (the rest a group of two or three; 4m+1
  nodes end with a group of three and one of two), and every pair inside every group measured, all groups at
  once: a group of four (a, b, c, d) as (a, b) (c, d), then (a, c) (b, d), then (a, d) (b, c). Round 1 is the
  disjoint pairing (n0, n1), (n2, n3), ... With at most half the nodes slow, some group holds two healthy
  nodes, so at least one pair measured is healthy at both ends. Two rounds of disjoint pairs cannot promise that:
  half the nodes slow, one in each pair, reads exactly like a healthy fleet (every pair alike).
- **reference** (:func:`reference_busbw`): the best-performing cluster, not the middle: each node's best pair
  figure, those within ``fraction`` of the best of them, and their high median. A median over every node would be
  the slow figure as soon as about a quarter of the nodes are slow (each slow node also drags its round-1
  partner's best down).
- **verdicts**: a pair under ``fraction`` of the reference, or one whose measurement failed, is bad. A node in an
  ok pair is good. A node bad with two different good nodes is a slow node (``fleet.slow-node``): one slow pair
  with a good node may be the link between them, not the node (one is enough when no other good node is left to
  try). A bad pair between two good nodes is a slow link (``fleet.slow-pair``): named as the path, no node.
- **later rounds**: every node not settled (in a bad pair no slow node explains, or never judged) is paired with a
  distinct good node it has not met; lacking free good nodes, with another unsettled node, for any pair not
  measured before. A round measures all its pairs at once; the search stops when nothing is left to settle, or
  after ``MAX_ROUNDS``.

What it cannot see: with more than half the nodes slow, the blocks may hold no healthy pair at all, and a slow
majority at one speed is then the fleet's "normal" (its healthy nodes would look fast, not its slow ones slow).
Two nodes cannot say which of the two is slow. The absolute check covers both where the nodes' snapshots hold
their RDMA ports: the reference (or the one pair) under ``NIC_FRACTION`` of what the NICs carry fails the fleet
(``fleet.pairs-below-nics``), so a uniformly slow fleet still fails.

Pure: the runtime (rigcheck.bench.fleet.run) measures what :func:`plan_round` asks for, sets each
:class:`FleetPair`'s verdict with :func:`pair_verdict`, and stops when a round plans no pair.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from rigcheck.checks.common import list_names, num
from rigcheck.model.finding import Severity
from rigcheck.model.fleet import FleetFinding, FleetPair, PairVerdict
from rigcheck.units import plural

# A pair under this fraction of the fleet's reference is slow. Healthy pairs of identical nodes differ by a few
# percent from run to run and by fabric placement; a node with half its NICs down, a NIC trained at half rate
# or its traffic crossing the CPU sockets loses 25-50%. 0.8 (20% under) sits between: it will not name a node
# for noise, and it does not see a single NIC of eight down (12.5%).
SLOW_FRACTION: Final = 0.8
# On CPU processes (gloo over loopback, `fleet --cpu`) the pairs share a few cores with every other rank: a healthy
# pair's figure moves by 25-30% between rounds (measured on a 2-core machine), so a pair is slow there only under
# half the reference. `--cpu` checks that the fleet machinery works, not a fabric's bandwidth.
CPU_SLOW_FRACTION: Final = 0.5
# Rounds 1-3 measure every pair inside each group of four: the fewest rounds of disjoint pairs that hold a
# healthy-to-healthy pair whenever at most half the nodes are slow (two rounds make cycles, which half the nodes
# can cover: one slow node in every pair).
BLOCK_ROUNDS: Final = 3
# The later rounds settle each node left: a healthy one in one round with a good node, a slow one in two. The
# simulation over 2-1,024 nodes (tests/checks/test_fleet_search_sim.py, the table in docs/fleet.md) never needs more
# than 6 rounds; the cap only bounds a fleet beyond the search's reach (more than half slow, many slow links).
MAX_ROUNDS: Final = 8
# Good nodes a node must be slow with before it is named: one slow pair with a good node may be their link.
CONFIRM: Final = 2
# The absolute check: pairs under this fraction of what the nodes' NICs carry (the whole fleet's all-reduce is
# judged by the same share, checks/fleet/judge.py's fleet.internode-bandwidth).
NIC_FRACTION: Final = 0.5

FINDING_IDS: tuple[str, ...] = ("fleet.slow-node", "fleet.slow-pair", "fleet.no-reference", "fleet.pairs-below-nics")

# Each group's pairs per round of the blocks, by the group's size: every pair of the group once.
_SCHEDULE: Final[dict[int, tuple[tuple[tuple[int, int], ...], ...]]] = {
    4: (((0, 1), (2, 3)), ((0, 2), (1, 3)), ((0, 3), (1, 2))),
    3: (((0, 1),), ((0, 2),), ((1, 2),)),
    2: (((0, 1),),),
}


def _key(a: str, b: str) -> frozenset[str]:
    return frozenset((a, b))


def _busbw(pair: FleetPair) -> float | None:
    """The pair's figure; NaN or infinite counts as no figure (a failed measurement)."""
    return num(pair.busbw_gbps)


def groups(nodes: Sequence[str]) -> list[list[str]]:
    """The blocks: the nodes in name order in groups of four; the rest a group of two or three (4m+1 nodes: the
    last five as a group of three and one of two, every node in a pair in round 1)."""
    names = sorted(set(nodes))
    sizes = [4] * (len(names) // 4)
    rest = len(names) % 4
    if rest == 1 and sizes:
        sizes[-1:] = [3, 2]
    elif rest:
        sizes.append(rest)
    out: list[list[str]] = []
    start = 0
    for size in sizes:
        out.append(names[start : start + size])
        start += size
    return out


def block_pairs(nodes: Sequence[str], round_no: int) -> list[tuple[str, str]]:
    """The blocks' pairs of round ``round_no`` (1 to ``BLOCK_ROUNDS``; none after)."""
    out: list[tuple[str, str]] = []
    for group in groups(nodes):
        schedule = _SCHEDULE.get(len(group), ())
        if 1 <= round_no <= len(schedule):
            out += [(group[i], group[j]) for i, j in schedule[round_no - 1]]
    return out


def reference_busbw(pairs: Sequence[FleetPair], fraction: float = SLOW_FRACTION) -> float | None:
    """The fleet's reference for a pair (GB/s bus bandwidth): the best-performing cluster's high median, the
    cluster being the nodes' best pair figures within ``fraction`` of the highest of them.

    None when fewer than two distinct pairs were measured, or when every measured pair holds one same node (its
    figures cannot tell that node from the others)."""
    measured = [(p, value) for p in pairs if (value := _busbw(p)) is not None]
    keys = {_key(p.a, p.b) for p, _ in measured}
    if len(keys) < 2:
        return None
    common = set(next(iter(keys)))
    for key in keys:
        common &= key
        if not common:
            break
    else:
        return None
    best: dict[str, float] = {}
    for p, value in measured:
        for node in (p.a, p.b):
            best[node] = max(best.get(node, value), value)
    top = max(best.values())
    cluster = sorted(v for v in best.values() if v >= fraction * top)
    return cluster[len(cluster) // 2]


def pair_verdict(busbw: float | None, reference: float | None, fraction: float = SLOW_FRACTION) -> PairVerdict:
    """failed: no figure; slow: under ``fraction`` of the reference; ok otherwise, and always ok without a
    reference (nothing to be slow against)."""
    value = num(busbw)
    if value is None:
        return "failed"
    if reference is not None and value < fraction * reference:
        return "slow"
    return "ok"


@dataclass
class _State:
    """What the pairs so far say about each node."""

    reference: float | None
    judged: list[tuple[FleetPair, PairVerdict | None]]  # None: measured, but no reference to judge it by
    fraction: float = SLOW_FRACTION
    good: set[str] = field(default_factory=set)
    slow: set[str] = field(default_factory=set)
    suspects: set[str] = field(default_factory=set)
    tried: set[frozenset[str]] = field(default_factory=set)
    with_good: dict[str, set[str]] = field(default_factory=dict)  # a node's good partners in bad pairs
    mine: dict[str, list[tuple[FleetPair, PairVerdict | None]]] = field(default_factory=dict)  # by node


def _classify(pairs: Sequence[FleetPair], fraction: float = SLOW_FRACTION) -> _State:
    reference = reference_busbw(pairs, fraction)
    judged: list[tuple[FleetPair, PairVerdict | None]] = []
    for p in pairs:
        value = _busbw(p)
        verdict = None if value is not None and reference is None else pair_verdict(value, reference, fraction)
        judged.append((p, verdict))
    state = _State(reference=reference, judged=judged, fraction=fraction, tried={_key(p.a, p.b) for p in pairs})
    for p, v in judged:
        state.mine.setdefault(p.a, []).append((p, v))
        state.mine.setdefault(p.b, []).append((p, v))
    state.good = {n for p, v in judged if v == "ok" for n in (p.a, p.b)}
    bad = [p for p, v in judged if v in ("slow", "failed")]
    for p in bad:
        for node, partner in ((p.a, p.b), (p.b, p.a)):
            if node not in state.good and partner in state.good:
                state.with_good.setdefault(node, set()).add(partner)
    for node, partners in state.with_good.items():
        if len(partners) >= CONFIRM or not any(_key(node, g) not in state.tried for g in state.good - {node}):
            state.slow.add(node)
    # A node whose every pair failed, with a partner that measured fine elsewhere: the node does not answer.
    reachable = {n for p in pairs if _busbw(p) is not None for n in (p.a, p.b)}
    for node in {n for p in bad for n in (p.a, p.b)} - state.good - state.slow:
        mine = [p for p, _ in state.mine[node]]
        if all(_busbw(p) is None for p in mine) and any(({p.a, p.b} - {node}) & reachable for p in mine):
            state.slow.add(node)
    # A bad pair that holds a slow node is explained: its other node is no suspect for it.
    unexplained = [p for p in bad if not {p.a, p.b} & state.slow]
    state.suspects = {n for p in unexplained for n in (p.a, p.b)} - state.good
    return state


def plan_round(
    nodes: Sequence[str], round_no: int, pairs_so_far: Sequence[FleetPair], *, fraction: float = SLOW_FRACTION
) -> list[tuple[str, str]]:
    """The pairs to measure at once in round ``round_no`` (1-based), each ``(a, b)`` in name order; [] when the
    search is over (nothing left to learn, or past ``MAX_ROUNDS``). No node is in two pairs of a round."""
    names = sorted(set(nodes))
    if round_no < 1 or round_no > MAX_ROUNDS or len(names) < 2:
        return []
    state = _classify(pairs_so_far, fraction)
    busy: set[str] = set()
    plan: list[tuple[str, str]] = []
    for a, b in block_pairs(names, round_no):
        if _key(a, b) not in state.tried:
            busy.update((a, b))
            plan.append((a, b))
    if round_no == 1:
        return sorted(plan)
    settled = state.good | state.slow
    # Nearest to a verdict first: a node already slow with one good node is named by one more.
    to_test = sorted(
        (n for n in names if n not in settled),
        key=lambda n: (-len(state.with_good.get(n, ())), n not in state.suspects, n),
    )
    good = [n for n in names if n in state.good]

    def take(node: str, candidates: list[str]) -> None:
        if node in busy:
            return
        partner = next(
            (c for c in candidates if c != node and c not in busy and _key(node, c) not in state.tried), None
        )
        if partner is not None:
            busy.update((node, partner))
            plan.append((min(node, partner), max(node, partner)))

    for node in to_test:  # the informative pair: with a node known to be good
        take(node, good)
    # No good node free (or none known yet): any pair not measured before still tells more, save one with a node
    # already named slow.
    others = to_test + good
    for node in to_test:
        take(node, others)
    return sorted(plan)


def _gbps(value: float | None) -> str:
    return f"{value:.1f} GB/s" if value is not None else "no figure"


def _slow_node(node: str, state: _State) -> FleetFinding:
    mine = state.mine.get(node, [])
    figures = [value for p, _ in mine if (value := _busbw(p)) is not None]
    worst = min(figures) if figures else None
    with_good = sorted({(p.b if p.a == node else p.a) for p, v in mine if v in ("slow", "failed")} & state.good)
    if worst is None:
        message = (
            f"{node} is the slow node: every all-reduce with it failed (with {list_names(with_good)}), while "
            "its partners measured with other nodes"
        )
    else:
        ref = _gbps(state.reference)
        reached = _gbps(worst) if len(figures) == 1 else f"{_gbps(max(figures))} at best, {_gbps(worst)} at worst"
        message = (
            f"{node} is the slow node: its all-reduce with good node(s) {list_names(with_good)} reached {reached} "
            f"bus bandwidth, under {state.fraction:.0%} of the fleet's reference {ref} (the best-performing "
            "cluster of the nodes' best pairs)"
        )
    return FleetFinding(
        id="fleet.slow-node",
        severity=Severity.FAIL,
        node=node,
        gpu=None,
        message=message,
        measured=worst,
        expected=state.reference,
    )


def _pair_finding(pair: FleetPair, verdict: PairVerdict, state: _State) -> FleetFinding | None:
    """A bad pair no slow node explains: its path (both nodes cleared), or not settled in the rounds run."""
    members = (pair.a, pair.b)
    if any(n in state.slow for n in members):
        return None
    what = "failed" if verdict == "failed" else f"was slow ({_gbps(_busbw(pair))} bus bandwidth)"
    if all(n in state.good for n in members):
        message = (
            f"the all-reduce between {pair.a} and {pair.b} {what} in round {pair.round}, though both run at full "
            "speed with other nodes: the link between them (their leaf switches, cables, routing) is the suspect, "
            "not either node"
        )
    elif state.reference is None:
        message = (
            f"the all-reduce between {pair.a} and {pair.b} {what}; with no other pair to compare with, it "
            "cannot say which node"
        )
    else:
        message = (
            f"the all-reduce between {pair.a} and {pair.b} {what} in round {pair.round}; the rounds run did not "
            "settle which of the two is slow"
        )
    return FleetFinding(
        id="fleet.slow-pair",
        severity=Severity.WARN,
        node=None,
        gpu=None,
        message=message,
        measured=_busbw(pair),
        expected=state.reference,
    )


def _more(state: _State, pairs: Sequence[FleetPair], nodes: Sequence[str]) -> bool:
    """Another round is needed: a suspect, a node never judged, a block pair not measured, or no reference."""
    judged = state.good | state.slow | state.suspects
    names = sorted(set(nodes))
    unjudged = [n for n in names if n not in judged] if len(names) > 1 else []
    pending = any(_key(a, b) not in state.tried for r in range(1, BLOCK_ROUNDS + 1) for a, b in block_pairs(names, r))
    return bool(state.suspects) or bool(unjudged) or pending or (state.reference is None and bool(pairs))


def wants_more(pairs: Sequence[FleetPair], *, nodes: Sequence[str] = (), fraction: float = SLOW_FRACTION) -> bool:
    """Whether the search needs another round (:func:`search_judgement`'s ``more``, without its findings): what
    the runtime asks before planning each round after the first."""
    return _more(_classify(pairs, fraction), pairs, nodes)


@dataclass(frozen=True)
class PairJudgement:
    """What the pairs say: the slow nodes, the slow links (both ends good), the findings, whether another round
    is needed, the reference, and the rounds run."""

    slow: list[str]
    links: list[tuple[str, str]]
    findings: list[FleetFinding]
    more: bool
    reference: float | None
    rounds: int


def _below_nics(measured: Sequence[FleetPair], reference: float | None, ceiling: float) -> FleetFinding | None:
    """The absolute check: the reference (or, without one, the best pair) under NIC_FRACTION of the ceiling."""
    figure = reference if reference is not None else max(v for p in measured if (v := _busbw(p)) is not None)
    if figure >= NIC_FRACTION * ceiling:
        return None
    what = "the fleet's reference pair" if reference is not None else "the one pair measured"
    return FleetFinding(
        id="fleet.pairs-below-nics",
        severity=Severity.FAIL,
        node=None,
        gpu=None,
        message=(
            f"{what} reached {_gbps(figure)} bus bandwidth, under {NIC_FRACTION:.0%} of the {_gbps(ceiling)} the "
            "nodes' NICs carry: every node, or more than half of them, is slow (or the fabric between them), "
            "which comparing pairs with each other cannot see"
        ),
        measured=figure,
        expected=ceiling,
    )


def search_judgement(
    pairs: Sequence[FleetPair],
    *,
    nodes: Sequence[str] = (),
    fraction: float = SLOW_FRACTION,
    ceiling: float | None = None,
) -> PairJudgement:
    """The pairs measured so far, judged. Findings: ``fleet.slow-node`` (fail) per slow node, ``measured`` its
    worst pair figure and ``expected`` the reference; ``fleet.slow-pair`` (warn) per bad pair no slow node
    explains (a slow link where both its nodes are good); ``fleet.no-reference`` (info) when pairs were measured
    but none can be judged (two nodes); ``fleet.pairs-below-nics`` (fail) when ``ceiling`` (what the NICs carry,
    GB/s bus bandwidth) is given and the pairs reach under ``NIC_FRACTION`` of it.

    ``nodes``, when given, counts a node never judged, and a block pair not measured yet, as reasons for another
    round. Another round is needed while a suspect or an unjudged node remains; the runtime stops anyway when
    :func:`plan_round` plans no pair."""
    state = _classify(pairs, fraction)
    findings = [_slow_node(n, state) for n in sorted(state.slow)]
    links: list[tuple[str, str]] = []
    for pair, verdict in state.judged:
        if verdict in ("slow", "failed"):
            found = _pair_finding(pair, verdict, state)
            if found is not None:
                findings.append(found)
                if pair.a in state.good and pair.b in state.good:
                    links.append((min(pair.a, pair.b), max(pair.a, pair.b)))
    measured = [p for p in pairs if _busbw(p) is not None]
    if state.reference is None and measured:
        seen = sorted({n for p in measured for n in (p.a, p.b)})
        two = (
            "two nodes cannot tell which of them is slow: a pair goes at its slower node's speed, and "
            if len(seen) == 2
            else ""
        )
        findings.append(
            FleetFinding(
                id="fleet.no-reference",
                severity=Severity.INFO,
                node=None,
                gpu=None,
                message=(
                    f"no slow-node verdict: {two}a pair is judged against the other pairs' figures, and with "
                    f"{plural(len(measured), 'pair')} measured (between {list_names(seen)}) there is none to "
                    "compare with; what the NICs carry is the only absolute check"
                ),
                measured=max(v for p in measured if (v := _busbw(p)) is not None),
                expected=ceiling,
            )
        )
    if ceiling is not None and ceiling > 0 and measured:
        below = _below_nics(measured, state.reference, ceiling)
        if below is not None:
            findings.append(below)
    return PairJudgement(
        slow=sorted(state.slow),
        links=sorted(set(links)),
        findings=findings,
        more=_more(state, pairs, nodes),
        reference=state.reference,
        rounds=max((p.round for p in pairs), default=0),
    )


def judge_pairs(
    pairs: Sequence[FleetPair],
    *,
    nodes: Sequence[str] = (),
    fraction: float = SLOW_FRACTION,
    ceiling: float | None = None,
) -> tuple[list[str], list[FleetFinding], bool]:
    """(the slow nodes, the findings, whether another round is needed): :func:`search_judgement` in short."""
    judgement = search_judgement(pairs, nodes=nodes, fraction=fraction, ceiling=ceiling)
    return judgement.slow, judgement.findings, judgement.more
