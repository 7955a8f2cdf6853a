"""PCIe fabric facts from sysfs: each GPU's path to its root port, link speed and width per hop, ACS on
the bridges, whether the IOMMU is on, and the NVIDIA GPUs on the bus with the driver bound to each.

Every path is taken relative to ``root`` so tests can point it at a hand-made tree. Sources: the
Linux PCI sysfs ABI (Documentation/ABI/testing/sysfs-bus-pci: current_link_speed, max_link_speed,
current_link_width, max_link_width, numa_node, config) and the PCI Express Base Specification for the
extended capability list (starts at 0x100; header = id:16, version:4, next:12) and the ACS capability
(id 0x000D; capability register at +4, control register at +6; bit 2 = P2P Request Redirect). A device's
``vendor``, ``device`` and ``class`` files and its ``driver`` link are the same ABI's; NVIDIA's PCI vendor ID is
0x10de and base class 03h is a display controller (PCI Code and ID Assignment Specification: 0300 VGA, 0302 3D
controller, 0380 other), which leaves out the GPUs' audio functions (0403) and NVSwitches (0680).
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Literal

from rigcheck.facts.pcie import BDF_RE as _BDF_RE
from rigcheck.facts.pcie import normalize_bdf
from rigcheck.inputs import read_sys_bytes, read_sys_text
from rigcheck.model.snapshot import IbPort, Missing, PcieHop, PciGpu, System

log = logging.getLogger(__name__)

_SPEED_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*GT/s")

_EXT_CAP_START = 0x100
_EXT_CAP_ID_ACS = 0x000D
_ACS_CTRL_P2P_REQUEST_REDIRECT = 0x4
_CONFIG_COMMON_LEN = 64  # what an unprivileged reader gets from sysfs config
_CONFIG_LEGACY_LEN = 256  # conventional PCI config space: no extended capabilities
NVIDIA_VENDOR_ID = 0x10DE
DISPLAY_BASE_CLASS = 0x03


def _is_bdf(name: str) -> bool:
    return _BDF_RE.match(name) is not None


def _read_text(path: Path) -> tuple[str | None, Missing | None]:
    text, reason = read_sys_text(path)
    return (text.strip() if text is not None else None), reason


def parse_link_speed(text: str) -> float | None:
    """``"16.0 GT/s PCIe"`` or ``"8 GT/s"`` -> GT/s; ``"Unknown"`` -> None."""
    m = _SPEED_RE.match(text)
    return float(m.group(1)) if m else None


def _parse_width(text: str) -> int | None:
    try:
        width = int(text)
    except ValueError:
        return None
    return width if width > 0 else None


def read_numa_node(bus_id: str, root: Path = Path("/")) -> int | None:
    """The NUMA node sysfs gives a PCI device; None where unknown (absent, or ``-1``)."""
    try:
        bdf = normalize_bdf(bus_id)
    except ValueError:
        return None
    text, _ = _read_text(root / "sys/bus/pci/devices" / bdf / "numa_node")
    if text is None:
        return None
    try:
        node = int(text)
    except ValueError:
        return None
    return node if node >= 0 else None


def acs_redirect_from_config(config: bytes) -> tuple[bool | None, Missing | None]:
    """Walk the extended capability list of a config-space dump for ACS.

    Returns (whether P2P Request Redirect is on, None) or (None, reason). A device with full
    extended config space but no ACS capability cannot redirect: (False, None).
    """
    if len(config) <= _CONFIG_COMMON_LEN:
        return None, Missing.NO_PERMISSION  # sysfs hands non-root readers only the first 64 bytes
    if len(config) <= _CONFIG_LEGACY_LEN:
        return None, Missing.NOT_SUPPORTED  # conventional PCI: no extended capabilities
    offset = _EXT_CAP_START
    seen: set[int] = set()
    while offset and offset not in seen and offset + 8 <= len(config):
        seen.add(offset)
        header = int.from_bytes(config[offset : offset + 4], "little")
        if header in (0, 0xFFFFFFFF):
            break
        cap_id = header & 0xFFFF
        if cap_id == _EXT_CAP_ID_ACS:
            control = int.from_bytes(config[offset + 6 : offset + 8], "little")
            return (control & _ACS_CTRL_P2P_REQUEST_REDIRECT) != 0, None
        offset = (header >> 20) & 0xFFC
    return False, None


def _read_hop(dev: Path, *, is_bridge: bool) -> PcieHop:
    hop = PcieHop(bdf=dev.name)
    for field, fname, parse in (
        ("link_speed_gts", "current_link_speed", parse_link_speed),
        ("link_speed_max_gts", "max_link_speed", parse_link_speed),
        ("link_width", "current_link_width", _parse_width),
        ("link_width_max", "max_link_width", _parse_width),
    ):
        text, reason = _read_text(dev / fname)
        value = parse(text) if text is not None else None
        if value is None:
            hop.mark_missing(field, reason or Missing.NOT_SUPPORTED)
        else:
            setattr(hop, field, value)
    if is_bridge:  # ACS on the GPU endpoint itself does not matter for P2P between GPUs
        config, reason = read_sys_bytes(dev / "config")
        acs, acs_reason = acs_redirect_from_config(config) if config is not None else (None, reason)
        hop.acs_enabled = acs
        if acs is None:
            hop.mark_missing("acs_enabled", acs_reason or Missing.ERROR)
    return hop


def pcie_path(bus_id: str, root: Path = Path("/")) -> list[PcieHop] | None:
    """The device and its parents up to the root port, the device first; None if sysfs lacks it."""
    link = root / "sys/bus/pci/devices" / normalize_bdf(bus_id)
    if not link.exists():
        return None
    dev = link.resolve()
    hops: list[PcieHop] = []
    while _is_bdf(dev.name):
        hops.append(_read_hop(dev, is_bridge=bool(hops)))
        dev = dev.parent
    return hops


_CMDLINE_KEYS = ("iommu", "intel_iommu", "amd_iommu")


IommuState = Literal["on", "off", "unknown"]


def _iommu(root: Path) -> tuple[IommuState, str | None]:
    state: IommuState = "unknown"
    dirs = [root / "sys/class/iommu", root / "sys/kernel/iommu_groups"]
    present = [d for d in dirs if d.is_dir()]
    try:
        if any(any(d.iterdir()) for d in present):
            state = "on"
        elif present:
            state = "off"
    except PermissionError:
        state = "unknown"
    hints: list[str] = []
    cmdline, _ = _read_text(root / "proc/cmdline")
    if cmdline:
        hints = [tok for tok in cmdline.split() if tok.split("=", 1)[0] in _CMDLINE_KEYS]
    detail = f"kernel command line: {' '.join(hints)}" if hints else None
    return state, detail


def probe_sysfs(bus_ids: list[str], root: Path = Path("/")) -> System:
    """PCIe paths for the given GPUs (keyed by the bus id as passed in) and the IOMMU state."""
    iommu, detail = _iommu(root)
    system = System(iommu=iommu, iommu_detail=detail)
    for bus_id in bus_ids:
        try:
            path = pcie_path(bus_id, root)
        except ValueError:
            log.debug("skipping malformed bus id %r", bus_id)
            continue
        if path is not None:
            system.pcie_paths[bus_id] = path
    if not system.pcie_paths and bus_ids:
        system.mark_missing("pcie_paths", Missing.NOT_SUPPORTED)
    return system


def _hex(text: str | None) -> int | None:
    try:
        return int(text, 16) if text else None
    except ValueError:
        return None


def _bound_driver(dev: Path) -> str | None:
    """The kernel driver bound to a PCI device (its ``driver`` link's target), None when none is."""
    try:
        return Path(os.readlink(dev / "driver")).name
    except OSError:  # no link: nothing bound (or unreadable, which reads the same)
        return None


def pci_nvidia_gpus(root: Path = Path("/")) -> tuple[list[PciGpu] | None, Missing | None]:
    """Every NVIDIA display or 3D controller on the PCI bus, whichever driver has it (or none); None and why
    when the bus cannot be listed (not Linux, or a sandbox without sysfs)."""
    devices = root / "sys/bus/pci/devices"
    try:
        entries = sorted(devices.iterdir(), key=lambda p: p.name)
    except PermissionError:
        return None, Missing.NO_PERMISSION
    except OSError:
        return None, Missing.NOT_SUPPORTED
    found: list[PciGpu] = []
    for dev in entries:
        vendor, _ = _read_text(dev / "vendor")
        pci_class, _ = _read_text(dev / "class")
        class_code = _hex(pci_class)
        if _hex(vendor) != NVIDIA_VENDOR_ID or class_code is None or class_code >> 16 != DISPLAY_BASE_CLASS:
            continue
        device, _ = _read_text(dev / "device")
        found.append(
            PciGpu(
                bdf=dev.name,
                device_id=device.lower() if device else None,
                pci_class=f"0x{class_code:06x}",
                driver=_bound_driver(dev),
            )
        )
    return found, None


# RDMA NICs (InfiniBand and RoCE): the Linux InfiniBand sysfs ABI (Documentation/ABI/stable/sysfs-class-infiniband:
# ports/<N>/state "4: ACTIVE", phys_state "5: LinkUp", rate "200 Gb/sec (4X HDR)", link_layer "InfiniBand" or
# "Ethernet"). GPUDirect RDMA needs the peer-memory module: nvidia_peermem (shipped with the driver since R470) or
# the older Mellanox nv_peer_mem (NVIDIA GPUDirect RDMA documentation; NCCL docs, "GPUDirect RDMA").
PEERMEM_MODULES = ("nvidia_peermem", "nv_peer_mem")
_RATE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*Gb/sec")


def _after_colon(text: str) -> str | None:
    """``"4: ACTIVE"`` -> ``"ACTIVE"``; a bare word is kept; empty -> None."""
    value = text.split(":", 1)[1] if ":" in text else text
    return value.strip() or None


def parse_ib_rate(text: str) -> float | None:
    """``"200 Gb/sec (4X HDR)"`` -> 200.0; ``"2.5 Gb/sec (1X SDR)"`` -> 2.5; anything else None."""
    m = _RATE_RE.match(text)
    return float(m.group(1)) if m else None


def _read_ib_port(device: str, port_dir: Path) -> IbPort:
    port = IbPort(device=device, port=int(port_dir.name))
    for field, fname, parse in (
        ("state", "state", _after_colon),
        ("phys_state", "phys_state", _after_colon),
        ("rate_gbps", "rate", parse_ib_rate),
        ("link_layer", "link_layer", lambda t: t or None),
    ):
        text, reason = _read_text(port_dir / fname)
        value = parse(text) if text is not None else None
        if value is None:
            port.mark_missing(field, reason or Missing.ERROR)
        else:
            setattr(port, field, value)
    return port


def ib_ports(root: Path = Path("/")) -> tuple[list[IbPort] | None, Missing | None]:
    """Every port of every RDMA device in /sys/class/infiniband, sorted; (None, why) when there is no such class
    (no RDMA driver loaded, or not Linux) or it cannot be listed."""
    base = root / "sys/class/infiniband"
    try:
        devices = sorted(base.iterdir(), key=lambda p: p.name)
    except PermissionError:
        return None, Missing.NO_PERMISSION
    except OSError:
        return None, Missing.NOT_SUPPORTED
    found: list[IbPort] = []
    for dev in devices:
        try:
            ports = sorted((p for p in (dev / "ports").iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
        except OSError:
            log.debug("cannot list ports of %s", dev)
            continue
        found.extend(_read_ib_port(dev.name, p) for p in ports)
    return found, None


def peermem_module(root: Path = Path("/")) -> tuple[bool | None, str | None]:
    """(loaded, module name) for the GPUDirect RDMA peer-memory module: /sys/module/<name>, then /proc/modules.
    (None, None) when neither can be read, so "not loaded" is said only where we could look."""
    for name in PEERMEM_MODULES:
        if (root / "sys/module" / name).is_dir():
            return True, name
    modules, _ = _read_text(root / "proc/modules")
    if modules is not None:
        loaded = {line.split()[0] for line in modules.splitlines() if line.split()}
        for name in PEERMEM_MODULES:
            if name in loaded:
                return True, name
        return False, None
    if (root / "sys/module").is_dir():  # no /proc/modules, but sysfs lists the modules and neither is there
        return False, None
    return None, None


def probe_rdma(system: System, root: Path = Path("/")) -> None:
    """Fill ``system.ib_ports`` and the peer-memory module fields; left None where there is no RDMA class."""
    ports, reason = ib_ports(root)
    if ports is None:
        if reason is Missing.NO_PERMISSION:
            system.mark_missing("ib_ports", reason)
        return
    system.ib_ports = ports
    system.peermem_loaded, system.peermem_module = peermem_module(root)
    if system.peermem_loaded is None:
        system.mark_missing("peermem_loaded", Missing.NOT_SUPPORTED)
