"""What offload to CPU RAM and NVMe has to work with: RAM and swap, the NVMe drives, their PCIe links, NUMA nodes,
and the filesystems on them with their free space.

Every path is taken relative to ``root`` so tests can point it at a hand-made tree. Sources: proc(5)
(/proc/meminfo MemTotal, MemAvailable, SwapTotal, SwapFree in kB; /proc/mounts, whose fields escape space, tab,
newline and backslash as octal; /proc/swaps, sizes in KiB); the Linux NVMe sysfs class
(/sys/class/nvme/nvmeX/{model,transport,device}, namespaces as nvmeXnY, or nvmeXcYnZ under native multipath
where the block device is nvmeXnZ); Documentation/ABI/stable/sysfs-block (``size`` counts 512-byte sectors
whatever the logical block size; ``slaves`` lists what a device-mapper or md device is built on; ``dm/name``);
Documentation/ABI/testing/sysfs-bus-pci (current_link_speed, max_link_speed, current_link_width, max_link_width,
numa_node); statvfs(3). The serial number is never read: it identifies the unit and says nothing about speed.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from rigcheck.facts.pcie import BDF_RE, PCIE_GENERATIONS
from rigcheck.inputs import read_sys_text
from rigcheck.model.snapshot import Host, Missing, Mount, NvmeDrive, NvmeNamespace, StorageFacts, SwapArea
from rigcheck.probe.sysfs import parse_link_speed

log = logging.getLogger(__name__)

_KIB = 1024
_GIB = 2**30
_SECTOR = 512  # sysfs-block: ``size`` is in 512-byte units
_CONTROLLER_RE = re.compile(r"^nvme[0-9]+$")
_NAMESPACE_RE = re.compile(r"^nvme([0-9]+)(?:c[0-9]+)?n([0-9]+)$")  # nvme0n1, or nvme0c1n1 (a multipath path)
_DISK_RE = re.compile(r"^nvme[0-9]+n[0-9]+$")
_PARTITION_RE = re.compile(r"^(nvme[0-9]+n[0-9]+)p[0-9]+$")
_OCTAL_RE = re.compile(r"\\([0-7]{3})")
_MAX_STACK = 8  # device-mapper / md layers followed down to the drives


def _strip(path: Path) -> tuple[str | None, Missing | None]:
    text, reason = read_sys_text(path)
    if text is None:
        return None, reason
    text = text.strip()
    return (text or None), (None if text else Missing.NOT_SUPPORTED)


# -- /proc/meminfo ---------------------------------------------------------------------------------------------

_MEMINFO_FIELDS = (
    ("memory_available_gib", "MemAvailable"),
    ("swap_total_gib", "SwapTotal"),
    ("swap_free_gib", "SwapFree"),
)


def parse_meminfo(text: str) -> dict[str, int]:
    """Every ``Key: N kB`` line of /proc/meminfo, in bytes (lines without a number are skipped)."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        parts = rest.split()
        if not sep or not parts or not (parts[0].isascii() and parts[0].isdigit()):
            continue
        unit = parts[1].lower() if len(parts) > 1 else ""
        out[key.strip()] = int(parts[0]) * (_KIB if unit == "kb" else 1)
    return out


def probe_memory(host: Host, root: Path = Path("/")) -> None:
    """Fill the host's available memory and swap (GiB) from /proc/meminfo; each unread one gets its reason."""
    text, reason = read_sys_text(root / "proc/meminfo")
    values = parse_meminfo(text) if text is not None else {}
    for name, key in _MEMINFO_FIELDS:
        if key in values:
            setattr(host, name, values[key] / _GIB)
        else:
            host.mark_missing(name, reason or Missing.NOT_SUPPORTED)


# -- /proc/mounts and /proc/swaps -----------------------------------------------------------------------------


def unescape_mount_field(text: str) -> str:
    """``/mnt/my\\040disk`` -> ``/mnt/my disk`` (proc(5): space, tab, newline and backslash come as octal)."""
    return _OCTAL_RE.sub(lambda m: chr(int(m.group(1), 8)), text)


def parse_mounts(text: str) -> list[tuple[str, str, str]]:
    """(device, mount point, fstype) of every /proc/mounts line whose device is a /dev node."""
    out: list[tuple[str, str, str]] = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0].startswith("/dev/"):
            out.append((unescape_mount_field(parts[0]), unescape_mount_field(parts[1]), parts[2]))
    return out


def parse_swaps(text: str) -> list[SwapArea]:
    """The areas of /proc/swaps (``Filename Type Size Used Priority``, sizes in KiB), header skipped."""
    out: list[SwapArea] = []
    for line in text.splitlines()[1:]:
        parts = line.split()
        if len(parts) < 4:
            continue
        area = SwapArea(path=unescape_mount_field(parts[0]), kind=parts[1])
        for name, value in (("size_bytes", parts[2]), ("used_bytes", parts[3])):
            if value.isascii() and value.isdigit():
                setattr(area, name, int(value) * _KIB)
            else:
                area.mark_missing(name, Missing.ERROR)
        out.append(area)
    return out


# -- block devices down to the NVMe namespaces ------------------------------------------------------------------


@dataclass
class _Blocks:
    """How block device names lead to NVMe namespaces: device-mapper names, and what each stacked device is on."""

    root: Path
    dm_names: dict[str, str] = field(default_factory=dict)  # "vg0-scratch" -> "dm-0"

    @classmethod
    def read(cls, root: Path) -> _Blocks:
        blocks = cls(root)
        try:
            entries = sorted((root / "sys/block").iterdir(), key=lambda p: p.name)
        except OSError:
            return blocks
        for dev in entries:
            if dev.name.startswith("dm-"):
                name, _ = _strip(dev / "dm/name")
                if name is not None:
                    blocks.dm_names[name] = dev.name
        return blocks

    def block_name(self, device: str) -> str | None:
        """``/dev/nvme0n1p2`` -> ``nvme0n1p2``; ``/dev/mapper/vg0-x`` -> ``dm-0``; None where it is not known."""
        if device.startswith("/dev/mapper/"):
            return self.dm_names.get(device.removeprefix("/dev/mapper/"))
        name = device.removeprefix("/dev/")
        if "/" not in name:
            return name
        node = self.root / device.lstrip("/")  # /dev/md/data, /dev/disk/by-uuid/...: links to the node
        return node.resolve().name if node.is_symlink() else None

    def namespaces(self, name: str, depth: int = 0) -> set[str]:
        """The NVMe namespaces (``nvme0n1``) a block device sits on: itself, its disk, or what it is built on."""
        if _DISK_RE.match(name):
            return {name}
        m = _PARTITION_RE.match(name)
        if m:
            return {m.group(1)}
        if depth >= _MAX_STACK:
            return set()
        try:
            under = [p.name for p in (self.root / "sys/block" / name / "slaves").iterdir()]
        except OSError:  # not a stacked device (or not readable): on no NVMe drive we can name
            return set()
        found: set[str] = set()
        for below in under:
            found |= self.namespaces(below, depth + 1)
        return found


def _statvfs(root: Path, mount: Mount) -> None:
    try:
        st = os.statvfs(root / mount.mount_point.lstrip("/"))
    except PermissionError:
        reason = Missing.NO_PERMISSION
    except OSError as exc:  # a mount point gone since /proc/mounts was read, a dead network share
        log.debug("statvfs %s: %s", mount.mount_point, exc)
        reason = Missing.ERROR
    else:
        mount.size_bytes = st.f_blocks * st.f_frsize
        mount.free_bytes = st.f_bavail * st.f_frsize
        return
    mount.mark_missing("size_bytes", reason)
    mount.mark_missing("free_bytes", reason)


def _mounts_by_namespace(root: Path, blocks: _Blocks) -> dict[str, list[Mount]]:
    text, _ = read_sys_text(root / "proc/mounts")
    by_ns: dict[str, list[Mount]] = {}
    for device, mount_point, fstype in parse_mounts(text or ""):
        name = blocks.block_name(device)
        spaces = blocks.namespaces(name) if name is not None else set()
        if not spaces:
            continue
        mount = Mount(device=device, mount_point=mount_point, fstype=fstype)
        _statvfs(root, mount)
        for ns in spaces:
            if all(m.mount_point != mount_point for m in by_ns.get(ns, [])):
                by_ns.setdefault(ns, []).append(mount.model_copy(deep=True))
    for mounts in by_ns.values():
        mounts.sort(key=lambda m: m.mount_point)
    return by_ns


# -- the NVMe controllers ---------------------------------------------------------------------------------------


def gen_from_gts(gts: float | None) -> int | None:
    """A PCIe signalling rate (GT/s per lane) as its generation: 16.0 -> 4; None where no generation has it."""
    if gts is None:
        return None
    return next((g.gen for g in PCIE_GENERATIONS.values() if abs(g.transfer_rate_gts - gts) < 0.05), None)


def _width(text: str | None) -> int | None:
    if text is None or not text.isdigit():
        return None
    return int(text) or None


def _read_link(record: NvmeDrive, dev: Path, fields: tuple[tuple[str, str], ...]) -> None:
    for name, fname in fields:
        text, reason = _strip(dev / fname)
        value = gen_from_gts(parse_link_speed(text)) if fname.endswith("speed") and text else _width(text)
        if value is None:
            record.mark_missing(name, reason or Missing.NOT_SUPPORTED)
        else:
            setattr(record, name, value)


_DEVICE_LINK = (
    ("pcie_gen_current", "current_link_speed"),
    ("pcie_gen_max", "max_link_speed"),
    ("pcie_width_current", "current_link_width"),
    ("pcie_width_max", "max_link_width"),
)
_PORT_LINK = (("pcie_gen_port_max", "max_link_speed"), ("pcie_width_port_max", "max_link_width"))


def _namespace(root: Path, name: str, mounts: dict[str, list[Mount]]) -> NvmeNamespace:
    ns = NvmeNamespace(name=name, mounts=mounts.get(name, []))
    text, reason = _strip(root / "sys/block" / name / "size")
    if text is not None and text.isdigit():
        ns.size_bytes = int(text) * _SECTOR
    else:
        ns.mark_missing("size_bytes", reason or Missing.ERROR)
    return ns


def _drive(ctrl: Path, root: Path, mounts: dict[str, list[Mount]]) -> NvmeDrive:
    drive = NvmeDrive(name=ctrl.name)
    drive.model, reason = _strip(ctrl / "model")
    if drive.model is None:
        drive.mark_missing("model", reason or Missing.NOT_SUPPORTED)
    drive.transport, reason = _strip(ctrl / "transport")
    if drive.transport is None:
        drive.mark_missing("transport", reason or Missing.NOT_SUPPORTED)

    dev = ctrl / "device"
    pci = dev.resolve() if dev.exists() else None
    on_pcie = pci is not None and BDF_RE.match(pci.name) is not None and drive.transport in (None, "pcie")
    if pci is not None and on_pcie:
        drive.pci_bus_id = pci.name
        _read_link(drive, pci, _DEVICE_LINK)
        port = pci.parent
        if BDF_RE.match(port.name):
            _read_link(drive, port, _PORT_LINK)
        else:  # a device straight on the root complex (an integrated endpoint): no port above it
            for name, _ in _PORT_LINK:
                drive.mark_missing(name, Missing.NOT_SUPPORTED)
        text, reason = _strip(pci / "numa_node")
        node = int(text) if text is not None and text.lstrip("-").isdigit() else None
        drive.numa_node = node if node is not None and node >= 0 else None
        if drive.numa_node is None:
            drive.mark_missing("numa_node", reason or Missing.NOT_SUPPORTED)
    else:  # NVMe over a fabric (or no device link): no PCIe link, no NUMA node of its own
        drive.mark_unset_missing(
            Missing.NOT_SUPPORTED, ("pci_bus_id", *(n for n, _ in _DEVICE_LINK + _PORT_LINK), "numa_node")
        )

    names: set[str] = set()
    try:
        for entry in ctrl.iterdir():
            m = _NAMESPACE_RE.match(entry.name)
            if m:
                names.add(f"nvme{m.group(1)}n{m.group(2)}")
    except OSError as exc:
        log.debug("cannot list %s: %s", ctrl, exc)
        drive.mark_missing("namespaces", Missing.ERROR)
    drive.namespaces = [_namespace(root, n, mounts) for n in sorted(names, key=_natural)]
    return drive


def _natural(name: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"[0-9]+", name))


def probe_storage(root: Path = Path("/")) -> StorageFacts:
    """Every NVMe controller in /sys/class/nvme with its link, NUMA node, namespaces and mounts, and the swap
    areas. No /sys/class/nvme where /sys/class is there: no NVMe controller (the nvme driver made none)."""
    facts = StorageFacts()
    blocks = _Blocks.read(root)
    mounts = _mounts_by_namespace(root, blocks)
    base = root / "sys/class/nvme"
    try:
        controllers = sorted(
            (p for p in base.iterdir() if _CONTROLLER_RE.match(p.name)), key=lambda p: _natural(p.name)
        )
    except PermissionError:
        facts.mark_missing("nvme", Missing.NO_PERMISSION)
        controllers = None
    except OSError:
        controllers = [] if (root / "sys/class").is_dir() else None
        if controllers is None:
            facts.mark_missing("nvme", Missing.NOT_SUPPORTED)
    if controllers is not None:
        facts.nvme = [_drive(c, root, mounts) for c in controllers]

    text, reason = read_sys_text(root / "proc/swaps")
    if text is None:
        facts.mark_missing("swaps", reason or Missing.NOT_SUPPORTED)
    else:
        facts.swaps = parse_swaps(text)
        for area in facts.swaps:
            area.drive = _swap_drive(area, blocks, mounts, facts.nvme or [])
    return facts


def _swap_drive(area: SwapArea, blocks: _Blocks, mounts: dict[str, list[Mount]], drives: list[NvmeDrive]) -> str | None:
    """The NVMe controller a swap area lives on: its partition's, or (a swap file) its filesystem's."""
    if area.kind == "partition" or area.path.startswith("/dev/"):
        name = blocks.block_name(area.path)
        spaces = blocks.namespaces(name) if name is not None else set()
    else:  # a file: the NVMe filesystem with the longest mount point above it
        best = max(
            (
                (len(m.mount_point), ns)
                for ns, ms in mounts.items()
                for m in ms
                if area.path == m.mount_point or area.path.startswith(m.mount_point.rstrip("/") + "/")
            ),
            default=None,
        )
        spaces = {best[1]} if best is not None else set()
    for drive in drives:
        if any(ns.name in spaces for ns in drive.namespaces):
            return drive.name
    return None
