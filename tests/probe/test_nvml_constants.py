"""The nvml.h numbers written out in rigcheck.probe.nvml.constants, and the functions its NvmlLibrary protocol
names, held against the real nvidia-ml-py module (which imports without a driver).

The fake NVML in tests/support/fakenvml.py implements the protocol, so a misspelt function name or a wrong
constant would pass every other test and fail only on a real GPU; this file is where that is caught.
"""

from __future__ import annotations

import inspect

import pynvml
import pytest

from rigcheck.model.snapshot import CLOCK_EVENT_REASONS
from rigcheck.probe import nvml
from rigcheck.probe.nvml import constants as nvmlh

# (rigcheck's value, the pynvml constant it stands for)
CONSTANTS = [
    (nvmlh.ERR_INVALID_ARGUMENT, "NVML_ERROR_INVALID_ARGUMENT"),
    (nvmlh.ERR_NOT_SUPPORTED, "NVML_ERROR_NOT_SUPPORTED"),
    (nvmlh.ERR_NO_PERMISSION, "NVML_ERROR_NO_PERMISSION"),
    (nvmlh.ERR_DRIVER_NOT_LOADED, "NVML_ERROR_DRIVER_NOT_LOADED"),
    (nvmlh.ERR_LIBRARY_NOT_FOUND, "NVML_ERROR_LIBRARY_NOT_FOUND"),
    (nvmlh.ERR_FUNCTION_NOT_FOUND, "NVML_ERROR_FUNCTION_NOT_FOUND"),
    (nvmlh.ERR_GPU_IS_LOST, "NVML_ERROR_GPU_IS_LOST"),
    (nvmlh.ERR_LIB_RM_VERSION_MISMATCH, "NVML_ERROR_LIB_RM_VERSION_MISMATCH"),
    (nvmlh.ERR_ARGUMENT_VERSION_MISMATCH, "NVML_ERROR_ARGUMENT_VERSION_MISMATCH"),
    (nvmlh.MEMORY_V2, "nvmlMemory_v2"),
    (dict(nvmlh.FI_EVENT_COUNTERS)["sw_thermal_slowdown"], "NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN"),
    (dict(nvmlh.FI_EVENT_COUNTERS)["hw_thermal_slowdown"], "NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN"),
    (
        dict(nvmlh.FI_EVENT_COUNTERS)["hw_power_brake_slowdown"],
        "NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN",
    ),
    (nvmlh.TEMPERATURE_GPU, "NVML_TEMPERATURE_GPU"),
    (nvmlh.FI_DEV_MEMORY_TEMP, "NVML_FI_DEV_MEMORY_TEMP"),
    (nvmlh.THRESHOLD_SHUTDOWN, "NVML_TEMPERATURE_THRESHOLD_SHUTDOWN"),
    (nvmlh.THRESHOLD_SLOWDOWN, "NVML_TEMPERATURE_THRESHOLD_SLOWDOWN"),
    (nvmlh.THRESHOLD_MEM_MAX, "NVML_TEMPERATURE_THRESHOLD_MEM_MAX"),
    (nvmlh.THRESHOLD_GPU_MAX, "NVML_TEMPERATURE_THRESHOLD_GPU_MAX"),
    (nvmlh.THRESHOLD_ACOUSTIC_CURR, "NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_CURR"),
    (nvmlh.CLOCK_GRAPHICS, "NVML_CLOCK_GRAPHICS"),
    (nvmlh.CLOCK_SM, "NVML_CLOCK_SM"),
    (nvmlh.CLOCK_MEM, "NVML_CLOCK_MEM"),
    (nvmlh.PERF_POLICY_POWER, "NVML_PERF_POLICY_POWER"),
    (nvmlh.PERF_POLICY_THERMAL, "NVML_PERF_POLICY_THERMAL"),
    (nvmlh.PERF_POLICY_SYNC_BOOST, "NVML_PERF_POLICY_SYNC_BOOST"),
    (nvmlh.PSTATE_UNKNOWN, "NVML_PSTATE_UNKNOWN"),
    (nvmlh.MEMORY_ERROR_CORRECTED, "NVML_MEMORY_ERROR_TYPE_CORRECTED"),
    (nvmlh.MEMORY_ERROR_UNCORRECTED, "NVML_MEMORY_ERROR_TYPE_UNCORRECTED"),
    (nvmlh.VOLATILE_ECC, "NVML_VOLATILE_ECC"),
    (nvmlh.AGGREGATE_ECC, "NVML_AGGREGATE_ECC"),
    (nvmlh.RETIRED_CAUSE_SBE, "NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS"),
    (nvmlh.RETIRED_CAUSE_DBE, "NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR"),
    (nvmlh.AFFINITY_SCOPE_NODE, "NVML_AFFINITY_SCOPE_NODE"),
    (nvmlh.NVLINK_MAX_LINKS, "NVML_NVLINK_MAX_LINKS"),
    (nvmlh.FI_NVLINK_LINK_COUNT, "NVML_FI_DEV_NVLINK_LINK_COUNT"),
    (nvmlh.FI_NVLINK_GET_SPEED, "NVML_FI_DEV_NVLINK_GET_SPEED"),
    (nvmlh.FI_NVLINK_SPEED_COMMON, "NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON"),
    *((fid, f"NVML_FI_DEV_NVLINK_SPEED_MBPS_L{n}") for n, fid in enumerate(nvmlh.FI_NVLINK_SPEED_LEGACY)),
    (nvmlh.ARCH_UNKNOWN, "NVML_DEVICE_ARCH_UNKNOWN"),
    (nvmlh.ERR_CORRUPTED_INFOROM, "NVML_ERROR_CORRUPTED_INFOROM"),
    (nvmlh.FI_GPU_RECOVERY_ACTION, "NVML_FI_DEV_GET_GPU_RECOVERY_ACTION"),
    (nvmlh.FABRIC_STATE_COMPLETED, "NVML_GPU_FABRIC_STATE_COMPLETED"),
    (nvmlh.FABRIC_INFO_V3, "nvmlGpuFabricInfo_v3"),
    (nvmlh.FABRIC_INFO_V2, "nvmlGpuFabricInfo_v2"),
    (nvmlh.NVLINK_ERROR_DL_REPLAY, "NVML_NVLINK_ERROR_DL_REPLAY"),
    (nvmlh.NVLINK_ERROR_DL_RECOVERY, "NVML_NVLINK_ERROR_DL_RECOVERY"),
    (nvmlh.NVLINK_ERROR_DL_CRC_FLIT, "NVML_NVLINK_ERROR_DL_CRC_FLIT"),
    (nvmlh.NVLINK_ERROR_DL_CRC_DATA, "NVML_NVLINK_ERROR_DL_CRC_DATA"),
]


def test_recovery_actions_match_pynvml() -> None:
    pynvml_name = {
        "None": "NONE",
        "Reset": "GPU_RESET",
        "Reboot": "NODE_REBOOT",
        "Drain P2P": "DRAIN_P2P",
        "Drain and Reset": "DRAIN_AND_RESET",
        "Recover IMEX Domain": "RECOVER_IMEX_DOMAIN",
        "Bus Reset": "BUS_RESET",
        "System Reboot": "SYSTEM_REBOOT",
    }
    for code, words in nvmlh.RECOVERY_ACTIONS.items():
        assert code == getattr(pynvml, "NVML_GPU_RECOVERY_ACTION_" + pynvml_name[words]), words


def test_fabric_states_and_health_summaries_match_pynvml() -> None:
    for code, words in nvmlh.FABRIC_STATES.items():
        assert code == getattr(pynvml, "NVML_GPU_FABRIC_STATE_" + words.upper().replace(" ", "_")), words
    for code, words in nvmlh.FABRIC_HEALTH_SUMMARIES.items():
        assert code == getattr(pynvml, "NVML_GPU_FABRIC_HEALTH_SUMMARY_" + words.upper().replace(" ", "_")), words


def test_fabric_structs_carry_their_versions() -> None:
    """The probe's structs come from pynvml; the v3 one is the struct with the health summary."""
    from rigcheck.probe.nvml.calls import fabric_info_struct

    v3 = fabric_info_struct(nvmlh.FABRIC_INFO_V3)
    assert getattr(v3, "version", None) == nvmlh.FABRIC_INFO_V3
    assert hasattr(v3, "healthSummary")
    v2 = fabric_info_struct(nvmlh.FABRIC_INFO_V2)
    assert getattr(v2, "version", None) == nvmlh.FABRIC_INFO_V2
    assert not hasattr(v2, "healthSummary")
    assert not hasattr(fabric_info_struct(None), "version")


@pytest.mark.parametrize(("ours", "name"), CONSTANTS, ids=[name for _, name in CONSTANTS])
def test_constant_matches_pynvml(ours: int, name: str) -> None:
    assert ours == getattr(pynvml, name)


def test_p2p_caps_indices_match_pynvml() -> None:
    # pynvml spells NVML_P2P_CAPS_INDEX_READ as a one-element tuple (a stray comma); read through it.
    def value(name: str) -> int:
        v = getattr(pynvml, name)
        return int(v[0]) if isinstance(v, tuple) else int(v)

    expected = {"p2p_read": "READ", "p2p_write": "WRITE", "p2p_nvlink": "NVLINK", "p2p_atomics": "ATOMICS"}
    for field, index in nvmlh.P2P_CAPS:
        assert index == value(f"NVML_P2P_CAPS_INDEX_{expected[field]}"), field


def test_p2p_status_codes_match_pynvml() -> None:
    for code, status in nvmlh.P2P_STATUS.items():
        assert code == getattr(pynvml, f"NVML_P2P_STATUS_{status.name}"), status


def test_architecture_codes_match_pynvml() -> None:
    pynvml_name = {"Ada Lovelace": "ADA"}
    for code, name in nvmlh.ARCHITECTURES.items():
        assert code == getattr(pynvml, "NVML_DEVICE_ARCH_" + pynvml_name.get(name, name.upper())), name


def test_compute_modes_match_pynvml() -> None:
    for code, name in nvmlh.COMPUTE_MODES.items():
        assert code == getattr(pynvml, "NVML_COMPUTEMODE_" + name.upper()), name


def test_nvlink_device_types_match_pynvml() -> None:
    for code, name in nvmlh.NVLINK_DEVICE_TYPES.items():
        assert code == getattr(pynvml, "NVML_NVLINK_DEVICE_TYPE_" + name.upper()), name


def test_clock_event_reason_bits_match_pynvml() -> None:
    """Bit i of the mask is CLOCK_EVENT_REASONS[i]; pynvml names each bit nvmlClocksEventReason<Name>."""
    camel = {
        "idle": "GpuIdle",
        "applications_clocks_setting": "ApplicationsClocksSetting",
        "sw_power_cap": "SwPowerCap",
        "hw_slowdown": "HwSlowdown",
        "sync_boost": "SyncBoost",
        "sw_thermal_slowdown": "SwThermalSlowdown",
        "hw_thermal_slowdown": "HwThermalSlowdown",
        "hw_power_brake_slowdown": "HwPowerBrakeSlowdown",
        "display_clock_setting": "DisplayClockSetting",
    }
    assert set(camel) == set(CLOCK_EVENT_REASONS)
    for bit, name in enumerate(CLOCK_EVENT_REASONS):
        assert getattr(pynvml, "nvmlClocksEventReason" + camel[name]) == 1 << bit, name
        assert nvml.decode_clock_event_reasons(1 << bit) == [name]


def protocol_functions() -> list[str]:
    return sorted(
        name
        for name, member in inspect.getmembers(nvml.NvmlLibrary)
        if name.startswith("nvml") and inspect.isfunction(member)
    )


def test_protocol_lists_the_functions_the_probe_uses() -> None:
    names = protocol_functions()
    assert len(names) >= 50
    assert "nvmlDeviceGetPowerUsage" in names


@pytest.mark.parametrize("name", protocol_functions())
def test_every_protocol_function_exists_in_pynvml(name: str) -> None:
    """A name the real module lacks would read as driver_too_old on every machine, silently."""
    assert callable(getattr(pynvml, name, None)), name


@pytest.mark.parametrize("name", protocol_functions())
def test_protocol_arity_matches_pynvml(name: str) -> None:
    """The protocol's positional parameters are the ones pynvml's function takes (no more, no fewer)."""
    ours = [p for p in inspect.signature(getattr(nvml.NvmlLibrary, name)).parameters if p != "self"]
    theirs = inspect.signature(getattr(pynvml, name)).parameters.values()
    required = [p for p in theirs if p.default is inspect.Parameter.empty and p.kind is not p.VAR_POSITIONAL]
    assert len(ours) >= len(required), (name, ours, [p.name for p in required])
    if not any(p.kind is p.VAR_POSITIONAL for p in theirs):
        assert len(ours) <= len(list(theirs)), (name, ours)
