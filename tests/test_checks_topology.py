from __future__ import annotations

from rigcheck.checks.topology import check_topology
from rigcheck.model import Severity
from tests.checkutil import ids, only, severities
from tests.snapshots import (
    gpu_lost,
    healthy_8x_h100,
    make_gpu,
    make_pairs,
    make_snapshot,
    make_topology,
    nvlinks,
    two_3090_phb_throttling,
    two_titan_rtx_nv2,
)


def test_guides_rig_titan_rtx_nv2_gives_nvlink_info() -> None:
    found = check_topology(two_titan_rtx_nv2())
    f = only(found, "topology.nvlink")
    assert f.severity is Severity.INFO
    assert f.subject == "GPU0-GPU1"
    assert f.pair == (0, 1)
    assert f.message.startswith("NV2 (2 NVLinks)")
    assert only(found, "topology.summary").severity is Severity.INFO
    assert all(x.severity is Severity.INFO for x in found)


def test_pcie_only_pair_explains_ddp_vs_zero() -> None:
    found = check_topology(two_3090_phb_throttling())
    f = only(found, "topology.pcie-only")
    assert f.severity is Severity.INFO
    assert f.message.startswith("PHB")
    assert "DDP" in (f.advice or "")
    assert "ZeRO" in (f.advice or "")
    assert "topology.mixed-links" not in ids(found)
    assert "topology.cross-numa" not in ids(found)


def test_single_gpu_is_one_info_and_nothing_else() -> None:
    found = check_topology(make_snapshot([make_gpu(0, nvlinks=nvlinks(18, active=False))]))
    assert ids(found) == ["topology.single-gpu"]
    assert found[0].severity is Severity.INFO


def test_no_gpu_gives_nothing() -> None:
    assert check_topology(make_snapshot([])) == []


def test_8x_h100_summary_counts() -> None:
    found = check_topology(healthy_8x_h100())
    assert ids(found).count("topology.nvlink") == 28
    s = only(found, "topology.summary")
    assert "8 GPUs, 28 pairs: 28 NVLink, 0 PCIe only" in s.message
    assert "28x NV18" in s.message
    assert not [f for f in found if f.severity is not Severity.INFO]


def _four_sys() -> list:
    # 8x 4090 style: GPU0-1 on NUMA 0, GPU2-3 on NUMA 1; pairs across sockets are SYS (topo/002).
    def link(a: int, b: int) -> str:
        return "NODE" if (a < 2) == (b < 2) else "SYS"

    gpus = [make_gpu(i, numa_node=0 if i < 2 else 1, nvlinks=None) for i in range(4)]
    return check_topology(make_snapshot(gpus, pairs=make_pairs(range(4), link)))


def test_cross_numa_warns_once_and_names_pairs_and_nodes() -> None:
    found = _four_sys()
    f = only(found, "topology.cross-numa")
    assert f.severity is Severity.WARN
    assert f.subject == "host"
    assert "4 of 6 GPU pairs" in f.message
    assert "GPU0-GPU2" in f.message
    assert "node 0: GPU0, GPU1" in (f.measured or "")
    assert "node 1: GPU2, GPU3" in (f.measured or "")
    assert "NUMA" in (f.advice or "")
    assert ids(found).count("topology.pcie-only") == 6


def test_old_soc_code_counts_as_cross_numa() -> None:
    gpus = [make_gpu(i, nvlinks=None) for i in range(2)]
    found = check_topology(make_snapshot(gpus, pairs=make_pairs(range(2), "SOC")))
    assert only(found, "topology.cross-numa").severity is Severity.WARN


def test_mixed_links_three_a6000_bridge_pair() -> None:
    # topo/014 + nvlink/002: GPU0-GPU1 bridged (NV4), GPU2 on PCIe only with all its links inactive.
    def link(a: int, b: int) -> str:
        return "NV4" if {a, b} == {0, 1} else "NODE"

    gpus = [
        make_gpu(0, nvlinks=nvlinks(4, version=3, speed_gbps=14.062)),
        make_gpu(1, nvlinks=nvlinks(4, version=3, speed_gbps=14.062)),
        make_gpu(2, nvlinks=nvlinks(4, active=False)),
    ]
    pairs = make_pairs(range(3), link)
    snap = make_snapshot(gpus, pairs=pairs, topology=make_topology(pairs, 3, ["0-31,64-95"] * 3, ["0"] * 3))
    found = check_topology(snap)
    m = only(found, "topology.mixed-links")
    assert m.severity is Severity.WARN
    assert "1 pairs on NVLink, 2 on PCIe only" in m.message
    assert "GPU0-GPU2 NODE" in m.message
    assert "GPU1-GPU2 NODE" in m.message
    down = only(found, "topology.nvlink-down")
    assert down.severity is Severity.WARN
    assert down.gpu == 2
    assert "4 NVLinks" in down.message
    assert "topology.cross-numa" not in ids(found)


def test_pairs_from_topology_matrix_when_pair_records_are_absent() -> None:
    pairs = make_pairs(range(2), "NV2")
    topo = make_topology(pairs, 2, ["0-23"] * 2, ["N/A"] * 2)
    found = check_topology(make_snapshot([make_gpu(0, nvlinks=None), make_gpu(1, nvlinks=None)], topology=topo))
    assert only(found, "topology.nvlink").message.startswith("NV2 (2 NVLinks)")


def test_unknown_links_say_why() -> None:
    gpus = [make_gpu(i, nvlinks=None) for i in range(2)]
    found = check_topology(make_snapshot(gpus, pairs=make_pairs(range(2), lambda a, b: None)))
    f = only(found, "topology.link-unknown")
    assert f.severity is Severity.UNKNOWN
    assert "not_in_source" in f.message


def test_lost_gpu_pairs_are_skipped() -> None:
    found = check_topology(gpu_lost())
    assert ids(found).count("topology.nvlink") == 3
    assert not any(f.pair and 2 in f.pair for f in found)
    assert severities(found, "topology.link-unknown") == []
