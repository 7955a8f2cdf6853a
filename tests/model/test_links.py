"""model/links.py: NVLink pairs from the GPUs' own link state, and whether NVLink pairs close a ring."""

from __future__ import annotations

from pathlib import Path

from rigcheck.model.links import link_state_text, nvlink_pairs_from_state, nvlink_pairs_of, nvlink_ring
from rigcheck.readers.from_file import load_file
from tests.support.snapshots import healthy_8x_h100, make_gpu, nvlinks, two_titan_rtx_nv2

CORPUS = Path(__file__).parent.parent / "fixtures" / "corpus"


def test_the_dgx1_mesh_closes_a_ring_and_a_subset_of_it_may_not() -> None:
    snap = load_file(str(CORPUS / "topo" / "026-8xv100-sxm2-hybrid-cube-mesh-nv1-nv2-nic.txt"))
    nv = nvlink_pairs_of(snap.pairs)
    assert len(nv) == 16
    assert nvlink_ring(list(range(8)), nv)
    # NVIDIA/nccl #301's example: GPUs 0, 1, 2, 3 and 7 of a DGX-1; GPU7 has one NVLink into the group.
    assert not nvlink_ring([0, 1, 2, 3, 7], nv)
    assert nvlink_ring([0, 1, 2, 3], nv)


def test_a_bridge_pair_beside_a_pcie_card_is_no_ring() -> None:
    snap = load_file(str(CORPUS / "topo" / "014-3xa6000-nv4-bridge-pair-plus-pcie-ansi.txt"))
    nv = nvlink_pairs_of(snap.pairs)
    assert nv == {(0, 1)}
    assert not nvlink_ring([0, 1, 2], nv)
    assert nvlink_ring([0, 1], nv)


def test_pairs_from_remote_pci_addresses_and_from_switches() -> None:
    # NVML gives each link's far end: the TITAN RTX pair's links end at each other's bus id; the H100s' at switches.
    assert nvlink_pairs_from_state(two_titan_rtx_nv2().gpus) == {(0, 1): 2}
    h100 = nvlink_pairs_from_state(healthy_8x_h100().gpus)
    assert len(h100) == 28
    assert set(h100.values()) == {18}


def test_pairs_from_nvlink_status_text() -> None:
    a6000 = load_file(str(CORPUS / "nvlink" / "002-3xa6000-bridge-pair-third-inactive.txt"))
    assert nvlink_pairs_from_state(a6000.gpus) == {(0, 1): 4}
    # SXM parts in a mesh: `nvlink -s` does not say where the links go, so no pair is guessed.
    v100 = load_file(str(CORPUS / "nvlink" / "001-8xv100-6links-25.781.txt"))
    assert nvlink_pairs_from_state(v100.gpus) == {}
    assert link_state_text(v100.gpus) == "NVLink state: 6 of 6 links active on each of 8 GPUs"
    assert link_state_text(a6000.gpus) == "NVLink state (active/reported links): GPU0 4/4, GPU1 4/4, GPU2 0/4"


def test_two_bridge_cards_need_both_to_have_active_links() -> None:
    up = make_gpu(0, name="NVIDIA GeForce RTX 3090", nvlinks=nvlinks(4, version=3, speed_gbps=14.062))
    down = make_gpu(1, name="NVIDIA GeForce RTX 3090", nvlinks=nvlinks(4, active=False))
    assert nvlink_pairs_from_state([up, down]) == {}
    assert link_state_text([make_gpu(0, nvlinks=None)]) is None
