"""The whole fleet's collective, measured live or read from a file, and what the nodes' NICs can carry. Pure.

``fleet --from DIR`` has no runtime to measure with; an operator who ran nccl-tests across the nodes saves it
beside the node documents (``rigcheck bench allreduce --from all_reduce_perf.txt --json > DIR/allreduce.json``)
and the fleet reads it as the rows it measures itself (:func:`fleet_rows`), judged by the same rules
(checks/fleet/judge.py: ``fleet.internode-bandwidth``; ``fleet.collective-wrong`` for nccl-tests' own data check).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from rigcheck.facts import catalog
from rigcheck.facts.allreduce_bands import Fabric, assumed_nics, smallest_fabric
from rigcheck.model.bench import CollectiveDocument
from rigcheck.model.fleet import FleetCollective, NodeReport

BITS_PER_BYTE: Final = 8


def nic_busbw(nodes: Sequence[NodeReport]) -> tuple[float | None, str | None]:
    """What the nodes' NICs can carry as all-reduce bus bandwidth: the slowest node's active RDMA ports, summed
    (NCCL spreads an inter-node all-reduce over every NIC, one ring each, so the bus bandwidth it reaches is
    bounded by the node's aggregate NIC rate). None when a node's ports are unknown or none is active. Also the
    ceiling the slow-node pairs are held against (checks/fleet/pairs.py: fleet.pairs-below-nics)."""
    totals: list[tuple[float, str, int]] = []
    for node in nodes:
        ports = node.snapshot.system.ib_ports if node.snapshot is not None else None
        active = [p.rate_gbps for p in ports or [] if p.state == "ACTIVE" and p.rate_gbps]
        if not active:
            return None, None
        totals.append((sum(active) / BITS_PER_BYTE, node.name, len(active)))
    if not totals:
        return None, None
    gbps, name, count = min(totals)
    return gbps, f"{name}: {count} active RDMA port(s), {gbps * BITS_PER_BYTE:g} Gb/s in all (the fleet's least)"


def fleet_rows(doc: CollectiveDocument, nodes: Sequence[NodeReport]) -> list[FleetCollective]:
    """An imported collective's sizes as the fleet's rows: the out-of-place figures (what `bench` reports),
    the ranks the tool names, NCCL, and the NICs' ceiling where every node's snapshot holds its ports."""
    expected, source = nic_busbw(nodes) if len(nodes) > 1 else (None, None)
    if expected is None and len(nodes) > 1:
        # No node's ports known: the smallest published fabric of the nodes' GPU class, else the weak default
        # (facts/allreduce_bands.py), so a run across nodes at a few GB/s is not passed in silence; the source
        # says it is assumed.
        (count, gbit), why = assumed_nics(_fabric(doc, nodes), "a snapshot of each node with its RDMA ports gives them")
        expected = count * gbit / BITS_PER_BYTE
        source = f"no node's RDMA ports known: {why}"
    ranks = doc.source.ranks if doc.source is not None and doc.source.ranks else doc.world_size
    return [
        FleetCollective(
            op=row.op,
            size_bytes=row.size_bytes,
            time_us=row.time_us_median,
            algbw_gbps=row.algbw_gbps,
            busbw_gbps=row.busbw_gbps,
            world_size=ranks,
            backend="nccl",
            expected_gbps=expected,
            expected_source=source,
            wrong=_wrong(row.wrong, row.in_place_wrong, correct=row.correct),
        )
        for row in doc.results
    ]


def _fabric(doc: CollectiveDocument, nodes: Sequence[NodeReport]) -> Fabric | None:
    """The nodes' class (8x H100, 4x GB300...): the GPU the output's rank lines or the node snapshots name."""
    names = [d.name for d in doc.source.devices if d.name] if doc.source is not None else []
    names += [g.name for n in nodes if n.snapshot is not None for g in n.snapshot.gpus if g.name]
    models = {spec.name for spec in map(catalog.lookup, names) if spec is not None}
    return smallest_fabric(models.pop() if len(models) == 1 else None, names)


def _wrong(out_of_place: int | None, in_place: int | None, *, correct: bool) -> int | None:
    """The wrong elements nccl-tests counted at one size (out-of-place and in-place); None where it did not check
    (``-c 0``). A row judged incorrect without a count (an old layout's error column) counts as one."""
    counted = [n for n in (out_of_place, in_place) if n is not None]
    if counted:
        return sum(counted)
    return None if correct else 1


def hosts_notes(doc: CollectiveDocument, file: str, names: Sequence[str]) -> list[str]:
    """What the fleet document says about an imported collective: where it came from, whether it was cut, and
    the hosts it ran on that no node document names (or the nodes it did not run on). Host names match on their
    first label too: nccl-tests prints what gethostname() gives, a snapshot may hold the full name."""
    source = doc.source
    tool = f"{source.tool} output" if source is not None else "a rigcheck run"
    ranks = source.ranks if source is not None and source.ranks else doc.world_size
    hosts = list(source.hosts) if source is not None else []
    on = f" on {len(hosts)} host{'s' if len(hosts) != 1 else ''}" if hosts else ""
    notes = [f"{doc.op}: read from {file} ({tool}, {ranks} ranks{on})"]
    if doc.partial:
        notes.append(f"{file}: the output was cut ({doc.error or 'partial'}); the sizes it holds are used")
    if not hosts:
        notes.append(f"{file}: the output does not name its hosts, so which nodes took part is not known")
        return notes
    strangers = [h for h in hosts if not any(_same_host(h, n) for n in names)]
    absent = [n for n in names if not any(_same_host(h, n) for h in hosts)]
    if strangers:
        notes.append(f"{file}: ran on {', '.join(strangers)}, which no node document here names")
    if absent:
        notes.append(f"{file}: {', '.join(absent)} took no part in it")
    return notes


def _same_host(a: str, b: str) -> bool:
    return a == b or a.split(".", maxsplit=1)[0] == b.split(".", maxsplit=1)[0]
