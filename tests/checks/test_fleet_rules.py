"""The fleet's rules (checks/fleet/judge.py, checks/fleet/pairs.py): nodes unlike the others, outliers by median/MAD,
the slow node named by pairwise rounds, and the fleet document's verdicts.

tests/fixtures/fleet/4-nodes/ holds four saved 8x H100 snapshots (node03 on another driver, node02's GPU 5
trained at x8); ``python -m tests.checks.test_fleet_rules`` rewrites them from the builder below, and
test_the_fixture_matches_its_builder fails when they drift.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import pytest

from rigcheck.checks.doctor import run_checks
from rigcheck.checks.fleet.judge import (
    MAX_ROUNDS,
    SLOW_FRACTION,
    compare_nodes,
    fleet_document,
    judge_pairs,
    pair_verdict,
    plan_round,
    reference_busbw,
)
from rigcheck.checks.fleet.pairs import block_pairs, groups, search_judgement
from rigcheck.checks.verify.judge import judge
from rigcheck.model import Snapshot, snapshot_to_json
from rigcheck.model.finding import Severity
from rigcheck.model.fleet import (
    FleetCollective,
    FleetDocument,
    FleetFinding,
    FleetPair,
    FleetPhase,
    MissingRank,
    NodeReport,
)
from rigcheck.model.io import snapshot_from_json
from rigcheck.model.snapshot import IbPort, Nic, TopoMatrix
from rigcheck.model.verify import VerifyDocument
from tests.checks.test_verify_judge import BF16, H100, allreduce_doc, as_document, node_inputs

FIXTURES = Path(__file__).parent.parent / "fixtures"
HEALTHY = FIXTURES / "snapshots" / "healthy-8x-h100.json"
FOUR_NODES = FIXTURES / "fleet" / "4-nodes"
OTHER_DRIVER = "550.54.15"


# --- builders ----------------------------------------------------------------------------------------------


def healthy(name: str) -> Snapshot:
    """The healthy 8x H100 snapshot as node ``name`` (its hostname, and GPU UUIDs of its own)."""
    snap = snapshot_from_json(HEALTHY.read_text(encoding="utf-8"), path=str(HEALTHY))
    snap.host.hostname = name
    for gpu in snap.gpus:
        assert gpu.uuid is not None
        gpu.uuid = gpu.uuid.replace("-3c2f7e9d", f"-3c2f7e{name[-2:]}")
    return snap


def four_nodes() -> dict[str, Snapshot]:
    """node01..node04; node03 on driver 550.54.15, node02's GPU 5 trained at x8 (of x16)."""
    nodes = {f"node{i:02d}": healthy(f"node{i:02d}") for i in range(1, 5)}
    nodes["node03"].software.driver_version = OTHER_DRIVER
    nodes["node03"].software.nvml_version = f"12.{OTHER_DRIVER}"
    gpu5 = nodes["node02"].gpu(5)
    assert gpu5 is not None
    gpu5.pcie_width_current = 8
    return nodes


def write_fixtures(directory: Path = FOUR_NODES) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, snap in four_nodes().items():
        path = directory / f"{name}.json"
        path.write_text(snapshot_to_json(snap) + "\n", encoding="utf-8")
        written.append(path)
    return written


def report(
    name: str,
    snapshot: Snapshot | None = None,
    *,
    verify: VerifyDocument | None = None,
    ranks: Sequence[int] = (),
    versions: dict[str, str | None] | None = None,
    checks: bool = False,
) -> NodeReport:
    return NodeReport(
        name=name,
        node_rank=None,
        ranks=list(ranks),
        snapshot=snapshot,
        findings=run_checks(snapshot) if checks and snapshot is not None else [],
        verify=verify,
        versions=versions or {},
        source="test",
    )


def verify_of(name: str, bf16: Sequence[float] = BF16, **overrides: Any) -> VerifyDocument:
    doc = as_document(judge(node_inputs(bf16=bf16, full=False, **overrides)))
    return doc.model_copy(update={"host": name})


def ids(findings: Sequence[FleetFinding]) -> list[tuple[str, Severity, str | None, int | None]]:
    return [(f.id, f.severity, f.node, f.gpu) for f in findings]


# --- consistency -------------------------------------------------------------------------------------------


def test_the_fixture_matches_its_builder() -> None:
    built = {f"{name}.json": snapshot_to_json(snap) + "\n" for name, snap in four_nodes().items()}
    saved = {p.name: p.read_text(encoding="utf-8") for p in sorted(FOUR_NODES.glob("*.json"))}
    assert saved == built, "run `python -m tests.checks.test_fleet_rules` to rewrite tests/fixtures/fleet/4-nodes"


def test_four_nodes_name_the_odd_driver_and_the_x8_gpu_and_nothing_else() -> None:
    nodes = [report(name, snap) for name, snap in four_nodes().items()]
    findings = compare_nodes(nodes)
    assert ids(findings) == [
        ("fleet.driver", Severity.FAIL, "node03", None),
        ("fleet.pcie", Severity.FAIL, "node02", 5),
    ]
    driver, pcie = findings
    assert (driver.measured, driver.expected) == (OTHER_DRIVER, "550.90.07")
    assert (pcie.measured, pcie.expected) == ("x8", "x16")
    assert "node02 GPU5" in pcie.message
    assert "31 of 32 NVIDIA H100 80GB HBM3 GPUs" in pcie.message


def test_one_node_or_none_has_nothing_to_compare() -> None:
    assert compare_nodes([]) == []
    odd = four_nodes()["node03"]
    assert compare_nodes([report("node03", odd)]) == []


def test_a_tie_names_every_value_as_a_warning_with_no_expected_value() -> None:
    nodes = four_nodes()
    findings = compare_nodes([report("node01", nodes["node01"]), report("node03", nodes["node03"])])
    assert ids(findings) == [("fleet.driver", Severity.WARN, None, None)]
    assert findings[0].expected is None
    assert findings[0].message == (
        "no majority driver across the fleet's nodes: 550.54.15 on node03; 550.90.07 on node01"
    )


def test_an_unknown_value_is_skipped_not_a_mismatch() -> None:
    snaps = [healthy(f"n{i}") for i in range(3)]
    snaps[0].software.driver_version = None
    snaps[1].software.cuda_driver_version = None
    assert compare_nodes([report(s.host.hostname or "", s) for s in snaps]) == []
    # A verify document alone says nothing about the machine: no consistency finding either.
    assert compare_nodes([report("v1", verify=verify_of("v1")), report("n0", snaps[0])]) == []


def test_software_imported_by_the_ranks_wins_over_the_snapshot_and_is_a_warning() -> None:
    nodes = [
        report(f"n{i}", healthy(f"n{i}"), versions={"torch": torch, "nccl": "2.21.5"})
        for i, torch in enumerate(["2.5.1", "2.5.1", "2.4.0"])
    ]
    assert ids(compare_nodes(nodes)) == [("fleet.torch", Severity.WARN, "n2", None)]


def test_gpu_count_and_model_mismatches_fail() -> None:
    snaps = [healthy(f"n{i}") for i in range(4)]
    del snaps[1].gpus[7]
    for gpu in snaps[2].gpus:
        gpu.name = "NVIDIA A100-SXM4-80GB"
    findings = compare_nodes([report(f"n{i}", s) for i, s in enumerate(snaps)])
    assert ids(findings) == [
        ("fleet.gpu-count", Severity.FAIL, "n1", None),
        ("fleet.gpu-model", Severity.FAIL, "n2", None),
    ]
    assert (findings[0].measured, findings[0].expected) == ("7", "8")


def test_pcie_generation_is_the_links_max_not_the_idle_one() -> None:
    snaps = [healthy(f"n{i}") for i in range(3)]
    idle, capped = snaps[0].gpus[2], snaps[1].gpus[4]
    idle.pcie_gen_current = 1  # power saving at idle: not a mismatch
    capped.pcie_gen_max = capped.pcie_gen_current = 4  # a slot that stops at Gen4
    findings = compare_nodes([report(f"n{i}", s) for i, s in enumerate(snaps)])
    assert ids(findings) == [("fleet.pcie", Severity.FAIL, "n1", 4)]
    assert (findings[0].measured, findings[0].expected) == ("Gen4", "Gen5")


VBIOS = "96.00.DA.00.0C"  # the H100 of ../shared/corpus/h100-vm
REFLASHED = "96.00.DA.00.0E"


def flashed(name: str, version: str | None = VBIOS) -> Snapshot:
    """The healthy node with every GPU on VBIOS ``version`` (the fixture's snapshots do not hold one)."""
    snap = healthy(name)
    for gpu in snap.gpus:
        gpu.vbios_version = version
    return snap


def test_a_node_flashed_differently_names_each_of_its_gpus_and_a_lone_odd_gpu_too() -> None:
    snaps = [flashed(f"n{i}") for i in range(4)]
    for gpu in snaps[3].gpus:
        gpu.vbios_version = REFLASHED
    snaps[1].gpus[6].vbios_version = "96.00.99.00.01"
    findings = compare_nodes([report(f"n{i}", s) for i, s in enumerate(snaps)])
    assert ids(findings) == [("fleet.vbios", Severity.WARN, "n1", 6)] + [
        ("fleet.vbios", Severity.WARN, "n3", g) for g in range(8)
    ]
    assert all(f.expected == VBIOS for f in findings)
    assert [f.measured for f in findings] == ["96.00.99.00.01"] + [REFLASHED] * 8
    assert findings[1].message == (
        f"n3 GPU0: VBIOS {REFLASHED}, where 23 of 32 NVIDIA H100 80GB HBM3 GPUs have {VBIOS}"
    )


def test_vbios_unknown_on_a_node_is_skipped_and_a_tie_is_one_warning() -> None:
    nodes = [report("a", flashed("a")), report("b", flashed("b", REFLASHED)), report("c", flashed("c", None))]
    findings = compare_nodes(nodes)
    assert ids(findings) == [("fleet.vbios", Severity.WARN, None, None)]
    assert findings[0].expected is None
    assert findings[0].message.startswith("no majority VBIOS across the fleet's NVIDIA H100 80GB HBM3 GPUs: ")
    assert f"{VBIOS} on a GPU0, a GPU1" in findings[0].message
    assert f"{REFLASHED} on b GPU0" in findings[0].message
    assert " c GPU" not in findings[0].message


def test_vbios_compared_within_a_gpu_model_only() -> None:
    """Another model has another VBIOS anyway: an A100 node beside H100 nodes is a gpu-model finding alone."""
    snaps = [flashed("n0"), flashed("n1"), flashed("n2", "92.00.45.00.06")]
    for gpu in snaps[2].gpus:
        gpu.name = "NVIDIA A100-SXM4-80GB"
    findings = compare_nodes([report(f"n{i}", s) for i, s in enumerate(snaps)])
    assert ids(findings) == [("fleet.gpu-model", Severity.FAIL, "n2", None)]


def test_nics_compared_by_count_and_active_rate_and_an_unknown_rate_said_once() -> None:
    def ports(rates: Sequence[float], down: Collection[int] = ()) -> list[IbPort]:
        return [
            IbPort(device=f"mlx5_{i}", port=1, state="DOWN" if i in down else "ACTIVE", rate_gbps=r)
            for i, r in enumerate(rates)
        ]

    snaps = [healthy(f"n{i}") for i in range(6)]
    for i in (0, 4, 5):
        snaps[i].system.ib_ports = ports([400.0] * 4)
    snaps[1].system.ib_ports = ports([400.0] * 4, down={2})
    snaps[2].system.ib_ports = ports([400.0] * 3)
    # n3 from files: NICs from `topo -m`, no rates.
    snaps[3].topology = TopoMatrix(labels=[], matrix=[], gpus=[], nics=[Nic(label=f"NIC{i}") for i in range(4)])
    snaps[3].nics = list(snaps[3].topology.nics)
    findings = compare_nodes([report(f"n{i}", s) for i, s in enumerate(snaps)])
    assert ids(findings) == [
        ("fleet.nic-count", Severity.WARN, "n2", None),
        ("fleet.nic-rate", Severity.WARN, "n1", None),
        ("fleet.nic-rate", Severity.WARN, "n2", None),
        ("fleet.nic-rate", Severity.INFO, None, None),
    ]
    assert (findings[1].measured, findings[1].expected) == ("3 x 400 Gb/s", "4 x 400 Gb/s")
    assert "n3" in findings[3].message


def test_no_nics_anywhere_says_nothing_about_rates() -> None:
    assert compare_nodes([report(f"n{i}", healthy(f"n{i}")) for i in range(3)]) == []


# --- outliers ----------------------------------------------------------------------------------------------


def _fleet_with_gpu3_of_node2_at(fraction: float) -> list[NodeReport]:
    slow = [v * fraction if i == 3 else v for i, v in enumerate(BF16)]
    return [report(f"node{i}", verify=verify_of(f"node{i}", slow if i == 2 else BF16)) for i in range(1, 5)]


def test_a_gpu_25_percent_under_the_fleet_median_is_an_outlier() -> None:
    findings = compare_nodes(_fleet_with_gpu3_of_node2_at(0.75))
    assert ids(findings) == [("fleet.outlier", Severity.FAIL, "node2", 3)]
    outlier = findings[0]
    assert outlier.measured == pytest.approx(BF16[3] * 0.75)
    figures = [*BF16 * 3, *(v * 0.75 if i == 3 else v for i, v in enumerate(BF16))]
    assert outlier.expected == pytest.approx(statistics.median(figures))
    assert "matmul_bf16" in outlier.message
    assert "25% under" in outlier.message
    assert f"32 {H100} GPUs" in outlier.message


def test_5_percent_under_is_no_outlier_though_its_z_score_is_far_out() -> None:
    # The 32 figures agree to a few tenths of a percent: 5% under is many MADs away, but within the 10% rule.
    assert compare_nodes(_fleet_with_gpu3_of_node2_at(0.95)) == []


def test_node_figures_with_mad_zero_use_the_10_percent_rule_alone() -> None:
    busbw = {"n1": 476.3, "n2": 476.3, "n3": 476.3, "n4": 400.0, "n5": 440.0}  # 16% and 7.6% under
    nodes = [report(n, verify=verify_of(n, allreduce=allreduce_doc(v))) for n, v in busbw.items()]
    findings = compare_nodes(nodes)
    assert ids(findings) == [("fleet.outlier", Severity.FAIL, "n4", None)]
    assert (findings[0].measured, findings[0].expected) == (400.0, 476.3)
    assert "the others agree exactly" in findings[0].message


def test_in_a_widely_spread_fleet_15_percent_under_is_no_outlier() -> None:
    # MAD 10 around 100: 85 is 1.0 robust z under the median, well inside the fleet's own spread.
    busbw = {"n1": 100.0, "n2": 90.0, "n3": 110.0, "n4": 85.0, "n5": 105.0}
    nodes = [report(n, verify=verify_of(n, allreduce=allreduce_doc(v))) for n, v in busbw.items()]
    assert compare_nodes(nodes) == []


def test_two_nodes_are_too_few_for_an_outlier_of_a_node_figure() -> None:
    nodes = [report(n, verify=verify_of(n, allreduce=allreduce_doc(v))) for n, v in (("a", 476.3), ("b", 300.0))]
    assert compare_nodes(nodes) == []


# --- the slow node -----------------------------------------------------------------------------------------

FAST = 180.0


def _noise(a: str, b: str) -> float:
    """±3%, fixed per pair: healthy pairs are never identical."""
    return 1 + ((sum(map(ord, a + b)) % 7) - 3) / 100


def search(
    names: Sequence[str],
    slow: Collection[str] = (),
    *,
    dead: Collection[str] = (),
    slow_paths: Collection[frozenset[str]] = (),
) -> tuple[list[FleetPair], int]:
    """Run the rounds as the runtime does: a pair goes at its slower node's speed (half for a slow node)."""
    pairs: list[FleetPair] = []
    rounds = 0
    for round_no in range(1, MAX_ROUNDS + 2):  # one past the cap: the planner must stop by itself
        todo = plan_round(names, round_no, pairs)
        if not todo:
            break
        rounds = round_no
        in_round = [n for pair in todo for n in pair]
        assert len(in_round) == len(set(in_round)), f"round {round_no} uses a node twice: {todo}"
        reference = reference_busbw(pairs)
        for a, b in todo:
            assert frozenset((a, b)) not in {frozenset((p.a, p.b)) for p in pairs}, "a pair measured twice"
            busbw: float | None = FAST * _noise(a, b) * (0.5 if {a, b} & set(slow) else 1.0)
            if frozenset((a, b)) in slow_paths:
                busbw = FAST * 0.5
            if {a, b} & set(dead):
                busbw = None
            pairs.append(
                FleetPair(
                    round=round_no,
                    a=a,
                    b=b,
                    busbw_gbps=busbw,
                    time_us=None if busbw is None else 1e3,
                    verdict=pair_verdict(busbw, reference),
                )
            )
    return pairs, rounds


def _names(n: int) -> list[str]:
    return [f"node{i:02d}" for i in range(1, n + 1)]


@pytest.mark.parametrize("size", [3, 4, 5, 7, 8, 16])
def test_one_slow_node_is_named_within_4_rounds_wherever_it_sits(size: int) -> None:
    names = _names(size)
    for culprit in names:
        pairs, rounds = search(names, {culprit})
        assert rounds <= 4
        slow, findings, more = judge_pairs(pairs, nodes=names)
        assert slow == [culprit], (culprit, pairs)
        assert ids(findings) == [("fleet.slow-node", Severity.FAIL, culprit, None)], findings
        assert more is False
        reference = reference_busbw(pairs)
        assert reference is not None
        assert findings[0].expected == reference
        worst = min(p.busbw_gbps or 0 for p in pairs if culprit in (p.a, p.b))
        assert findings[0].measured == worst < SLOW_FRACTION * reference


@pytest.mark.parametrize("size", [2, 3, 4, 5, 8, 16])
def test_a_healthy_fleet_names_nothing(size: int) -> None:
    names = _names(size)
    pairs, rounds = search(names)
    slow, findings, _ = judge_pairs(pairs, nodes=names)
    assert slow == []
    assert all(f.severity is Severity.INFO for f in findings)
    # The blocks' three rounds, whatever the size: two rounds of disjoint pairs cannot tell a healthy fleet from
    # one with a slow node in every pair. Two nodes have one pair to measure.
    assert rounds == (1 if size == 2 else 3)


def test_two_nodes_have_no_reference_and_say_so() -> None:
    pairs, rounds = search(_names(2), {"node02"})
    assert rounds == 1
    slow, findings, more = judge_pairs(pairs, nodes=_names(2))
    assert slow == []
    assert ids(findings) == [("fleet.no-reference", Severity.INFO, None, None)]
    assert "node01, node02" in findings[0].message
    assert "two nodes cannot tell which of them is slow" in findings[0].message
    assert more is True  # inconclusive, though no round can add a pair:
    assert plan_round(_names(2), 2, pairs) == []


def _pair(round_no: int, a: str, b: str, busbw: float | None) -> FleetPair:
    return FleetPair(round=round_no, a=a, b=b, busbw_gbps=busbw, time_us=None, verdict="ok")


def test_a_failed_pair_of_two_nodes_cannot_say_which() -> None:
    _, findings, _ = judge_pairs([_pair(1, "a", "b", None)], nodes=["a", "b"])
    assert ids(findings) == [("fleet.slow-pair", Severity.WARN, None, None)]
    assert "failed; with no other pair to compare with, it cannot say which node" in findings[0].message


def test_a_slow_pair_not_yet_re_paired_is_unsettled_and_asks_for_another_round() -> None:
    pairs = [_pair(1, "a", "b", 50.0), _pair(1, "c", "d", 100.0), _pair(1, "e", "f", 100.0)]
    slow, findings, more = judge_pairs(pairs)
    assert (slow, more) == ([], True)
    assert ids(findings) == [("fleet.slow-pair", Severity.WARN, None, None)]
    assert "did not settle which of the two is slow" in findings[0].message
    assert (findings[0].measured, findings[0].expected) == (50.0, 100.0)
    assert plan_round("abcdef", 2, pairs) == [("a", "c"), ("b", "d")]


def test_a_slow_pair_whose_nodes_both_clear_names_the_path() -> None:
    names = _names(4)
    pairs, rounds = search(names, slow_paths={frozenset(("node01", "node02"))})
    assert rounds == 3
    slow, findings, more = judge_pairs(pairs, nodes=names)
    assert (slow, more) == ([], False)
    assert ids(findings) == [("fleet.slow-pair", Severity.WARN, None, None)]
    assert "between node01 and node02" in findings[0].message
    assert "the link between them" in findings[0].message
    assert search_judgement(pairs, nodes=names).links == [("node01", "node02")]
    from rigcheck.report.fleet import headline

    doc = _doc([report(n, healthy(n)) for n in names], pairs=pairs)
    assert (doc.verdict, doc.slow_nodes, doc.slow_links) == ("pass", [], [["node01", "node02"]])  # a warning
    assert "slow links: node01 – node02" in headline(doc)
    assert doc.to_json_dict()["slow_links"] == [["node01", "node02"]]
    assert "slow_links" not in _doc([report(n, healthy(n)) for n in names]).to_json_dict()


def test_a_node_that_fails_every_pair_is_named_without_a_figure() -> None:
    names = _names(4)
    pairs, _ = search(names, dead={"node04"})
    slow, findings, _ = judge_pairs(pairs, nodes=names)
    assert slow == ["node04"]
    assert ids(findings) == [("fleet.slow-node", Severity.FAIL, "node04", None)]
    assert findings[0].measured is None
    assert "every all-reduce with it failed" in findings[0].message


def test_five_nodes_are_a_block_of_three_and_one_of_two() -> None:
    names = _names(5)
    assert groups(names) == [["node01", "node02", "node03"], ["node04", "node05"]]
    assert plan_round(names, 1, []) == [("node01", "node02"), ("node04", "node05")]
    first = [_pair(1, "node01", "node02", 180.0), _pair(1, "node04", "node05", 181.0)]
    # node03 waits for round 2, and counts as unjudged until then
    assert judge_pairs(first, nodes=names)[2] is True
    # round 2: the block of three goes on (node03 with node01); the others are good: nothing else to learn
    assert plan_round(names, 2, first) == [("node01", "node03")]
    assert plan_round(names, MAX_ROUNDS + 1, first) == []


def test_groups_and_their_rounds_cover_every_pair_inside_a_group_once() -> None:
    names = _names(11)  # 4 + 4 + 3
    assert [len(g) for g in groups(names)] == [4, 4, 3]
    assert [len(g) for g in groups(_names(9))] == [4, 3, 2]
    assert groups(_names(1)) == [["node01"]]
    seen = [frozenset(p) for r in range(1, 4) for p in block_pairs(names, r)]
    assert len(seen) == len(set(seen)) == 6 + 6 + 3
    assert block_pairs(names, 4) == []
    for r in range(1, 4):
        in_round = [n for p in block_pairs(names, r) for n in p]
        assert len(in_round) == len(set(in_round))


def test_half_the_nodes_slow_one_in_every_first_pair_is_named() -> None:
    """Issue 23's case: 2 of 4 slow, one in each round-1 pair, so every pair of round 1 reads alike (the median of
    the nodes' best pairs was the slow figure, and the fleet passed). The blocks' rounds measure the two healthy
    nodes together, and the best cluster is the reference."""
    names = _names(4)
    pairs, rounds = search(names, {"node01", "node03"})
    assert {p.busbw_gbps is not None and p.busbw_gbps < 100 for p in pairs if p.round == 1} == {True}
    slow, findings, more = judge_pairs(pairs, nodes=names)
    assert (slow, more, rounds) == (["node01", "node03"], False, 3)
    assert [f.id for f in findings] == ["fleet.slow-node", "fleet.slow-node"]
    # 3 of 8 and 5 of 16, wherever they sit
    for size, count in ((8, 3), (16, 5)):
        for start in range(size):
            culprits = {_names(size)[(start + 2 * i) % size] for i in range(count)}
            pairs, _ = search(_names(size), culprits)
            assert judge_pairs(pairs, nodes=_names(size))[0] == sorted(culprits)


def test_slow_with_one_good_node_is_not_yet_a_slow_node() -> None:
    """One slow pair with a good node may be their link: the node is tried with another good node first."""
    pairs = [
        _pair(1, "a", "b", 180.0),
        _pair(1, "c", "d", 179.0),
        _pair(2, "a", "c", 181.0),
        _pair(2, "b", "d", 178.0),
        _pair(3, "a", "x", 60.0),
    ]
    slow, findings, more = judge_pairs(pairs)
    assert (slow, more) == ([], True)
    assert "did not settle which of the two is slow" in findings[0].message
    assert plan_round(["a", "b", "c", "d", "x"], 4, pairs) == [("b", "x")]
    pairs.append(_pair(4, "b", "x", 59.0))
    slow, findings, more = judge_pairs(pairs)
    assert (slow, more) == (["x"], False)
    assert "with good node(s) a, b reached" in findings[0].message


def test_pair_verdict_and_reference() -> None:
    assert pair_verdict(None, 100.0) == "failed"
    assert pair_verdict(float("nan"), 100.0) == "failed"
    assert pair_verdict(79.9, 100.0) == "slow"
    assert pair_verdict(80.0, 100.0) == "ok"
    assert pair_verdict(1.0, None) == "ok"

    assert reference_busbw([_pair(1, "a", "b", 100.0)]) is None
    assert reference_busbw([_pair(1, "a", "b", 50.0), _pair(2, "a", "c", 50.0)]) is None  # both hold a
    # Node bests a=b=50, c=d=100: the best cluster (c, d), not their mean (75).
    assert reference_busbw([_pair(1, "a", "b", 50.0), _pair(1, "c", "d", 100.0), _pair(2, "a", "x", None)]) == 100.0
    # Three slow pairs of six: the median of the nodes' bests would be 50; the best cluster is 96-100.
    six = [_pair(1, a, b, v) for a, b, v in (("a", "b", 50), ("c", "d", 51), ("e", "f", 49), ("g", "h", 96))]
    six += [_pair(2, "i", "j", 100.0), _pair(2, "k", "l", 98.0)]
    assert reference_busbw(six) == 98.0
    assert reference_busbw(six, 0.5) == 96.0  # a looser fraction keeps more in the cluster: 49-100


# --- the document ------------------------------------------------------------------------------------------


def _doc(nodes: Sequence[NodeReport], **kw: Any) -> FleetDocument:
    kw.setdefault("source", "live")
    return fleet_document(nodes=nodes, launcher="torchrun", backend="nccl", world_size=32, elapsed_s=1.0, **kw)


def test_a_healthy_fleet_passes() -> None:
    nodes = [report(n, healthy(n), ranks=range(8 * i, 8 * i + 8), checks=True) for i, n in enumerate(_names(4))]
    pairs, _ = search(_names(4))
    doc = _doc(
        nodes, pairs=pairs, phases=[FleetPhase(name="pairs", status="done", elapsed_s=1, deadline_s=60, reason=None)]
    )
    assert (doc.verdict, doc.partial, doc.slow_nodes) == ("pass", False, [])
    assert [(n.name, n.verdict, n.gpus) for n in doc.nodes] == [(n, "pass", 8) for n in _names(4)]
    assert FleetDocument.model_validate(doc.to_json_dict()) == doc


def test_the_four_node_fixture_fails_the_two_odd_nodes() -> None:
    nodes = [report(name, snap, checks=True) for name, snap in four_nodes().items()]
    doc = _doc(nodes, source="files", collectives=[], pairs=[])
    assert doc.verdict == "fail"
    assert {n.name: n.verdict for n in doc.nodes} == {
        "node01": "pass",
        "node02": "fail",
        "node03": "fail",
        "node04": "pass",
    }
    own = {n.name: [(f.id, f.gpu) for f in n.findings if f.severity is not Severity.INFO] for n in doc.nodes}
    # Its own doctor finding stays with the node, not among the fleet's findings; ok findings are left out.
    assert own["node02"] == [("pcie.width-below-max", 5)]
    assert own["node01"] == own["node04"] == []
    assert all(f.severity is not Severity.OK for n in doc.nodes for f in n.findings)
    assert [f.id for f in doc.findings] == ["fleet.driver", "fleet.pcie"]


def test_a_slow_node_fails_its_node_and_pairs_are_restated_against_the_final_reference() -> None:
    names = _names(4)
    pairs, _ = search(names, {"node04"})
    assert pairs[1].verdict == "ok"  # round 1 had no reference yet when this pair was measured
    doc = _doc([report(n, healthy(n)) for n in names], pairs=pairs)
    assert doc.slow_nodes == ["node04"]
    assert doc.verdict == "fail"
    assert {n.name for n in doc.nodes if n.verdict == "fail"} == {"node04"}
    assert [(p.round, p.a, p.b, p.verdict) for p in doc.pairs if p.verdict != "ok"] == [
        (1, "node03", "node04", "slow"),
        (2, "node02", "node04", "slow"),
        (3, "node01", "node04", "slow"),
    ]


def test_a_missing_rank_fails_the_fleet_and_is_partial() -> None:
    nodes = [report(n, healthy(n), ranks=range(8 * i, 8 * i + 8)) for i, n in enumerate(_names(2))]
    lost = MissingRank(rank=11, host=None, phase="gather", reason="no answer within 60 s")
    doc = _doc(nodes, missing=[lost])
    assert (doc.verdict, doc.partial) == ("fail", True)
    assert ids(doc.findings) == [("fleet.missing-rank", Severity.FAIL, "node02", None)]
    assert doc.findings[0].message == "rank 11 on node02 did not arrive (last reached gather): no answer within 60 s"
    assert [n.verdict for n in doc.nodes] == ["pass", "fail"]


def test_a_phase_cut_short_or_an_incomplete_verify_is_incomplete_not_a_pass() -> None:
    nodes = [report(n, healthy(n)) for n in _names(2)]
    timed_out = FleetPhase(name="collectives", status="timed_out", elapsed_s=60, deadline_s=60, reason="deadline")
    skipped = FleetPhase(name="pairs", status="skipped", elapsed_s=0, deadline_s=None, reason="one node")
    assert (_doc(nodes, phases=[timed_out]).verdict, _doc(nodes, phases=[timed_out]).partial) == ("incomplete", True)
    assert (_doc(nodes, phases=[skipped]).verdict, _doc(nodes, phases=[skipped]).partial) == ("pass", False)
    cut = verify_of("node01").model_copy(update={"verdict": "incomplete"})
    doc = _doc([report("node01", healthy("node01"), verify=cut), nodes[1]])
    assert (doc.verdict, doc.partial, [n.verdict for n in doc.nodes]) == ("incomplete", False, ["incomplete", "pass"])


def test_internode_bandwidth_judged_at_the_largest_size_only() -> None:
    def row(size: int, busbw: float, expected: float | None) -> FleetCollective:
        return FleetCollective(
            op="all_reduce",
            size_bytes=size,
            time_us=1.0,
            algbw_gbps=busbw,
            busbw_gbps=busbw,
            world_size=16,
            backend="nccl",
            expected_gbps=expected,
            expected_source="4 x 400 Gb/s NICs" if expected is not None else None,
        )

    nodes = [report(n, healthy(n)) for n in _names(2)]
    small_is_slow = [row(2**20, 5.0, 100.0), row(2**30, 60.0, 100.0)]
    assert _doc(nodes, collectives=small_is_slow).findings == []
    low = _doc(nodes, collectives=[row(2**20, 50.0, 100.0), row(2**30, 40.0, 100.0)])
    assert ids(low.findings) == [("fleet.internode-bandwidth", Severity.WARN, None, None)]
    assert (low.findings[0].measured, low.findings[0].expected, low.verdict) == (40.0, 100.0, "pass")
    assert _doc(nodes, collectives=[row(2**30, 1.0, None)]).findings == []


if __name__ == "__main__":
    for written in write_fixtures():
        sys.stdout.write(f"wrote {written}\n")


def test_cpu_pairs_are_judged_more_loosely_than_a_fabric() -> None:
    """On gloo over shared cores a healthy pair moves by 25-30% between rounds: 0.7 of the reference is slow
    on NCCL, not on CPU; a quarter of it is slow on both."""
    from rigcheck.checks.fleet.judge import CPU_SLOW_FRACTION, SLOW_FRACTION, pair_verdict, slow_fraction

    assert slow_fraction("gloo") == CPU_SLOW_FRACTION < SLOW_FRACTION == slow_fraction("nccl") == slow_fraction(None)
    assert pair_verdict(0.7, 1.0, slow_fraction("nccl")) == "slow"
    assert pair_verdict(0.7, 1.0, slow_fraction("gloo")) == "ok"
    assert pair_verdict(0.25, 1.0, slow_fraction("gloo")) == "slow"
