"""The storage check (checks/doctor/storage.py) on snapshots built by hand and from the fake NVMe trees."""

from __future__ import annotations

from pathlib import Path

from rigcheck.checks.doctor import CHECKS, FINDING_IDS, run_checks
from rigcheck.checks.doctor.storage import check_storage
from rigcheck.model import Missing, Severity, Snapshot
from rigcheck.model.snapshot import Host, Mount, NvmeDrive, NvmeNamespace, StorageFacts, SwapArea
from rigcheck.probe.host import probe_host
from rigcheck.probe.storage import probe_memory, probe_storage
from tests.support.checkutil import ids, only
from tests.support.snapshots import healthy_8x_h100, make_gpu, make_snapshot

FIXTURES = Path(__file__).parent.parent / "fixtures/sysfs"
TB = 10**12


def _drive(name: str = "nvme0", *, gen: int = 4, width: int = 4, port: tuple[int, int] | None = (4, 4)) -> NvmeDrive:
    return NvmeDrive(
        name=name,
        model="Samsung SSD 990 PRO 4TB",
        transport="pcie",
        pci_bus_id="0000:01:00.0",
        pcie_gen_current=gen,
        pcie_width_current=width,
        pcie_gen_max=4,
        pcie_width_max=4,
        pcie_gen_port_max=port[0] if port else None,
        pcie_width_port_max=port[1] if port else None,
        numa_node=0,
        namespaces=[
            NvmeNamespace(
                name=f"{name}n1",
                size_bytes=4 * TB,
                mounts=[Mount(device=f"/dev/{name}n1", mount_point="/mnt/nvme", fstype="xfs", free_bytes=3 * TB)],
            )
        ],
    )


def _snapshot(*drives: NvmeDrive, swap_gib: float = 0.0, swaps: list[SwapArea] | None = None) -> Snapshot:
    snap = make_snapshot(
        host=Host(memory_total_gib=503.5, memory_available_gib=412.2, swap_total_gib=swap_gib, swap_free_gib=swap_gib)
    )
    snap.system.storage = StorageFacts(nvme=list(drives), swaps=swaps or [])
    return snap


def _from_tree(name: str) -> Snapshot:
    root = FIXTURES / name
    snap = make_snapshot([make_gpu(0, numa_node=0), make_gpu(1, numa_node=1)], host=probe_host(root))
    probe_memory(snap.host, root)
    snap.system.storage = probe_storage(root)
    return snap


def test_registered_and_documented() -> None:
    assert CHECKS["storage"] is check_storage
    assert FINDING_IDS["storage"] == (
        "storage.nvme-link-below-max",
        "storage.offload-capacity",
        "storage.swap",
    )


def test_nothing_without_storage_facts() -> None:
    """A snapshot from files has no storage facts: no finding at all, not an `unknown` wall."""
    snap = healthy_8x_h100()
    assert snap.system.storage is None
    assert check_storage(snap) == []
    assert not any(f.category == "storage" for f in run_checks(snap))


def test_full_link_gives_only_the_capacity_line() -> None:
    findings = check_storage(_snapshot(_drive()))
    assert ids(findings) == ["storage.offload-capacity"]
    f = findings[0]
    assert f.severity is Severity.INFO
    assert f.subject == "host"
    assert f.message == (
        "RAM 504 GiB (412 GiB available), no swap; 1 NVMe drive: nvme0 Samsung SSD 990 PRO 4TB: 4 TB, Gen4 x4, "
        "NUMA 0, /mnt/nvme 3 TB free"
    )
    assert f.measured == "3 TB free on NVMe filesystems"


def test_link_trained_low_warns_with_figures() -> None:
    findings = check_storage(_snapshot(_drive(gen=3, width=2)))
    f = only(findings, "storage.nvme-link-below-max", "nvme0")
    assert f.severity is Severity.WARN
    assert "Gen3 x2, below the Gen4 x4 both ends can do" in f.message
    assert f.measured == "Gen3 x2 (~2 GB/s per direction)"
    assert f.expected == "Gen4 x4 (~7.9 GB/s per direction)"
    assert f.advice
    assert f.source
    assert "sysfs-bus-pci" in f.source


def test_width_alone_below_max_warns_even_without_the_port() -> None:
    f = only(check_storage(_snapshot(_drive(width=2, port=None))), "storage.nvme-link-below-max")
    assert f.severity is Severity.WARN
    assert f.expected == "Gen4 x4 (~7.9 GB/s per direction)"


def test_slot_that_cannot_do_more_is_info() -> None:
    f = only(check_storage(_snapshot(_drive(gen=3, port=(3, 4)))), "storage.nvme-link-below-max")
    assert f.severity is Severity.INFO
    assert "the slot allows no more (its port's max is Gen3 x4); the drive can do Gen4 x4" in f.message


def test_fabric_or_unread_link_is_not_judged() -> None:
    fabric = NvmeDrive(name="nvme2", transport="tcp", namespaces=[NvmeNamespace(name="nvme2n1", size_bytes=TB)])
    unread = _drive("nvme1")
    unread.pcie_gen_current = None
    unread.mark_missing("pcie_gen_current", Missing.NO_PERMISSION)
    findings = check_storage(_snapshot(fabric, unread))
    assert ids(findings) == ["storage.offload-capacity"]
    assert "nvme2: 1 TB, over tcp, NUMA node unknown, not mounted" in findings[0].message
    assert "nvme1 Samsung SSD 990 PRO 4TB: 4 TB, link not read" in findings[0].message


def test_capacity_names_the_gpus_numa_nodes() -> None:
    snap = _snapshot(_drive())
    snap.gpus = [make_gpu(i, numa_node=i // 2) for i in range(4)]
    f = only(check_storage(snap), "storage.offload-capacity")
    assert f.message.endswith("; GPUs on NUMA 0 (GPU0, GPU1), 1 (GPU2, GPU3)")


def test_no_nvme_and_unread_nvme() -> None:
    snap = _snapshot()
    assert "; no NVMe drive" in only(check_storage(snap), "storage.offload-capacity").message
    assert snap.system.storage is not None
    snap.system.storage.nvme = None
    snap.system.storage.mark_missing("nvme", Missing.NO_PERMISSION)
    f = only(check_storage(snap), "storage.offload-capacity")
    assert "NVMe drives not read (no_permission)" in f.message
    assert f.measured is None


def test_swap_on_an_nvme_drive() -> None:
    area = SwapArea(path="/dev/nvme0n1p3", kind="partition", size_bytes=16 * 2**30, used_bytes=2**30, drive="nvme0")
    snap = _snapshot(_drive(), swap_gib=16.0, swaps=[area])
    assert snap.host.swap_free_gib is not None
    snap.host.swap_free_gib = 15.0
    f = only(check_storage(snap), "storage.swap")
    assert f.severity is Severity.INFO
    assert f.message == (
        "swap 16 GiB, 1 GiB in use on /dev/nvme0n1p3 (partition 16 GiB on nvme0); "
        "NVMe offload to nvme0 would compete with swapping for the drive"
    )
    assert f.measured == "SwapTotal 16 GiB, SwapFree 15 GiB"
    assert "swap 16 GiB" in only(check_storage(snap), "storage.offload-capacity").message


def test_no_swap_no_swap_finding() -> None:
    assert "storage.swap" not in ids(check_storage(_snapshot(_drive())))


def test_from_the_fake_trees() -> None:
    ok = check_storage(_from_tree("nvme-ok"))
    assert ids(ok) == ["storage.offload-capacity", "storage.swap"]
    assert "nvme0 Samsung SSD 980 PRO 2TB: 2 TB, Gen4 x4, NUMA 0" in ok[0].message
    assert ok[0].message.endswith("GPUs on NUMA 0 (GPU0), 1 (GPU1)")

    degraded = check_storage(_from_tree("nvme-degraded"))
    assert only(degraded, "storage.nvme-link-below-max", "nvme0").severity is Severity.WARN
    assert only(degraded, "storage.nvme-link-below-max", "nvme1").severity is Severity.INFO
    assert "on nvme1" in only(degraded, "storage.swap").message

    none = check_storage(_from_tree("nvme-none"))
    assert ids(none) == ["storage.offload-capacity"]
    assert none[0].message.startswith("RAM 24 GiB (22 GiB available), no swap; no NVMe drive")
