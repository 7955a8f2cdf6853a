"""Offload to CPU RAM and NVMe (the guide's third way to train bigger models): the RAM, swap and NVMe drives this
machine has, and whether each drive's PCIe link trained at what it can do.

ZeRO-Infinity streams parameters and optimizer state between the GPUs, pinned CPU memory and NVMe drives: how much
RAM is free and how fast each drive's link is bound what offload can hold and move. Read live only
(``System.storage``, ``Host.memory_available_gib``): a snapshot from files gives no finding here.

Finding ids: storage.nvme-link-below-max, storage.offload-capacity, storage.swap.

Sources: Linux Documentation/ABI/testing/sysfs-bus-pci (current_link_speed, max_link_speed, current_link_width,
max_link_width, numa_node); proc(5) (/proc/meminfo, /proc/swaps, /proc/mounts); the PCI Express Base
Specification (facts/pcie.py) for the bandwidth of a link.
"""

from __future__ import annotations

from rigcheck.checks.common import GUIDE, host_finding, list_names, readable_gpus, why_missing
from rigcheck.facts.pcie import PCIE_SOURCE, pcie_bandwidth_gbps
from rigcheck.model import Finding, Severity, Snapshot
from rigcheck.model.snapshot import NvmeDrive, StorageFacts, SwapArea
from rigcheck.units import fmt, plural

FINDING_IDS: tuple[str, ...] = (
    "storage.nvme-link-below-max",
    "storage.offload-capacity",
    "storage.swap",
)

LINK_SOURCE = (
    "Linux Documentation/ABI/testing/sysfs-bus-pci: current_link_speed, max_link_speed, current_link_width, "
    "max_link_width (of the drive and of the port above it)"
)
OFFLOAD_SOURCE = (
    f"{GUIDE}: bigger GPUs, more GPUs, or more CPU and NVMe (offloaded to by DeepSpeed-Infinity); "
    "proc(5) /proc/meminfo, /proc/mounts; Linux sysfs /sys/class/nvme, /sys/block/<dev>/size; statvfs(3)"
)
SWAP_SOURCE = "proc(5): /proc/meminfo SwapTotal, SwapFree; /proc/swaps"

_GIB = 2**30


def _gib(value: float) -> str:
    if value < 1:
        return fmt(value * 1024, "MiB", 0)
    return fmt(value, "GiB", 0 if value >= 10 else 1)


def _bytes(value: int) -> str:
    """Drive and filesystem sizes in decimal units, as drives are sold: ``"3.8 TB"``, ``"512 GB"``."""
    if value >= 10**12:
        return fmt(value / 10**12, "TB", 1)
    return fmt(value / 10**9, "GB", 0 if value >= 10**10 else 1)


def _link(gen: int | None, width: int | None) -> str:
    if gen is None or width is None:
        return ""
    bw = pcie_bandwidth_gbps(gen, width)
    return f"Gen{gen} x{width}" + (f" (~{fmt(bw, 'GB/s', 1)} per direction)" if bw is not None else "")


def _nvme_finding(drive: NvmeDrive, severity: Severity, message: str, **details: str) -> Finding:
    return Finding(
        id="storage.nvme-link-below-max",
        severity=severity,
        category="storage",
        subject=drive.name,
        message=message,
        **details,
    )


def _cap(own: int, port: int | None) -> int:
    """What the link can train at: the lower of the drive's max and its port's (the drive's where that is unknown)."""
    return min(own, port) if port is not None else own


def _check_link(drive: NvmeDrive) -> list[Finding]:
    gen, width = drive.pcie_gen_current, drive.pcie_width_current
    gen_max, width_max = drive.pcie_gen_max, drive.pcie_width_max
    if gen is None or width is None or gen_max is None or width_max is None:
        return []  # a fabric drive (no PCIe link), or the link not readable: said in offload-capacity
    gen_cap, width_cap = _cap(gen_max, drive.pcie_gen_port_max), _cap(width_max, drive.pcie_width_port_max)
    name = f"{drive.name} ({drive.model})" if drive.model else drive.name
    if gen < gen_cap or width < width_cap:
        return [
            _nvme_finding(
                drive,
                Severity.WARN,
                f"{name} PCIe link trained at Gen{gen} x{width}, below the Gen{gen_cap} x{width_cap} both ends can do: "
                "NVMe offload reads and writes at most at the lower figure",
                measured=_link(gen, width),
                expected=_link(gen_cap, width_cap),
                advice=(
                    "reseat the drive (an M.2 drive not fully seated or a U.2 cable trains low), drop adapters and "
                    "risers, check the BIOS setting of that slot (link speed Auto, lane bifurcation x4x4x4x4 for "
                    "a multi-drive card), and the board manual's lane map: M.2 slots often share lanes with "
                    "SATA ports or another slot"
                ),
                source=f"{LINK_SOURCE}; {PCIE_SOURCE}",
            )
        ]
    if gen < gen_max or width < width_max:
        return [
            _nvme_finding(
                drive,
                Severity.INFO,
                f"{name} runs at Gen{gen} x{width}: the slot allows no more (its port's max is Gen{gen_cap} "
                f"x{width_cap}); the drive can do Gen{gen_max} x{width_max}",
                measured=_link(gen, width),
                expected=f"{_link(gen_max, width_max)}, the drive's own max",
                advice=(
                    "a slot wired to the CPU (not the chipset) or of a newer generation gives the drive its full "
                    "speed; the board manual says which slots are which"
                ),
                source=f"{LINK_SOURCE}; {PCIE_SOURCE}",
            )
        ]
    return []


def _drive_text(drive: NvmeDrive) -> str:
    """``"nvme0 Samsung SSD 980 PRO 2TB: 2 TB, Gen4 x4, NUMA 0, /mnt/scratch 1.8 TB free"``."""
    parts: list[str] = []
    sizes = [ns.size_bytes for ns in drive.namespaces if ns.size_bytes is not None]
    if sizes:
        parts.append(_bytes(sum(sizes)))
    if drive.transport not in (None, "pcie"):
        parts.append(f"over {drive.transport}")
    elif drive.pcie_gen_current is not None and drive.pcie_width_current is not None:
        parts.append(f"Gen{drive.pcie_gen_current} x{drive.pcie_width_current}")
    else:
        parts.append("link not read")
    parts.append(f"NUMA {drive.numa_node}" if drive.numa_node is not None else "NUMA node unknown")
    mounts = [m for ns in drive.namespaces for m in ns.mounts]
    if mounts:
        shown = [
            f"{m.mount_point} {_bytes(m.free_bytes)} free" if m.free_bytes is not None else m.mount_point
            for m in mounts
        ]
        parts.append(list_names(shown, 3))
    else:
        parts.append("not mounted")
    return f"{drive.name}{f' {drive.model}' if drive.model else ''}: {', '.join(parts)}"


def _gpu_numa(snapshot: Snapshot) -> str:
    """``"GPUs on NUMA 0 (GPU0, GPU1), 1 (GPU2, GPU3)"``; "" where no GPU's node is known."""
    nodes: dict[int, list[str]] = {}
    for gpu in readable_gpus(snapshot):
        if gpu.numa_node is not None:
            nodes.setdefault(gpu.numa_node, []).append(f"GPU{gpu.index}")
    if not nodes:
        return ""
    return "GPUs on NUMA " + ", ".join(f"{n} ({list_names(g, 4)})" for n, g in sorted(nodes.items()))


def _memory_text(snapshot: Snapshot) -> str:
    host = snapshot.host
    parts: list[str] = []
    if host.memory_total_gib is not None:
        avail = host.memory_available_gib
        parts.append(
            f"RAM {_gib(host.memory_total_gib)}" + (f" ({_gib(avail)} available)" if avail is not None else "")
        )
    elif host.memory_available_gib is not None:
        parts.append(f"RAM {_gib(host.memory_available_gib)} available")
    if host.swap_total_gib is not None:
        parts.append(f"swap {_gib(host.swap_total_gib)}" if host.swap_total_gib > 0 else "no swap")
    return ", ".join(parts)


def _capacity(snapshot: Snapshot, storage: StorageFacts) -> Finding:
    drives = storage.nvme
    if drives is None:
        nvme = f"NVMe drives not read ({why_missing(storage, 'nvme')})"
    elif not drives:
        nvme = "no NVMe drive"
    else:
        nvme = f"{plural(len(drives), 'NVMe drive')}: " + "; ".join(_drive_text(d) for d in drives)
    text = "; ".join(p for p in (_memory_text(snapshot), nvme, _gpu_numa(snapshot)) if p)
    # By mount point: a filesystem on several drives (LVM, md RAID) is listed under each of them.
    free = {m.mount_point: m.free_bytes for d in drives or [] for ns in d.namespaces for m in ns.mounts}
    known = [b for b in free.values() if b is not None]
    return host_finding(
        "storage.offload-capacity",
        Severity.INFO,
        text,
        measured=(f"{_bytes(sum(known))} free on NVMe filesystems" if known else None),
        advice=(
            "offload keeps the optimizer states (and with ZeRO-3 the parameters) in CPU RAM or on a mounted NVMe "
            "filesystem: `rigcheck plan --offload cpu|nvme` sizes them against this machine, `rigcheck bench nvme "
            "--path DIR` measures the drive; a drive and memory on the GPUs' NUMA node spare the link between "
            "the sockets"
        ),
        source=OFFLOAD_SOURCE,
    )


def _swap_text(area: SwapArea) -> str:
    size = f" {_gib(area.size_bytes / _GIB)}" if area.size_bytes is not None else ""
    on = f" on {area.drive}" if area.drive else ""
    return f"{area.path} ({area.kind or 'swap'}{size}{on})"


def _swap(snapshot: Snapshot, storage: StorageFacts) -> list[Finding]:
    total, free = snapshot.host.swap_total_gib, snapshot.host.swap_free_gib
    if total is None or total <= 0:
        return []
    used = f", {_gib(total - free)} in use" if free is not None and total - free > 0 else ""
    areas = storage.swaps or []
    where = f" on {'; '.join(_swap_text(a) for a in areas)}" if areas else ""
    shared = sorted({a.drive for a in areas if a.drive is not None})
    message = f"swap {_gib(total)}{used}{where}"
    if shared:
        message += f"; NVMe offload to {list_names(shared)} would compete with swapping for the drive"
    return [
        host_finding(
            "storage.swap",
            Severity.INFO,
            message,
            measured=f"SwapTotal {_gib(total)}" + (f", SwapFree {_gib(free)}" if free is not None else ""),
            advice=(
                "pinned (page-locked) offload buffers are never swapped out; a host that runs short of RAM "
                "swaps the rest and slows to the drive's speed, and swap on an offload drive takes its bandwidth: "
                "size the offload to fit in RAM (`rigcheck plan --offload`)"
            ),
            source=SWAP_SOURCE,
        )
    ]


def check_storage(snapshot: Snapshot) -> list[Finding]:
    storage = snapshot.system.storage
    if storage is None:
        return []
    out: list[Finding] = []
    for drive in storage.nvme or []:
        out += _check_link(drive)
    out.append(_capacity(snapshot, storage))
    out += _swap(snapshot, storage)
    return out
