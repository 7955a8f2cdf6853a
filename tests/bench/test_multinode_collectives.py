"""A multi-node all-reduce read from nccl-tests output: how many nodes the file shows (rank lines elided with
"...", NCCL's INFO lines), which NICs it is held to when none are named (the node class's smallest published
fabric, else a stated weak default), and the fleet's floor, the same 40% of the NICs' aggregate.

Real outputs: tests/fixtures/nccl-tests-extra (README.md) and tests/calibration/cases (tests/calibration/
manifest.json names each source). Inputs marked **synthetic** are real outputs with figures scaled or names
changed, where no real output of that condition was found.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rigcheck.checks.fleet.judge import fleet_document
from rigcheck.facts import allreduce_bands as ab
from rigcheck.model.bench import CollectiveDocument
from rigcheck.model.finding import Severity
from rigcheck.model.fleet import FleetCollective
from rigcheck.readers.reference.nccl_tests import (
    NcclTestsRun,
    add_log_evidence,
    nodes_of,
    parse_nccl_tests,
    ranks_per_host,
)
from rigcheck.readers.reference.nccl_tests_doc import collective_document, parse_link
from tests.checks.test_fleet_rules import healthy, report
from tests.support.cli import Rigcheck

HERE = Path(__file__).parent.parent
CASES = HERE / "calibration" / "cases"
TWO_HOSTS = HERE / "fixtures" / "nccl-tests-extra" / "new-allreduce-16xh100-2hosts-markdown.txt"  # 2x8 H100, A3 Mega
GB200_FRAGMENT = HERE / "fixtures" / "corpus" / "nccl-tests" / "004-gb200-nvl72-2racks-fragment.txt"
OCI_TWO_RACKS = CASES / "allreduce-32x4gb300-oci-two-racks.txt"
OCI_ONE_RACK = CASES / "allreduce-2x4gb300-oci-one-rack.txt"
WRONG = CASES / "allreduce-2node-4rank-wrong-results.txt"
H100_NAME = "NVIDIA H100 80GB HBM3"


def _doc(text: str, *, gpu: str | None = None, nics: str | None = None) -> CollectiveDocument:
    return collective_document(
        parse_nccl_tests(text), op="allreduce", path="x", choice=parse_link(None, None, gpu, nics)
    )


def _judged(doc: CollectiveDocument) -> tuple[str, float | None, str]:
    assert doc.judgement is not None
    return doc.judgement.verdict, doc.judgement.band_floor_gbps, doc.judgement.reason


def _slowed(path: Path, busbw: float) -> str:
    """**Synthetic**: a real output with every row's bandwidths scaled (times stretched) so that the largest
    size's out-of-place busbw is ``busbw``: the same run over a socket fallback or a NIC down."""
    lines = path.read_text(encoding="utf-8").splitlines()
    rows = [ln.split() for ln in lines if len(ln.split()) == 13 and ln.split()[0].isdigit()]
    factor = busbw / float(max(rows, key=lambda c: int(c[0]))[7])
    out = []
    for line in lines:
        cells = line.split()
        if len(cells) == 13 and cells[0].isdigit():
            for i in (5, 9):
                cells[i] = f"{float(cells[i]) / factor:.1f}"
            for i in (6, 7, 10, 11):
                cells[i] = f"{float(cells[i]) * factor:.2f}"
        out.append("  ".join(cells) if len(cells) == 13 and cells[0].isdigit() else line)
    return "\n".join(out) + "\n"


# --- the NICs a run across nodes is held to --------------------------------------------------------------------


def test_two_h100_nodes_at_6_gbps_fail_without_nics() -> None:
    # Was: the 1x100G default, floor 5, and 6 GB/s passed. Now the smallest published 8x H100 fabric (4x200G).
    verdict, floor, reason = _judged(_doc(_slowed(TWO_HOSTS, 6.0)))
    assert (verdict, floor) == ("fail", 40.0)
    assert "busbw 6 GB/s at 8 GiB" in reason
    assert "NICs not given, assumed the smallest published fabric for 8x H100/H200 nodes, 4x200 Gb/s" in reason
    assert "give --nics" in reason


def test_two_h100_nodes_at_6_gbps_exit_1(tmp_path: Path, rigcheck: Rigcheck) -> None:
    slow = tmp_path / "slow.txt"
    slow.write_text(_slowed(TWO_HOSTS, 6.0), encoding="utf-8")
    result = rigcheck("bench", "allreduce", "--from", str(slow), "--json")
    doc = result.json
    assert result.code == 1
    assert doc["judgement"]["verdict"] == "fail"
    assert "smallest published fabric" in doc["judgement"]["source"]
    assert "cloud.google.com" in doc["judgement"]["source"]  # the fabric's published source travels with it


def test_the_real_run_passes_the_assumed_fabric_and_nics_given_replace_it() -> None:
    assert _judged(_doc(TWO_HOSTS.read_text(encoding="utf-8")))[:2] == ("pass", 40.0)
    # --nics names the real fabric: 8x200G (A3 Mega) is 200 GB/s, floor 80.
    verdict, floor, reason = _judged(_doc(TWO_HOSTS.read_text(encoding="utf-8"), nics="8x200"))
    assert (verdict, floor) == ("pass", 80.0)
    assert "--nics" in reason
    assert "assumed" not in reason


def test_an_unknown_gpu_is_judged_only_against_the_weak_default() -> None:
    # Synthetic: the real 2-host run with its GPUs' name unknown to rigcheck, at 6 GB/s.
    text = _slowed(TWO_HOSTS, 6.0).replace(H100_NAME, "NVIDIA Graphics Device")
    verdict, floor, reason = _judged(_doc(text))
    assert (verdict, floor) == ("pass", 5.0)
    assert "judged only against the weak default 1x100 Gb/s" in reason
    # --gpu names the model: its class's fabric applies.
    assert _judged(_doc(text, gpu="H100 SXM5"))[:2] == ("fail", 40.0)


@pytest.mark.parametrize(
    ("model", "printed", "nics"),
    [
        ("H100 SXM5", (), (4, 200.0)),
        ("H200 SXM", (), (4, 200.0)),
        ("A100 SXM4 80GB", (), (1, 100.0)),
        ("B200", (), (8, 400.0)),
        ("GB200", (), (4, 400.0)),
        (None, ("NVIDIA GB300",), (4, 800.0)),
    ],
)
def test_each_class_has_its_smallest_published_fabric(
    model: str | None, printed: tuple[str, ...], nics: tuple[int, float]
) -> None:
    fabric = ab.smallest_fabric(model, printed)
    assert fabric is not None
    assert fabric.nics == nics
    assert "https://" in fabric.source


@pytest.mark.parametrize("model", ["H100 PCIe", "H100 NVL", "GeForce RTX 4090", None])
def test_cards_without_a_multi_node_fabric_have_none(model: str | None) -> None:
    assert ab.smallest_fabric(model, ("NVIDIA Graphics Device",)) is None


def test_a_run_cut_under_256_mib_is_not_held_to_the_network() -> None:
    # Synthetic: the real 2-host run with the sizes from 256 MiB up left out (a run stopped early).
    text = "\n".join(
        ln
        for ln in TWO_HOSTS.read_text(encoding="utf-8").splitlines()
        if not (len(ln.split()) == 13 and ln.split()[0].isdigit() and int(ln.split()[0]) >= 256 << 20)
    )
    verdict, floor, reason = _judged(_doc(text))
    assert (verdict, floor) == ("unjudged", None)
    assert "under 256 MiB" in reason


# --- how many nodes ---------------------------------------------------------------------------------------------


def test_elided_rank_lines_of_a_128_rank_gb300_run_read_as_32_nodes() -> None:
    run = parse_nccl_tests(OCI_TWO_RACKS.read_text(encoding="utf-8"))
    assert run.elided
    assert run.hosts == ["GPU-5705", "GPU-391"]  # the two hosts shown: the run was read as 2 hosts
    nodes = nodes_of(run, 128)
    assert (nodes.count, nodes.exact) == (32, False)
    assert "128 ranks, 4 per host" in nodes.how
    assert "elided" in nodes.how
    doc = _doc(OCI_TWO_RACKS.read_text(encoding="utf-8"))
    verdict, floor, reason = _judged(doc)
    assert (doc.world_size, verdict, floor) == (128, "pass", 160.0)  # 4x800G, the smallest GB300 fabric
    assert "32 nodes inferred" in reason
    assert "4x GB300" in reason


def test_the_one_rack_excerpt_reads_as_2_nodes() -> None:
    nodes = nodes_of(parse_nccl_tests(OCI_ONE_RACK.read_text(encoding="utf-8")), 8)
    assert (nodes.count, nodes.exact) == (2, False)


def test_a_fragment_from_rank_143_reads_as_36_gb200_trays() -> None:
    run = parse_nccl_tests(GB200_FRAGMENT.read_text(encoding="utf-8"))
    assert run.hosts == ["slurm-gb200-207-171"]  # one host named: it was read as one node, unjudged
    assert (nodes_of(run, 144).count, nodes_of(run, 144).exact) == (36, False)
    verdict, floor, reason = _judged(_doc(GB200_FRAGMENT.read_text(encoding="utf-8")))
    assert (verdict, floor) == ("pass", 5.0)  # "NVIDIA Graphics Device": the weak default, and said so
    assert "36 nodes inferred" in reason
    assert "weak default" in reason


def test_the_wrong_results_excerpt_has_4_ranks_on_2_hosts() -> None:
    run = parse_nccl_tests(WRONG.read_text(encoding="utf-8"))
    assert (run.comm_ranks, run.hosts) == (4, ["manolinux", "manolinux1"])
    doc = _doc(WRONG.read_text(encoding="utf-8"))
    assert doc.world_size == 4  # was 1: no rank lines, every busbw 0.00
    assert doc.source is not None
    assert (doc.source.ranks, doc.source.hosts) == (4, ["manolinux", "manolinux1"])
    assert all(not r.correct for r in doc.results)
    verdict, _, reason = _judged(doc)
    assert verdict == "unjudged"
    assert "128 B" in reason


def test_nccls_nnodes_is_taken_as_it_is() -> None:
    # Synthetic: NCCL 2.19+'s communicator lines (their form as NCCL prints them) before a sweep without rank lines.
    info = "\n".join(
        f"node{r // 8}:100:100 [{r % 8}] NCCL INFO comm 0x55 rank {r} nRanks 16 nNodes 2 localRanks 8 "
        f"localRank {r % 8} MNNVL 0"
        for r in (0, 9)
    )
    body = "\n".join(ln for ln in TWO_HOSTS.read_text(encoding="utf-8").splitlines() if "Rank" not in ln)
    run = parse_nccl_tests(info + "\n" + body)
    assert (run.comm_ranks, run.comm_nodes) == (16, 2)
    nodes = nodes_of(run, 16)
    assert (nodes.count, nodes.exact, nodes.how) == (2, True, "NCCL's nNodes 2")


def test_a_sub_communicators_lines_do_not_shrink_the_world() -> None:
    run = NcclTestsRun(layout="new", rows=[])
    for line in (  # NCCL's communicator lines as an NCCL_DEBUG=INFO log gives them, read as add_log_evidence does
        "a:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 16 cudaDev 0 busId 1000 - Init COMPLETE",
        "a:1:1 [0] NCCL INFO comm 0x2 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE",
        "b:2:2 [1] NCCL INFO comm 0x1 rank 9 nranks 16 cudaDev 1 busId 2000 - Init COMPLETE",
    ):
        add_log_evidence(run, line)
    assert run.comm_ranks == 16
    assert run.comm_members == {0: ("a", 0), 9: ("b", 1)}


def test_ranks_per_host_needs_the_layout_to_show() -> None:
    # Every rank at device 0 (one GPU per process by CUDA_VISIBLE_DEVICES): the layout is not shown.
    assert ranks_per_host({0: ("a", 0), 127: ("b", 0)}, 128) is None
    # Two host names in one block of 4: 4 does not fit, 8 does not either (127 is at device 3 of its block).
    assert ranks_per_host({0: ("a", 0), 3: ("b", 3), 127: ("b", 3)}, 128) is None
    assert ranks_per_host({0: ("a", 0), 7: ("a", 7), 127: ("b", 7)}, 128) == 8


def test_a_complete_listing_on_one_host_is_one_node() -> None:
    # The 8x A100 reference log lists its 8 ranks on one host: judged as one NVSwitch node, not a network.
    text = (CASES / "allreduce-8xa100-sxm4-40gb-superbench.log").read_text(encoding="utf-8")
    doc = _doc(text)
    verdict, floor, reason = _judged(doc)
    assert (verdict, floor) == ("pass", 180.0)
    assert "across nodes" not in reason


# --- the fleet: the same floor ----------------------------------------------------------------------------------


def _row(size: int, busbw: float, expected: float) -> FleetCollective:
    return FleetCollective(
        op="all_reduce",
        size_bytes=size,
        time_us=1.0,
        algbw_gbps=busbw,
        busbw_gbps=busbw,
        world_size=16,
        backend="nccl",
        expected_gbps=expected,
        expected_source="4 x 400 Gb/s NICs",
    )


@pytest.mark.parametrize(
    ("size", "busbw", "severity", "verdict"),
    [
        (1 << 30, 39.0, Severity.FAIL, "fail"),  # under 40% of 100 GB/s: the bench floor
        (1 << 30, 45.0, Severity.WARN, "pass"),  # 40-50%: under what healthy fabrics reach, a warning
        (64 << 20, 39.0, Severity.WARN, "pass"),  # a run cut under 256 MiB: not held to the floor
    ],
)
def test_the_fleet_fails_under_the_bench_floor(size: int, busbw: float, severity: Severity, verdict: str) -> None:
    nodes = [report(n, healthy(n)) for n in ("node01", "node02")]
    doc = fleet_document(
        nodes=nodes,
        launcher="torchrun",
        backend="nccl",
        world_size=16,
        elapsed_s=1.0,
        source="live",
        collectives=[_row(size, busbw, 100.0)],
    )
    found = [f for f in doc.findings if f.id == "fleet.internode-bandwidth"]
    assert [f.severity for f in found] == [severity]
    assert doc.verdict == verdict


def test_fleet_from_files_fails_a_6_gbps_run_across_h100_nodes(tmp_path: Path, rigcheck: Rigcheck) -> None:
    from rigcheck.model import snapshot_to_dict

    slow = tmp_path / "slow.txt"
    slow.write_text(_slowed(TWO_HOSTS, 6.0), encoding="utf-8")
    result = rigcheck("bench", "allreduce", "--from", str(slow), "--json")
    (tmp_path / "allreduce.json").write_text(result.stdout, encoding="utf-8")
    slow.unlink()
    for name in ("ztan-mig-235z", "ztan-mig-gq73"):  # 8x H100 snapshots without RDMA ports
        (tmp_path / f"{name}.json").write_text(json.dumps(snapshot_to_dict(healthy(name))), encoding="utf-8")
    result = rigcheck("fleet", "--from", str(tmp_path), "--json")
    doc: dict[str, Any] = result.json
    assert (result.code, doc["verdict"]) == (1, "fail")
    (finding,) = [f for f in doc["findings"] if f["id"] == "fleet.internode-bandwidth"]
    assert finding["severity"] == "fail"
    assert "smallest published fabric for 8x H100/H200 nodes" in finding["message"]
