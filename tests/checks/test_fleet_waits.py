"""The wait-for analysis (checks/fleet/waits.py): who the others waited for, iteration by iteration, and the
stragglers it names — a slow GPU, a jittery NIC or host, a slow host — from constructed enter times, and over the
simulated fleets of tests/support/wait_sim.py (recall and false positives; the table in docs/fleet.md is the one the
simulation makes)."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from rigcheck.checks.fleet.judge import FINDING_IDS, fleet_document
from rigcheck.checks.fleet.waits import (
    CPU_MARGINS,
    GPU_MARGINS,
    Series,
    analyse_waits,
    binomial_tail,
    lower_median,
)
from rigcheck.model.finding import Severity
from tests.support import wait_sim

DOC = Path(__file__).resolve().parent.parents[1] / "docs" / "fleet.md"
TABLE = re.compile(r"<!-- wait-table -->\n(.*?)<!-- /wait-table -->", re.S)
MS = 1e-3


def _series(
    ranks: int,
    *,
    late: dict[int, Sequence[float]] | None = None,
    iterations: int = 20,
    step: float = 10 * MS,
    seed: int = 1,
) -> list[Series]:
    """Four collectives of ``iterations``; each rank enters at the iteration's start plus 5 us of noise, plus its
    lateness in ``late`` (one value per iteration, cycled)."""
    rng = random.Random(seed)
    late = late or {}
    out = []
    for s in range(4):
        enters: dict[int, list[float]] = {r: [] for r in range(ranks)}
        for i in range(iterations):
            start = (s * iterations + i) * 2 * step
            for r in range(ranks):
                extra = late[r][(s * iterations + i) % len(late[r])] if r in late else 0.0
                enters[r].append(start + rng.gauss(0, 5e-6) + extra)
        out.append(Series(f"allreduce {s}", enters, step))
    return out


def _nodes(ranks: int, per_node: int) -> dict[int, str]:
    return {r: f"b{r // per_node:02d}" for r in range(ranks)}


def test_the_small_helpers() -> None:
    assert lower_median([3.0, 1.0, 2.0, 4.0]) == 2.0
    assert lower_median([5.0, 1.0]) == 1.0  # a pair: its earlier rank
    assert binomial_tail(0, 10, 0.5) == 1.0
    assert binomial_tail(11, 10, 0.5) == 0.0
    assert binomial_tail(10, 10, 0.5) == pytest.approx(0.5**10)
    assert binomial_tail(1, 3, 0.5) == pytest.approx(1 - 0.125)


def test_a_healthy_fleet_names_no_one() -> None:
    analysis = analyse_waits(_series(16), _nodes(16, 8))
    assert analysis.findings == []
    assert analysis.iterations == 80
    assert analysis.series == 4
    assert 3e-6 < analysis.noise_s < 15e-6  # the spread of two ranks' 5 us noise apart, read back
    assert analysis.margin_s == GPU_MARGINS.floor_s  # 5 x noise is under the 50 us floor
    assert all(w.late == 0 and w.analysed == 80 for w in analysis.ranks.values())


def test_a_slow_gpu_is_late_every_iteration_by_a_steady_margin() -> None:
    analysis = analyse_waits(_series(16, late={5: [0.6 * MS]}), _nodes(16, 8))
    assert [(f.id, f.node, f.severity) for f in analysis.findings] == [("fleet.straggler", "b00", Severity.FAIL)]
    message = analysis.findings[0].message
    assert message.startswith("rank 5 (node b00): late in 80 of 80 iterations (100%; the last to enter in 80)")
    assert "steady 0.6 ms" in message
    assert "a slow GPU (or its rank's process): its node's other ranks are on time" in message
    assert "(6% of the time measured)" in message  # 0.6 ms of each 10 ms iteration: over 5%, a fail
    assert analysis.findings[0].measured == pytest.approx(0.6, abs=0.02)
    assert analysis.ranks[5].last == 80


def test_a_small_straggler_is_a_warning() -> None:
    analysis = analyse_waits(_series(16, late={5: [0.3 * MS]}), _nodes(16, 8))
    assert [(f.node, f.severity) for f in analysis.findings] == [("b00", Severity.WARN)]  # 3% of the time


def test_a_jittery_rank_is_late_in_scattered_iterations() -> None:
    rng = random.Random(4)
    spikes = [rng.uniform(0.5, 2.0) * MS if rng.random() < 0.25 else 0.0 for _ in range(80)]
    analysis = analyse_waits(_series(16, late={11: spikes}), _nodes(16, 8))
    assert [(f.id, f.node) for f in analysis.findings] == [("fleet.straggler", "b01")]
    message = analysis.findings[0].message
    assert message.startswith(f"rank 11 (node b01): late in {sum(1 for s in spikes if s > 0.05 * MS)} of 80")
    assert "in scattered iterations, on time in the rest: a jittery NIC or host" in message


def test_a_slow_host_is_every_rank_of_its_node_late_together() -> None:
    late = {r: [0.6 * MS] for r in range(8, 16)}
    analysis = analyse_waits(_series(32, late=late), _nodes(32, 8))
    assert len(analysis.findings) == 1
    finding = analysis.findings[0]
    assert (finding.node, finding.severity) == ("b01", Severity.FAIL)  # the others wait 6% of each iteration
    assert finding.message.startswith("node b01: all 8 of its ranks (8-15) late together in 80 of 80 iterations")
    assert "a slow host (its CPU, memory, NIC or PCIe switch), not one GPU" in finding.message


def test_a_nodes_only_rank_cannot_tell_its_gpu_from_its_host() -> None:
    analysis = analyse_waits(_series(4, late={2: [1 * MS]}), _nodes(4, 1))
    assert [f.node for f in analysis.findings] == ["b02"]
    assert "the node's only rank, so the two cannot be told apart" in analysis.findings[0].message


def test_the_cpu_margin_ignores_the_schedulers_few_milliseconds() -> None:
    """gloo on busy cores: a healthy rank parked for a time slice (4-8 ms) now and then is noise under --cpu's 20
    ms floor; the same ranks read with the GPU margins would name it."""
    rng = random.Random(2)
    parked = {r: [rng.choice([0.0] * 9 + [6 * MS]) for _ in range(80)] for r in range(4)}
    assert analyse_waits(_series(4, late=parked), _nodes(4, 4), margins=CPU_MARGINS).findings == []
    jitter = {2: [rng.uniform(24, 40) * MS if rng.random() < 0.3 else 0.0 for _ in range(80)]}
    found = analyse_waits(_series(4, late={**parked, **jitter}), _nodes(4, 4), margins=CPU_MARGINS).findings
    assert [f.message.split(":")[0] for f in found] == ["rank 2 (node b00)"]


def test_the_findings_reach_the_document() -> None:
    analysis = analyse_waits(_series(4, late={2: [1 * MS]}), _nodes(4, 1))
    assert "fleet.straggler" in FINDING_IDS
    doc = fleet_document(
        nodes=[], source="live", launcher="torchrun", backend="nccl", world_size=4, elapsed_s=1.0,
        stragglers=analysis.findings,
    )  # fmt: skip
    assert [f.id for f in doc.findings] == ["fleet.straggler"]
    assert doc.verdict == "fail"


def test_the_simulation_names_the_faults_and_no_healthy_node() -> None:
    """A slice of the benchmark's simulation (benchmarks/fleet_waits.py runs it whole): recall >= 95%, false
    positives <= 1% of the healthy node-runs."""
    for nodes, per_node, runs in ((4, 1, 12), (16, 8, 9)):
        score = wait_sim.simulate(runs, nodes=nodes, per_node=per_node, seed=3)
        assert score.recall >= 0.95, score.misses
        assert score.false_rate <= 0.01, score.misses


def test_the_documents_table_is_the_simulations() -> None:
    found = TABLE.search(DOC.read_text(encoding="utf-8"))
    assert found is not None, "docs/fleet.md holds the wait-for simulation's table"
    assert found.group(1).strip().splitlines() == wait_sim.markdown(wait_sim.table_rows())
