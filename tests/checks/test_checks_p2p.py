from __future__ import annotations

from pathlib import Path

from rigcheck.checks.doctor.p2p import check_p2p
from rigcheck.model import Missing, P2PStatus, Severity, Source, System
from rigcheck.readers.from_file import load_file
from tests.support.checkutil import ids, only
from tests.support.snapshots import (
    healthy_8x_h100,
    make_gpu,
    make_pairs,
    make_snapshot,
    pcie_path,
    sysfs_bdf,
    two_3090_phb_throttling,
)

CORPUS = Path(__file__).parent.parent / "fixtures" / "corpus"


def test_healthy_node_one_ok() -> None:
    found = check_p2p(healthy_8x_h100())
    assert ids(found) == ["p2p.ok"]
    assert "28 GPU pairs" in found[0].message


def test_consumer_pair_without_p2p_warns_shm() -> None:
    found = check_p2p(two_3090_phb_throttling())
    f = only(found, "p2p.not-supported")
    assert f.severity is Severity.WARN
    assert f.pair == (0, 1)
    assert "chipset_not_supported" in f.message
    assert "SHM" in f.message
    assert "p2p.ok" not in ids(found)


def test_iommu_on_warns_and_passthrough_is_info() -> None:
    gpus = [make_gpu(0), make_gpu(1)]
    pairs = make_pairs(range(2), "NV18")
    on = check_p2p(make_snapshot(gpus, pairs=pairs, system=System(iommu="on", iommu_detail="intel_iommu=on")))
    f = only(on, "p2p.iommu-on")
    assert f.severity is Severity.WARN
    assert "iommu=pt" in (f.advice or "")
    pt = check_p2p(make_snapshot(gpus, pairs=pairs, system=System(iommu="on", iommu_detail="iommu=pt")))
    assert only(pt, "p2p.iommu-on").severity is Severity.INFO


def test_iommu_on_single_gpu_says_nothing() -> None:
    assert check_p2p(make_snapshot([make_gpu(0)], system=System(iommu="on"))) == []


def test_acs_enabled_on_a_bridge_warns_per_gpu() -> None:
    gpus = [make_gpu(0), make_gpu(1)]
    b0, b1 = sysfs_bdf(gpus[0].pci_bus_id or ""), sysfs_bdf(gpus[1].pci_bus_id or "")
    paths = {b0: pcie_path(b0, 32.0, 16, ["0000:17:00.0"], acs=True), b1: pcie_path(b1, 32.0, 16, ["0000:18:00.0"])}
    found = check_p2p(
        make_snapshot(gpus, pairs=make_pairs(range(2), "PIX"), system=System(iommu="off", pcie_paths=paths))
    )
    f = only(found, "p2p.acs-enabled")
    assert f.severity is Severity.WARN
    assert f.gpu == 0
    assert "0000:17:00.0" in f.message
    assert "root complex" in f.message


def test_acs_unreadable_is_one_unknown() -> None:
    found = check_p2p(two_3090_phb_throttling())
    f = only(found, "p2p.acs-unknown")
    assert f.severity is Severity.UNKNOWN
    assert "no_permission" in f.message
    assert "2 GPUs" in f.message
    assert (f.advice or "").startswith("run rigcheck as root")  # read live: root can read it


def test_run_as_root_only_when_reading_live() -> None:
    live = two_3090_phb_throttling()
    replayed = live.model_copy(update={"source": Source(kind="nvml", replayed_from="rig.json")})
    advice = only(check_p2p(replayed), "p2p.acs-unknown").advice or ""
    assert "run rigcheck as root" not in advice
    assert "sudo rigcheck snapshot" in advice
    # a saved `nvidia-smi topo -m` (topo/014): no sysfs at all; rerunning rigcheck as root would read the same file
    text = load_file(str(CORPUS / "topo" / "014-3xa6000-nv4-bridge-pair-plus-pcie-ansi.txt"))
    advice = only(check_p2p(text), "p2p.acs-unknown").advice or ""
    assert "as root" not in advice
    assert advice.startswith("this input does not hold the PCIe bridges' ACS state: on the machine, run")
    assert "lspci" in advice


def test_p2p_status_missing_is_unknown() -> None:
    gpus = [make_gpu(0), make_gpu(1)]
    found = check_p2p(make_snapshot(gpus, pairs=make_pairs(range(2), "PHB", p2p=None), system=System(iommu="off")))
    assert only(found, "p2p.status-unknown").severity is Severity.UNKNOWN
    iommu = System()
    iommu.mark_missing("iommu", Missing.NO_PERMISSION)
    found = check_p2p(make_snapshot(gpus, pairs=make_pairs(range(2), "PHB", p2p=P2PStatus.OK), system=iommu))
    f = only(found, "p2p.iommu-unknown")
    assert f.severity is Severity.UNKNOWN
    assert "no_permission" in f.message
