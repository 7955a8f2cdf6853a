"""The NVML probe: every GPU read in one pass through nvidia-ml-py. The only module that imports pynvml.

A value NVML does not give becomes ``None`` with a reason in the record's ``missing`` map:
NotSupported -> not_supported, NoPermission -> no_permission, GpuIsLost -> gpu_lost, a function the
driver (or the installed pynvml) lacks -> driver_too_old, any other NVMLError -> error plus a
Diagnostic naming the function. A missing function is probed once per snapshot and listed in
``Snapshot.missing_functions``. Constants are those of nvml.h, written out here (pynvml's
``NVML_P2P_CAPS_INDEX_READ`` is, by a stray comma, the tuple ``(0,)``).
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Protocol, TypeVar

import pynvml

from rigcheck.cpulist import format_cpulist
from rigcheck.errors import ProbeError
from rigcheck.facts.legend import code_from_nvml, kind_of
from rigcheck.model.snapshot import (
    CLOCK_EVENT_REASONS,
    Diagnostic,
    Gpu,
    GpuPair,
    Missing,
    NvLink,
    P2PStatus,
    Snapshot,
    Software,
    Source,
    TopoGpu,
    TopoMatrix,
)
from rigcheck.model.telemetry import Sample, TraceGpu
from rigcheck.probe.sysfs import normalize_bdf, read_numa_node

log = logging.getLogger(__name__)

T = TypeVar("T")

# --- nvml.h constants -------------------------------------------------------------------------
_ERR_INVALID_ARGUMENT = 2
_ERR_NOT_SUPPORTED = 3
_ERR_NO_PERMISSION = 4
_ERR_DRIVER_NOT_LOADED = 9
_ERR_LIBRARY_NOT_FOUND = 12
_ERR_FUNCTION_NOT_FOUND = 13
_ERR_GPU_IS_LOST = 15
_ERR_LIB_RM_VERSION_MISMATCH = 18
_ERR_ARGUMENT_VERSION_MISMATCH = 25  # the driver does not know this struct version: older than the call
_MEMORY_V2 = 0x02000028  # nvml.h nvmlMemory_v2: sizeof(nvmlMemory_v2_t) | 2 << 24
# Versioned C symbols that pynvml reaches through the unversioned function and a version argument.
_PYNVML_ATTR = {"nvmlDeviceGetMemoryInfo_v2": "nvmlDeviceGetMemoryInfo"}

_TEMPERATURE_GPU = 0  # nvmlTemperatureSensors_t
_FI_DEV_MEMORY_TEMP = 82  # nvmlFieldValue id: memory temperature (C)
# nvml.h NVML_FI_DEV_POWER_AVERAGE / _INSTANT (mW): nvmlDeviceGetPowerUsage is itself a 1 s average on
# Ampere (but GA100) and newer, so the instant draw, where the driver has it, comes from this field.
_FI_POWER_AVERAGE, _FI_POWER_INSTANT = 185, 186
# nvml.h NVML_FI_DEV_CLOCKS_EVENT_REASON_*: time under each reason since the driver loaded, in ns (drivers from
# the R535 era on; older ones answer NotSupported per field). Power cap and sync boost are the perf-policy
# counters that nvmlDeviceGetViolationStatus also gives.
_FI_EVENT_COUNTERS = (("sw_thermal_slowdown", 269), ("hw_thermal_slowdown", 270), ("hw_power_brake_slowdown", 271))
_THRESHOLD_SHUTDOWN = 0  # nvmlTemperatureThresholds_t
_THRESHOLD_SLOWDOWN = 1
_THRESHOLD_MEM_MAX = 2
_THRESHOLD_GPU_MAX = 3
_THRESHOLD_ACOUSTIC_CURR = 5  # the current acoustic (target) temperature
_CLOCK_GRAPHICS, _CLOCK_SM, _CLOCK_MEM = 0, 1, 2  # nvmlClockType_t
_PERF_POLICY_POWER, _PERF_POLICY_THERMAL, _PERF_POLICY_SYNC_BOOST = 0, 1, 2  # nvmlPerfPolicyType_t
_PSTATE_UNKNOWN = 32
_MEMORY_ERROR_CORRECTED, _MEMORY_ERROR_UNCORRECTED = 0, 1  # nvmlMemoryErrorType_t
_VOLATILE_ECC, _AGGREGATE_ECC = 0, 1  # nvmlEccCounterType_t
_RETIRED_CAUSE_SBE, _RETIRED_CAUSE_DBE = 0, 1  # nvmlPageRetirementCause_t
_AFFINITY_SCOPE_NODE = 0
_NVLINK_MAX_LINKS = 36  # nvml.h NVML_NVLINK_MAX_LINKS (18 up to Hopper); the loop stops at the first absent link
_NVLINK_DEVICE_TYPES = {0: "gpu", 1: "ibmnpu", 2: "switch", 0xFF: "unknown"}
_P2P_CAPS = (("p2p_read", 0), ("p2p_write", 1), ("p2p_nvlink", 2), ("p2p_atomics", 3))
_P2P_STATUS = {
    0: P2PStatus.OK,
    1: P2PStatus.CHIPSET_NOT_SUPPORTED,
    2: P2PStatus.GPU_NOT_SUPPORTED,
    3: P2PStatus.IOH_TOPOLOGY_NOT_SUPPORTED,
    4: P2PStatus.DISABLED_BY_REGKEY,
    5: P2PStatus.NOT_SUPPORTED,
    6: P2PStatus.UNKNOWN,
}
# nvmlDeviceArchitecture_t, named as `nvidia-smi -q` prints "Product Architecture".
_ARCHITECTURES = {
    2: "Kepler",
    3: "Maxwell",
    4: "Pascal",
    5: "Volta",
    6: "Turing",
    7: "Ampere",
    8: "Ada Lovelace",
    9: "Hopper",
    10: "Blackwell",
    13: "Rubin",
}
_ARCH_UNKNOWN = 0xFFFFFFFF
_COMPUTE_MODES = {0: "Default", 1: "Exclusive_Thread", 2: "Prohibited", 3: "Exclusive_Process"}
_CPU_WORDS = 64  # 64 x 64-bit words: up to 4096 CPUs
_NODE_WORDS = 4  # up to 256 NUMA nodes
_BITS_PER_WORD = 64


# --- the interface: exactly the pynvml functions this module calls ---------------------------
class PciInfo(Protocol):
    @property
    def busId(self) -> str | bytes: ...


class MemoryInfo(Protocol):
    @property
    def total(self) -> int: ...
    @property
    def used(self) -> int: ...


class Utilization(Protocol):
    @property
    def gpu(self) -> int: ...


class ViolationTime(Protocol):
    @property
    def violationTime(self) -> int: ...  # nanoseconds


class FieldValue(Protocol):
    @property
    def nvmlReturn(self) -> int: ...
    @property
    def valueType(self) -> int: ...
    @property
    def value(self) -> object: ...  # a union with dVal, uiVal, ulVal, ullVal, sllVal, siVal, usVal


class NvmlLibrary(Protocol):
    """The part of nvidia-ml-py's ``pynvml`` module rigcheck uses; tests/fakenvml.py implements it."""

    def nvmlInit(self) -> None: ...
    def nvmlShutdown(self) -> None: ...
    def nvmlSystemGetDriverVersion(self) -> str | bytes: ...
    def nvmlSystemGetNVMLVersion(self) -> str | bytes: ...
    def nvmlSystemGetCudaDriverVersion_v2(self) -> int: ...
    def nvmlSystemGetCudaDriverVersion(self) -> int: ...
    def nvmlDeviceGetCount(self) -> int: ...
    def nvmlDeviceGetHandleByIndex(self, index: int, /) -> object: ...
    def nvmlDeviceGetName(self, handle: object, /) -> str | bytes: ...
    def nvmlDeviceGetUUID(self, handle: object, /) -> str | bytes: ...
    def nvmlDeviceGetPciInfo(self, handle: object, /) -> PciInfo: ...
    def nvmlDeviceGetArchitecture(self, handle: object, /) -> int: ...
    def nvmlDeviceGetCudaComputeCapability(self, handle: object, /) -> tuple[int, int]: ...
    def nvmlDeviceGetMemoryInfo(self, handle: object, version: int = 0, /) -> MemoryInfo: ...
    def nvmlDeviceGetUtilizationRates(self, handle: object, /) -> Utilization: ...
    def nvmlDeviceGetPowerUsage(self, handle: object, /) -> int: ...
    def nvmlDeviceGetPowerManagementLimit(self, handle: object, /) -> int: ...
    def nvmlDeviceGetPowerManagementDefaultLimit(self, handle: object, /) -> int: ...
    def nvmlDeviceGetEnforcedPowerLimit(self, handle: object, /) -> int: ...
    def nvmlDeviceGetPowerManagementLimitConstraints(self, handle: object, /) -> Sequence[int]: ...
    def nvmlDeviceGetTemperature(self, handle: object, sensor: int, /) -> int: ...
    def nvmlDeviceGetTemperatureThreshold(self, handle: object, threshold: int, /) -> int: ...
    def nvmlDeviceGetFieldValues(self, handle: object, field_ids: list[int], /) -> Sequence[FieldValue]: ...
    def nvmlDeviceGetFanSpeed(self, handle: object, /) -> int: ...
    def nvmlDeviceGetClockInfo(self, handle: object, clock_type: int, /) -> int: ...
    def nvmlDeviceGetMaxClockInfo(self, handle: object, clock_type: int, /) -> int: ...
    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: object, /) -> int: ...
    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle: object, /) -> int: ...
    def nvmlDeviceGetSupportedClocksEventReasons(self, handle: object, /) -> int: ...
    def nvmlDeviceGetSupportedClocksThrottleReasons(self, handle: object, /) -> int: ...
    def nvmlDeviceGetViolationStatus(self, handle: object, policy: int, /) -> ViolationTime: ...
    def nvmlDeviceGetPerformanceState(self, handle: object, /) -> int: ...
    def nvmlDeviceGetCurrPcieLinkGeneration(self, handle: object, /) -> int: ...
    def nvmlDeviceGetMaxPcieLinkGeneration(self, handle: object, /) -> int: ...
    def nvmlDeviceGetGpuMaxPcieLinkGeneration(self, handle: object, /) -> int: ...
    def nvmlDeviceGetCurrPcieLinkWidth(self, handle: object, /) -> int: ...
    def nvmlDeviceGetMaxPcieLinkWidth(self, handle: object, /) -> int: ...
    def nvmlDeviceGetPcieReplayCounter(self, handle: object, /) -> int: ...
    def nvmlDeviceGetPersistenceMode(self, handle: object, /) -> int: ...
    def nvmlDeviceGetComputeMode(self, handle: object, /) -> int: ...
    def nvmlDeviceGetMigMode(self, handle: object, /) -> Sequence[int]: ...
    def nvmlDeviceGetEccMode(self, handle: object, /) -> Sequence[int]: ...
    def nvmlDeviceGetTotalEccErrors(self, handle: object, error_type: int, counter_type: int, /) -> int: ...
    def nvmlDeviceGetRemappedRows(self, handle: object, /) -> Sequence[int]: ...
    def nvmlDeviceGetRetiredPages(self, handle: object, cause: int, /) -> Sequence[int]: ...
    def nvmlDeviceGetRetiredPagesPendingStatus(self, handle: object, /) -> int: ...
    def nvmlDeviceGetMemoryAffinity(self, handle: object, node_set_size: int, scope: int, /) -> Sequence[int]: ...
    def nvmlDeviceGetNumaNodeId(self, handle: object, /) -> int: ...
    def nvmlDeviceGetCpuAffinity(self, handle: object, cpu_set_size: int, /) -> Sequence[int]: ...
    def nvmlDeviceGetNvLinkState(self, handle: object, link: int, /) -> int: ...
    def nvmlDeviceGetNvLinkVersion(self, handle: object, link: int, /) -> int: ...
    def nvmlDeviceGetNvLinkRemotePciInfo(self, handle: object, link: int, /) -> PciInfo: ...
    def nvmlDeviceGetNvLinkRemoteDeviceType(self, handle: object, link: int, /) -> int: ...
    def nvmlDeviceGetTopologyCommonAncestor(self, handle1: object, handle2: object, /) -> int: ...
    def nvmlDeviceGetP2PStatus(self, handle1: object, handle2: object, caps_index: int, /) -> int: ...


# --- small decoders (pure) ---------------------------------------------------------------------
def decode_clock_event_reasons(mask: int) -> list[str]:
    """nvmlClocksEventReason* bit mask -> names from CLOCK_EVENT_REASONS (bit i = name i)."""
    return [name for bit, name in enumerate(CLOCK_EVENT_REASONS) if mask & (1 << bit)]


def bits_to_list(words: Sequence[int], bits_per_word: int = _BITS_PER_WORD) -> list[int]:
    """An array of bitmask words (bit i of word w = item w*bits+i) -> the sorted set bits."""
    return [w * bits_per_word + b for w, word in enumerate(words) for b in range(bits_per_word) if int(word) >> b & 1]


def cuda_version_string(version: int) -> str:
    """12040 -> "12.4" (nvml.h: major = v / 1000, minor = (v % 1000) / 10)."""
    return f"{version // 1000}.{version % 1000 // 10}"


def _late(lib: object, name: str, *args: object) -> Any:
    """``lib.<name>(*args)``, the function looked up when called: after _Session.call has checked that the
    installed pynvml has it (an older one lacks newer functions; looking them up early would raise)."""
    return getattr(lib, name)(*args)


def _text(value: str | bytes) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _reason(exc: pynvml.NVMLError) -> Missing:
    code = getattr(exc, "value", None)
    if code == _ERR_NOT_SUPPORTED:
        return Missing.NOT_SUPPORTED
    if code == _ERR_NO_PERMISSION:
        return Missing.NO_PERMISSION
    if code == _ERR_GPU_IS_LOST:
        return Missing.GPU_LOST
    if code in (_ERR_FUNCTION_NOT_FOUND, _ERR_ARGUMENT_VERSION_MISMATCH):
        return Missing.DRIVER_TOO_OLD
    return Missing.ERROR


def _init_message(exc: pynvml.NVMLError) -> str:
    code = getattr(exc, "value", None)
    if code == _ERR_LIBRARY_NOT_FOUND:
        return "no NVIDIA driver found (libnvidia-ml.so not loadable)"
    if code == _ERR_DRIVER_NOT_LOADED:
        return "NVIDIA driver not loaded (libnvidia-ml.so found, but the kernel module is not running)"
    if code == _ERR_NO_PERMISSION:
        return "no permission to talk to the NVIDIA driver (check /dev/nvidia* permissions)"
    if code == _ERR_LIB_RM_VERSION_MISMATCH:
        return "NVIDIA driver/library version mismatch (reboot or reload the nvidia kernel module)"
    return f"NVML could not start: {type(exc).__name__}: {exc}"


# --- the read machinery ------------------------------------------------------------------------
class _Failed(Exception):
    """One NVML read failed; carries the reason and the NVML error code."""

    def __init__(self, reason: Missing, detail: str, code: int | None = None) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail
        self.code = code


class _Session:
    """Calls into NVML with the missing-function cache and the diagnostics of one snapshot."""

    def __init__(self, lib: NvmlLibrary) -> None:
        self.lib = lib
        self.missing_functions: list[str] = []
        self.diagnostics: list[Diagnostic] = []

    def _note_missing(self, name: str) -> None:
        if name not in self.missing_functions:
            self.missing_functions.append(name)
            log.debug("NVML function %s is not available", name)

    def call(self, name: str, fn: Callable[[], T], *, gpu: int | None = None, quiet: frozenset[int] = frozenset()) -> T:
        if name in self.missing_functions:
            raise _Failed(Missing.DRIVER_TOO_OLD, f"{name} is not available", _ERR_FUNCTION_NOT_FOUND)
        if not hasattr(self.lib, _PYNVML_ATTR.get(name, name)):  # the installed pynvml predates the function
            self._note_missing(name)
            raise _Failed(Missing.DRIVER_TOO_OLD, f"{name} is not available", _ERR_FUNCTION_NOT_FOUND)
        try:
            return fn()
        except pynvml.NVMLError as exc:
            code = getattr(exc, "value", None)
            reason = _reason(exc)
            detail = f"{name}: {type(exc).__name__}: {exc}"
            if reason is Missing.DRIVER_TOO_OLD:
                self._note_missing(name)
            elif reason is Missing.ERROR and code not in quiet:
                self.diagnostics.append(Diagnostic(source="nvml", message=detail, gpu=gpu))
            raise _Failed(reason, detail, code) from None


class _GpuReader:
    """Reads one GPU; after GpuIsLost every further read is skipped and marked gpu_lost."""

    def __init__(self, session: _Session, gpu: Gpu) -> None:
        self.s = session
        self.gpu = gpu
        self.lost_detail: str | None = None

    def _fail(self, fields: Sequence[str], failure: _Failed) -> None:
        if failure.reason is Missing.GPU_LOST and self.lost_detail is None:
            self.lost_detail = failure.detail
        for field in fields:
            self.gpu.mark_missing(field, failure.reason)

    def get(self, fields: str | Sequence[str], name: str, fn: Callable[[], T], *, enum_arg: bool = False) -> T | None:
        return self.first(fields, [(name, fn)], enum_arg=enum_arg)

    def first(
        self, fields: str | Sequence[str], attempts: Sequence[tuple[str, Callable[[], T]]], *, enum_arg: bool = False
    ) -> T | None:
        """Try versioned symbols in order, moving on only when the driver lacks one.

        ``enum_arg``: the read takes an enum value that a driver may predate; its InvalidArgument then means
        "not supported by this driver", not an error worth a diagnostic."""
        names = (fields,) if isinstance(fields, str) else tuple(fields)
        if self.lost_detail is not None:
            for field in names:
                self.gpu.mark_missing(field, Missing.GPU_LOST)
            return None
        quiet = frozenset({_ERR_INVALID_ARGUMENT}) if enum_arg else frozenset()
        for i, (name, fn) in enumerate(attempts):
            try:
                return self.s.call(name, fn, gpu=self.gpu.index, quiet=quiet)
            except _Failed as failure:
                if failure.reason is Missing.DRIVER_TOO_OLD and i + 1 < len(attempts):
                    continue
                if enum_arg and failure.code == _ERR_INVALID_ARGUMENT:
                    failure = _Failed(Missing.NOT_SUPPORTED, failure.detail, failure.code)
                self._fail(names, failure)
                return None
        return None


def _read_gpu(s: _Session, index: int, sysfs_root: Path | None) -> tuple[Gpu, object | None, bool]:
    """One GPU in one pass. Returns (gpu, handle or None, lost)."""
    lib = s.lib
    try:
        h = s.call("nvmlDeviceGetHandleByIndex", lambda: lib.nvmlDeviceGetHandleByIndex(index), gpu=index)
    except _Failed as failure:
        return Gpu(index=index, read_error=failure.reason, read_error_detail=failure.detail), None, True

    gpu = Gpu(index=index)
    r = _GpuReader(s, gpu)

    name = r.get("name", "nvmlDeviceGetName", lambda: lib.nvmlDeviceGetName(h))
    gpu.name = _text(name) if name is not None else None
    uuid = r.get("uuid", "nvmlDeviceGetUUID", lambda: lib.nvmlDeviceGetUUID(h))
    gpu.uuid = _text(uuid) if uuid is not None else None
    pci = r.get("pci_bus_id", "nvmlDeviceGetPciInfo", lambda: lib.nvmlDeviceGetPciInfo(h))
    gpu.pci_bus_id = _text(pci.busId) if pci is not None else None

    arch = r.get("architecture", "nvmlDeviceGetArchitecture", lambda: lib.nvmlDeviceGetArchitecture(h))
    if arch is not None:
        if arch == _ARCH_UNKNOWN:
            gpu.mark_missing("architecture", Missing.NOT_SUPPORTED)
        else:
            gpu.architecture = _ARCHITECTURES.get(arch, f"unknown ({arch})")
    cc = r.get(
        "compute_capability", "nvmlDeviceGetCudaComputeCapability", lambda: lib.nvmlDeviceGetCudaComputeCapability(h)
    )
    gpu.compute_capability = f"{cc[0]}.{cc[1]}" if cc is not None else None
    # v2 first: its `used` leaves out the memory the driver reserves, as nvidia-smi's "Used" does (v1 counts
    # it: ~480 MiB "used" on an idle H100).
    mem = r.first(
        ("memory_total_mib", "memory_used_mib"),
        [
            ("nvmlDeviceGetMemoryInfo_v2", lambda: lib.nvmlDeviceGetMemoryInfo(h, _MEMORY_V2)),
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
    temp = r.get("temp_c", "nvmlDeviceGetTemperature", lambda: lib.nvmlDeviceGetTemperature(h, _TEMPERATURE_GPU))
    gpu.temp_c = float(temp) if temp is not None else None
    fvs = r.get(
        "temp_memory_c", "nvmlDeviceGetFieldValues", lambda: lib.nvmlDeviceGetFieldValues(h, [_FI_DEV_MEMORY_TEMP])
    )
    if fvs is not None:
        gpu.temp_memory_c = _field_number(fvs, gpu, "temp_memory_c")
    for field, threshold in (
        ("temp_shutdown_c", _THRESHOLD_SHUTDOWN),
        ("temp_slowdown_c", _THRESHOLD_SLOWDOWN),
        ("temp_max_operating_c", _THRESHOLD_GPU_MAX),
        ("temp_memory_max_c", _THRESHOLD_MEM_MAX),
        ("temp_target_c", _THRESHOLD_ACOUSTIC_CURR),
    ):
        value = r.get(
            field,
            "nvmlDeviceGetTemperatureThreshold",
            partial(_late, lib, "nvmlDeviceGetTemperatureThreshold", h, threshold),
            enum_arg=True,
        )
        setattr(gpu, field, float(value) if value is not None else None)

    fan = r.get("fan_percent", "nvmlDeviceGetFanSpeed", lambda: lib.nvmlDeviceGetFanSpeed(h))
    gpu.fan_percent = float(fan) if fan is not None else None

    for clock, suffix in ((_CLOCK_GRAPHICS, "graphics"), (_CLOCK_SM, "sm"), (_CLOCK_MEM, "mem")):
        cur = r.get(
            f"clock_{suffix}_mhz", "nvmlDeviceGetClockInfo", partial(_late, lib, "nvmlDeviceGetClockInfo", h, clock)
        )
        setattr(gpu, f"clock_{suffix}_mhz", float(cur) if cur is not None else None)
        top = r.get(
            f"clock_{suffix}_max_mhz",
            "nvmlDeviceGetMaxClockInfo",
            partial(_late, lib, "nvmlDeviceGetMaxClockInfo", h, clock),
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
        if pstate == _PSTATE_UNKNOWN:
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
    gpu.compute_mode = _COMPUTE_MODES.get(mode, f"unknown ({mode})") if mode is not None else None
    mig = r.get("mig_enabled", "nvmlDeviceGetMigMode", lambda: lib.nvmlDeviceGetMigMode(h))
    gpu.mig_enabled = bool(mig[0]) if mig is not None else None

    _read_memory_health(r, lib, h)
    _read_affinity(r, lib, h, sysfs_root)
    _read_nvlinks(r, lib, h)

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


_VALUE_ATTRS = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}


def _value_of(fv: FieldValue) -> float | None:
    """A field value's number, read from the union member its valueType names (None: not a number).
    The per-field return code is the caller's to judge."""
    attr = _VALUE_ATTRS.get(fv.valueType)
    number = getattr(fv.value, attr, None) if attr else None
    return float(number) if isinstance(number, int | float) else None


def _field_number(values: Sequence[FieldValue], gpu: Gpu, field: str) -> float | None:
    """The first field value as a number; its per-field return code becomes the reason."""
    if not values:
        gpu.mark_missing(field, Missing.ERROR)
        return None
    fv = values[0]
    if fv.nvmlReturn != 0:
        gpu.mark_missing(field, _reason(pynvml.NVMLError(fv.nvmlReturn)))
        return None
    number = _value_of(fv)
    if number is None:
        gpu.mark_missing(field, Missing.ERROR)
    return number


def _optional_fields(r: _GpuReader, lib: NvmlLibrary, h: object, field_ids: Sequence[int]) -> list[float | None]:
    """Field values a newer driver has and an older one lacks: each a number, or None where this driver
    does not give it (no diagnostic: absent is expected). GpuIsLost is recorded on the reader."""
    if r.lost_detail is not None:
        return [None] * len(field_ids)
    try:
        values = r.s.call(
            "nvmlDeviceGetFieldValues",
            lambda: lib.nvmlDeviceGetFieldValues(h, list(field_ids)),
            gpu=r.gpu.index,
            quiet=frozenset({_ERR_INVALID_ARGUMENT}),  # a driver that predates the field ids
        )
    except _Failed as failure:
        if failure.reason is Missing.GPU_LOST:
            r.lost_detail = failure.detail
        return [None] * len(field_ids)
    numbers = [_value_of(fv) if fv.nvmlReturn == 0 else None for fv in list(values)[: len(field_ids)]]
    return numbers + [None] * (len(field_ids) - len(numbers))


def _event_counters(r: _GpuReader, lib: NvmlLibrary, h: object) -> dict[str, float]:
    """The per-reason counters a newer driver gives as field values (ns -> us); those it has, only."""
    values = _optional_fields(r, lib, h, [fid for _, fid in _FI_EVENT_COUNTERS])
    return {name: v / 1000.0 for (name, _), v in zip(_FI_EVENT_COUNTERS, values, strict=True) if v is not None}


def _read_power_fields(r: _GpuReader, lib: NvmlLibrary, h: object) -> None:
    """The instantaneous and the averaged draw, where the driver gives them as field values (mW)."""
    values = _optional_fields(r, lib, h, [_FI_POWER_INSTANT, _FI_POWER_AVERAGE])
    for field, mw in zip(("power_draw_w", "power_draw_avg_w"), values, strict=True):
        if mw is not None and mw > 0:
            setattr(r.gpu, field, mw / 1000.0)
            r.gpu.missing.pop(field, None)


def _read_violations(r: _GpuReader, lib: NvmlLibrary, h: object) -> None:
    """Time under each clock-event reason since driver load (ns -> us): power cap and sync boost from the
    perf-policy violation counters; SW/HW thermal slowdown and HW power brake from the field values that
    newer drivers have. Where those are absent, the thermal perf-policy counter (the driver's thermal
    capping) stands in for sw_thermal_slowdown and the two hardware reasons stay unknown."""
    gpu = r.gpu
    durations: dict[str, float] = {}
    first_reason: Missing | None = None
    counters = _event_counters(r, lib, h)
    durations.update(counters)
    policies = [(_PERF_POLICY_POWER, "sw_power_cap"), (_PERF_POLICY_SYNC_BOOST, "sync_boost")]
    if "sw_thermal_slowdown" not in counters:
        policies.insert(1, (_PERF_POLICY_THERMAL, "sw_thermal_slowdown"))
    for policy, reason_name in policies:
        if r.lost_detail is not None:
            break
        try:
            vt = r.s.call(
                "nvmlDeviceGetViolationStatus",
                partial(_late, lib, "nvmlDeviceGetViolationStatus", h, policy),
                gpu=gpu.index,
            )
        except _Failed as failure:
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


def _read_memory_health(r: _GpuReader, lib: NvmlLibrary, h: object) -> None:
    gpu = r.gpu
    ecc = r.get("ecc_enabled", "nvmlDeviceGetEccMode", lambda: lib.nvmlDeviceGetEccMode(h))
    gpu.ecc_enabled = bool(ecc[0]) if ecc is not None else None
    for field, error_type, counter in (
        ("ecc_uncorrected_volatile", _MEMORY_ERROR_UNCORRECTED, _VOLATILE_ECC),
        ("ecc_uncorrected_aggregate", _MEMORY_ERROR_UNCORRECTED, _AGGREGATE_ECC),
        ("ecc_corrected_volatile", _MEMORY_ERROR_CORRECTED, _VOLATILE_ECC),
    ):
        count = r.get(
            field,
            "nvmlDeviceGetTotalEccErrors",
            partial(_late, lib, "nvmlDeviceGetTotalEccErrors", h, error_type, counter),
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
    for field, cause in (("retired_pages_sbe", _RETIRED_CAUSE_SBE), ("retired_pages_dbe", _RETIRED_CAUSE_DBE)):
        pages = r.get(
            field,
            "nvmlDeviceGetRetiredPages",
            partial(_late, lib, "nvmlDeviceGetRetiredPages", h, cause),
        )
        setattr(gpu, field, len(pages) if pages is not None else None)
    pending_pages = r.get(
        "retired_pages_pending",
        "nvmlDeviceGetRetiredPagesPendingStatus",
        lambda: lib.nvmlDeviceGetRetiredPagesPendingStatus(h),
    )
    gpu.retired_pages_pending = bool(pending_pages) if pending_pages is not None else None


def _read_affinity(r: _GpuReader, lib: NvmlLibrary, h: object, sysfs_root: Path | None) -> None:
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
        lambda: lib.nvmlDeviceGetMemoryAffinity(h, _NODE_WORDS, _AFFINITY_SCOPE_NODE),
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
    return max(_CPU_WORDS, math.ceil((os.cpu_count() or 1) / _BITS_PER_WORD))


_QUIET_LINK_END = frozenset({_ERR_INVALID_ARGUMENT})


def _read_nvlinks(r: _GpuReader, lib: NvmlLibrary, h: object) -> None:
    """Links 0..max until the first one NVML says does not exist (NotSupported/InvalidArgument)."""
    gpu = r.gpu
    if r.lost_detail is not None:
        gpu.mark_missing("nvlinks", Missing.GPU_LOST)
        return
    links: list[NvLink] = []
    for link in range(_NVLINK_MAX_LINKS):
        try:
            state = r.s.call(
                "nvmlDeviceGetNvLinkState",
                partial(_late, lib, "nvmlDeviceGetNvLinkState", h, link),
                gpu=gpu.index,
                quiet=_QUIET_LINK_END,
            )
        except _Failed as failure:
            if failure.code in (_ERR_NOT_SUPPORTED, _ERR_INVALID_ARGUMENT):
                break  # no such link: the GPU has `link` NVLinks (zero for a PCIe-only card)
            if failure.reason is Missing.GPU_LOST:
                r.lost_detail = failure.detail
            if not links:
                gpu.mark_missing("nvlinks", failure.reason)
                return
            break
        entry = NvLink(link=link, active=bool(state))
        version = _link_read(
            r,
            entry,
            "version",
            "nvmlDeviceGetNvLinkVersion",
            partial(_late, lib, "nvmlDeviceGetNvLinkVersion", h, link),
        )
        entry.version = int(version) if version is not None else None
        remote = _link_read(
            r,
            entry,
            "remote_pci_bus_id",
            "nvmlDeviceGetNvLinkRemotePciInfo",
            partial(_late, lib, "nvmlDeviceGetNvLinkRemotePciInfo", h, link),
        )
        entry.remote_pci_bus_id = _text(remote.busId) if remote is not None else None
        kind = _link_read(
            r,
            entry,
            "remote_device_type",
            "nvmlDeviceGetNvLinkRemoteDeviceType",
            partial(_late, lib, "nvmlDeviceGetNvLinkRemoteDeviceType", h, link),
        )
        entry.remote_device_type = _NVLINK_DEVICE_TYPES.get(kind, "unknown") if kind is not None else None
        links.append(entry)
        if r.lost_detail is not None:
            break
    gpu.nvlinks = links


def _link_read(r: _GpuReader, entry: NvLink, field: str, name: str, fn: Callable[[], T]) -> T | None:
    if r.lost_detail is not None:
        entry.mark_missing(field, Missing.GPU_LOST)
        return None
    try:
        return r.s.call(name, fn, gpu=r.gpu.index)
    except _Failed as failure:
        if failure.reason is Missing.GPU_LOST:
            r.lost_detail = failure.detail
        entry.mark_missing(field, failure.reason)
        return None


# --- pairs and topology ------------------------------------------------------------------------
def _bdf(bus_id: str | None) -> str | None:
    if bus_id is None:
        return None
    try:
        return normalize_bdf(bus_id)
    except ValueError:
        return None


def count_nvlinks(a: Gpu, b: Gpu, gpu_bus_ids: set[str]) -> int | None:
    """Active NVLinks joining two GPUs: direct links, else the links both have into NVSwitches.

    On an NVSwitch system (HGX/DGX) every link ends at a switch and `topo -m` prints NV<links> for
    every pair; a link counts as a switch link when NVML says so, or, where the driver cannot say,
    when its far end is no GPU of this machine. None when either GPU's links are unknown.
    """
    if a.nvlinks is None or b.nvlinks is None:
        return None
    b_bdf, a_bdf = _bdf(b.pci_bus_id), _bdf(a.pci_bus_id)
    direct = sum(1 for link in a.nvlinks if link.active and b_bdf and _bdf(link.remote_pci_bus_id) == b_bdf)
    if direct:
        return direct
    if a_bdf is None or b_bdf is None:
        return 0

    def switch_links(g: Gpu) -> int:
        n = 0
        for link in g.nvlinks or []:
            if not link.active:
                continue
            remote = _bdf(link.remote_pci_bus_id)
            if link.remote_device_type == "switch" or (
                link.remote_device_type is None and remote is not None and remote not in gpu_bus_ids
            ):
                n += 1
        return n

    return min(switch_links(a), switch_links(b))


def _pair_unreadable(pair: GpuPair, reason: Missing) -> GpuPair:
    for field in ("link", "kind", "nvlinks", "p2p_read", "p2p_write", "p2p_nvlink", "p2p_atomics"):
        pair.mark_missing(field, reason)
    return pair


def _read_pair(s: _Session, a: Gpu, b: Gpu, handles: tuple[object, object], bus_ids: set[str]) -> tuple[GpuPair, bool]:
    """One GPU pair; returns (pair, whether a GPU got lost while reading it)."""
    lib = s.lib
    ha, hb = handles
    pair = GpuPair(a=a.index, b=b.index)
    level: int | None = None
    level_reason: Missing | None = None
    try:
        level = s.call(
            "nvmlDeviceGetTopologyCommonAncestor", lambda: lib.nvmlDeviceGetTopologyCommonAncestor(ha, hb), gpu=a.index
        )
    except _Failed as failure:
        level_reason = failure.reason
        if failure.reason is Missing.GPU_LOST:
            return _pair_unreadable(pair, Missing.GPU_LOST), True
    nvlinks = count_nvlinks(a, b, bus_ids)
    pair.nvlinks = nvlinks
    if nvlinks is None:
        pair.mark_missing("nvlinks", a.missing.get("nvlinks") or b.missing.get("nvlinks") or Missing.ERROR)
    pair.link = code_from_nvml(level, nvlinks or 0)
    if pair.link is None:
        pair.mark_missing("link", level_reason or Missing.NOT_SUPPORTED)
        pair.mark_missing("kind", level_reason or Missing.NOT_SUPPORTED)
    else:
        pair.kind = kind_of(pair.link)
    for field, caps in _P2P_CAPS:
        try:
            status = s.call(
                "nvmlDeviceGetP2PStatus",
                partial(_late, lib, "nvmlDeviceGetP2PStatus", ha, hb, caps),
                gpu=a.index,
            )
        except _Failed as failure:
            pair.mark_missing(field, failure.reason)
            if failure.reason is Missing.GPU_LOST:
                return pair, True
            continue
        setattr(pair, field, _P2P_STATUS.get(status, P2PStatus.UNKNOWN))
    return pair, False


def _topology(gpus: list[Gpu], pairs: list[GpuPair], gpu_numa_ids: dict[int, str]) -> TopoMatrix:
    n = len(gpus)
    pos = {g.index: i for i, g in enumerate(gpus)}
    matrix = [["X" if i == j else "N/A" for j in range(n)] for i in range(n)]
    for p in pairs:
        code = p.link or "N/A"
        matrix[pos[p.a]][pos[p.b]] = code
        matrix[pos[p.b]][pos[p.a]] = code
    # topo -m prints N/A where it has no value; "new" because NVML's levels map to the new codes.
    return TopoMatrix(
        labels=[f"GPU{g.index}" for g in gpus],
        matrix=matrix,
        gpus=[
            TopoGpu(
                index=g.index,
                cpu_affinity=g.cpu_affinity or "N/A",
                numa_affinity=str(g.numa_node) if g.numa_node is not None else "N/A",
                gpu_numa_id=gpu_numa_ids.get(g.index, "N/A"),
            )
            for g in gpus
        ],
        legend="new",
    )


def _first(s: _Session, attempts: Sequence[tuple[str, Callable[[], T]]]) -> T:
    """The first versioned symbol the driver has; re-raises the last failure."""
    for i, (name, fn) in enumerate(attempts):
        try:
            return s.call(name, fn)
        except _Failed as failure:
            if failure.reason is not Missing.DRIVER_TOO_OLD or i + 1 == len(attempts):
                raise
    raise _Failed(Missing.ERROR, "no function to call")


def _read_software(s: _Session, software: Software) -> None:
    lib = s.lib
    for field, name, fn in (
        ("driver_version", "nvmlSystemGetDriverVersion", partial(_late, lib, "nvmlSystemGetDriverVersion")),
        ("nvml_version", "nvmlSystemGetNVMLVersion", partial(_late, lib, "nvmlSystemGetNVMLVersion")),
    ):
        try:
            setattr(software, field, _text(s.call(name, fn)))
        except _Failed as failure:
            software.mark_missing(field, failure.reason)
    cuda: int | None = None
    try:
        cuda = _first(
            s,
            [
                ("nvmlSystemGetCudaDriverVersion_v2", partial(_late, lib, "nvmlSystemGetCudaDriverVersion_v2")),
                ("nvmlSystemGetCudaDriverVersion", partial(_late, lib, "nvmlSystemGetCudaDriverVersion")),
            ],
        )
    except _Failed as failure:
        software.mark_missing("cuda_driver_version", failure.reason)
    if cuda is not None:
        software.cuda_driver_version = cuda_version_string(int(cuda))


def _read_gpu_numa_id(s: _Session, index: int, h: object) -> str | None:
    """topo -m's "GPU NUMA ID": only GPUs that are NUMA nodes themselves have one."""
    try:
        node = s.call("nvmlDeviceGetNumaNodeId", lambda: s.lib.nvmlDeviceGetNumaNodeId(h), gpu=index)
    except _Failed:
        return None
    return str(node) if node >= 0 else None


def probe_nvml(nvml: NvmlLibrary | None = None, *, sysfs_root: Path | None = Path("/")) -> Snapshot:
    """Read every GPU through NVML (``nvml=None``: the real pynvml module).

    ``sysfs_root`` is where to find sysfs for the NUMA-node fallback (None: no fallback).
    Raises ProbeError with a one-line message when NVML cannot start at all.
    """
    lib: NvmlLibrary = pynvml if nvml is None else nvml
    try:
        lib.nvmlInit()
    except pynvml.NVMLError as exc:
        raise ProbeError(_init_message(exc)) from None
    try:
        return _probe(lib, sysfs_root)
    finally:
        try:
            lib.nvmlShutdown()
        except pynvml.NVMLError as exc:
            log.debug("nvmlShutdown failed: %s", exc)


def _probe(lib: NvmlLibrary, sysfs_root: Path | None) -> Snapshot:
    s = _Session(lib)
    snap = Snapshot(source=Source(kind="nvml"))
    _read_software(s, snap.software)
    try:
        count = s.call("nvmlDeviceGetCount", partial(_late, lib, "nvmlDeviceGetCount"))
    except _Failed as failure:
        raise ProbeError(f"NVML could not count the GPUs: {failure.detail}") from None

    handles: dict[int, object] = {}
    lost: set[int] = set()
    gpu_numa_ids: dict[int, str] = {}
    for index in range(count):
        gpu, handle, gone = _read_gpu(s, index, sysfs_root)
        snap.gpus.append(gpu)
        if handle is not None:
            handles[index] = handle
            if not gone:
                numa_id = _read_gpu_numa_id(s, index, handle)
                if numa_id is not None:
                    gpu_numa_ids[index] = numa_id
        if gone:
            lost.add(index)

    bus_ids = {bdf for g in snap.gpus if (bdf := _bdf(g.pci_bus_id)) is not None}
    for i, a in enumerate(snap.gpus):
        for b in snap.gpus[i + 1 :]:
            pair = GpuPair(a=a.index, b=b.index)
            if a.index in lost or b.index in lost:
                bad = a if a.index in lost else b
                snap.pairs.append(_pair_unreadable(pair, bad.read_error or Missing.GPU_LOST))
                continue
            pair, gone = _read_pair(s, a, b, (handles[a.index], handles[b.index]), bus_ids)
            snap.pairs.append(pair)
            if gone:  # which of the two fell off is unknown; their later calls will say
                log.debug("GPU lost while reading pair %d-%d", a.index, b.index)

    if not snap.gpus:
        snap.gpu_absent_reason = "the NVIDIA driver is loaded but reports no GPUs"
    snap.topology = _topology(snap.gpus, snap.pairs, gpu_numa_ids) if snap.gpus else None
    snap.diagnostics = s.diagnostics
    snap.missing_functions = sorted(s.missing_functions)
    return snap


# --- telemetry: a cheap repeated poll for the sampler ----------------------------------------------
# What one poll reads per GPU, in order: (field, NVML function). Static facts (name, thresholds, default
# limit, max SM clock) are read once when the poller opens. The reasons read picks the newer function and
# falls back to the pre-R535 "throttle" name when the driver lacks it.
_POLL_REASON_FUNCTIONS = ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons")
_POLL_FIELDS = (
    ("power_w", "nvmlDeviceGetPowerUsage"),
    ("power_limit_w", "nvmlDeviceGetEnforcedPowerLimit"),
    ("temp_c", "nvmlDeviceGetTemperature"),
    ("temp_memory_c", "nvmlDeviceGetFieldValues"),
    ("sm_clock_mhz", "nvmlDeviceGetClockInfo"),
    ("mem_clock_mhz", "nvmlDeviceGetClockInfo"),
    ("utilization_gpu_percent", "nvmlDeviceGetUtilizationRates"),
    ("reasons", "nvmlDeviceGetCurrentClocksEventReasons"),
)
_STATIC_FAILURES = (_ERR_NOT_SUPPORTED, _ERR_NO_PERMISSION)


class _GpuLost(Exception):
    """GpuIsLost during a poll; carries the function that said so."""


class _PolledGpu:
    """One GPU being polled: its handle, what it cannot give (field -> reason), and whether it is gone."""

    __slots__ = ("handle", "index", "info", "lost", "lost_detail", "max_sm_clock_mhz", "unavailable")

    def __init__(self, index: int, handle: object | None, info: TraceGpu) -> None:
        self.index = index
        self.handle = handle
        self.info = info
        self.unavailable: dict[str, Missing] = {}
        self.max_sm_clock_mhz: float | None = None
        self.lost = False  # a lost sample has been emitted; the GPU is not polled again
        self.lost_detail: str | None = None  # lost, but the lost sample is still to be emitted


class NvmlPoller:
    """Polls power, limit, temperatures, clocks, utilisation and clock-event reasons of each GPU.

    A context manager: ``nvmlInit`` once on enter (ProbeError with one line when NVML cannot start or
    sees no GPU), ``nvmlShutdown`` on exit. ``gpus`` maps each polled GPU's index to its static facts,
    read once. ``poll(t_s)`` returns one Sample per GPU still on the bus.

    Error mapping, as in the probe: NotSupported / NoPermission -> None (and the field is not asked for
    again on that GPU: ``unavailable`` keeps the reason), a function the driver lacks -> None, probed once
    (``missing_functions``), GpuIsLost -> one Sample with ``lost=True`` (what was read before it kept),
    then that GPU is not polled again; any other NVML error -> None for this poll only (``errors``
    counts them).
    """

    def __init__(self, nvml: NvmlLibrary | None = None, *, gpus: Sequence[int] | None = None) -> None:
        self._lib: NvmlLibrary = pynvml if nvml is None else nvml
        self._wanted = list(gpus) if gpus is not None else None
        self._polled: list[_PolledGpu] = []
        self._open = False
        self._reasons_fn: str | None = None
        self.gpus: dict[int, TraceGpu] = {}
        self.uuids: dict[int, str] = {}  # NVML index -> "GPU-..." (to find the same GPU in CUDA's order)
        self.missing_functions: set[str] = set()
        self.errors = 0  # NVML errors other than NotSupported / NoPermission / lost / absent, all polls

    # -- lifecycle ------------------------------------------------------------------------------
    def __enter__(self) -> NvmlPoller:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> None:
        lib = self._lib
        try:
            lib.nvmlInit()
        except pynvml.NVMLError as exc:
            raise ProbeError(_init_message(exc)) from None
        self._open = True
        try:
            count = int(lib.nvmlDeviceGetCount())
        except pynvml.NVMLError as exc:
            self.close()
            raise ProbeError(f"NVML could not count the GPUs: {type(exc).__name__}: {exc}") from None
        if count == 0:
            self.close()
            raise ProbeError("the NVIDIA driver is loaded but reports no GPUs")
        wanted = self._wanted if self._wanted is not None else list(range(count))
        absent = [i for i in wanted if not 0 <= i < count]
        if absent:
            self.close()
            raise ProbeError(f"no GPU {absent[0]}: NVML sees {count} GPU(s), indices 0-{count - 1}")
        for name in (*_POLL_REASON_FUNCTIONS, *(fn for _, fn in _POLL_FIELDS)):
            if not hasattr(lib, name):
                self.missing_functions.add(name)
        self._reasons_fn = next((n for n in _POLL_REASON_FUNCTIONS if n not in self.missing_functions), None)
        for index in wanted:
            self._polled.append(self._open_gpu(index))
        self.gpus = {g.index: g.info for g in self._polled}

    def close(self) -> None:
        if not self._open:
            return
        self._open = False
        try:
            self._lib.nvmlShutdown()
        except pynvml.NVMLError as exc:
            log.debug("nvmlShutdown failed: %s", exc)

    def _open_gpu(self, index: int) -> _PolledGpu:
        lib = self._lib
        info = TraceGpu(index=index)
        try:
            handle = lib.nvmlDeviceGetHandleByIndex(index)
        except pynvml.NVMLError as exc:
            g = _PolledGpu(index, None, info)
            g.lost_detail = f"nvmlDeviceGetHandleByIndex: {type(exc).__name__}: {exc}"
            return g
        g = _PolledGpu(index, handle, info)
        try:
            name = self._static(g, "nvmlDeviceGetName", lambda: lib.nvmlDeviceGetName(handle))
            info.name = _text(name) if name is not None else None
            uuid = self._static(g, "nvmlDeviceGetUUID", lambda: lib.nvmlDeviceGetUUID(handle))
            if uuid is not None:
                self.uuids[index] = _text(uuid)
            for attr, threshold in (
                ("temp_slowdown_c", _THRESHOLD_SLOWDOWN),
                ("temp_shutdown_c", _THRESHOLD_SHUTDOWN),
                ("temp_max_operating_c", _THRESHOLD_GPU_MAX),
            ):
                value = self._static(
                    g,
                    "nvmlDeviceGetTemperatureThreshold",
                    partial(_late, lib, "nvmlDeviceGetTemperatureThreshold", handle, threshold),
                )
                setattr(info, attr, float(value) if value is not None else None)
            limit = self._static(
                g,
                "nvmlDeviceGetPowerManagementDefaultLimit",
                lambda: lib.nvmlDeviceGetPowerManagementDefaultLimit(handle),
            )
            info.power_default_limit_w = limit / 1000.0 if limit is not None else None
            top = self._static(
                g, "nvmlDeviceGetMaxClockInfo", partial(_late, lib, "nvmlDeviceGetMaxClockInfo", handle, _CLOCK_SM)
            )
            g.max_sm_clock_mhz = float(top) if top is not None else None
        except _GpuLost as lost:
            g.lost_detail = str(lost)
        return g

    def _static(self, g: _PolledGpu, name: str, fn: Callable[[], T]) -> T | None:
        """A one-off read at open: any failure but a lost GPU is just None."""
        if name in self.missing_functions:
            return None
        try:
            return fn()
        except pynvml.NVMLError as exc:
            code = getattr(exc, "value", None)
            if code == _ERR_GPU_IS_LOST:
                raise _GpuLost(f"{name}: {type(exc).__name__}: {exc}") from None
            if code == _ERR_FUNCTION_NOT_FOUND:
                self.missing_functions.add(name)
            log.debug("GPU %d: %s failed: %s", g.index, name, exc)
            return None

    # -- polling --------------------------------------------------------------------------------
    @property
    def unavailable(self) -> dict[int, dict[str, str]]:
        """Per GPU, the fields it cannot give and why (``not_supported``, ``no_permission``, ...)."""
        return {g.index: {f: r.value for f, r in g.unavailable.items()} for g in self._polled if g.unavailable}

    @property
    def active(self) -> list[int]:
        """GPUs still polled (not lost)."""
        return [g.index for g in self._polled if not g.lost and g.lost_detail is None]

    def poll(self, t_s: float) -> list[Sample]:
        """One reading of every GPU still on the bus, stamped ``t_s``."""
        if not self._open:
            raise ProbeError("the NVML poller is not open")
        out: list[Sample] = []
        for g in self._polled:
            if g.lost:
                continue
            sample = Sample(t_s=t_s, gpu=g.index, sm_clock_max_mhz=g.max_sm_clock_mhz)
            if g.lost_detail is None:
                try:
                    self._read(g, sample)
                except _GpuLost as lost:
                    g.lost_detail = str(lost)
            if g.lost_detail is not None:
                log.debug("GPU %d lost: %s", g.index, g.lost_detail)
                sample.lost = True
                g.lost = True
            out.append(sample)
        return out

    def _call(self, g: _PolledGpu, field: str, name: str, fn: Callable[[], T]) -> T | None:
        if field in g.unavailable:
            return None
        if name in self.missing_functions:
            g.unavailable[field] = Missing.DRIVER_TOO_OLD
            return None
        try:
            return fn()
        except pynvml.NVMLError as exc:
            code = getattr(exc, "value", None)
            if code == _ERR_GPU_IS_LOST:
                raise _GpuLost(f"{name}: {type(exc).__name__}: {exc}") from None
            if code in _STATIC_FAILURES:
                g.unavailable[field] = _reason(exc)
            elif code == _ERR_FUNCTION_NOT_FOUND:
                self.missing_functions.add(name)
                g.unavailable[field] = Missing.DRIVER_TOO_OLD
            else:
                self.errors += 1
                log.debug("GPU %d: %s failed: %s", g.index, name, exc)
            return None

    def _read(self, g: _PolledGpu, s: Sample) -> None:
        lib, h = self._lib, g.handle
        power = self._call(g, "power_w", "nvmlDeviceGetPowerUsage", lambda: lib.nvmlDeviceGetPowerUsage(h))
        s.power_w = power / 1000.0 if power is not None else None
        limit = self._call(
            g, "power_limit_w", "nvmlDeviceGetEnforcedPowerLimit", lambda: lib.nvmlDeviceGetEnforcedPowerLimit(h)
        )
        s.power_limit_w = limit / 1000.0 if limit is not None else None
        temp = self._call(
            g, "temp_c", "nvmlDeviceGetTemperature", lambda: lib.nvmlDeviceGetTemperature(h, _TEMPERATURE_GPU)
        )
        s.temp_c = float(temp) if temp is not None else None
        if "temp_memory_c" not in g.unavailable:
            values = self._call(
                g,
                "temp_memory_c",
                "nvmlDeviceGetFieldValues",
                lambda: lib.nvmlDeviceGetFieldValues(h, [_FI_DEV_MEMORY_TEMP]),
            )
            if values is not None:
                s.temp_memory_c = self._field_value(g, "temp_memory_c", values)
        sm = self._call(g, "sm_clock_mhz", "nvmlDeviceGetClockInfo", lambda: lib.nvmlDeviceGetClockInfo(h, _CLOCK_SM))
        s.sm_clock_mhz = float(sm) if sm is not None else None
        mem = self._call(
            g, "mem_clock_mhz", "nvmlDeviceGetClockInfo", lambda: lib.nvmlDeviceGetClockInfo(h, _CLOCK_MEM)
        )
        s.mem_clock_mhz = float(mem) if mem is not None else None
        util = self._call(
            g,
            "utilization_gpu_percent",
            "nvmlDeviceGetUtilizationRates",
            lambda: lib.nvmlDeviceGetUtilizationRates(h),
        )
        s.utilization_gpu_percent = float(util.gpu) if util is not None else None
        s.reasons = self._reasons(g)

    def _reasons(self, g: _PolledGpu) -> list[str] | None:
        lib, h = self._lib, g.handle
        while self._reasons_fn is not None:
            name = self._reasons_fn
            fn = getattr(lib, name)
            if "reasons" in g.unavailable:
                return None
            mask = self._call(g, "reasons", name, partial(fn, h))
            if mask is not None:
                return decode_clock_event_reasons(int(mask))
            if name not in self.missing_functions:
                return None
            # The driver lacks this one: fall back to the older name, for every GPU from now on.
            g.unavailable.pop("reasons", None)
            later = _POLL_REASON_FUNCTIONS[_POLL_REASON_FUNCTIONS.index(name) + 1 :]
            self._reasons_fn = next((n for n in later if n not in self.missing_functions), None)
        g.unavailable["reasons"] = Missing.DRIVER_TOO_OLD
        return None

    def _field_value(self, g: _PolledGpu, field: str, values: Sequence[FieldValue]) -> float | None:
        if not values:
            return None
        fv = values[0]
        if fv.nvmlReturn != 0:
            if fv.nvmlReturn == _ERR_GPU_IS_LOST:
                raise _GpuLost(f"nvmlDeviceGetFieldValues: field {_FI_DEV_MEMORY_TEMP}: GpuIsLost")
            if fv.nvmlReturn in _STATIC_FAILURES:
                g.unavailable[field] = (
                    Missing.NOT_SUPPORTED if fv.nvmlReturn == _ERR_NOT_SUPPORTED else Missing.NO_PERMISSION
                )
            return None
        return _value_of(fv)
