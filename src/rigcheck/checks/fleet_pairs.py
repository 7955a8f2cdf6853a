"""The slow node: pairwise all-reduce rounds over the nodes, the slow pairs re-paired with known-good nodes.

NCCL has no "which node is slow"; the field's answer is to run all-reduce across node pairs. A pair can go no
faster than its slower node, so a slow node makes every pair it is in slow, and a pair's figure is judged
against the fleet's reference (:func:`reference_busbw`):

- round 1 pairs the nodes disjointly, in name order: (n0, n1), (n2, n3), ...; an odd node out waits for round 2
  (the runtime cannot run overlapping pairs at once);
- a pair under ``SLOW_FRACTION`` of the reference, or one whose measurement failed, is bad: both its nodes are
  suspects. A node in any ok pair is good (cleared);
- the next round pairs each suspect, and each node not yet judged, with a distinct good node: a suspect bad
  again with a good node is a slow node (``fleet.slow-node``); one ok with a good node is cleared; a bad pair
  whose two nodes both clear names the path between them (``fleet.slow-pair``);
- at most ``MAX_ROUNDS`` rounds, whatever the fleet's size: each round measures all its pairs at once.

The reference is the high median of each node's best pair figure, not the median of every pair measured:
re-tests of a suspect add slow pairs (with three nodes, two of the three pairs hold the slow node), which would
drag a plain median of pairs down to the slow figure. A node's best pair is bounded by that node alone, so the
median over nodes stays the healthy figure while more than half of the nodes' best pairs are healthy (the
upper of the two middle values for an even count: in round 1 each slow node also drags its partner's best down,
and with four nodes that is half of them). With fewer than two pairs measured, or when every pair measured
holds one same node (three nodes after two rounds), there is no reference: nothing is judged slow, and the
search goes on (two nodes: it cannot, and ``fleet.no-reference`` says so).

Pure: the runtime (rigcheck.bench.fleet) measures what :func:`plan_round` asks for, sets each
:class:`FleetPair`'s verdict with :func:`pair_verdict`, and stops when a round plans no pair.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from rigcheck.checks.common import list_names, num, plural
from rigcheck.model.finding import Severity
from rigcheck.model.fleet import FleetFinding, FleetPair, PairVerdict

# A pair under this fraction of the fleet's reference is slow. Healthy pairs of identical nodes differ by a few
# percent from run to run and by fabric placement; a node with half its NICs down, a NIC trained at half rate
# or its traffic crossing the CPU sockets loses 25-50%. 0.8 (20% under) sits between: it will not name a node
# for noise, and it does not see a single NIC of eight down (12.5%).
SLOW_FRACTION: Final = 0.8
# On CPU processes (gloo over loopback, `fleet --cpu`) the pairs share a few cores with every other rank: a healthy
# pair's figure moves by 25-30% between rounds (measured on a 2-core machine), so a pair is slow there only under
# half the reference. `--cpu` checks that the fleet machinery works, not a fabric's bandwidth.
CPU_SLOW_FRACTION: Final = 0.5

# Round 1 pairs every node once; round 2 re-pairs each suspect (both nodes of every slow pair, and the odd node
# out) with a distinct good node, which names a slow node; round 3 is for a node round 2 had no free good node
# for (the odd node out when round 2's good nodes are all taken), and for three nodes, whose three pairs can
# only be measured one per round. More nodes mean more pairs per round, never more rounds.
MAX_ROUNDS: Final = 3

FINDING_IDS: tuple[str, ...] = ("fleet.slow-node", "fleet.slow-pair", "fleet.no-reference")


def _key(a: str, b: str) -> frozenset[str]:
    return frozenset((a, b))


def _busbw(pair: FleetPair) -> float | None:
    """The pair's figure; NaN or infinite counts as no figure (a failed measurement)."""
    return num(pair.busbw_gbps)


def reference_busbw(pairs: Sequence[FleetPair]) -> float | None:
    """The fleet's reference for a pair: the high median of each node's best pair figure (GB/s bus bandwidth).

    None when fewer than two distinct pairs were measured, or when every measured pair holds one same node (its
    figures cannot tell that node from the others)."""
    measured = [(p, value) for p in pairs if (value := _busbw(p)) is not None]
    if len({_key(p.a, p.b) for p, _ in measured}) < 2:
        return None
    common = set.intersection(*({p.a, p.b} for p, _ in measured))
    if common:
        return None
    best: dict[str, float] = {}
    for p, value in measured:
        for node in (p.a, p.b):
            best[node] = max(best.get(node, value), value)
    values = sorted(best.values())
    return values[len(values) // 2]


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


def _classify(pairs: Sequence[FleetPair], fraction: float = SLOW_FRACTION) -> _State:
    reference = reference_busbw(pairs)
    judged: list[tuple[FleetPair, PairVerdict | None]] = []
    for p in pairs:
        value = _busbw(p)
        verdict = None if value is not None and reference is None else pair_verdict(value, reference, fraction)
        judged.append((p, verdict))
    state = _State(reference=reference, judged=judged, fraction=fraction, tried={_key(p.a, p.b) for p in pairs})
    state.good = {n for p, v in judged if v == "ok" for n in (p.a, p.b)}
    bad = [p for p, v in judged if v in ("slow", "failed")]
    for p in bad:
        for node, partner in ((p.a, p.b), (p.b, p.a)):
            if node not in state.good and partner in state.good:
                state.slow.add(node)
    # A node whose every pair failed, with a partner that measured fine elsewhere: the node does not answer.
    reachable = {n for p in pairs if _busbw(p) is not None for n in (p.a, p.b)}
    for node in {n for p in bad for n in (p.a, p.b)} - state.good - state.slow:
        mine = [p for p in pairs if node in (p.a, p.b)]
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
    if round_no == 1:
        return [(names[i], names[i + 1]) for i in range(0, len(names) - 1, 2)]
    state = _classify(pairs_so_far, fraction)
    untested = [n for n in names if n not in state.good | state.slow | state.suspects]
    to_test = [n for n in names if n in state.suspects] + untested
    good = [n for n in names if n in state.good]
    busy: set[str] = set()
    plan: list[tuple[str, str]] = []

    def take(node: str, candidates: list[str]) -> None:
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
        if node not in busy:
            take(node, others)
    return sorted(plan)


def _gbps(value: float | None) -> str:
    return f"{value:.1f} GB/s" if value is not None else "no figure"


def _slow_node(node: str, state: _State) -> FleetFinding:
    mine = [(p, v) for p, v in state.judged if node in (p.a, p.b)]
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
            f"bus bandwidth, under {state.fraction:.0%} of the fleet's reference {ref} (the median of each node's "
            "best pair)"
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
            "speed with other nodes: the path between them (their leaf switches, cables, routing) is the suspect"
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


def judge_pairs(
    pairs: Sequence[FleetPair], *, nodes: Sequence[str] = (), fraction: float = SLOW_FRACTION
) -> tuple[list[str], list[FleetFinding], bool]:
    """(the slow nodes, the findings, whether another round is needed) from the pairs measured so far.

    Findings: ``fleet.slow-node`` (fail) per slow node, ``measured`` its worst pair figure and ``expected`` the
    reference; ``fleet.slow-pair`` (warn) per bad pair no slow node explains; ``fleet.no-reference`` (info)
    when pairs were measured but none can be judged (two nodes). ``nodes``, when given, counts a node never
    judged yet as a reason for another round (the odd node out of round 1). Another round is needed while a
    suspect or an unjudged node remains; the runtime stops anyway when :func:`plan_round` plans no pair.
    """
    state = _classify(pairs, fraction)
    findings = [_slow_node(n, state) for n in sorted(state.slow)]
    for pair, verdict in state.judged:
        if verdict in ("slow", "failed"):
            found = _pair_finding(pair, verdict, state)
            if found is not None:
                findings.append(found)
    measured = [p for p in pairs if _busbw(p) is not None]
    if state.reference is None and measured:
        seen = sorted({n for p in measured for n in (p.a, p.b)})
        findings.append(
            FleetFinding(
                id="fleet.no-reference",
                severity=Severity.INFO,
                node=None,
                gpu=None,
                message=(
                    "no slow-node verdict: a pair is judged against the other pairs' figures, and with "
                    f"{plural(len(measured), 'pair')} measured (between {list_names(seen)}) there is none to "
                    "compare with"
                ),
                measured=max(v for p in measured if (v := _busbw(p)) is not None),
                expected=None,
            )
        )
    judged = state.good | state.slow | state.suspects
    unjudged = [n for n in nodes if n not in judged] if len(set(nodes)) > 1 else []
    more = bool(state.suspects) or bool(unjudged) or (state.reference is None and bool(pairs))
    return sorted(state.slow), findings, more
