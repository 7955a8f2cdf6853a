"""probe_nvml against every fake NVML scenario: exact values, reasons, placeholders, caching."""

from __future__ import annotations

from pathlib import Path

import pynvml
import pytest

from rigcheck.cpulist import format_cpulist
from rigcheck.errors import ProbeError
from rigcheck.model import Missing, P2PStatus, snapshot_from_json, snapshot_to_json
from rigcheck.probe.nvml import (
    NvmlPoller,
    bits_to_list,
    cuda_version_string,
    decode_clock_event_reasons,
    probe_nvml,
)
from rigcheck.probe.nvml.calls import NoGpuError
from tests.support.fakenvml import OLD_DRIVER_ABSENT, SCENARIOS, FakeGpu, FakeLink, FakeNvml

PROBING = [name for name in SCENARIOS if SCENARIOS[name]().init_error is None]


@pytest.mark.parametrize("name", PROBING)
def test_every_scenario_probes_round_trips_and_shuts_down(name: str) -> None:
    lib = SCENARIOS[name]()
    snap = probe_nvml(lib, sysfs_root=None)
    assert lib.shutdowns == 1
    assert lib.initialized == 0
    assert snap.source.kind == "nvml"
    assert [g.index for g in snap.gpus] == list(range(len(lib.gpus)))
    n = len(snap.gpus)
    assert len(snap.pairs) == n * (n - 1) // 2
    assert snapshot_from_json(snapshot_to_json(snap)) == snap
    assert snap.topology is not None
    assert snap.topology.labels == [f"GPU{i}" for i in range(n)]
    assert all(snap.topology.matrix[i][i] == "X" for i in range(n))


def test_no_driver_raises_one_line_probe_error() -> None:
    lib = SCENARIOS["no_driver"]()
    with pytest.raises(ProbeError) as info:
        probe_nvml(lib)
    assert str(info.value) == "no NVIDIA driver found (libnvidia-ml.so not loadable)"
    assert "\n" not in str(info.value)
    assert lib.shutdowns == 0  # init failed: nothing to shut down


@pytest.mark.parametrize(
    ("code", "words", "state"),
    [
        (pynvml.NVML_ERROR_DRIVER_NOT_LOADED, "driver not loaded", "driver_not_loaded"),
        (pynvml.NVML_ERROR_NO_PERMISSION, "no permission", "no_permission"),
        (pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH, "version mismatch", "version_mismatch"),
        (pynvml.NVML_ERROR_LIBRARY_NOT_FOUND, "no NVIDIA driver found", "library_not_found"),
        (pynvml.NVML_ERROR_UNKNOWN, "NVML could not start: NVMLError_Unknown", "error"),
    ],
)
def test_init_failures_have_their_own_message_and_state(code: int, words: str, state: str) -> None:
    with pytest.raises(NoGpuError, match=words) as info:
        probe_nvml(FakeNvml([], init_error=code))
    assert isinstance(info.value, ProbeError)
    assert info.value.state == state
    assert info.value.error is not None
    assert info.value.error.startswith("NVMLError_")


def test_count_failure_is_a_driver_error() -> None:
    with pytest.raises(NoGpuError, match="could not count") as info:
        probe_nvml(FakeNvml([FakeGpu()], errors={"nvmlDeviceGetCount": pynvml.NVML_ERROR_UNKNOWN}))
    assert info.value.state == "error"


def test_gpu_whose_every_call_fails_is_a_placeholder() -> None:
    lib = SCENARIOS["gpu_every_call_fails"]()
    snap = probe_nvml(lib, sysfs_root=None)
    ok, broken = snap.gpus
    assert ok.read_error is None
    assert ok.power_draw_w == pytest.approx(74.21)
    assert broken.read_error is Missing.ERROR
    assert broken.name is None
    assert broken.missing["temp_c"] is Missing.ERROR
    assert "nvmlDeviceGetTopologyCommonAncestor" not in lib.calls  # the pair is not asked about
    assert len([d for d in snap.diagnostics if d.gpu == 1]) == 1


def test_gpu_with_only_absent_features_is_not_a_placeholder() -> None:
    """A card that gives its name and nothing else because it lacks the features is odd, not broken."""
    calls = [name for name in dir(FakeNvml) if name.startswith("nvmlDevice") and name != "nvmlDeviceGetName"]
    absent = [c for c in calls if c not in ("nvmlDeviceGetHandleByIndex", "nvmlDeviceGetCount")]
    gpu = FakeGpu(errors=dict.fromkeys(absent, pynvml.NVML_ERROR_NOT_SUPPORTED))
    snap = probe_nvml(FakeNvml([gpu]), sysfs_root=None)
    assert snap.gpus[0].read_error is None
    assert snap.gpus[0].name == "NVIDIA H100 80GB HBM3"


def test_gpu_with_every_reading_denied_is_unreadable_for_permission() -> None:
    calls = [name for name in dir(FakeNvml) if name.startswith("nvmlDevice")] + ["nvmlDeviceGetMemoryInfo_v2"]
    denied = [c for c in calls if c not in ("nvmlDeviceGetHandleByIndex", "nvmlDeviceGetCount", "nvmlDeviceGetName")]
    gpu = FakeGpu(errors=dict.fromkeys(denied, pynvml.NVML_ERROR_NO_PERMISSION))
    snap = probe_nvml(FakeNvml([gpu]), sysfs_root=None)
    assert snap.gpus[0].read_error is Missing.NO_PERMISSION
    assert snap.gpus[0].name == "NVIDIA H100 80GB HBM3"  # what was read stays


def test_poller_without_gpus_is_a_no_gpu_error() -> None:
    with pytest.raises(NoGpuError) as info:
        NvmlPoller(FakeNvml([])).open()
    assert info.value.state == "ok"
    with pytest.raises(NoGpuError) as info:
        NvmlPoller(SCENARIOS["driver_version_mismatch"]()).open()
    assert info.value.state == "version_mismatch"


def test_healthy_h100_exact_values() -> None:
    snap = probe_nvml(SCENARIOS["healthy_8x_h100_nvlink"](), sysfs_root=None)
    g = snap.gpus[0]
    assert g.name == "NVIDIA H100 80GB HBM3"
    assert g.pci_bus_id == "00000000:18:00.0"
    assert g.architecture == "Hopper"
    assert g.compute_capability == "9.0"
    assert g.memory_total_mib == 81559
    assert g.power_draw_w == pytest.approx(74.21)
    assert (g.power_limit_w, g.power_default_limit_w, g.power_enforced_limit_w) == (700, 700, 700)
    assert (g.power_min_limit_w, g.power_max_limit_w) == (200, 700)
    assert (g.temp_c, g.temp_memory_c) == (43, 46)
    assert (g.temp_shutdown_c, g.temp_slowdown_c, g.temp_max_operating_c, g.temp_memory_max_c) == (92, 89, 87, 95)
    assert g.temp_target_c is None
    assert g.missing["temp_target_c"] is Missing.NOT_SUPPORTED
    assert g.clock_event_reasons_active == ["idle"]
    assert g.clock_event_durations_us == {
        "sw_power_cap": 33534556.0,
        "sw_thermal_slowdown": 0.0,
        "hw_thermal_slowdown": 0.0,
        "hw_power_brake_slowdown": 0.0,
        "sync_boost": 0.0,
    }
    assert (g.pcie_gen_current, g.pcie_gen_max, g.pcie_width_current, g.pcie_width_max) == (5, 5, 16, 16)
    assert g.persistence_mode is True
    assert g.compute_mode == "Default"
    assert g.mig_enabled is False
    assert g.ecc_enabled is True
    assert g.ecc_uncorrected_volatile == 0
    assert g.numa_node == 0
    assert snap.gpus[5].numa_node == 1
    assert g.cpu_affinity == "0-47,96-143"
    assert g.nvlinks is not None
    assert len(g.nvlinks) == 18
    assert all(link.active and link.remote_device_type == "switch" for link in g.nvlinks)
    assert snap.software.driver_version == "550.54.15"
    assert snap.software.cuda_driver_version == "12.4"
    assert snap.missing_functions == []
    assert snap.diagnostics == []
    for p in snap.pairs:
        assert (p.link, p.kind, p.nvlinks) == ("NV18", "nvlink", 18)
        assert p.p2p_read is P2PStatus.OK
        assert p.p2p_atomics is P2PStatus.OK
    assert snap.topology is not None
    assert snap.topology.matrix[0][7] == "NV18"
    assert snap.topology.gpus[4].cpu_affinity == "48-95,144-191"
    assert snap.topology.gpus[4].numa_affinity == "1"


def test_consumer_card_power_not_supported_but_fan_read() -> None:
    snap = probe_nvml(SCENARIOS["consumer_power_not_supported"](), sysfs_root=None)
    g = snap.gpus[0]
    for field in (
        "power_draw_w",
        "power_limit_w",
        "power_default_limit_w",
        "power_enforced_limit_w",
        "power_min_limit_w",
        "power_max_limit_w",
    ):
        assert getattr(g, field) is None
        assert g.missing[field] is Missing.NOT_SUPPORTED
    assert g.fan_percent == 41
    assert g.temp_target_c == 83
    assert g.architecture == "Ampere"
    assert g.ecc_enabled is False
    assert g.missing["ecc_uncorrected_volatile"] is Missing.NOT_SUPPORTED
    assert g.nvlinks == []  # NotSupported on link 0: a card without NVLink
    assert "nvlinks" not in g.missing
    assert snap.pairs == []


def test_gpu_lost_mid_read_stops_reading_and_keeps_the_other_gpu() -> None:
    lib = SCENARIOS["gpu_lost_mid_read"]()
    snap = probe_nvml(lib, sysfs_root=None)
    ok, lost = snap.gpus
    assert ok.name is not None
    assert ok.power_limit_w == 700
    # GPU1 answered 5 calls (name, uuid, pci, arch, cc), then fell off the bus.
    assert lost.name == "NVIDIA H100 80GB HBM3"
    assert lost.compute_capability == "9.0"
    assert lost.read_error == Missing.GPU_LOST  # reported once as lost; what was read is kept
    assert lost.read_error_detail is not None
    assert "GpuIsLost" in lost.read_error_detail
    for field in ("memory_total_mib", "power_draw_w", "temp_c", "ecc_enabled", "nvlinks", "cpu_affinity"):
        assert getattr(lost, field) is None
        assert lost.missing[field] is Missing.GPU_LOST
    assert lib._gpu_calls[1] == 6  # exactly one call raised GpuIsLost; nothing was retried after it
    pair = snap.pairs[0]
    assert pair.link is None
    assert pair.missing["link"] is Missing.GPU_LOST
    assert any(d.gpu == 1 and "GpuIsLost" in d.message for d in snap.diagnostics)


def test_gpu_without_handle_becomes_placeholder() -> None:
    snap = probe_nvml(SCENARIOS["gpu_off_bus"](), sysfs_root=None)
    assert [g.read_error for g in snap.gpus] == [None, Missing.GPU_LOST, None]
    placeholder = snap.gpus[1]
    assert placeholder.name is None
    assert placeholder.read_error_detail is not None
    assert "nvmlDeviceGetHandleByIndex" in placeholder.read_error_detail
    assert snap.gpus[2].name == "NVIDIA H100 80GB HBM3"
    pair02 = snap.pair(0, 2)
    assert pair02 is not None
    assert pair02.link == "NODE"
    pair12 = snap.pair(1, 2)
    assert pair12 is not None
    assert pair12.missing["p2p_read"] is Missing.GPU_LOST


def test_old_driver_falls_back_and_lists_missing_functions_once() -> None:
    lib = SCENARIOS["old_driver_missing_calls"]()
    snap = probe_nvml(lib, sysfs_root=None)
    assert snap.missing_functions == sorted(OLD_DRIVER_ABSENT)
    for name in OLD_DRIVER_ABSENT:
        assert lib.count(name) == 1, name  # probed once, not per GPU
    assert snap.software.cuda_driver_version == "10.1"  # from the un-versioned call
    g = snap.gpus[1]
    assert g.clock_event_reasons_active == ["idle"]  # via nvmlDeviceGetCurrentClocksThrottleReasons
    assert g.clock_event_reasons_supported is not None
    assert g.missing["remapped_rows_pending"] is Missing.DRIVER_TOO_OLD
    assert g.missing["pcie_gen_gpu_max"] is Missing.DRIVER_TOO_OLD
    assert g.pcie_gen_max == 3
    assert g.architecture == "Volta"
    assert g.nvlinks is not None
    assert all(link.missing["remote_device_type"] is Missing.DRIVER_TOO_OLD for link in g.nvlinks)
    pair = snap.pair(0, 1)
    assert pair is not None
    assert (pair.link, pair.nvlinks, pair.kind) == ("NV6", 6, "nvlink")  # direct GPU-to-GPU links


def test_function_absent_from_pynvml_module_is_driver_too_old() -> None:
    class OldBindings:
        """A pynvml older than the function: the attribute itself is missing."""

        def __init__(self, inner: FakeNvml) -> None:
            self._inner = inner

        def __getattr__(self, name: str) -> object:
            if name in absent:
                raise AttributeError(name)
            return getattr(self._inner, name)

    # Functions called through a lambda, through partial() with arguments, and as a versioned attempt.
    absent = (
        "nvmlDeviceGetGpuMaxPcieLinkGeneration",
        "nvmlDeviceGetNvLinkRemoteDeviceType",
        "nvmlSystemGetCudaDriverVersion_v2",
    )
    links = [FakeLink(remote_bus_id="00000000:3B:00.0")]
    inner = FakeNvml([FakeGpu(links=links), FakeGpu(bus_id="00000000:3B:00.0")])
    snap = probe_nvml(OldBindings(inner), sysfs_root=None)  # type: ignore[arg-type]
    assert sorted(snap.missing_functions) == sorted(absent)
    assert all(g.missing["pcie_gen_gpu_max"] is Missing.DRIVER_TOO_OLD for g in snap.gpus)
    assert snap.gpus[0].nvlinks is not None
    assert snap.gpus[0].nvlinks[0].missing["remote_device_type"] is Missing.DRIVER_TOO_OLD
    assert snap.software.cuda_driver_version is not None  # from the unversioned call
    assert inner.shutdowns == 1


def test_no_permission_fields() -> None:
    snap = probe_nvml(SCENARIOS["no_permission"](), sysfs_root=None)
    g = snap.gpus[0]
    for field in ("retired_pages_sbe", "retired_pages_dbe", "cpu_affinity"):
        assert getattr(g, field) is None
        assert g.missing[field] is Missing.NO_PERMISSION
    # The violation counters were refused; the per-reason field values were not: only those are known.
    assert g.clock_event_durations_us == {
        "sw_thermal_slowdown": 0.0,
        "hw_thermal_slowdown": 0.0,
        "hw_power_brake_slowdown": 0.0,
    }
    assert g.retired_pages_pending is False
    assert snap.topology is not None
    assert snap.topology.gpus[0].cpu_affinity == "N/A"


def test_power_brake_counter_from_nvml_reaches_the_doctor() -> None:
    """HW power brake time is read from its field value (nvml.h id 271, ns) and fires power.brake-history."""
    from rigcheck.checks.doctor import run_checks
    from tests.support.fakenvml import FakeGpu, FakeNvml

    lib = FakeNvml([FakeGpu(uuid="GPU-brake", event_counters_ns={269: 0, 270: 0, 271: 2_500_000_000})])
    snap = probe_nvml(lib, sysfs_root=None)
    assert snap.gpus[0].clock_event_durations_us is not None
    assert snap.gpus[0].clock_event_durations_us["hw_power_brake_slowdown"] == 2.5e6
    assert "power.brake-history" in {f.id for f in run_checks(snap)}


def test_old_driver_without_the_counter_fields_falls_back_to_the_thermal_policy() -> None:
    g = probe_nvml(SCENARIOS["old_driver_missing_calls"](), sysfs_root=None).gpus[0]
    assert g.clock_event_durations_us is not None
    assert set(g.clock_event_durations_us) == {"sw_power_cap", "sw_thermal_slowdown", "sync_boost"}


def test_hot_throttling_card() -> None:
    g = probe_nvml(SCENARIOS["hot_throttling"](), sysfs_root=None).gpus[0]
    assert g.temp_c == 88
    assert g.temp_target_c == 85
    assert g.clock_event_reasons_active == ["sw_power_cap", "sw_thermal_slowdown"]
    assert g.clock_event_durations_us == {
        "sw_power_cap": 120e6,
        "sw_thermal_slowdown": 45.5e6,
        "hw_thermal_slowdown": 0.0,
        "hw_power_brake_slowdown": 0.0,
        "sync_boost": 0.0,
    }
    assert (g.power_limit_w, g.power_default_limit_w) == (300, 350)
    assert (g.clock_sm_mhz, g.clock_sm_max_mhz) == (1410, 2520)
    assert g.architecture == "Ada Lovelace"


def test_pcie_sys_pair_without_p2p() -> None:
    snap = probe_nvml(SCENARIOS["pcie_sys_no_p2p"](), sysfs_root=None)
    pair = snap.pair(0, 1)
    assert pair is not None
    assert (pair.link, pair.kind, pair.nvlinks) == ("SYS", "cross_numa", 0)
    assert pair.p2p_read is P2PStatus.NOT_SUPPORTED
    assert pair.p2p_write is P2PStatus.NOT_SUPPORTED
    assert snap.gpus[1].pcie_width_current == 8
    assert snap.gpus[1].pcie_width_max == 16
    assert [g.numa_node for g in snap.gpus] == [0, 1]


def test_ecc_errors_and_pending_remap() -> None:
    g = probe_nvml(SCENARIOS["ecc_errors_pending_remap"](), sysfs_root=None).gpus[0]
    assert (g.ecc_uncorrected_volatile, g.ecc_uncorrected_aggregate, g.ecc_corrected_volatile) == (2, 7, 113)
    assert (g.remapped_rows_correctable, g.remapped_rows_uncorrectable) == (3, 2)
    assert g.remapped_rows_pending is True
    assert g.remapped_rows_failure is False
    assert (g.retired_pages_sbe, g.retired_pages_dbe, g.retired_pages_pending) == (1, 2, True)


def test_unexpected_nvml_error_becomes_error_with_diagnostic() -> None:
    lib = FakeNvml([FakeGpu(errors={"nvmlDeviceGetFanSpeed": pynvml.NVML_ERROR_UNKNOWN})])
    snap = probe_nvml(lib, sysfs_root=None)
    g = snap.gpus[0]
    assert g.fan_percent is None
    assert g.missing["fan_percent"] is Missing.ERROR
    assert [d.message.split(":")[0] for d in snap.diagnostics] == ["nvmlDeviceGetFanSpeed"]
    assert snap.diagnostics[0].gpu == 0


def test_shutdown_runs_even_when_counting_fails() -> None:
    lib = FakeNvml([FakeGpu()], errors={"nvmlDeviceGetCount": pynvml.NVML_ERROR_UNKNOWN})
    with pytest.raises(ProbeError, match="count"):
        probe_nvml(lib, sysfs_root=None)
    assert lib.shutdowns == 1


def test_numa_falls_back_to_sysfs(tmp_path: Path) -> None:
    root = tmp_path
    dev = root / "sys/bus/pci/devices/0000:19:00.0"
    dev.mkdir(parents=True)
    (dev / "numa_node").write_text("1\n")
    lib = FakeNvml([FakeGpu()], absent=("nvmlDeviceGetMemoryAffinity",))
    g = probe_nvml(lib, sysfs_root=root).gpus[0]
    assert g.numa_node == 1
    assert "numa_node" not in g.missing
    g2 = probe_nvml(FakeNvml([FakeGpu()], absent=("nvmlDeviceGetMemoryAffinity",)), sysfs_root=None).gpus[0]
    assert g2.numa_node is None
    assert g2.missing["numa_node"] is Missing.DRIVER_TOO_OLD


def test_decoders() -> None:
    assert decode_clock_event_reasons(0x1 | 0x4 | 0x80 | 0x100) == [
        "idle",
        "sw_power_cap",
        "hw_power_brake_slowdown",
        "display_clock_setting",
    ]
    assert decode_clock_event_reasons(0) == []
    assert decode_clock_event_reasons(0x40) == ["hw_thermal_slowdown"]
    assert bits_to_list([0x3, 0x3]) == [0, 1, 64, 65]
    assert format_cpulist([0, 1, 2, 3, 8, 10, 11]) == "0-3,8,10-11"
    assert format_cpulist(list(range(24)) + list(range(48, 72))) == "0-23,48-71"
    assert cuda_version_string(12040) == "12.4"
    assert cuda_version_string(13000) == "13.0"
    assert cuda_version_string(11080) == "11.8"


def test_memory_used_leaves_out_the_reserved_memory_where_the_driver_can() -> None:
    """v2 of nvmlDeviceGetMemoryInfo reports "used" as nvidia-smi does; an old driver falls back to v1."""
    healthy = probe_nvml(SCENARIOS["healthy_8x_h100_nvlink"](), sysfs_root=None)
    assert healthy.gpus[0].memory_used_mib == 512
    assert "nvmlDeviceGetMemoryInfo_v2" not in healthy.missing_functions
    old = probe_nvml(SCENARIOS["old_driver_missing_calls"](), sysfs_root=None)
    assert old.gpus[0].memory_used_mib == 512 + 480  # v1: reserved counted as used
    assert old.gpus[0].memory_total_mib is not None
    assert "nvmlDeviceGetMemoryInfo_v2" in old.missing_functions


def test_instant_and_average_draw_from_their_field_values() -> None:
    """On Ampere and newer nvmlDeviceGetPowerUsage is a 1 s average: the instant draw comes from field 186."""
    from tests.support.fakenvml import FakeGpu, FakeNvml

    g = probe_nvml(FakeNvml([FakeGpu(power_fields_mw={186: 312_500, 185: 299_000})]), sysfs_root=None).gpus[0]
    assert (g.power_draw_w, g.power_draw_avg_w) == (312.5, 299.0)
    assert "power_draw_avg_w" not in g.missing
    plain = probe_nvml(FakeNvml([FakeGpu()]), sysfs_root=None).gpus[0]  # a driver without the fields
    assert plain.power_draw_w is not None
    assert plain.power_draw_avg_w is None
    assert "power_draw_avg_w" in plain.missing


def test_a_threshold_the_driver_predates_is_not_supported_without_a_diagnostic() -> None:
    snap = probe_nvml(SCENARIOS["old_driver_missing_calls"](), sysfs_root=None)
    g = snap.gpus[0]
    assert g.temp_target_c is None
    assert g.missing["temp_target_c"] is Missing.NOT_SUPPORTED
    assert not any("Threshold" in d.message for d in snap.diagnostics)


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        (pynvml.NVML_ERROR_NOT_SUPPORTED, Missing.NOT_SUPPORTED),
        (pynvml.NVML_ERROR_NO_PERMISSION, Missing.NO_PERMISSION),
        (pynvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH, Missing.DRIVER_TOO_OLD),
    ],
)
def test_probe_and_poller_read_an_error_alike(code: int, reason: Missing) -> None:
    """One error mapper (probe/nvml/calls.py): the snapshot and the telemetry poller give the same NVML
    error the same reason."""
    snap = probe_nvml(FakeNvml([FakeGpu(errors={"nvmlDeviceGetTemperature": code})]), sysfs_root=None)
    assert snap.gpus[0].temp_c is None
    assert snap.gpus[0].missing["temp_c"] is reason
    with NvmlPoller(FakeNvml([FakeGpu(errors={"nvmlDeviceGetTemperature": code})])) as poller:
        (sample,) = poller.poll(0.0)
        assert sample.temp_c is None
        assert poller.unavailable == {0: {"temp_c": reason.value}}
        assert poller.errors == 0


def test_vbios_version_read_live_and_its_reason_where_nvml_has_none() -> None:
    healthy = probe_nvml(SCENARIOS["healthy_8x_h100_nvlink"](), sysfs_root=None)
    assert [g.vbios_version for g in healthy.gpus] == ["96.00.DA.00.0C"] * 8
    assert all("vbios_version" not in g.missing for g in healthy.gpus)
    consumer = probe_nvml(SCENARIOS["consumer_power_not_supported"](), sysfs_root=None).gpus[0]
    assert consumer.vbios_version is None
    assert consumer.missing["vbios_version"] is Missing.NOT_SUPPORTED


@pytest.mark.parametrize(
    ("answer", "version", "reason"),
    [
        (b"94.02.5C.00.02", "94.02.5C.00.02", None),  # older bindings return bytes
        (" 94.02.5C.00.02 ", "94.02.5C.00.02", None),
        ("", None, Missing.NOT_SUPPORTED),
    ],
)
def test_vbios_answer_as_text_and_an_empty_one_is_no_version(
    answer: str | bytes, version: str | None, reason: Missing | None
) -> None:
    class Answer(FakeNvml):
        def nvmlDeviceGetVbiosVersion(self, handle: object, /) -> str:
            super().nvmlDeviceGetVbiosVersion(handle)
            return answer  # type: ignore[return-value]

    gpu = probe_nvml(Answer([FakeGpu()]), sysfs_root=None).gpus[0]
    assert gpu.vbios_version == version
    assert gpu.missing.get("vbios_version") is reason


def test_vbios_on_a_driver_without_the_function_is_driver_too_old() -> None:
    snap = probe_nvml(FakeNvml([FakeGpu()], absent=["nvmlDeviceGetVbiosVersion"]), sysfs_root=None)
    assert snap.gpus[0].missing["vbios_version"] is Missing.DRIVER_TOO_OLD
    assert "nvmlDeviceGetVbiosVersion" in snap.missing_functions
