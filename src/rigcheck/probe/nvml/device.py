"""One GPU read in one pass through NVML, into a Gpu record: a value NVML does not give is None with its
reason in the record's ``missing`` map (the reasons: rigcheck.probe.nvml.calls)."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TypeVar

from rigcheck.cpulist import format_cpulist
from rigcheck.model.snapshot import Diagnostic, Gpu, Missing
from rigcheck.probe.nvml.calls import NvmlFailure, reason_for
from rigcheck.probe.nvml.constants import (
    AFFINITY_SCOPE_NODE,
    AGGREGATE_ECC,
    ARCH_UNKNOWN,
    ARCHITECTURES,
    BITS_PER_WORD,
    CLOCK_GRAPHICS,
    CLOCK_MEM,
    CLOCK_SM,
    COMPUTE_MODES,
    CPU_WORDS,
    ERR_INVALID_ARGUMENT,
    FI_DEV_MEMORY_TEMP,
    FI_EVENT_COUNTERS,
    FI_POWER_AVERAGE,
    FI_POWER_INSTANT,
    MEMORY_ERROR_CORRECTED,
    MEMORY_ERROR_UNCORRECTED,
    MEMORY_V2,
    NODE_WORDS,
    PERF_POLICY_POWER,
    PERF_POLICY_SYNC_BOOST,
    PERF_POLICY_THERMAL,
    PSTATE_UNKNOWN,
    RETIRED_CAUSE_DBE,
    RETIRED_CAUSE_SBE,
    TEMPERATURE_GPU,
    THRESHOLD_ACOUSTIC_CURR,
    THRESHOLD_GPU_MAX,
    THRESHOLD_MEM_MAX,
    THRESHOLD_SHUTDOWN,
    THRESHOLD_SLOWDOWN,
    VOLATILE_ECC,
)
from rigcheck.probe.nvml.health import read_driver_health
from rigcheck.probe.nvml.library import (
    FieldValue,
    NvmlLibrary,
    as_text,
    bits_to_list,
    decode_clock_event_reasons,
    late,
    value_of,
)
from rigcheck.probe.nvml.nvlink import read_nvlinks
from rigcheck.probe.nvml.session import GpuReader, Session
from rigcheck.probe.sysfs import read_numa_node

T = TypeVar("T")


def read_gpu(s: Session, index: int, sysfs_root: Path | None) -> tuple[Gpu, object | None, bool]:
    """One GPU in one pass. Returns (gpu, handle or None, lost)."""
    lib = s.lib
    try:
        h = s.call("nvmlDeviceGetHandleByIndex", lambda: lib.nvmlDeviceGetHandleByIndex(index), gpu=index)
    except NvmlFailure as failure:
        return Gpu(index=index, read_error=failure.reason, read_error_detail=failure.detail), None, True

    gpu = Gpu(index=index)
    r = GpuReader(s, gpu)

    name = r.get("name", "nvmlDeviceGetName", lambda: lib.nvmlDeviceGetName(h))
    gpu.name = as_text(name) if name is not None else None
    uuid = r.get("uuid", "nvmlDeviceGetUUID", lambda: lib.nvmlDeviceGetUUID(h))
    gpu.uuid = as_text(uuid) if uuid is not None else None
    pci = r.get("pci_bus_id", "nvmlDeviceGetPciInfo", lambda: lib.nvmlDeviceGetPciInfo(h))
    gpu.pci_bus_id = as_text(pci.busId) if pci is not None else None

    arch = r.get("architecture", "nvmlDeviceGetArchitecture", lambda: lib.nvmlDeviceGetArchitecture(h))
    if arch is not None:
        if arch == ARCH_UNKNOWN:
            gpu.mark_missing("architecture", Missing.NOT_SUPPORTED)
        else:
            gpu.architecture = ARCHITECTURES.get(arch, f"unknown ({arch})")
    cc = r.get(
        "compute_capability", "nvmlDeviceGetCudaComputeCapability", lambda: lib.nvmlDeviceGetCudaComputeCapability(h)
    )
    gpu.compute_capability = f"{cc[0]}.{cc[1]}" if cc is not None else None
    _read_vbios(r, lib, h)
    # v2 first: its `used` leaves out the memory the driver reserves, as nvidia-smi's "Used" does (v1 counts
    # it: ~480 MiB "used" on an idle H100).
    mem = r.first(
        ("memory_total_mib", "memory_used_mib"),
        [
            ("nvmlDeviceGetMemoryInfo_v2", lambda: lib.nvmlDeviceGetMemoryInfo(h, MEMORY_V2)),
            ("nvmlDeviceGetMemoryInfo", lambda: lib.nvmlDeviceGetMemoryInfo(h)),
        ],
    )
    if mem is not None:
        gpu.memory_total_mib = mem.total / 2**20
        gpu.memory_used_mib = mem.used / 2**20
    util = r.get(
        "utilization_gpu_percent", "nvmlDeviceGetUtilizationRates", lambda: lib.nvmlDeviceGetUtilizationRates(h)
    )
    gpu.utilization_gpu_percent = float(util.gpu) if util is not None else None

    # Power: NVML reports milliwatts.
    def watts(field: str, name: str, fn: Callable[[], int]) -> None:
        mw = r.get(field, name, fn)
        setattr(gpu, field, mw / 1000.0 if mw is not None else None)

    watts("power_draw_w", "nvmlDeviceGetPowerUsage", lambda: lib.nvmlDeviceGetPowerUsage(h))
    _read_power_fields(r, lib, h)
    watts("power_limit_w", "nvmlDeviceGetPowerManagementLimit", lambda: lib.nvmlDeviceGetPowerManagementLimit(h))
    watts(
        "power_default_limit_w",
        "nvmlDeviceGetPowerManagementDefaultLimit",
        lambda: lib.nvmlDeviceGetPowerManagementDefaultLimit(h),
    )
    watts("power_enforced_limit_w", "nvmlDeviceGetEnforcedPowerLimit", lambda: lib.nvmlDeviceGetEnforcedPowerLimit(h))
    limits = r.get(
        ("power_min_limit_w", "power_max_limit_w"),
        "nvmlDeviceGetPowerManagementLimitConstraints",
        lambda: lib.nvmlDeviceGetPowerManagementLimitConstraints(h),
    )
    if limits is not None:
        gpu.power_min_limit_w = limits[0] / 1000.0
        gpu.power_max_limit_w = limits[1] / 1000.0

    # Temperatures.
    temp = r.get("temp_c", "nvmlDeviceGetTemperature", lambda: lib.nvmlDeviceGetTemperature(h, TEMPERATURE_GPU))
    gpu.temp_c = float(temp) if temp is not None else None
    fvs = r.get(
        "temp_memory_c", "nvmlDeviceGetFieldValues", lambda: lib.nvmlDeviceGetFieldValues(h, [FI_DEV_MEMORY_TEMP])
    )
    if fvs is not None:
        gpu.temp_memory_c = _field_number(fvs, gpu, "temp_memory_c")
    for field, threshold in (
        ("temp_shutdown_c", THRESHOLD_SHUTDOWN),
        ("temp_slowdown_c", THRESHOLD_SLOWDOWN),
        ("temp_max_operating_c", THRESHOLD_GPU_MAX),
        ("temp_memory_max_c", THRESHOLD_MEM_MAX),
        ("temp_target_c", THRESHOLD_ACOUSTIC_CURR),
    ):
        value = r.get(
            field,
            "nvmlDeviceGetTemperatureThreshold",
            partial(late, lib, "nvmlDeviceGetTemperatureThreshold", h, threshold),
            enum_arg=True,
        )
        setattr(gpu, field, float(value) if value is not None else None)

    fan = r.get("fan_percent", "nvmlDeviceGetFanSpeed", lambda: lib.nvmlDeviceGetFanSpeed(h))
    gpu.fan_percent = float(fan) if fan is not None else None

    for clock, suffix in ((CLOCK_GRAPHICS, "graphics"), (CLOCK_SM, "sm"), (CLOCK_MEM, "mem")):
        cur = r.get(
            f"clock_{suffix}_mhz", "nvmlDeviceGetClockInfo", partial(late, lib, "nvmlDeviceGetClockInfo", h, clock)
        )
        setattr(gpu, f"clock_{suffix}_mhz", float(cur) if cur is not None else None)
        top = r.get(
            f"clock_{suffix}_max_mhz",
            "nvmlDeviceGetMaxClockInfo",
            partial(late, lib, "nvmlDeviceGetMaxClockInfo", h, clock),
        )
        setattr(gpu, f"clock_{suffix}_max_mhz", float(top) if top is not None else None)

    active = r.first(
        "clock_event_reasons_active",
        [
            ("nvmlDeviceGetCurrentClocksEventReasons", lambda: lib.nvmlDeviceGetCurrentClocksEventReasons(h)),
            ("nvmlDeviceGetCurrentClocksThrottleReasons", lambda: lib.nvmlDeviceGetCurrentClocksThrottleReasons(h)),
        ],
    )
    gpu.clock_event_reasons_active = decode_clock_event_reasons(active) if active is not None else None
    supported = r.first(
        "clock_event_reasons_supported",
        [
            ("nvmlDeviceGetSupportedClocksEventReasons", lambda: lib.nvmlDeviceGetSupportedClocksEventReasons(h)),
            ("nvmlDeviceGetSupportedClocksThrottleReasons", lambda: lib.nvmlDeviceGetSupportedClocksThrottleReasons(h)),
        ],
    )
    gpu.clock_event_reasons_supported = decode_clock_event_reasons(supported) if supported is not None else None
    _read_violations(r, lib, h)

    pstate = r.get("pstate", "nvmlDeviceGetPerformanceState", lambda: lib.nvmlDeviceGetPerformanceState(h))
    if pstate is not None:
        if pstate == PSTATE_UNKNOWN:
            gpu.mark_missing("pstate", Missing.NOT_SUPPORTED)
        else:
            gpu.pstate = f"P{pstate}"

    for field, name, fn in (
        ("pcie_gen_current", "nvmlDeviceGetCurrPcieLinkGeneration", lambda: lib.nvmlDeviceGetCurrPcieLinkGeneration(h)),
        ("pcie_gen_max", "nvmlDeviceGetMaxPcieLinkGeneration", lambda: lib.nvmlDeviceGetMaxPcieLinkGeneration(h)),
        (
            "pcie_gen_gpu_max",
            "nvmlDeviceGetGpuMaxPcieLinkGeneration",
            lambda: lib.nvmlDeviceGetGpuMaxPcieLinkGeneration(h),
        ),
        ("pcie_width_current", "nvmlDeviceGetCurrPcieLinkWidth", lambda: lib.nvmlDeviceGetCurrPcieLinkWidth(h)),
        ("pcie_width_max", "nvmlDeviceGetMaxPcieLinkWidth", lambda: lib.nvmlDeviceGetMaxPcieLinkWidth(h)),
        ("pcie_replay_count", "nvmlDeviceGetPcieReplayCounter", lambda: lib.nvmlDeviceGetPcieReplayCounter(h)),
    ):
        value = r.get(field, name, fn)
        setattr(gpu, field, int(value) if value is not None else None)

    persistence = r.get("persistence_mode", "nvmlDeviceGetPersistenceMode", lambda: lib.nvmlDeviceGetPersistenceMode(h))
    gpu.persistence_mode = bool(persistence) if persistence is not None else None
    mode = r.get("compute_mode", "nvmlDeviceGetComputeMode", lambda: lib.nvmlDeviceGetComputeMode(h))
    gpu.compute_mode = COMPUTE_MODES.get(mode, f"unknown ({mode})") if mode is not None else None
    mig = r.get("mig_enabled", "nvmlDeviceGetMigMode", lambda: lib.nvmlDeviceGetMigMode(h))
    gpu.mig_enabled = bool(mig[0]) if mig is not None else None

    read_memory_health(r, lib, h)
    _read_affinity(r, lib, h, sysfs_root)
    read_nvlinks(r, lib, h)
    read_driver_health(r, lib, h, sysfs_root)

    unreadable = _unreadable(gpu) if r.lost_detail is None else None
    if unreadable is not None:
        _give_up(s, gpu, unreadable)
        gpu.mark_unset_missing(Missing.NOT_IN_SOURCE)
        return gpu, h, True
    lost = r.lost_detail is not None
    if lost:
        # Everything not read before the GPU fell off the bus is gpu_lost.
        skip = {"index", "missing", "read_error", "read_error_detail"}
        for field in type(gpu).model_fields:
            if field not in skip and getattr(gpu, field) is None and field not in gpu.missing:
                gpu.mark_missing(field, Missing.GPU_LOST)
        s.diagnostics.append(Diagnostic(source="nvml", message=f"GPU lost while reading: {r.lost_detail}", gpu=index))
        # What was read before stays in the snapshot; the GPU itself is reported as lost, once.
        gpu.read_error = Missing.GPU_LOST
        gpu.read_error_detail = f"fell off the bus while being read ({r.lost_detail})"
    # Fields this probe does not read from NVML (e.g. the averaged draw, T.Limit margin).
    gpu.mark_unset_missing(Missing.NOT_IN_SOURCE)
    return gpu, h, lost


# What names a GPU rather than reads its state: a GPU that gives these and nothing else was not read at all.
_IDENTITY = frozenset(
    {"index", "name", "uuid", "pci_bus_id", "architecture", "compute_capability", "vbios_version", "missing"}
    | {"read_error", "read_error_detail"}
)
# Reasons that say a read failed, as against a feature this card or driver lacks.
_FAILED = (Missing.ERROR, Missing.NO_PERMISSION, Missing.GPU_LOST)


def _unreadable(gpu: Gpu) -> Missing | None:
    """Why a GPU none of whose readings came back is unreadable (its commonest failure), or None when something
    was read or only absent features were asked for (a card that lacks them is not broken)."""
    if any(getattr(gpu, f) is not None for f in type(gpu).model_fields if f not in _IDENTITY):
        return None
    failures = [reason for reason in gpu.missing.values() if reason in _FAILED]
    return max(_FAILED, key=failures.count) if failures else None


def _give_up(s: Session, gpu: Gpu, reason: Missing) -> None:
    """Make ``gpu`` a placeholder: every NVML reading of it failed. Its per-call diagnostics become one."""
    own = [d for d in s.diagnostics if d.gpu == gpu.index]
    first = f"; first: {own[0].message}" if own else ""
    failed = sum(1 for r in gpu.missing.values() if r in _FAILED)
    gpu.read_error = reason
    gpu.read_error_detail = f"every NVML reading failed ({failed} fields, {reason.value}{first})"
    s.diagnostics[:] = [d for d in s.diagnostics if d.gpu != gpu.index]
    s.diagnostics.append(Diagnostic(source="nvml", message=f"GPU unreadable: {gpu.read_error_detail}", gpu=gpu.index))


def _read_vbios(r: GpuReader, lib: NvmlLibrary, h: object) -> None:
    """The VBIOS version as NVML gives it ("96.00.74.00.0D"; NVML API reference, nvmlDeviceGetVbiosVersion: at
    most NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE = 32 characters with the NUL). An empty answer is no version."""
    version = r.get("vbios_version", "nvmlDeviceGetVbiosVersion", lambda: lib.nvmlDeviceGetVbiosVersion(h))
    if version is None:
        return
    text = as_text(version).strip()
    if text:
        r.gpu.vbios_version = text
    else:
        r.gpu.mark_missing("vbios_version", Missing.NOT_SUPPORTED)


def _field_number(values: Sequence[FieldValue], gpu: Gpu, field: str) -> float | None:
    """The first field value as a number; its per-field return code becomes the reason."""
    if not values:
        gpu.mark_missing(field, Missing.ERROR)
        return None
    fv = values[0]
    if fv.nvmlReturn != 0:
        gpu.mark_missing(field, reason_for(fv.nvmlReturn))
        return None
    number = value_of(fv)
    if number is None:
        gpu.mark_missing(field, Missing.ERROR)
    return number


def _optional_fields(r: GpuReader, lib: NvmlLibrary, h: object, field_ids: Sequence[int]) -> list[float | None]:
    """Field values a newer driver has and an older one lacks: each a number, or None where this driver
    does not give it (no diagnostic: absent is expected). GpuIsLost is recorded on the reader."""
    if r.lost_detail is not None:
        return [None] * len(field_ids)
    try:
        values = r.s.call(
            "nvmlDeviceGetFieldValues",
            lambda: lib.nvmlDeviceGetFieldValues(h, list(field_ids)),
            gpu=r.gpu.index,
            quiet=frozenset({ERR_INVALID_ARGUMENT}),  # a driver that predates the field ids
        )
    except NvmlFailure as failure:
        if failure.reason is Missing.GPU_LOST:
            r.lost_detail = failure.detail
        return [None] * len(field_ids)
    numbers = [value_of(fv) if fv.nvmlReturn == 0 else None for fv in list(values)[: len(field_ids)]]
    return numbers + [None] * (len(field_ids) - len(numbers))


def _event_counters(r: GpuReader, lib: NvmlLibrary, h: object) -> dict[str, float]:
    """The per-reason counters a newer driver gives as field values (ns -> us); those it has, only."""
    values = _optional_fields(r, lib, h, [fid for _, fid in FI_EVENT_COUNTERS])
    return {name: v / 1000.0 for (name, _), v in zip(FI_EVENT_COUNTERS, values, strict=True) if v is not None}


def _read_power_fields(r: GpuReader, lib: NvmlLibrary, h: object) -> None:
    """The instantaneous and the averaged draw, where the driver gives them as field values (mW)."""
    values = _optional_fields(r, lib, h, [FI_POWER_INSTANT, FI_POWER_AVERAGE])
    for field, mw in zip(("power_draw_w", "power_draw_avg_w"), values, strict=True):
        if mw is not None and mw > 0:
            setattr(r.gpu, field, mw / 1000.0)
            r.gpu.missing.pop(field, None)


def _read_violations(r: GpuReader, lib: NvmlLibrary, h: object) -> None:
    """Time under each clock-event reason since driver load (ns -> us): power cap and sync boost from the
    perf-policy violation counters; SW/HW thermal slowdown and HW power brake from the field values that
    newer drivers have. Where those are absent, the thermal perf-policy counter (the driver's thermal
    capping) stands in for sw_thermal_slowdown and the two hardware reasons stay unknown."""
    gpu = r.gpu
    durations: dict[str, float] = {}
    first_reason: Missing | None = None
    counters = _event_counters(r, lib, h)
    durations.update(counters)
    policies = [(PERF_POLICY_POWER, "sw_power_cap"), (PERF_POLICY_SYNC_BOOST, "sync_boost")]
    if "sw_thermal_slowdown" not in counters:
        policies.insert(1, (PERF_POLICY_THERMAL, "sw_thermal_slowdown"))
    for policy, reason_name in policies:
        if r.lost_detail is not None:
            break
        try:
            vt = r.s.call(
                "nvmlDeviceGetViolationStatus",
                partial(late, lib, "nvmlDeviceGetViolationStatus", h, policy),
                gpu=gpu.index,
            )
        except NvmlFailure as failure:
            if failure.reason is Missing.GPU_LOST:
                r.lost_detail = failure.detail
            first_reason = first_reason or failure.reason
            continue
        durations[reason_name] = vt.violationTime / 1000.0
    if durations:
        gpu.clock_event_durations_us = durations
    else:
        gpu.mark_missing(
            "clock_event_durations_us", Missing.GPU_LOST if r.lost_detail else first_reason or Missing.ERROR
        )


def read_memory_health(r: GpuReader, lib: NvmlLibrary, h: object) -> None:
    """ECC mode and counts, remapped rows, retired pages into ``r.gpu`` (the snapshot's reading; the Prometheus
    exporter re-reads them through probe/nvml/memory_health.py)."""
    gpu = r.gpu
    ecc = r.get("ecc_enabled", "nvmlDeviceGetEccMode", lambda: lib.nvmlDeviceGetEccMode(h))
    gpu.ecc_enabled = bool(ecc[0]) if ecc is not None else None
    for field, error_type, counter in (
        ("ecc_uncorrected_volatile", MEMORY_ERROR_UNCORRECTED, VOLATILE_ECC),
        ("ecc_uncorrected_aggregate", MEMORY_ERROR_UNCORRECTED, AGGREGATE_ECC),
        ("ecc_corrected_volatile", MEMORY_ERROR_CORRECTED, VOLATILE_ECC),
    ):
        count = r.get(
            field,
            "nvmlDeviceGetTotalEccErrors",
            partial(late, lib, "nvmlDeviceGetTotalEccErrors", h, error_type, counter),
        )
        setattr(gpu, field, int(count) if count is not None else None)
    rows = r.get(
        ("remapped_rows_correctable", "remapped_rows_uncorrectable", "remapped_rows_pending", "remapped_rows_failure"),
        "nvmlDeviceGetRemappedRows",
        lambda: lib.nvmlDeviceGetRemappedRows(h),
    )
    if rows is not None:
        corr, unc, pending, failure = (int(v) for v in rows[:4])
        gpu.remapped_rows_correctable = corr
        gpu.remapped_rows_uncorrectable = unc
        gpu.remapped_rows_pending = bool(pending)
        gpu.remapped_rows_failure = bool(failure)
    for field, cause in (("retired_pages_sbe", RETIRED_CAUSE_SBE), ("retired_pages_dbe", RETIRED_CAUSE_DBE)):
        pages = r.get(
            field,
            "nvmlDeviceGetRetiredPages",
            partial(late, lib, "nvmlDeviceGetRetiredPages", h, cause),
        )
        setattr(gpu, field, len(pages) if pages is not None else None)
    pending_pages = r.get(
        "retired_pages_pending",
        "nvmlDeviceGetRetiredPagesPendingStatus",
        lambda: lib.nvmlDeviceGetRetiredPagesPendingStatus(h),
    )
    gpu.retired_pages_pending = bool(pending_pages) if pending_pages is not None else None


def _read_affinity(r: GpuReader, lib: NvmlLibrary, h: object, sysfs_root: Path | None) -> None:
    """CPU list, and the host NUMA node nearest the GPU.

    The NUMA node comes from NVML's memory affinity (the "NUMA Affinity" column of topo -m), else
    from sysfs ``numa_node``. nvmlDeviceGetNumaNodeId is something else: the NUMA id *of the GPU*
    on platforms where GPU memory is a NUMA node (Grace Hopper), topo -m's "GPU NUMA ID" column; it
    is not read here.
    """
    gpu = r.gpu
    cpus = r.get("cpu_affinity", "nvmlDeviceGetCpuAffinity", lambda: lib.nvmlDeviceGetCpuAffinity(h, _cpu_words()))
    if cpus is not None:
        cpu_list = bits_to_list(cpus)
        if cpu_list:
            gpu.cpu_affinity = format_cpulist(cpu_list)
        else:
            gpu.mark_missing("cpu_affinity", Missing.NOT_SUPPORTED)
    nodes = r.get(
        "numa_node",
        "nvmlDeviceGetMemoryAffinity",
        lambda: lib.nvmlDeviceGetMemoryAffinity(h, NODE_WORDS, AFFINITY_SCOPE_NODE),
    )
    node_list = bits_to_list(nodes) if nodes is not None else []
    if len(node_list) == 1:
        gpu.numa_node = node_list[0]
    elif r.lost_detail is None and sysfs_root is not None and gpu.pci_bus_id is not None:
        node = read_numa_node(gpu.pci_bus_id, sysfs_root)
        if node is not None:
            gpu.numa_node = node
            gpu.missing.pop("numa_node", None)
    if gpu.numa_node is None and "numa_node" not in gpu.missing:
        gpu.mark_missing("numa_node", Missing.NOT_SUPPORTED)


def _cpu_words() -> int:
    return max(CPU_WORDS, math.ceil((os.cpu_count() or 1) / BITS_PER_WORD))
