"""A fake NVML: a real implementation of rigcheck.probe.nvml.NvmlLibrary, driven by per-GPU data.

Methods carry pynvml's names and argument order and raise pynvml's own NVMLError subclasses
(``pynvml.NVMLError(code)`` maps itself to e.g. NVMLError_NotSupported). Named scenarios below build
configured fakes; ``SCENARIOS`` maps their names to the builders so any test (checks included) can
run against every one of them. The records and the driver-side health calls live in tests/support/fakenvml_parts.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from types import SimpleNamespace

import pynvml

from tests.support.fakenvml_parts import (
    FUNCTION_NOT_FOUND,
    GPU_IS_LOST,
    HOSTBRIDGE,
    IDLE,
    INVALID_ARGUMENT,
    NO_PERMISSION,
    NODE,
    NOT_SUPPORTED,
    SINGLE,
    SW_POWER_CAP,
    SW_THERMAL,
    SYSTEM,
    UNKNOWN,
    DriverHealthCalls,
    FakeFabric,
    FakeGpu,
    FakeLink,
    FakeProcess,
    FieldValue,
    Handle,
    MemoryInfo,
    PciInfo,
    Utilization,
    ViolationTime,
)
from tests.support.fakenvml_parts import mask_words as _mask_words
from tests.support.fakenvml_parts import raise_nvml as _raise


class FakeNvml(DriverHealthCalls):
    """The fake library. ``calls`` records every function called, in order."""

    def __init__(
        self,
        gpus: list[FakeGpu],
        *,
        topology: Callable[[int, int], int] | None = None,
        p2p: Callable[[int, int, int], int] | None = None,
        absent: Sequence[str] = (),
        init_error: int | None = None,
        errors: dict[str, int] | None = None,
        driver: str = "550.54.15",
        nvml_version: str = "12.550.54.15",
        cuda: int = 12040,
    ) -> None:
        self.gpus = gpus
        self.topology = topology or (lambda a, b: NODE if gpus[a].numa == gpus[b].numa else SYSTEM)
        self.p2p = p2p or (lambda a, b, caps: 0)
        self.absent = set(absent)  # functions the "driver" lacks: FunctionNotFound
        self.init_error = init_error
        self.errors = errors or {}  # system-level function -> error code
        self.driver = driver
        self.nvml_version = nvml_version
        self.cuda = cuda
        self.calls: list[str] = []
        self.initialized = 0
        self.shutdowns = 0
        self._gpu_calls = [0] * len(gpus)

    # -- plumbing ---------------------------------------------------------------------------
    def _enter(self, name: str, *handles: Handle) -> None:
        self.calls.append(name)
        if name in self.absent:
            _raise(FUNCTION_NOT_FOUND)
        if self.initialized <= 0 and name != "nvmlInit":
            _raise(pynvml.NVML_ERROR_UNINITIALIZED)
        if name in self.errors:
            _raise(self.errors[name])
        for h in handles:
            gpu = self.gpus[h.index]
            self._gpu_calls[h.index] += 1
            if gpu.lost_after is not None and self._gpu_calls[h.index] > gpu.lost_after:
                _raise(GPU_IS_LOST)
            if gpu.broken is not None:
                _raise(gpu.broken)
            if name in gpu.errors:
                _raise(gpu.errors[name])

    def _gpu(self, name: str, handle: object) -> FakeGpu:
        assert isinstance(handle, Handle), f"{name} got {handle!r}, not a handle"
        self._enter(name, handle)
        return self.gpus[handle.index]

    def count(self, name: str) -> int:
        return self.calls.count(name)

    # -- system -----------------------------------------------------------------------------
    def nvmlInit(self) -> None:
        self._enter("nvmlInit")
        if self.init_error is not None:
            _raise(self.init_error)
        self.initialized += 1

    def nvmlShutdown(self) -> None:
        self._enter("nvmlShutdown")
        self.initialized -= 1
        self.shutdowns += 1

    def nvmlSystemGetDriverVersion(self) -> str:
        self._enter("nvmlSystemGetDriverVersion")
        return self.driver

    def nvmlSystemGetNVMLVersion(self) -> str:
        self._enter("nvmlSystemGetNVMLVersion")
        return self.nvml_version

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        self._enter("nvmlSystemGetCudaDriverVersion_v2")
        return self.cuda

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        self._enter("nvmlSystemGetCudaDriverVersion")
        return self.cuda

    def nvmlDeviceGetCount(self) -> int:
        self._enter("nvmlDeviceGetCount")
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int, /) -> object:
        self._enter("nvmlDeviceGetHandleByIndex")
        if not 0 <= index < len(self.gpus):
            _raise(INVALID_ARGUMENT)
        code = self.gpus[index].errors.get("nvmlDeviceGetHandleByIndex")
        if code is not None:
            _raise(code)
        return Handle(index)

    # -- identity and memory ----------------------------------------------------------------
    def nvmlDeviceGetName(self, handle: object, /) -> str:
        return self._gpu("nvmlDeviceGetName", handle).name

    def nvmlDeviceGetUUID(self, handle: object, /) -> str:
        return self._gpu("nvmlDeviceGetUUID", handle).uuid

    def nvmlDeviceGetPciInfo(self, handle: object, /) -> PciInfo:
        return PciInfo(busId=self._gpu("nvmlDeviceGetPciInfo", handle).bus_id)

    def nvmlDeviceGetArchitecture(self, handle: object, /) -> int:
        return self._gpu("nvmlDeviceGetArchitecture", handle).arch

    def nvmlDeviceGetCudaComputeCapability(self, handle: object, /) -> tuple[int, int]:
        return self._gpu("nvmlDeviceGetCudaComputeCapability", handle).cc

    def nvmlDeviceGetVbiosVersion(self, handle: object, /) -> str:
        return self._gpu("nvmlDeviceGetVbiosVersion", handle).vbios

    def nvmlDeviceGetMemoryInfo(self, handle: object, version: int = 0, /) -> MemoryInfo:
        # pynvml calls the C symbol nvmlDeviceGetMemoryInfo_v2 when given a version; v1's `used` counts
        # the driver's reserved memory, v2's does not (nvml.h).
        g = self._gpu("nvmlDeviceGetMemoryInfo_v2" if version else "nvmlDeviceGetMemoryInfo", handle)
        free = g.memory_total - g.memory_used - g.memory_reserved  # the same in both versions
        used = g.memory_used if version else g.memory_used + g.memory_reserved
        return MemoryInfo(total=g.memory_total, used=used, free=free)

    def nvmlDeviceGetUtilizationRates(self, handle: object, /) -> Utilization:
        return Utilization(gpu=self._gpu("nvmlDeviceGetUtilizationRates", handle).util)

    # -- power ------------------------------------------------------------------------------
    def nvmlDeviceGetPowerUsage(self, handle: object, /) -> int:
        return self._gpu("nvmlDeviceGetPowerUsage", handle).power_mw

    def nvmlDeviceGetPowerManagementLimit(self, handle: object, /) -> int:
        return self._gpu("nvmlDeviceGetPowerManagementLimit", handle).limit_mw

    def nvmlDeviceGetPowerManagementDefaultLimit(self, handle: object, /) -> int:
        return self._gpu("nvmlDeviceGetPowerManagementDefaultLimit", handle).default_limit_mw

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: object, /) -> int:
        return self._gpu("nvmlDeviceGetEnforcedPowerLimit", handle).enforced_limit_mw

    def nvmlDeviceGetPowerManagementLimitConstraints(self, handle: object, /) -> list[int]:
        g = self._gpu("nvmlDeviceGetPowerManagementLimitConstraints", handle)
        return [g.min_limit_mw, g.max_limit_mw]

    # -- thermal ----------------------------------------------------------------------------
    def nvmlDeviceGetTemperature(self, handle: object, sensor: int, /) -> int:
        g = self._gpu("nvmlDeviceGetTemperature", handle)
        if sensor != 0:
            _raise(INVALID_ARGUMENT)
        return g.temp

    def nvmlDeviceGetTemperatureThreshold(self, handle: object, threshold: int, /) -> int:
        g = self._gpu("nvmlDeviceGetTemperatureThreshold", handle)
        if threshold in g.unknown_thresholds:
            _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)  # a driver older than the enum value
        if threshold not in g.thresholds:
            _raise(NOT_SUPPORTED)
        return g.thresholds[threshold]

    def nvmlDeviceGetFieldValues(self, handle: object, field_ids: list[int | tuple[int, int]], /) -> list[FieldValue]:
        g = self._gpu("nvmlDeviceGetFieldValues", handle)
        out = []
        for asked in field_ids:
            fid, scope = asked if isinstance(asked, tuple) else (asked, 0)
            link = g.links[scope] if scope < len(g.links) and g.links[scope].present else None
            if g.link_fields and g.links and fid == 91:
                out.append(FieldValue(0, 1, SimpleNamespace(uiVal=len(g.links))))
            elif g.link_fields and fid == 164 and link is not None and link.active:
                out.append(FieldValue(0, 1, SimpleNamespace(uiVal=link.speed_mbps)))
            elif fid == 230 and g.recovery_action is not None:
                out.append(FieldValue(0, 1, SimpleNamespace(uiVal=g.recovery_action)))
            elif fid == 82 and g.memory_temp is not None:
                out.append(FieldValue(0, 1, SimpleNamespace(uiVal=g.memory_temp)))
            elif fid in g.power_fields_mw:
                out.append(FieldValue(0, 1, SimpleNamespace(uiVal=g.power_fields_mw[fid])))
            elif fid in g.event_counters_ns:
                out.append(FieldValue(0, 3, SimpleNamespace(ullVal=g.event_counters_ns[fid])))
            else:
                out.append(FieldValue(NOT_SUPPORTED, 1, SimpleNamespace(uiVal=0)))
        return out

    def nvmlDeviceGetFanSpeed(self, handle: object, /) -> int:
        return self._gpu("nvmlDeviceGetFanSpeed", handle).fan

    # -- clocks -----------------------------------------------------------------------------
    def nvmlDeviceGetClockInfo(self, handle: object, clock_type: int, /) -> int:
        return self._gpu("nvmlDeviceGetClockInfo", handle).clocks[clock_type]

    def nvmlDeviceGetMaxClockInfo(self, handle: object, clock_type: int, /) -> int:
        return self._gpu("nvmlDeviceGetMaxClockInfo", handle).max_clocks[clock_type]

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: object, /) -> int:
        return self._gpu("nvmlDeviceGetCurrentClocksEventReasons", handle).reasons

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle: object, /) -> int:
        return self._gpu("nvmlDeviceGetCurrentClocksThrottleReasons", handle).reasons

    def nvmlDeviceGetSupportedClocksEventReasons(self, handle: object, /) -> int:
        return self._gpu("nvmlDeviceGetSupportedClocksEventReasons", handle).supported_reasons

    def nvmlDeviceGetSupportedClocksThrottleReasons(self, handle: object, /) -> int:
        return self._gpu("nvmlDeviceGetSupportedClocksThrottleReasons", handle).supported_reasons

    def nvmlDeviceGetViolationStatus(self, handle: object, policy: int, /) -> ViolationTime:
        g = self._gpu("nvmlDeviceGetViolationStatus", handle)
        if policy not in g.violations_ns:
            _raise(NOT_SUPPORTED)
        return ViolationTime(violationTime=g.violations_ns[policy])

    def nvmlDeviceGetPerformanceState(self, handle: object, /) -> int:
        return self._gpu("nvmlDeviceGetPerformanceState", handle).pstate

    # -- PCIe -------------------------------------------------------------------------------
    def nvmlDeviceGetCurrPcieLinkGeneration(self, handle: object, /) -> int:
        return self._gpu("nvmlDeviceGetCurrPcieLinkGeneration", handle).pcie_gen

    def nvmlDeviceGetMaxPcieLinkGeneration(self, handle: object, /) -> int:
        return self._gpu("nvmlDeviceGetMaxPcieLinkGeneration", handle).pcie_gen_max

    def nvmlDeviceGetGpuMaxPcieLinkGeneration(self, handle: object, /) -> int:
        return self._gpu("nvmlDeviceGetGpuMaxPcieLinkGeneration", handle).pcie_gen_gpu_max

    def nvmlDeviceGetCurrPcieLinkWidth(self, handle: object, /) -> int:
        return self._gpu("nvmlDeviceGetCurrPcieLinkWidth", handle).pcie_width

    def nvmlDeviceGetMaxPcieLinkWidth(self, handle: object, /) -> int:
        return self._gpu("nvmlDeviceGetMaxPcieLinkWidth", handle).pcie_width_max

    def nvmlDeviceGetPcieReplayCounter(self, handle: object, /) -> int:
        return self._gpu("nvmlDeviceGetPcieReplayCounter", handle).replay

    # -- modes ------------------------------------------------------------------------------
    def nvmlDeviceGetPersistenceMode(self, handle: object, /) -> int:
        return self._gpu("nvmlDeviceGetPersistenceMode", handle).persistence

    def nvmlDeviceGetComputeMode(self, handle: object, /) -> int:
        return self._gpu("nvmlDeviceGetComputeMode", handle).compute_mode

    def nvmlDeviceGetMigMode(self, handle: object, /) -> list[int]:
        return list(self._gpu("nvmlDeviceGetMigMode", handle).mig)

    # -- memory health ----------------------------------------------------------------------
    def nvmlDeviceGetEccMode(self, handle: object, /) -> list[int]:
        return list(self._gpu("nvmlDeviceGetEccMode", handle).ecc)

    def nvmlDeviceGetTotalEccErrors(self, handle: object, error_type: int, counter_type: int, /) -> int:
        g = self._gpu("nvmlDeviceGetTotalEccErrors", handle)
        if not g.ecc[0]:
            _raise(NOT_SUPPORTED)
        return g.ecc_counts.get((error_type, counter_type), 0)

    def nvmlDeviceGetRemappedRows(self, handle: object, /) -> tuple[int, int, int, int]:
        return self._gpu("nvmlDeviceGetRemappedRows", handle).remapped

    def nvmlDeviceGetRetiredPages(self, handle: object, cause: int, /) -> list[int]:
        return list(self._gpu("nvmlDeviceGetRetiredPages", handle).retired.get(cause, []))

    def nvmlDeviceGetRetiredPagesPendingStatus(self, handle: object, /) -> int:
        return self._gpu("nvmlDeviceGetRetiredPagesPendingStatus", handle).retired_pending

    # -- affinity ---------------------------------------------------------------------------
    def nvmlDeviceGetMemoryAffinity(self, handle: object, node_set_size: int, scope: int, /) -> list[int]:
        g = self._gpu("nvmlDeviceGetMemoryAffinity", handle)
        return _mask_words([g.numa], node_set_size)

    def nvmlDeviceGetNumaNodeId(self, handle: object, /) -> int:
        self._gpu("nvmlDeviceGetNumaNodeId", handle)
        _raise(NOT_SUPPORTED)  # x86 GPUs are not NUMA nodes themselves
        return -1

    def nvmlDeviceGetCpuAffinity(self, handle: object, cpu_set_size: int, /) -> list[int]:
        return _mask_words(self._gpu("nvmlDeviceGetCpuAffinity", handle).cpus, cpu_set_size)

    # -- pairs ------------------------------------------------------------------------------
    def nvmlDeviceGetTopologyCommonAncestor(self, handle1: object, handle2: object, /) -> int:
        assert isinstance(handle1, Handle)
        assert isinstance(handle2, Handle)
        self._enter("nvmlDeviceGetTopologyCommonAncestor", handle1, handle2)
        return self.topology(handle1.index, handle2.index)

    def nvmlDeviceGetP2PStatus(self, handle1: object, handle2: object, caps_index: int, /) -> int:
        assert isinstance(handle1, Handle)
        assert isinstance(handle2, Handle)
        assert isinstance(caps_index, int), "pynvml's NVML_P2P_CAPS_INDEX_READ is a tuple; pass an int"
        self._enter("nvmlDeviceGetP2PStatus", handle1, handle2)
        return self.p2p(handle1.index, handle2.index, caps_index)


# --- scenarios -------------------------------------------------------------------------------
H100_BUS_IDS = [f"00000000:{b:02X}:00.0" for b in (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)]
NVSWITCH_BUS_IDS = [f"00000000:{b:02X}:00.0" for b in (0x05, 0x06, 0x07, 0x08)]


def healthy_8x_h100_nvlink() -> FakeNvml:
    """8 H100 SXM5 on NVSwitches (18 links each, NV18 all-to-all), 2 NUMA nodes, all P2P ok."""
    gpus = []
    for i, bus in enumerate(H100_BUS_IDS):
        numa = 0 if i < 4 else 1
        gpus.append(
            FakeGpu(
                uuid=f"GPU-8e1b0000-0000-0000-0000-00000000000{i}",
                bus_id=bus,
                numa=numa,
                cpus=tuple(range(0, 48)) + tuple(range(96, 144))
                if numa == 0
                else tuple(range(48, 96)) + tuple(range(144, 192)),
                links=[FakeLink(remote_bus_id=NVSWITCH_BUS_IDS[k % 4]) for k in range(18)],
                fabric=FakeFabric(),  # an HGX board: fabric Completed, Success, clique 0, Healthy
            )
        )
    return FakeNvml(gpus)


def hgx_recovery_reset() -> FakeNvml:
    """The 8x H100 board; the driver asks for GPU3 to be reset (NVML_GPU_RECOVERY_ACTION_GPU_RESET)."""
    lib = healthy_8x_h100_nvlink()
    lib.gpus[3].recovery_action = 1
    return lib


def nvlink_replay_errors() -> FakeNvml:
    """The 8x H100 board; GPU2's links 4 and 5 count replay errors, link 5 also a recovery and CRC errors."""
    lib = healthy_8x_h100_nvlink()
    links = lib.gpus[2].links
    links[4] = replace(links[4], replay=12)
    links[5] = replace(links[5], replay=3, recovery=1, crc_flit=40, crc_data=None)
    return lib


def busy_node_corrupt_inforom() -> FakeNvml:
    """One A100 whose InfoROM is corrupt, with two processes still holding memory on it."""
    procs = [FakeProcess(4242, 30 * 2**30), FakeProcess(4243, None)]
    return FakeNvml([FakeGpu(name="NVIDIA A100-SXM4-80GB", uuid="GPU-a1", inforom_ok=False, processes=procs)])


def consumer_power_not_supported() -> FakeNvml:
    """One GeForce card: every power call raises NotSupported, and so does the VBIOS version; the fan works; no
    ECC, no NVLink."""
    power = (
        "nvmlDeviceGetPowerUsage",
        "nvmlDeviceGetPowerManagementLimit",
        "nvmlDeviceGetPowerManagementDefaultLimit",
        "nvmlDeviceGetEnforcedPowerLimit",
        "nvmlDeviceGetPowerManagementLimitConstraints",
    )
    gpu = FakeGpu(
        name="NVIDIA GeForce RTX 3090",
        uuid="GPU-3090",
        bus_id="00000000:01:00.0",
        arch=7,
        cc=(8, 6),
        memory_total=24576 * 2**20,
        memory_temp=None,
        thresholds={0: 98, 1: 95, 3: 93, 5: 83},
        fan=41,
        ecc=(0, 0),
        pcie_gen=4,
        pcie_gen_max=4,
        pcie_gen_gpu_max=4,
        cpus=tuple(range(16)),
        errors=dict.fromkeys(power, NOT_SUPPORTED)
        | {"nvmlDeviceGetRemappedRows": NOT_SUPPORTED, "nvmlDeviceGetRetiredPages": NOT_SUPPORTED}
        | {"nvmlDeviceGetRetiredPagesPendingStatus": NOT_SUPPORTED, "nvmlDeviceGetMigMode": NOT_SUPPORTED}
        | {"nvmlDeviceGetVbiosVersion": NOT_SUPPORTED},
    )
    return FakeNvml([gpu], topology=lambda a, b: HOSTBRIDGE)


def gpu_lost_mid_read() -> FakeNvml:
    """2 GPUs; GPU1 answers its first 5 calls, then says GpuIsLost to everything."""
    a = FakeGpu(uuid="GPU-a", bus_id="00000000:19:00.0")
    b = FakeGpu(uuid="GPU-b", bus_id="00000000:3B:00.0", lost_after=5)
    return FakeNvml([a, b])


OLD_DRIVER_ABSENT = (
    "nvmlSystemGetCudaDriverVersion_v2",
    "nvmlDeviceGetMemoryInfo_v2",
    "nvmlDeviceGetCurrentClocksEventReasons",
    "nvmlDeviceGetSupportedClocksEventReasons",
    "nvmlDeviceGetRemappedRows",
    "nvmlDeviceGetGpuMaxPcieLinkGeneration",
    "nvmlDeviceGetNvLinkRemoteDeviceType",
    "nvmlDeviceGetGpuFabricInfoV_v3",
    "nvmlDeviceGetGpuFabricInfoV",
    "nvmlDeviceGetGpuFabricInfo",
    "nvmlDeviceGetComputeRunningProcesses",  # pynvml's reaches the _v3 symbol; the probe falls back to _v2
)


def old_driver_missing_calls() -> FakeNvml:
    """An old driver (2 V100s, NVLink between them): newer functions raise FunctionNotFound."""
    a_bus, b_bus = "00000000:1A:00.0", "00000000:1B:00.0"
    gpus = [
        FakeGpu(
            name="Tesla V100-SXM2-16GB",
            uuid=f"GPU-v100-{i}",
            bus_id=bus,
            arch=5,
            cc=(7, 0),
            memory_total=16160 * 2**20,
            memory_temp=None,
            pcie_gen=3,
            pcie_gen_max=3,
            thresholds={0: 90, 1: 87},
            unknown_thresholds=frozenset({4, 5, 6}),  # the acoustic thresholds came with R520-era drivers
            event_counters_ns={},  # the per-reason field values came with later drivers
            recovery_action=None,  # NVML_FI_DEV_GET_GPU_RECOVERY_ACTION came with R570-era drivers
            links=[FakeLink(version=2, remote_bus_id=other, remote_type=0) for _ in range(6)],
        )
        for i, (bus, other) in enumerate(((a_bus, b_bus), (b_bus, a_bus)))
    ]
    return FakeNvml(gpus, absent=OLD_DRIVER_ABSENT, driver="418.87.01", cuda=10010, topology=lambda a, b: SINGLE)


def no_permission() -> FakeNvml:
    """Running unprivileged in a container: some calls raise NoPermission."""
    denied = ("nvmlDeviceGetRetiredPages", "nvmlDeviceGetViolationStatus", "nvmlDeviceGetCpuAffinity")
    gpu = FakeGpu(uuid="GPU-np", bus_id="00000000:65:00.0", errors=dict.fromkeys(denied, NO_PERMISSION))
    return FakeNvml([gpu])


def no_driver() -> FakeNvml:
    """nvmlInit fails: libnvidia-ml.so cannot be loaded."""
    return FakeNvml([], init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)


def driver_version_mismatch() -> FakeNvml:
    """The driver was upgraded without a reboot: nvmlInit says Driver/library version mismatch."""
    return FakeNvml([], init_error=pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH)


def driver_not_loaded() -> FakeNvml:
    """libnvidia-ml.so is installed but the nvidia kernel module is not running (nvidia-smi: "couldn't
    communicate with the NVIDIA driver")."""
    return FakeNvml([], init_error=pynvml.NVML_ERROR_DRIVER_NOT_LOADED)


def gpu_every_call_fails() -> FakeNvml:
    """2 H100s; GPU1's handle comes back but every call on it says Unknown Error (nvidia-smi prints ERR!)."""
    a = FakeGpu(uuid="GPU-ok", bus_id="00000000:19:00.0")
    b = FakeGpu(uuid="GPU-err", bus_id="00000000:C1:00.0", numa=1, broken=UNKNOWN)
    return FakeNvml([a, b])


def hot_throttling() -> FakeNvml:
    """One L40S at 88 C, held by SW thermal slowdown and the power cap, with a limit below default."""
    gpu = FakeGpu(
        name="NVIDIA L40S",
        uuid="GPU-l40s",
        bus_id="00000000:81:00.0",
        arch=8,
        cc=(8, 9),
        temp=88,
        memory_temp=None,
        thresholds={0: 98, 1: 94, 3: 89, 5: 85},
        power_mw=299_000,
        limit_mw=300_000,
        default_limit_mw=350_000,
        enforced_limit_mw=300_000,
        min_limit_mw=100_000,
        max_limit_mw=350_000,
        fan=100,
        clocks={0: 1410, 1: 1410, 2: 9001},
        max_clocks={0: 2520, 1: 2520, 2: 9001},
        reasons=SW_POWER_CAP | SW_THERMAL,
        violations_ns={0: 120_000_000_000, 1: 45_500_000_000, 2: 0},
        event_counters_ns={269: 45_500_000_000, 270: 0, 271: 0},
        pcie_gen=4,
        pcie_gen_max=4,
        pcie_gen_gpu_max=4,
    )
    return FakeNvml([gpu])


def pcie_sys_no_p2p() -> FakeNvml:
    """Two RTX 4090s on different sockets (SYS), P2P not supported; GPU1's link trained at x8."""
    base = FakeGpu(
        name="NVIDIA GeForce RTX 4090",
        arch=8,
        cc=(8, 9),
        memory_total=24564 * 2**20,
        memory_temp=None,
        ecc=(0, 0),
        pcie_gen=4,
        pcie_gen_max=4,
        pcie_gen_gpu_max=4,
        thresholds={0: 92, 1: 89, 3: 87},
    )
    a = replace(base, uuid="GPU-4090-a", bus_id="00000000:41:00.0", numa=0, cpus=tuple(range(32)))
    b = replace(base, uuid="GPU-4090-b", bus_id="00000000:C1:00.0", numa=1, cpus=tuple(range(32, 64)), pcie_width=8)
    return FakeNvml([a, b], topology=lambda x, y: SYSTEM, p2p=lambda x, y, caps: 5)


def ecc_errors_pending_remap() -> FakeNvml:
    """One A100 with uncorrected ECC errors and a row remap pending (needs a reset)."""
    gpu = FakeGpu(
        name="NVIDIA A100-SXM4-80GB",
        uuid="GPU-a100",
        bus_id="00000000:07:00.0",
        arch=7,
        cc=(8, 0),
        ecc_counts={(1, 0): 2, (1, 1): 7, (0, 0): 113},
        remapped=(3, 2, 1, 0),
        retired={0: [0x1000], 1: [0x2000, 0x3000]},
        retired_pending=1,
    )
    return FakeNvml([gpu])


def gpu_off_bus() -> FakeNvml:
    """3 GPUs; GPU1's handle cannot be obtained (it fell off the bus before the probe)."""
    gpus = [
        FakeGpu(uuid="GPU-0", bus_id="00000000:19:00.0"),
        FakeGpu(uuid="GPU-1", bus_id="00000000:3B:00.0", errors={"nvmlDeviceGetHandleByIndex": GPU_IS_LOST}),
        FakeGpu(uuid="GPU-2", bus_id="00000000:5D:00.0"),
    ]
    return FakeNvml(gpus)


SCENARIOS: dict[str, Callable[[], FakeNvml]] = {
    "healthy_8x_h100_nvlink": healthy_8x_h100_nvlink,
    "consumer_power_not_supported": consumer_power_not_supported,
    "gpu_lost_mid_read": gpu_lost_mid_read,
    "old_driver_missing_calls": old_driver_missing_calls,
    "no_permission": no_permission,
    "no_driver": no_driver,
    "driver_version_mismatch": driver_version_mismatch,
    "driver_not_loaded": driver_not_loaded,
    "gpu_every_call_fails": gpu_every_call_fails,
    "hot_throttling": hot_throttling,
    "pcie_sys_no_p2p": pcie_sys_no_p2p,
    "ecc_errors_pending_remap": ecc_errors_pending_remap,
    "gpu_off_bus": gpu_off_bus,
    "hgx_recovery_reset": hgx_recovery_reset,
    "nvlink_replay_errors": nvlink_replay_errors,
    "busy_node_corrupt_inforom": busy_node_corrupt_inforom,
}


# --- telemetry: readings that change from poll to poll ---------------------------------------------
# A poll reads power first on every GPU (rigcheck.probe.nvml.NvmlPoller), so the n-th power read of a GPU
# starts its n-th poll: that is where a TimedFakeNvml applies the GPU's profile and loses GPUs.
Profile = Callable[[int, int], dict[str, object]]  # (gpu index, poll number from 0) -> FakeGpu fields


class TimedFakeNvml(FakeNvml):
    """A FakeNvml whose GPUs follow ``profile`` poll by poll; ``lose_at_poll`` maps a GPU to the poll
    (from 0) at which it falls off the bus: from that poll on every call on it raises GpuIsLost."""

    def __init__(
        self,
        gpus: list[FakeGpu],
        profile: Profile,
        *,
        lose_at_poll: dict[int, int] | None = None,
        instant_power: bool = False,
        **kwargs: object,
    ) -> None:
        super().__init__(gpus, **kwargs)  # type: ignore[arg-type]
        self.instant_power = instant_power  # the profile advances on the instant power field's read
        self.profile = profile
        self.lose_at_poll = lose_at_poll or {}
        self.polls = [0] * len(gpus)

    def _advance(self, handle: object) -> None:  # on the power read: once per poll
        assert isinstance(handle, Handle)
        i = handle.index
        n = self.polls[i]
        self.polls[i] += 1
        gpu = self.gpus[i]
        if i in self.lose_at_poll and n >= self.lose_at_poll[i] and gpu.lost_after is None:
            gpu.lost_after = self._gpu_calls[i]  # this call and every later one: GpuIsLost
        for key, value in self.profile(i, n).items():
            setattr(gpu, key, value)

    def nvmlDeviceGetPowerUsage(self, handle: object, /) -> int:
        if not self.instant_power:
            self._advance(handle)
        return super().nvmlDeviceGetPowerUsage(handle)

    def nvmlDeviceGetFieldValues(self, handle: object, field_ids: list[int | tuple[int, int]], /) -> list[FieldValue]:
        # With the instant field (186) the poller reads power there; its read at open is poll 0.
        if self.instant_power and 186 in field_ids:
            self._advance(handle)
        return super().nvmlDeviceGetFieldValues(handle, field_ids)


# The H100 of ../shared/gpu-evidence under a bf16 burn, at 10 Hz: idle for IDLE_POLLS, loaded for
# LOAD_POLLS (power climbs to the 700 W cap within 2 s, then SW power cap holds the SM clock ~1.34 GHz;
# temperature rises from 35 C toward a 73 C plateau), idle again afterwards.
BURN_IDLE_POLLS = 10
BURN_LOAD_POLLS = 300


def h100_burn_profile(gpu: int, n: int) -> dict[str, object]:
    loaded = BURN_IDLE_POLLS <= n < BURN_IDLE_POLLS + BURN_LOAD_POLLS
    t = (n - BURN_IDLE_POLLS) / 10.0  # seconds into the load
    if not loaded:
        cooled = max(0.0, n - BURN_IDLE_POLLS - BURN_LOAD_POLLS) / 10.0
        warm = 0.0 if n < BURN_IDLE_POLLS else 38.0 * 0.9**cooled
        return {
            "power_mw": 74_000,
            "util": 0,
            "temp": round(35 + warm),
            "clocks": {0: 345, 1: 345, 2: 2619},
            "reasons": IDLE,
        }
    capped = t >= 2.0
    return {
        "power_mw": 698_000 + (gpu * 500) if capped else int(74_000 + 312_000 * t),
        "util": 100,
        "temp": round(73 - 38 * 0.97 ** (t * 10)),
        "clocks": {0: 1335, 1: 1335, 2: 2619} if capped else {0: 1980, 1: 1980, 2: 2619},
        "reasons": SW_POWER_CAP if capped else 0,
    }


def burn_power_capped_h100(gpus: int = 1) -> TimedFakeNvml:
    """``gpus`` H100s under a bf16 burn that holds them at the 700 W cap (not thermally limited)."""
    return TimedFakeNvml(
        [FakeGpu(uuid=f"GPU-burn-{i}", bus_id=H100_BUS_IDS[i]) for i in range(gpus)], h100_burn_profile
    )


def burn_power_capped_h100_instant(gpus: int = 1) -> TimedFakeNvml:
    """The same burn on a driver with NVML_FI_DEV_POWER_INSTANT (186): the draw is in that field, while
    nvmlDeviceGetPowerUsage (a 1 s average on a real H100) stays idle, so a poller reading it sees no load."""

    def profile(gpu: int, n: int) -> dict[str, object]:
        step = h100_burn_profile(gpu, n)
        return {**step, "power_mw": 74_210, "power_fields_mw": {186: step["power_mw"]}}

    gpu_list = [FakeGpu(uuid=f"GPU-burn-{i}", bus_id=H100_BUS_IDS[i]) for i in range(gpus)]
    return TimedFakeNvml(gpu_list, profile, instant_power=True)


def burn_gpu_lost(lose_at_poll: int = 5) -> TimedFakeNvml:
    """2 H100s under the same burn; GPU1 falls off the bus at poll ``lose_at_poll``; GPU0 goes on."""
    gpus = [FakeGpu(uuid=f"GPU-burn-{i}", bus_id=H100_BUS_IDS[i]) for i in range(2)]
    return TimedFakeNvml(gpus, h100_burn_profile, lose_at_poll={1: lose_at_poll})


# DCGM#313 / NVSentinel#1748: one GB200 of four corrected ~17,700 ECC errors a second under load, 0 when idle, its
# peers none. At the profile's 10 Hz that is 1,770 a poll (the rate a test sees follows its own poll interval).
ECC_STORM_GPU = 2
ECC_STORM_PER_POLL = 1_770


def ecc_storm(gpus: int = 4) -> TimedFakeNvml:
    """``gpus`` H100s under the burn; GPU2's volatile corrected ECC count climbs on every loaded poll (its peers' and
    every uncorrected count stay 0), from a count of 12 the driver had before the load."""

    def profile(gpu: int, n: int) -> dict[str, object]:
        step = h100_burn_profile(gpu, n)
        if gpu != ECC_STORM_GPU:
            return step
        loaded_polls = max(0, min(n, BURN_IDLE_POLLS + BURN_LOAD_POLLS) - BURN_IDLE_POLLS)
        return {**step, "ecc_counts": {(0, 0): 12 + ECC_STORM_PER_POLL * loaded_polls}}

    gpu_list = [FakeGpu(uuid=f"GPU-ecc-{i}", bus_id=H100_BUS_IDS[i]) for i in range(gpus)]
    return TimedFakeNvml(gpu_list, profile)


def old_driver_consumer_polling() -> TimedFakeNvml:
    """A GeForce card on an old driver: no power readings (so its readings stay as they are: the profile
    advances on power reads), no memory temperature, only the pre-R535 "throttle" reasons function."""
    base = replace(consumer_power_not_supported().gpus[0], temp=60, reasons=SW_THERMAL)
    return TimedFakeNvml([base], lambda gpu, n: {}, absent=("nvmlDeviceGetCurrentClocksEventReasons",))


# Scenarios for the sampler, `monitor` and `burn` (kept apart from SCENARIOS, which every probe test
# and the doctor pipeline walk with their own expectations).
TELEMETRY_SCENARIOS: dict[str, Callable[[], TimedFakeNvml]] = {
    "burn_power_capped_h100": burn_power_capped_h100,
    "burn_power_capped_h100_instant": burn_power_capped_h100_instant,
    "burn_gpu_lost": burn_gpu_lost,
    "old_driver_consumer_polling": old_driver_consumer_polling,
    "ecc_storm": ecc_storm,
}
