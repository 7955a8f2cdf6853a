from __future__ import annotations

from pathlib import Path

import pytest

from rigcheck.checks.doctor.topology import check_topology
from rigcheck.model import Severity, Snapshot
from rigcheck.readers.from_file import load_file
from tests.support.checkutil import ids, only, severities
from tests.support.snapshots import (
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
    assert "DDP and ZeRO-1/2 move the same bytes" in (f.advice or "")
    assert "ZeRO-3/FSDP 1.5x" in (f.advice or "")
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
    # No ring of NVLink pairs through all three GPUs: a collective over them crosses the NODE links.
    assert "do not close a ring" in (m.advice or "")
    assert "topology.nvlink-mesh" not in ids(found)
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
    assert "nvidia-smi topo -m" in (f.advice or "")
    assert "--from" in (f.advice or "")


def test_lost_gpu_pairs_are_skipped() -> None:
    found = check_topology(gpu_lost())
    assert ids(found).count("topology.nvlink") == 3
    assert not any(f.pair and 2 in f.pair for f in found)
    assert severities(found, "topology.link-unknown") == []


# --- real files: an NVLink mesh, GPUs far from their NIC, link state without a matrix -------------------------

CORPUS = Path(__file__).parent.parent / "fixtures" / "corpus"
V100_MESH = CORPUS / "topo" / "026-8xv100-sxm2-hybrid-cube-mesh-nv1-nv2-nic.txt"


def _load(rel: str) -> Snapshot:
    return load_file(str(CORPUS / rel))


def test_dgx1_hybrid_cube_mesh_says_what_nccl_does() -> None:
    # 8x V100 SXM2, NV1/NV2 for 16 pairs and SYS for 12: the NVLink pairs close a ring through all 8 GPUs, so
    # NCCL's rings stay on NVLink; "the slowest path limits the collective" would be wrong here.
    found = check_topology(load_file(str(V100_MESH)))
    mesh = only(found, "topology.nvlink-mesh")
    assert mesh.severity is Severity.INFO
    assert "16 pairs on NVLink, 12 without" in mesh.message
    assert "ring through all 8 GPUs" in mesh.message
    assert "NCCL builds its rings" in (mesh.advice or "")
    assert "slowest path does not limit" in (mesh.advice or "")
    assert "nccl" in (mesh.source or "").lower()
    assert "topology.mixed-links" not in ids(found)


def test_gpus_that_reach_the_nic_only_across_sockets() -> None:
    found = check_topology(load_file(str(V100_MESH)))
    nic = only(found, "topology.nic-cross-socket")
    assert nic.severity is Severity.WARN
    assert nic.message.startswith("GPU4, GPU5, GPU6, GPU7 reach every NIC (NIC0 mlx5_2) only across the CPU sockets")
    assert "GPU0" not in nic.message  # GPU0-3 reach NIC0 over NODE
    assert "nearer: GPU0, GPU1, GPU2, GPU3" in (nic.measured or "")
    assert "PIX/PXB" in (nic.expected or "")
    assert "NCCL_NET_GDR_LEVEL" in (nic.source or "")


@pytest.mark.parametrize(
    ("rel", "start"),
    [
        ("topo/013-4xa10-all-sys-vm-2nic.txt", "every GPU reaches every NIC (NIC0 mlx5_0, NIC1 mlx5_1)"),
        # every GPU pair SYS, and every GPU but GPU6 (PHB to both NICs) SYS to the NICs
        ("topo/016-8x4090-all-sys-2nic-no-legend.txt", "GPU0, GPU1, GPU2, GPU3, GPU4, GPU5 and 1 more reach"),
        ("topo/004-4x-rtx6000ada-node-sys-4nic-spaces.txt", None),  # each GPU has a NIC on its own socket
        ("topo/005-2x-rtx6000ada-phb-2nic-spaces.txt", None),
        ("topo/007-8xh100-nv18-2numa-no-nics-spaces.txt", None),  # no NIC columns
    ],
)
def test_nic_cross_socket_on_real_topologies(rel: str, start: str | None) -> None:
    found = check_topology(_load(rel))
    assert ("topology.nic-cross-socket" in ids(found)) is (start is not None)
    if start is not None:
        f = only(found, "topology.nic-cross-socket")
        assert f.message.startswith(start)
        assert ("nearer: GPU6" in (f.measured or "")) is ("016" in rel)


def test_bridge_pair_counted_from_link_state_without_a_matrix() -> None:
    # nvlink/002 alone: no topo -m, but GPU0 and GPU1 (RTX A6000, a bridge card) are the only GPUs with active
    # links, so the bridge joins them: one NVLink pair, two pairs not in the input.
    found = check_topology(_load("nvlink/002-3xa6000-bridge-pair-third-inactive.txt"))
    summary = only(found, "topology.summary")
    assert summary.message.startswith("3 GPUs, 3 pairs: 1 NVLink, 0 PCIe only, 2 not in this input (1x NV4)")
    assert "GPU0 4/4, GPU1 4/4, GPU2 0/4" in summary.message
    nv = only(found, "topology.nvlink")
    assert nv.pair == (0, 1)
    assert "NVLink state" in nv.message
    unknown = only(found, "topology.link-unknown")
    assert "2 of 3 GPU pairs" in unknown.message


def test_sxm_mesh_from_link_state_alone_stays_unknown_and_says_how_to_add_it() -> None:
    # nvlink/001: 8x V100 SXM2, 6 active links each, but nvlink -s does not say which GPU each link reaches.
    found = check_topology(_load("nvlink/001-8xv100-6links-25.781.txt"))
    summary = only(found, "topology.summary")
    assert "8 GPUs, 28 pairs: how they are linked is not in this input" in summary.message
    assert "6 of 6 links active on each of 8 GPUs" in summary.message
    assert "0 NVLink" not in summary.message
    assert "nvidia-smi topo -m" in (summary.advice or "")
    assert "topology.nvlink" not in ids(found)


def test_nvlink_advice_is_scaled_to_the_pair_bandwidth() -> None:
    """It said "fine for DDP and for ZeRO/FSDP" for every NVLink pair; a TITAN RTX NV2 bridge (2 x 25 GB/s) is
    below PCIe 5.0 x16, an H100's NV18 nine times that."""
    titan = only(check_topology(two_titan_rtx_nv2()), "topology.nvlink").advice or ""
    h100 = only(check_topology(healthy_8x_h100()), "topology.summary").advice or ""
    assert "50 GB/s per direction" in titan
    assert "rarely what limits" not in titan
    assert "450 GB/s per direction" in h100
    assert "rarely what limits DDP, ZeRO or FSDP" in h100
