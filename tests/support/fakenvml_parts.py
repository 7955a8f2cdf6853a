"""The parts of the fake NVML (tests/support/fakenvml.py): the records its functions return, what one fake GPU
answers, and the driver-side health calls (fabric, NVLink error counters, InfoROM, processes) as a mixin.
Kept apart so tests/support/fakenvml.py stays under 700 lines; that module re-exports everything a test imports."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pynvml

NOT_SUPPORTED = pynvml.NVML_ERROR_NOT_SUPPORTED
NO_PERMISSION = pynvml.NVML_ERROR_NO_PERMISSION
GPU_IS_LOST = pynvml.NVML_ERROR_GPU_IS_LOST
FUNCTION_NOT_FOUND = pynvml.NVML_ERROR_FUNCTION_NOT_FOUND
INVALID_ARGUMENT = pynvml.NVML_ERROR_INVALID_ARGUMENT
UNKNOWN = pynvml.NVML_ERROR_UNKNOWN

# nvmlTopologyLevel_t values
NODE, SYSTEM, HOSTBRIDGE, SINGLE = 40, 50, 30, 10
# nvmlClocksEventReason bits
IDLE, SW_POWER_CAP, HW_SLOWDOWN, SW_THERMAL, HW_THERMAL = 0x1, 0x4, 0x8, 0x20, 0x40
ALL_REASONS = 0x1FF


@dataclass(frozen=True)
class PciInfo:
    busId: str


@dataclass(frozen=True)
class MemoryInfo:
    total: int
    used: int
    free: int = 0


@dataclass(frozen=True)
class Utilization:
    gpu: int


@dataclass(frozen=True)
class ViolationTime:
    violationTime: int  # ns


@dataclass(frozen=True)
class FieldValue:
    nvmlReturn: int
    valueType: int
    value: object


@dataclass
class FakeLink:
    active: bool = True
    version: int = 4
    remote_bus_id: str = ""
    remote_type: int = 2  # NVML_NVLINK_DEVICE_TYPE_SWITCH
    present: bool = True  # False: a disabled link, NotSupported to every call (others after it still exist)
    speed_mbps: int = 26562  # NVML_FI_DEV_NVLINK_GET_SPEED of an active link (H100: 26.562 GB/s)
    replay: int = 0  # nvmlDeviceGetNvLinkErrorCounter: DL replay, DL recovery, DL CRC flit, DL CRC data
    recovery: int = 0
    crc_flit: int = 0
    crc_data: int | None = 0  # None: NotSupported (a part that keeps only the flit CRC counter)


@dataclass
class FakeFabric:
    """What nvmlDeviceGetGpuFabricInfoV fills. ``health_summary`` None: a driver with only the v2 struct."""

    state: int = 3  # NVML_GPU_FABRIC_STATE_COMPLETED
    status: int = 0  # an nvmlReturn_t
    clique: int = 0
    cluster_uuid: bytes = bytes(16)
    health_summary: int | None = 1  # NVML_GPU_FABRIC_HEALTH_SUMMARY_HEALTHY


@dataclass(frozen=True)
class FakeProcess:
    pid: int
    usedGpuMemory: int | None  # bytes


@dataclass
class FakeGpu:
    """What one fake GPU answers. ``errors`` maps a function name to the NVML error code it raises."""

    name: str = "NVIDIA H100 80GB HBM3"
    uuid: str = "GPU-00000000-0000-0000-0000-000000000000"
    bus_id: str = "00000000:19:00.0"
    arch: int = 9
    cc: tuple[int, int] = (9, 0)
    vbios: str = "96.00.DA.00.0C"  # the H100 of ../shared/corpus/h100-vm
    memory_total: int = 81559 * 2**20
    memory_used: int = 512 * 2**20
    memory_reserved: int = 480 * 2**20  # what the driver keeps (v1 of nvmlDeviceGetMemoryInfo counts it as used)
    util: int = 0
    power_mw: int = 74_210
    limit_mw: int = 700_000
    default_limit_mw: int = 700_000
    enforced_limit_mw: int = 700_000
    min_limit_mw: int = 200_000
    max_limit_mw: int = 700_000
    temp: int = 43
    memory_temp: int | None = 46  # None: the field value reports NotSupported
    thresholds: dict[int, int] = field(default_factory=lambda: {0: 92, 1: 89, 2: 95, 3: 87})
    unknown_thresholds: frozenset[int] = frozenset()  # enum values the driver predates: InvalidArgument
    fan: int = 30
    clocks: dict[int, int] = field(default_factory=lambda: {0: 1980, 1: 1980, 2: 2619})
    max_clocks: dict[int, int] = field(default_factory=lambda: {0: 1980, 1: 1980, 2: 2619})
    reasons: int = IDLE
    supported_reasons: int = ALL_REASONS
    violations_ns: dict[int, int] = field(default_factory=lambda: {0: 33_534_556_000, 1: 0, 2: 0})
    # field id (269 SW thermal, 270 HW thermal, 271 HW power brake) -> ns; absent: the field is NotSupported
    event_counters_ns: dict[int, int] = field(default_factory=lambda: {269: 0, 270: 0, 271: 0})
    power_fields_mw: dict[int, int] = field(default_factory=dict)  # 186 instant, 185 average; absent: NotSupported
    pstate: int = 0
    pcie_gen: int = 5
    pcie_gen_max: int = 5
    pcie_gen_gpu_max: int = 5
    pcie_width: int = 16
    pcie_width_max: int = 16
    replay: int = 0
    persistence: int = 1
    compute_mode: int = 0
    mig: tuple[int, int] = (0, 0)
    ecc: tuple[int, int] = (1, 1)
    ecc_counts: dict[tuple[int, int], int] = field(default_factory=dict)  # (error type, counter) -> n
    remapped: tuple[int, int, int, int] = (0, 0, 0, 0)
    retired: dict[int, list[int]] = field(default_factory=dict)  # cause -> page addresses
    retired_pending: int = 0
    numa: int = 0
    cpus: Sequence[int] = tuple(range(24))
    links: list[FakeLink] = field(default_factory=list)
    link_fields: bool = True  # the driver has NVML_FI_DEV_NVLINK_LINK_COUNT and _GET_SPEED (R520 era on)
    recovery_action: int | None = 0  # NVML_FI_DEV_GET_GPU_RECOVERY_ACTION; None: the field is NotSupported
    fabric: FakeFabric | None = None  # None: nvmlDeviceGetGpuFabricInfo* answer NotSupported (a PCIe card)
    inforom_ok: bool = True  # False: nvmlDeviceValidateInforom says CorruptedInforom
    processes: list[FakeProcess] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    lost_after: int | None = None  # GpuIsLost from the (n+1)-th call on this GPU on
    broken: int | None = None  # every call on this GPU raises this code (its handle still comes back)


@dataclass(frozen=True)
class Handle:
    index: int


def raise_nvml(code: int) -> None:
    raise pynvml.NVMLError(code)


def _pointee(pointer: object) -> object:
    """The struct a pointer argument (ctypes.byref) points at. libnvidia-ml takes these structs by pointer and,
    given one by value through pynvml, reads its first bytes as an address and crashes: the fake refuses it."""
    target = getattr(pointer, "_obj", None)
    if target is None:
        raise TypeError(f"NVML takes this struct by pointer (ctypes.byref), not {type(pointer).__name__} by value")
    return target


def mask_words(items: Sequence[int], words: int) -> list[int]:
    out = [0] * words
    for i in items:
        if i // 64 < words:
            out[i // 64] |= 1 << (i % 64)
    return out


# NVML's words for the return codes a fabric status can carry (nvmlErrorString); others read "Unknown Error".
_ERROR_STRINGS = {
    0: "Success",
    pynvml.NVML_ERROR_NOT_SUPPORTED: "Not Supported",
    pynvml.NVML_ERROR_INSUFFICIENT_RESOURCES: "Insufficient Resources",
    pynvml.NVML_ERROR_TIMEOUT: "Timeout",
}
FABRIC_INFO_V3 = 0x03000028


class DriverHealthCalls:
    """The fake's NVLink, fabric, InfoROM and process calls (FakeNvml supplies _gpu)."""

    def _gpu(self, name: str, handle: object) -> FakeGpu:
        raise NotImplementedError

    # -- NVLink -----------------------------------------------------------------------------
    def _link(self, name: str, handle: object, link: int) -> FakeLink:
        g = self._gpu(name, handle)
        if not g.links:
            raise_nvml(NOT_SUPPORTED)
        if link >= len(g.links):
            raise_nvml(INVALID_ARGUMENT)
        if not g.links[link].present:
            raise_nvml(NOT_SUPPORTED)
        return g.links[link]

    def nvmlDeviceGetNvLinkState(self, handle: object, link: int, /) -> int:
        return int(self._link("nvmlDeviceGetNvLinkState", handle, link).active)

    def nvmlDeviceGetNvLinkVersion(self, handle: object, link: int, /) -> int:
        return self._link("nvmlDeviceGetNvLinkVersion", handle, link).version

    def nvmlDeviceGetNvLinkRemotePciInfo(self, handle: object, link: int, /) -> PciInfo:
        return PciInfo(busId=self._link("nvmlDeviceGetNvLinkRemotePciInfo", handle, link).remote_bus_id)

    def nvmlDeviceGetNvLinkRemoteDeviceType(self, handle: object, link: int, /) -> int:
        return self._link("nvmlDeviceGetNvLinkRemoteDeviceType", handle, link).remote_type

    def nvmlErrorString(self, result: int, /) -> str:
        return _ERROR_STRINGS.get(result, "Unknown Error")

    def _fill_fabric(self, name: str, handle: object, pointer: object) -> int:
        info = _pointee(pointer)
        g = self._gpu(name, handle)
        if g.fabric is None:
            raise_nvml(pynvml.NVML_ERROR_NOT_SUPPORTED)
        fabric = g.fabric
        assert fabric is not None
        if hasattr(info, "healthSummary") and fabric.health_summary is None:
            raise_nvml(pynvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH)  # a driver that knows only v2
        for i, byte in enumerate(fabric.cluster_uuid):
            info.clusterUuid[i] = byte  # type: ignore[attr-defined]
        info.status = fabric.status  # type: ignore[attr-defined]
        info.cliqueId = fabric.clique  # type: ignore[attr-defined]
        info.state = fabric.state  # type: ignore[attr-defined]
        if hasattr(info, "healthSummary"):
            info.healthSummary = fabric.health_summary
        return 0

    def nvmlDeviceGetGpuFabricInfoV(self, handle: object, info: object, /) -> int:
        # pynvml reaches the v3 and v2 structs through one symbol; the fake names the v3 read apart (as the
        # probe does), so an old driver's absent list can name each.
        v3 = getattr(_pointee(info), "version", 0) == FABRIC_INFO_V3
        return self._fill_fabric(
            "nvmlDeviceGetGpuFabricInfoV_v3" if v3 else "nvmlDeviceGetGpuFabricInfoV", handle, info
        )

    def nvmlDeviceGetGpuFabricInfo(self, handle: object, info: object, /) -> int:
        return self._fill_fabric("nvmlDeviceGetGpuFabricInfo", handle, info)

    def nvmlDeviceGetNvLinkErrorCounter(self, handle: object, link: int, counter: int, /) -> int:
        entry = self._link("nvmlDeviceGetNvLinkErrorCounter", handle, link)
        values = {0: entry.replay, 1: entry.recovery, 2: entry.crc_flit, 3: entry.crc_data}
        value = values.get(counter)
        if value is None:
            raise_nvml(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return int(value or 0)

    def nvmlDeviceValidateInforom(self, handle: object, /) -> None:
        if not self._gpu("nvmlDeviceValidateInforom", handle).inforom_ok:
            raise_nvml(pynvml.NVML_ERROR_CORRUPTED_INFOROM)

    def nvmlDeviceGetComputeRunningProcesses(self, handle: object, /) -> list[FakeProcess]:
        return list(self._gpu("nvmlDeviceGetComputeRunningProcesses", handle).processes)

    def nvmlDeviceGetComputeRunningProcesses_v2(self, handle: object, /) -> list[FakeProcess]:
        return list(self._gpu("nvmlDeviceGetComputeRunningProcesses_v2", handle).processes)
