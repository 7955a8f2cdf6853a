"""The numbers of nvml.h that the probe and the poller use, written out (tests/probe/test_nvml_constants.py holds
each against nvidia-ml-py). Written out rather than read from pynvml: its ``NVML_P2P_CAPS_INDEX_READ`` is, by
a stray comma, the tuple ``(0,)``, and these modules stay importable without it."""

from __future__ import annotations

from rigcheck.model.snapshot import P2PStatus

# nvmlReturn_t
ERR_INVALID_ARGUMENT = 2
ERR_NOT_SUPPORTED = 3
ERR_NO_PERMISSION = 4
ERR_DRIVER_NOT_LOADED = 9
ERR_LIBRARY_NOT_FOUND = 12
ERR_FUNCTION_NOT_FOUND = 13
ERR_GPU_IS_LOST = 15
ERR_LIB_RM_VERSION_MISMATCH = 18
ERR_ARGUMENT_VERSION_MISMATCH = 25  # the driver does not know this struct version: older than the call

MEMORY_V2 = 0x02000028  # nvmlMemory_v2: sizeof(nvmlMemory_v2_t) | 2 << 24
# Versioned C symbols that pynvml reaches through the unversioned function and a version argument.
PYNVML_ATTR = {
    "nvmlDeviceGetMemoryInfo_v2": "nvmlDeviceGetMemoryInfo",
    "nvmlDeviceGetGpuFabricInfoV_v3": "nvmlDeviceGetGpuFabricInfoV",
}

TEMPERATURE_GPU = 0  # nvmlTemperatureSensors_t
FI_DEV_MEMORY_TEMP = 82  # nvmlFieldValue id: memory temperature (C)
# NVML_FI_DEV_POWER_AVERAGE / _INSTANT (mW): nvmlDeviceGetPowerUsage is itself a 1 s average on Ampere (but
# GA100) and newer, so the instant draw, where the driver has it, comes from this field.
FI_POWER_AVERAGE, FI_POWER_INSTANT = 185, 186
# NVML_FI_DEV_CLOCKS_EVENT_REASON_*: time under each reason since the driver loaded, in ns (drivers from the
# R535 era on; older ones answer NotSupported per field). Power cap and sync boost are the perf-policy counters
# that nvmlDeviceGetViolationStatus also gives.
FI_EVENT_COUNTERS = (("sw_thermal_slowdown", 269), ("hw_thermal_slowdown", 270), ("hw_power_brake_slowdown", 271))
THRESHOLD_SHUTDOWN = 0  # nvmlTemperatureThresholds_t
THRESHOLD_SLOWDOWN = 1
THRESHOLD_MEM_MAX = 2
THRESHOLD_GPU_MAX = 3
THRESHOLD_ACOUSTIC_CURR = 5  # the current acoustic (target) temperature
CLOCK_GRAPHICS, CLOCK_SM, CLOCK_MEM = 0, 1, 2  # nvmlClockType_t
PERF_POLICY_POWER, PERF_POLICY_THERMAL, PERF_POLICY_SYNC_BOOST = 0, 1, 2  # nvmlPerfPolicyType_t
PSTATE_UNKNOWN = 32
MEMORY_ERROR_CORRECTED, MEMORY_ERROR_UNCORRECTED = 0, 1  # nvmlMemoryErrorType_t
VOLATILE_ECC, AGGREGATE_ECC = 0, 1  # nvmlEccCounterType_t
RETIRED_CAUSE_SBE, RETIRED_CAUSE_DBE = 0, 1  # nvmlPageRetirementCause_t
AFFINITY_SCOPE_NODE = 0
NVLINK_MAX_LINKS = 36  # NVML_NVLINK_MAX_LINKS (18 up to Hopper): the links to try where the count is not given
FI_NVLINK_LINK_COUNT = 91  # NVML_FI_DEV_NVLINK_LINK_COUNT: number of NVLinks present on the device
FI_NVLINK_GET_SPEED = 164  # NVML_FI_DEV_NVLINK_GET_SPEED: a link's speed in MB/s (scopeId = the link)
FI_NVLINK_SPEED_COMMON = 90  # NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON: the active links' common speed, MB/s
# NVML_FI_DEV_NVLINK_SPEED_MBPS_L0..L11: the per-link speed fields of drivers before the scoped one.
FI_NVLINK_SPEED_LEGACY = (84, 85, 86, 87, 88, 89, 132, 133, 134, 135, 136, 137)
NVLINK_DEVICE_TYPES = {0: "gpu", 1: "ibmnpu", 2: "switch", 0xFF: "unknown"}
P2P_CAPS = (("p2p_read", 0), ("p2p_write", 1), ("p2p_nvlink", 2), ("p2p_atomics", 3))
P2P_STATUS = {
    0: P2PStatus.OK,
    1: P2PStatus.CHIPSET_NOT_SUPPORTED,
    2: P2PStatus.GPU_NOT_SUPPORTED,
    3: P2PStatus.IOH_TOPOLOGY_NOT_SUPPORTED,
    4: P2PStatus.DISABLED_BY_REGKEY,
    5: P2PStatus.NOT_SUPPORTED,
    6: P2PStatus.UNKNOWN,
}
# nvmlDeviceArchitecture_t, named as `nvidia-smi -q` prints "Product Architecture".
ARCHITECTURES = {
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
ARCH_UNKNOWN = 0xFFFFFFFF
COMPUTE_MODES = {0: "Default", 1: "Exclusive_Thread", 2: "Prohibited", 3: "Exclusive_Process"}
CPU_WORDS = 64  # 64 x 64-bit words: up to 4096 CPUs
NODE_WORDS = 4  # up to 256 NUMA nodes
BITS_PER_WORD = 64

# --- driver-side health (nvml.h) ---------------------------------------------------------------------------
ERR_CORRUPTED_INFOROM = 14  # nvmlDeviceValidateInforom: the InfoROM's checksum does not match
# NVML_FI_DEV_GET_GPU_RECOVERY_ACTION (R570 era on): nvmlDeviceGpuRecoveryAction_t, in the words nvidia-smi -q
# prints for "GPU Recovery Action". 5-7 came with later drivers; nvidia-smi's words for them are not in our
# corpus, so they carry nvml.h's names (the check fails any action but "None" all the same).
FI_GPU_RECOVERY_ACTION = 230
RECOVERY_ACTIONS = {
    0: "None",
    1: "Reset",
    2: "Reboot",
    3: "Drain P2P",
    4: "Drain and Reset",
    5: "Recover IMEX Domain",
    6: "Bus Reset",
    7: "System Reboot",
}
# nvmlGpuFabricState_t, as `nvidia-smi -q` prints the Fabric block's State.
FABRIC_STATES = {0: "Not Supported", 1: "Not Started", 2: "In Progress", 3: "Completed"}
FABRIC_STATE_COMPLETED = 3
# NVML_GPU_FABRIC_HEALTH_SUMMARY_*, as `nvidia-smi -q` prints Fabric > Health > Summary.
FABRIC_HEALTH_SUMMARIES = {0: "Not Supported", 1: "Healthy", 2: "Unhealthy", 3: "Limited Capacity"}
# nvmlGpuFabricInfo_v3 (the struct with healthSummary); an older driver answers ArgumentVersionMismatch and
# the probe falls back to v2 (health mask only) and then to the deprecated nvmlDeviceGetGpuFabricInfo.
FABRIC_INFO_V3 = 0x03000028
FABRIC_INFO_V2 = 0x02000024
# nvmlNvLinkErrorCounter_t: `nvidia-smi nvlink -e` prints replay, recovery and CRC (flit + data summed).
NVLINK_ERROR_DL_REPLAY, NVLINK_ERROR_DL_RECOVERY = 0, 1
NVLINK_ERROR_DL_CRC_FLIT, NVLINK_ERROR_DL_CRC_DATA = 2, 3
