"""What holds a directory: its mount (filesystem type, mounted device), the block device and whole disk under
it, the disk's model and whether it spins, and for an NVMe drive its PCIe link and that link's ceiling.

Sources: proc(5) ``/proc/mounts`` (fstab layout: device, mount point, type, options; spaces in a mount point
written as ``\\040``); the Linux block sysfs ABI (Documentation/ABI/stable/sysfs-block: ``/sys/class/block/<dev>``,
``partition`` in a partition's directory, which sits inside its disk's; ``queue/rotational``; ``device/model``;
``slaves/`` of a device-mapper or md device); the NVMe class (``/sys/class/nvme/nvmeX/device``: the
controller's PCI function) and the PCI sysfs ABI (Documentation/ABI/testing/sysfs-bus-pci:
``current_link_speed``, ``current_link_width``, ``max_link_speed``, ``max_link_width``). GB/s from
rigcheck.facts.pcie.

Every path is read under ``root`` so tests can point it at a hand-made tree. Nothing here raises for a file
that cannot be read: the field is null and ``missing`` says why.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from rigcheck.facts.pcie import PCIE_SOURCE, PcieLink, pcie_bandwidth_gbps
from rigcheck.inputs import read_sys_text
from rigcheck.model.bench import StorageDevice
from rigcheck.model.snapshot import Missing
from rigcheck.probe.storage import gen_from_gts, unescape_mount_field
from rigcheck.probe.sysfs import parse_link_speed

_NVME_DISK_RE = re.compile(r"^nvme(\d+)(?:c\d+)?n\d+$")
_NVME_CTRL_RE = re.compile(r"^nvme\d+$")


@dataclass(frozen=True)
class Mount:
    source: str
    mount_point: str
    fs_type: str


@dataclass
class _Found:
    """The fields as they are read, and why each null one is null."""

    values: dict[str, object] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)

    def set(self, key: str, value: object, reason: str) -> None:
        self.values[key] = value
        if value is None:
            self.missing.setdefault(key, reason)


def parse_mounts(text: str) -> list[Mount]:
    """The entries of a /proc/mounts text; malformed lines are skipped."""
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 3:
            out.append(Mount(unescape_mount_field(parts[0]), unescape_mount_field(parts[1]), parts[2]))
    return out


def mount_of(path: str, mounts: list[Mount]) -> Mount | None:
    """The mount holding ``path`` (absolute, resolved): the longest mount point that prefixes it; of several
    mounts on one point, the last (it hides the earlier ones)."""
    best: Mount | None = None
    for m in mounts:
        point = m.mount_point.rstrip("/") or "/"
        inside = point in {"/", path} or path.startswith(point + "/")
        if inside and (best is None or len(point) >= len(best.mount_point.rstrip("/") or "/")):
            best = m
    return best


_WHY = {Missing.NOT_SUPPORTED: "absent", Missing.NO_PERMISSION: "permission denied", Missing.ERROR: "I/O error"}


def _read(path: Path) -> tuple[str | None, str]:
    """The stripped text of a sysfs file, or None and why ("device/model: absent")."""
    text, reason = read_sys_text(path)
    if text is None:
        return None, f"{path.parent.name}/{path.name}: {_WHY.get(reason, 'unreadable') if reason else 'unreadable'}"
    return text.strip(), ""


def link_gen(text: str) -> int | None:
    """``"16.0 GT/s PCIe"`` -> 4; an unknown rate ("Unknown") -> None."""
    return gen_from_gts(parse_link_speed(text))


def _link(dev: Path, which: str) -> tuple[PcieLink | None, str]:
    speed, why = _read(dev / f"{which}_link_speed")
    width_text, why_width = _read(dev / f"{which}_link_width")
    if speed is None or width_text is None:
        return None, why or why_width
    gen = link_gen(speed)
    try:
        width = int(width_text)
    except ValueError:
        width = 0
    if gen is None or width <= 0:
        return None, f"{which} link not understood: {speed!r} x{width_text!r}"
    return PcieLink(gen, width, pcie_bandwidth_gbps(gen, width)), ""


def _block_name(source: str, root: Path, st_dev: int | None) -> tuple[str | None, str]:
    """The block device a mount's source names (``/dev/nvme0n1p2``, ``/dev/mapper/vg-lv`` -> ``dm-0``); else
    the one the path's st_dev names in /sys/dev/block (``/dev/root``, an overlay's lower device)."""
    sys_block = root / "sys/class/block"
    if source.startswith("/dev/"):
        dev_path = root / source.lstrip("/")
        name = Path(os.path.realpath(dev_path)).name if dev_path.is_symlink() else Path(source).name
        if (sys_block / name).exists():
            return name, ""
    if st_dev is not None:
        by_number = root / "sys/dev/block" / f"{os.major(st_dev)}:{os.minor(st_dev)}"
        if by_number.exists():
            return by_number.resolve().name, ""
    return None, f"{source!r} is not a block device sysfs lists (a virtual, network or overlay filesystem)"


def _disk_of(name: str, root: Path) -> tuple[str | None, str]:
    """The whole disk under a block device: a partition's parent; the one device under a device-mapper or md
    device (LVM, dm-crypt), followed down; None when it is made of several (RAID, striping)."""
    sys_block = root / "sys/class/block"
    for _ in range(8):  # device-mapper stacks are shallow; a loop in a fake tree must end
        entry = sys_block / name
        if (entry / "partition").exists():
            return entry.resolve().parent.name, ""
        slaves_dir = entry / "slaves"
        slaves = sorted(p.name for p in slaves_dir.iterdir()) if slaves_dir.is_dir() else []
        if not slaves:
            return name, ""
        if len(slaves) > 1:
            return None, f"{name} is made of {len(slaves)} devices ({', '.join(slaves)}): no one disk"
        name = slaves[0]
    return None, f"{name}: device stack too deep"


def _nvme_controller(disk: str, root: Path) -> str | None:
    """nvme0n1 -> nvme0: the controller its ``device`` link points at, else the one its name says."""
    device = root / "sys/block" / disk / "device"
    if device.exists():
        target = device.resolve().name
        if _NVME_CTRL_RE.match(target):
            return target
    m = _NVME_DISK_RE.match(disk)
    return f"nvme{m.group(1)}" if m else None


def storage_of(path: Path, root: Path = Path("/"), *, st_dev: int | None = None) -> StorageDevice:
    """The filesystem and device under ``path`` (an existing directory; resolved here). ``st_dev``: the
    path's ``os.stat().st_dev`` (the CLI passes it), used when the mount's source names no sysfs device."""
    real = os.path.realpath(path)
    f = _Found()
    mounts_text, why_mounts = _read(root / "proc/mounts")
    mount = mount_of(real, parse_mounts(mounts_text)) if mounts_text is not None else None
    why_mount = "no /proc/mounts entry holds it" if mounts_text is not None else why_mounts
    f.set("mount_point", mount.mount_point if mount else None, why_mount)
    f.set("fs_type", mount.fs_type if mount else None, why_mount)
    f.set("mount_source", mount.source if mount else None, why_mount)
    name, why = _block_name(mount.source, root, st_dev) if mount else (None, why_mount)
    f.set("device", name, why)
    disk, why = _disk_of(name, root) if name else (None, why)
    f.set("disk", disk, why)
    controller: str | None = None
    if disk is None:
        for key in ("model", "rotational"):
            f.set(key, None, why)
    else:
        model, why_model = _read(root / "sys/block" / disk / "device/model")
        controller = _nvme_controller(disk, root)
        if model is None and controller is not None:
            model, why_model = _read(root / "sys/class/nvme" / controller / "model")
        f.set("model", model, why_model)
        rot, why_rot = _read(root / "sys/block" / disk / "queue/rotational")
        f.set("rotational", None if rot is None else rot == "1", why_rot)
        why = f"{disk} is not an NVMe drive"
    f.set("nvme_controller", controller, why)
    link_keys = ("pci_bus_id", "pcie_link", "pcie_link_max", "pcie_theoretical_gbps", "pcie_source")
    if controller is None:
        for key in link_keys:
            f.set(key, None, why)
    else:
        pci = root / "sys/class/nvme" / controller / "device"
        bdf = pci.resolve().name if pci.exists() else None
        f.set("pci_bus_id", bdf, f"{controller} has no PCI device in sysfs (NVMe over fabrics?)")
        current, why_current = _link(pci, "current")
        best, why_best = _link(pci, "max")
        f.set("pcie_link", current.label if current else None, why_current)
        f.set("pcie_link_max", best.label if best else None, why_best)
        # The trained link, not max gen x current width as for a GPU (facts.pcie.gpu_pcie_link): a drive does
        # not drop its link rate when idle, so a lower current rate is a slot or a drive below its best.
        ceiling = current.gbps if current else None
        f.set("pcie_theoretical_gbps", ceiling, why_current or "the link's generation or width is not known")
        f.set("pcie_source", PCIE_SOURCE if ceiling is not None else None, "no ceiling computed")
    return StorageDevice.model_validate({"path": real, **f.values, "missing": f.missing})
