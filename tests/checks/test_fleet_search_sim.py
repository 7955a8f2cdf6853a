"""The slow-node search over a simulated fabric (tests/support/fleet_sim.py): the real planner and judge, for 2 to 1,024
nodes with 0 to 50% of them slow (spread one per first pair, in a rack, anywhere) and slow links: every slow node
named, no healthy one, every slow link measured between healthy nodes named as a link; and the table in
docs/fleet.md is the one the simulation makes. Then what the search cannot see, and the NICs' ceiling that does."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rigcheck.checks.fleet.judge import fleet_document
from rigcheck.checks.fleet.pairs import MAX_ROUNDS, search_judgement
from rigcheck.model.finding import Severity
from rigcheck.model.fleet import NodeReport
from rigcheck.model.snapshot import IbPort
from tests.checks.test_fleet_rules import healthy, report
from tests.support import fleet_sim as sim

DOC = Path(__file__).resolve().parent.parents[1] / "docs" / "fleet.md"
TABLE = re.compile(r"<!-- search-table -->\n(.*?)<!-- /search-table -->", re.S)


@pytest.mark.parametrize("n", sim.SIZES)
def test_every_slow_node_is_named_and_no_healthy_one(n: int) -> None:
    for share in sim.SHARES:
        if share and not int(share * n):
            continue
        row, problems = sim.run_row(n, share)
        assert problems == []
        assert row.cases
        assert max(row.rounds) <= MAX_ROUNDS
        assert row.false == 0
        assert row.named == (row.slow if n > 2 else 0)
        assert row.links_named == row.links


def test_the_documents_table_is_the_simulations() -> None:
    found = TABLE.search(DOC.read_text(encoding="utf-8"))
    assert found is not None, "docs/fleet.md lost its search table markers"
    made = "\n".join(sim.markdown(sim.table_rows())) + "\n"
    assert found.group(1) == made, "run `python benchmarks/fleet_scale.py --search-table` and paste its table"


def test_the_old_reference_case_a_quarter_slow_is_caught() -> None:
    """3 of 8 slow, one per first pair: the median of the nodes' best pairs was the slow figure (every pair ok)."""
    fabric = sim.Fabric(sim.names(8), {"n0000": 0.5, "n0002": 0.5, "n0004": 0.5})
    pairs, judgement = sim.search(fabric)
    assert judgement.slow == ["n0000", "n0002", "n0004"]
    assert judgement.reference is not None
    assert judgement.reference > 0.9 * sim.RATE
    assert judgement.rounds == max(p.round for p in pairs) <= 4


def test_a_uniformly_slow_fleet_passes_the_comparison_and_fails_the_nics_ceiling() -> None:
    """Every node at 40%: pairs compared with pairs cannot see it; what the NICs carry can."""
    nodes = sim.names(16)
    fabric = sim.Fabric(nodes, dict.fromkeys(nodes, 0.4))
    pairs, judgement = sim.search(fabric)
    assert (judgement.slow, judgement.links, judgement.more) == ([], [], False)
    assert [f.severity for f in judgement.findings] == []
    ceiling = sim.RATE / 0.9  # a healthy pair reaches 90% of what the NICs carry
    held = search_judgement(pairs, nodes=nodes, ceiling=ceiling)
    assert [(f.id, f.severity) for f in held.findings] == [("fleet.pairs-below-nics", Severity.FAIL)]
    assert held.findings[0].expected == ceiling
    # a healthy fleet is well over half the ceiling
    healthy_pairs, _ = sim.search(sim.Fabric(nodes))
    assert search_judgement(healthy_pairs, nodes=nodes, ceiling=ceiling).findings == []


def test_two_nodes_cannot_say_which_one_and_the_ceiling_still_fails_them() -> None:
    fabric = sim.Fabric(sim.names(2), {"n0001": 0.4})
    pairs, judgement = sim.search(fabric)
    assert (len(pairs), judgement.slow) == (1, [])
    assert [f.id for f in judgement.findings] == ["fleet.no-reference"]
    assert "two nodes cannot tell which of them is slow" in judgement.findings[0].message
    held = search_judgement(pairs, nodes=fabric.nodes, ceiling=sim.RATE / 0.9)
    assert [f.id for f in held.findings] == ["fleet.no-reference", "fleet.pairs-below-nics"]
    assert "the one pair measured" in held.findings[1].message


def _with_nics(name: str, ranks: range) -> NodeReport:
    snap = healthy(name)
    snap.system.ib_ports = [IbPort(device=f"mlx5_{i}", port=1, state="ACTIVE", rate_gbps=400.0) for i in range(8)]
    return report(name, snap, ranks=ranks)


def test_the_document_holds_the_pairs_against_the_snapshots_nics() -> None:
    """8 x 400 Gb/s per node: 400 GB/s; pairs at 100 GB/s everywhere fail the fleet on NCCL, not on gloo (CPU
    processes on loopback have no NICs to be held against)."""
    nodes = sim.names(4)
    pairs, _ = sim.search(sim.Fabric(nodes, rate_scale=100 / sim.RATE))
    reports = [_with_nics(n, range(8 * i, 8 * i + 8)) for i, n in enumerate(nodes)]

    def doc(backend: str) -> tuple[str, list[str]]:
        made = fleet_document(
            nodes=reports,
            pairs=pairs,
            source="live",
            launcher="torchrun",
            backend=backend,
            world_size=32,
            elapsed_s=1.0,
        )
        return made.verdict, [f.id for f in made.findings]

    assert doc("nccl") == ("fail", ["fleet.pairs-below-nics"])
    assert doc("gloo") == ("pass", [])
