"""One GPU's driver-side health through NVML: the recovery action the driver asks for, the NVLink fabric the GPU
joined, the InfoROM's validity and the compute processes holding its memory, in the words `nvidia-smi -q` prints.

- Recovery action: the field value ``NVML_FI_DEV_GET_GPU_RECOVERY_ACTION`` (nvmlDeviceGpuRecoveryAction_t).
- Fabric: ``nvmlDeviceGetGpuFabricInfoV`` with the v3 struct (health summary), else v2 (no summary: health is
  then driver_too_old, since the v2 health mask has no summary nvidia-smi prints), else the deprecated
  ``nvmlDeviceGetGpuFabricInfo``. ``status`` is an nvmlReturn_t: "Success", or NVML's own error string, as
  nvidia-smi prints it. Status, clique and cluster UUID mean something only once the state is Completed;
  before that they are not_supported (nvidia-smi prints N/A).
- InfoROM: ``nvmlDeviceValidateInforom`` succeeds, or says NVML_ERROR_CORRUPTED_INFOROM (then False).
- Processes: ``nvmlDeviceGetComputeRunningProcesses`` (pid, memory); the name from /proc/PID/comm under the
  probe's root, None where the pid is in another namespace (a container sees host pids it cannot open).
"""

from __future__ import annotations

import ctypes
import uuid
from functools import partial
from pathlib import Path
from typing import cast

from rigcheck.model.snapshot import GpuProcess, Missing
from rigcheck.probe.nvml.calls import NvmlFailure, fabric_info_struct, reason_for
from rigcheck.probe.nvml.constants import (
    ERR_CORRUPTED_INFOROM,
    ERR_INVALID_ARGUMENT,
    FABRIC_HEALTH_SUMMARIES,
    FABRIC_INFO_V2,
    FABRIC_INFO_V3,
    FABRIC_STATE_COMPLETED,
    FABRIC_STATES,
    FI_GPU_RECOVERY_ACTION,
    RECOVERY_ACTIONS,
)
from rigcheck.probe.nvml.library import FabricInfo, NvmlLibrary, as_text, late, value_of
from rigcheck.probe.nvml.session import GpuReader

_FABRIC_FIELDS = ("fabric_state", "fabric_status", "fabric_clique_id", "fabric_cluster_uuid", "fabric_health")
_AFTER_COMPLETED = ("fabric_status", "fabric_clique_id", "fabric_cluster_uuid", "fabric_health")


def read_driver_health(r: GpuReader, lib: NvmlLibrary, h: object, root: Path | None) -> None:
    """Fill the GPU's recovery action, fabric, InfoROM validity and processes (or give each a reason)."""
    _read_recovery_action(r, lib, h)
    _read_fabric(r, lib, h)
    _read_inforom(r, lib, h)
    _read_processes(r, lib, h, root)


def _read_recovery_action(r: GpuReader, lib: NvmlLibrary, h: object) -> None:
    gpu = r.gpu
    values = r.get(
        "recovery_action",
        "nvmlDeviceGetFieldValues",
        lambda: lib.nvmlDeviceGetFieldValues(h, [FI_GPU_RECOVERY_ACTION]),
    )
    if values is None:
        return
    if not values:
        gpu.mark_missing("recovery_action", Missing.ERROR)
        return
    fv = values[0]
    if fv.nvmlReturn != 0:
        # A driver that predates the field id answers InvalidArgument (or NotSupported) for it alone.
        code = fv.nvmlReturn
        gpu.mark_missing(
            "recovery_action", Missing.DRIVER_TOO_OLD if code == ERR_INVALID_ARGUMENT else reason_for(code)
        )
        return
    number = value_of(fv)
    if number is None:
        gpu.mark_missing("recovery_action", Missing.ERROR)
        return
    gpu.recovery_action = RECOVERY_ACTIONS.get(int(number), f"unknown ({int(number)})")


def _read_fabric(r: GpuReader, lib: NvmlLibrary, h: object) -> None:
    gpu = r.gpu

    def fill(version: int | None, name: str) -> FabricInfo:
        info = fabric_info_struct(version)
        # by pointer, as nvml.h declares it (see NvmlLibrary); fabric_info_struct makes a ctypes.Structure
        late(lib, name, h, ctypes.byref(cast(ctypes.Structure, info)))
        return info

    info = r.first(
        _FABRIC_FIELDS,
        [
            ("nvmlDeviceGetGpuFabricInfoV_v3", partial(fill, FABRIC_INFO_V3, "nvmlDeviceGetGpuFabricInfoV")),
            ("nvmlDeviceGetGpuFabricInfoV", partial(fill, FABRIC_INFO_V2, "nvmlDeviceGetGpuFabricInfoV")),
            ("nvmlDeviceGetGpuFabricInfo", partial(fill, None, "nvmlDeviceGetGpuFabricInfo")),
        ],
    )
    if info is None:
        return
    state = int(info.state)
    gpu.fabric_state = FABRIC_STATES.get(state, f"unknown ({state})")
    if state != FABRIC_STATE_COMPLETED:
        for field in _AFTER_COMPLETED:
            gpu.mark_missing(field, Missing.NOT_SUPPORTED)
        return
    gpu.fabric_status = _status_text(r, lib, int(info.status))
    gpu.fabric_clique_id = int(info.cliqueId)
    gpu.fabric_cluster_uuid = str(uuid.UUID(bytes=bytes(int(b) & 0xFF for b in info.clusterUuid)))
    summary = getattr(info, "healthSummary", None)
    if summary is None:
        gpu.mark_missing("fabric_health", Missing.DRIVER_TOO_OLD)  # a v2 or older struct: no summary
    else:
        gpu.fabric_health = FABRIC_HEALTH_SUMMARIES.get(int(summary), f"unknown ({int(summary)})")


def _status_text(r: GpuReader, lib: NvmlLibrary, code: int) -> str:
    """An nvmlReturn_t in NVML's words (nvmlErrorString), as nvidia-smi prints the fabric status."""
    if code == 0:
        return "Success"
    try:
        return as_text(r.s.call("nvmlErrorString", partial(late, lib, "nvmlErrorString", code), gpu=r.gpu.index))
    except NvmlFailure:
        return f"NVML error {code}"


def _read_inforom(r: GpuReader, lib: NvmlLibrary, h: object) -> None:
    gpu = r.gpu
    if r.lost_detail is not None:
        gpu.mark_missing("inforom_valid", Missing.GPU_LOST)
        return
    try:
        r.s.call(
            "nvmlDeviceValidateInforom",
            lambda: lib.nvmlDeviceValidateInforom(h),
            gpu=gpu.index,
            quiet=frozenset({ERR_CORRUPTED_INFOROM}),  # the answer, not a failure to read
        )
    except NvmlFailure as failure:
        if failure.code == ERR_CORRUPTED_INFOROM:
            gpu.inforom_valid = False
            return
        r.fail(["inforom_valid"], failure.reason, failure.detail)
        return
    gpu.inforom_valid = True


def _read_processes(r: GpuReader, lib: NvmlLibrary, h: object, root: Path | None) -> None:
    # pynvml's unversioned function calls the _v3 symbol (R510-era drivers on); older ones have _v2.
    procs = r.first(
        "processes",
        [
            ("nvmlDeviceGetComputeRunningProcesses", lambda: lib.nvmlDeviceGetComputeRunningProcesses(h)),
            ("nvmlDeviceGetComputeRunningProcesses_v2", lambda: lib.nvmlDeviceGetComputeRunningProcesses_v2(h)),
        ],
    )
    if procs is None:
        return
    out: list[GpuProcess] = []
    for p in procs:
        used = p.usedGpuMemory
        entry = GpuProcess(
            pid=int(p.pid),
            name=_comm(int(p.pid), root),
            used_memory_mib=used / 2**20 if used is not None else None,
        )
        if entry.name is None:
            entry.mark_missing("name", Missing.NOT_SUPPORTED)
        if entry.used_memory_mib is None:
            entry.mark_missing("used_memory_mib", Missing.NOT_SUPPORTED)
        out.append(entry)
    r.gpu.processes = out


def _comm(pid: int, root: Path | None) -> str | None:
    """The process's name from /proc/PID/comm, None where this namespace cannot see it."""
    if root is None:
        return None
    try:
        return (root / "proc" / str(pid) / "comm").read_text().strip() or None
    except OSError:
        return None
