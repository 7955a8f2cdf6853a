"""probe/storage.py over the hand-made trees tests/fixtures/sysfs/nvme-ok (one NVMe at Gen4 x4 of Gen4 x4),
nvme-degraded (one at Gen3 x2 of Gen4 x4; one Gen4 drive in a Gen3 slot behind native multipath and LVM) and
nvme-none (a virtio disk only), and on this machine."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rigcheck.model import Missing, snapshot_from_json, snapshot_to_json
from rigcheck.model.snapshot import Host, Snapshot
from rigcheck.probe.live import probe_machine
from rigcheck.probe.storage import (
    gen_from_gts,
    parse_meminfo,
    parse_mounts,
    parse_swaps,
    probe_memory,
    probe_storage,
    unescape_mount_field,
)
from tests.support.fakenvml import SCENARIOS

FIXTURES = Path(__file__).parent.parent / "fixtures/sysfs"
OK, DEGRADED, NONE = FIXTURES / "nvme-ok", FIXTURES / "nvme-degraded", FIXTURES / "nvme-none"
GIB = 2**30


def test_meminfo_parsed_in_bytes() -> None:
    values = parse_meminfo("MemTotal:  1024 kB\nMemAvailable: 512 kB\nHugePages_Total:  3\nbroken line\nX: kB\n")
    assert values == {"MemTotal": 1024 * 1024, "MemAvailable": 512 * 1024, "HugePages_Total": 3}


def test_memory_and_swap_from_meminfo() -> None:
    host = Host()
    probe_memory(host, OK)
    assert host.memory_available_gib == pytest.approx(432013312 * 1024 / GIB)
    assert host.swap_total_gib == pytest.approx(8388604 * 1024 / GIB)
    assert host.swap_free_gib == host.swap_total_gib
    assert host.missing == {}


def test_memory_unreadable_says_why(tmp_path: Path) -> None:
    host = Host()
    probe_memory(host, tmp_path)
    assert (host.memory_available_gib, host.swap_total_gib, host.swap_free_gib) == (None, None, None)
    assert host.missing == {
        "memory_available_gib": Missing.NOT_SUPPORTED,
        "swap_total_gib": Missing.NOT_SUPPORTED,
        "swap_free_gib": Missing.NOT_SUPPORTED,
    }


def test_gen_from_gts() -> None:
    assert [gen_from_gts(x) for x in (2.5, 5.0, 8.0, 16.0, 32.0, 64.0)] == [1, 2, 3, 4, 5, 6]
    assert gen_from_gts(12.0) is None
    assert gen_from_gts(None) is None


def test_mounts_and_swaps_parsing() -> None:
    assert unescape_mount_field(r"/mnt/my\040disk\011x") == "/mnt/my disk\tx"
    mounts = "overlay / overlay rw 0 0\n/dev/nvme0n1p2 /mnt/a\\040b ext4 rw 0 0\nshort line\n"
    assert parse_mounts(mounts) == [("/dev/nvme0n1p2", "/mnt/a b", "ext4")]
    swaps = parse_swaps("Filename Type Size Used Priority\n/swap.img file 2048 x -2\nbad\n")
    assert [(s.path, s.kind, s.size_bytes, s.used_bytes) for s in swaps] == [("/swap.img", "file", 2048 * 1024, None)]
    assert swaps[0].missing == {"used_bytes": Missing.ERROR}


def test_drive_at_full_link() -> None:
    facts = probe_storage(OK)
    assert facts.nvme is not None
    assert len(facts.nvme) == 1
    drive = facts.nvme[0]
    assert drive.name == "nvme0"
    assert drive.model == "Samsung SSD 980 PRO 2TB"  # sysfs pads it with spaces
    assert drive.transport == "pcie"
    assert drive.pci_bus_id == "0000:01:00.0"
    assert (drive.pcie_gen_current, drive.pcie_width_current, drive.pcie_gen_max, drive.pcie_width_max) == (4, 4, 4, 4)
    assert (drive.pcie_gen_port_max, drive.pcie_width_port_max) == (4, 4)
    assert drive.numa_node == 0
    assert drive.missing == {}
    [ns] = drive.namespaces
    assert (ns.name, ns.size_bytes) == ("nvme0n1", 3907029168 * 512)
    # Partitions p1 and p2 are on it; /dev/vda and overlay are not; sorted by mount point.
    assert [(m.device, m.mount_point, m.fstype) for m in ns.mounts] == [
        ("/dev/nvme0n1p1", "/boot/efi", "vfat"),
        ("/dev/nvme0n1p2", "/mnt/scratch", "ext4"),
    ]
    for mount in ns.mounts:  # statvfs of the fixture's directory: the filesystem the tests run on
        assert mount.size_bytes is not None
        assert mount.free_bytes is not None
        assert 0 <= mount.free_bytes <= mount.size_bytes
    assert facts.swaps is not None
    [swap] = facts.swaps
    assert (swap.path, swap.kind, swap.size_bytes, swap.used_bytes, swap.drive) == (
        "/dev/nvme0n1p3",
        "partition",
        8388604 * 1024,
        0,
        "nvme0",
    )


def test_serial_number_never_read() -> None:
    assert (OK / "sys/class/nvme/nvme0/serial").read_text().strip()  # the fixture has one
    dumped = probe_storage(OK).model_dump_json()
    assert "serial" not in dumped
    assert "S5P2NG0R123456X" not in dumped


def test_degraded_link_multipath_lvm_and_swap_file() -> None:
    facts = probe_storage(DEGRADED)
    assert facts.nvme is not None
    slow, slot = facts.nvme
    assert (slow.name, slow.pci_bus_id, slow.numa_node) == ("nvme0", "0000:41:00.0", 1)
    assert (slow.pcie_gen_current, slow.pcie_width_current, slow.pcie_gen_max, slow.pcie_width_max) == (3, 2, 4, 4)
    assert (slow.pcie_gen_port_max, slow.pcie_width_port_max) == (4, 4)
    assert [m.mount_point for m in slow.namespaces[0].mounts] == ["/scratch space"]  # \040 in /proc/mounts

    assert (slot.pcie_gen_current, slot.pcie_gen_max, slot.pcie_gen_port_max) == (3, 4, 3)
    assert slot.numa_node is None  # numa_node -1: no affinity known
    assert slot.missing == {"numa_node": Missing.NOT_SUPPORTED}
    # Native multipath: the controller holds nvme1c1n1, the block device is nvme1n1; LVM dm-0 sits on it.
    [ns] = slot.namespaces
    assert (ns.name, ns.size_bytes) == ("nvme1n1", 1953525168 * 512)
    assert [(m.device, m.mount_point) for m in ns.mounts] == [("/dev/mapper/vg0-data", "/data")]
    assert facts.swaps is not None
    [swap] = facts.swaps
    assert (swap.path, swap.kind, swap.used_bytes, swap.drive) == ("/data/swapfile", "file", 1024 * 1024, "nvme1")


def test_machine_without_nvme() -> None:
    facts = probe_storage(NONE)
    assert facts.nvme == []
    assert facts.swaps == []
    assert facts.missing == {}


def test_no_sysfs_at_all(tmp_path: Path) -> None:
    facts = probe_storage(tmp_path)
    assert facts.nvme is None
    assert facts.swaps is None
    assert facts.missing == {"nvme": Missing.NOT_SUPPORTED, "swaps": Missing.NOT_SUPPORTED}


def test_unreadable_link_files_and_fabric_drive(tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(OK, root, symlinks=True)
    pci = root / "sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0"
    (pci / "current_link_speed").write_text("Unknown\n")
    (pci / "max_link_width").unlink()
    [drive] = probe_storage(root).nvme or []
    assert drive.pcie_gen_current is None
    assert drive.pcie_width_max is None
    assert drive.missing == {"pcie_gen_current": Missing.NOT_SUPPORTED, "pcie_width_max": Missing.NOT_SUPPORTED}

    ctrl = pci / "nvme/nvme0"
    (ctrl / "transport").write_text("tcp\n")
    [fabric] = probe_storage(root).nvme or []
    assert fabric.transport == "tcp"
    assert fabric.pci_bus_id is None
    assert fabric.numa_node is None
    assert fabric.pcie_gen_current is None
    assert fabric.missing["pcie_gen_port_max"] is Missing.NOT_SUPPORTED


def test_live_snapshot_carries_the_facts_and_round_trips() -> None:
    snap = probe_machine(SCENARIOS["no_driver"](), sysfs_root=OK, kernel_log=False)
    assert snap.system.storage is not None
    assert snap.system.storage.nvme is not None
    assert snap.system.storage.nvme[0].name == "nvme0"
    assert snap.host.memory_available_gib == pytest.approx(412.0, abs=0.1)
    assert snapshot_from_json(snapshot_to_json(snap)) == snap


def test_unread_fields_stay_out_of_the_json() -> None:
    """A snapshot from files (nothing read live) is written exactly as before these fields existed."""
    text = snapshot_to_json(Snapshot())
    for name in ("storage", "memory_available_gib", "swap_total_gib", "swap_free_gib"):
        assert name not in text


def test_this_machine_does_not_crash() -> None:
    host = Host()
    probe_memory(host)
    facts = probe_storage()
    assert facts.model_dump_json()
    if Path("/proc/meminfo").exists():
        assert host.memory_available_gib is not None
    for drive in facts.nvme or []:
        assert drive.name.startswith("nvme")
