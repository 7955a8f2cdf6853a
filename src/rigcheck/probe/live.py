"""Probe the machine rigcheck runs on: host, software versions, NVML and sysfs, in one Snapshot.

Never imports torch. When NVML cannot start, the snapshot still carries the host and software facts,
no GPUs, and ``gpu_absent_reason`` with the one-line reason. Every live snapshot carries the driver's state
(``Snapshot.driver``: NVML's start, the kernel module, the NVIDIA GPUs on the PCI bus), so a check can tell a
machine without an NVIDIA GPU from a GPU box whose driver is broken.
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from pathlib import Path

from rigcheck.errors import ProbeError
from rigcheck.model.snapshot import Missing, NvmlState, Snapshot, Source
from rigcheck.probe.driver import probe_driver
from rigcheck.probe.fabric_manager import read_fabric_manager_live
from rigcheck.probe.host import probe_host
from rigcheck.probe.nvml import NvmlLibrary, probe_nvml
from rigcheck.probe.nvml.calls import NoGpuError
from rigcheck.probe.storage import probe_memory, probe_storage
from rigcheck.probe.sysfs import probe_rdma, probe_sysfs
from rigcheck.probe.versions import probe_versions

log = logging.getLogger(__name__)

# Software fields NVML fills; the rest come from the Python environment.
_NVML_SOFTWARE = ("driver_version", "nvml_version", "cuda_driver_version")


def _nvml_state(exc: ProbeError) -> tuple[NvmlState, str | None]:
    return (exc.state, exc.error) if isinstance(exc, NoGpuError) else ("error", str(exc))


def probe_machine(
    nvml: NvmlLibrary | None = None, sysfs_root: Path = Path("/"), *, kernel_log: bool | None = None
) -> Snapshot:
    """Everything rigcheck can read here. ``sysfs_root`` also roots /proc and /etc (for tests).

    ``kernel_log``: read the kernel log's GPU events (dmesg / journalctl -k); by default only on the real machine
    (no fake NVML given), so the fake scenarios stay independent of the host running the tests.
    """
    nvml_state: tuple[NvmlState, str | None] = ("ok", None)
    try:
        snap = probe_nvml(nvml, sysfs_root=sysfs_root)
    except ProbeError as exc:
        log.info("no GPUs read: %s", exc)
        nvml_state = _nvml_state(exc)
        snap = Snapshot(gpu_absent_reason=str(exc))
        for field in _NVML_SOFTWARE:  # no driver to ask
            snap.software.mark_missing(field, Missing.NOT_SUPPORTED)
    snap.driver = probe_driver(sysfs_root, *nvml_state)
    snap.source = Source(kind="nvml")
    snap.created_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    snap.host = probe_host(sysfs_root)
    probe_memory(snap.host, sysfs_root)

    software = probe_versions()
    for field in _NVML_SOFTWARE:
        setattr(software, field, getattr(snap.software, field))
        if field in snap.software.missing:
            software.missing[field] = snap.software.missing[field]
    snap.software = software

    bus_ids = [g.pci_bus_id for g in snap.gpus if g.pci_bus_id is not None]
    snap.system = probe_sysfs(bus_ids, sysfs_root)
    probe_rdma(snap.system, sysfs_root)
    snap.system.storage = probe_storage(sysfs_root)
    # Fabric Manager only where the host shows NVSwitches (None elsewhere: nothing for it to manage).
    snap.fabric_manager = read_fabric_manager_live(sysfs_root / "proc/driver/nvidia-nvswitch/devices")
    if kernel_log if kernel_log is not None else nvml is None:
        from rigcheck.probe.kernel_log import read_live

        snap.kernel_events, snap.kernel_log = read_live()
    return snap


def absent_snapshot(exc: ProbeError, sysfs_root: Path = Path("/")) -> Snapshot:
    """What is known of this machine when NVML gave no GPU (the poller's open failed): why, and the driver's
    state, for the one line the CLI prints."""
    return Snapshot(
        source=Source(kind="nvml"), gpu_absent_reason=str(exc), driver=probe_driver(sysfs_root, *_nvml_state(exc))
    )
