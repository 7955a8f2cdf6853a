"""The real H100 VM outputs (tests/fixtures/corpus/h100-vm/, facts in its README.md), in every format."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigcheck.errors import ParseError
from rigcheck.model import Gpu, Missing, Snapshot
from rigcheck.readers.smi.nvlink_status import parse_nvlink_status
from rigcheck.readers.smi.query_text import parse_query_text
from rigcheck.readers.smi.query_xml import parse_query_xml
from rigcheck.readers.smi.table import parse_table

H100 = Path(__file__).parent.parent / "fixtures" / "corpus" / "h100-vm"

CONTRACT_FIELDS = (
    "index",
    "name",
    "pci_bus_id",
    "power_draw_w",
    "power_limit_w",
    "power_default_limit_w",
    "power_enforced_limit_w",
    "power_min_limit_w",
    "power_max_limit_w",
    "temp_c",
    "temp_slowdown_c",
    "temp_shutdown_c",
    "temp_max_operating_c",
    "pcie_gen_current",
    "pcie_gen_max",
    "pcie_width_current",
    "pcie_width_max",
    "clock_event_reasons_active",
)


def _read(name: str) -> tuple[str, str]:
    path = H100 / name
    return path.read_text(encoding="utf-8"), str(path)


def _q() -> Snapshot:
    return parse_query_text(*_read("q.txt"))


def _xml() -> Snapshot:
    return parse_query_xml(*_read("q.xml"))


def _only_gpu(snapshot: Snapshot) -> Gpu:
    assert len(snapshot.gpus) == 1
    return snapshot.gpus[0]


@pytest.mark.parametrize("parse", [_q, _xml], ids=["q.txt", "q.xml"])
def test_full_query_facts(parse: object) -> None:
    assert callable(parse)
    snapshot: Snapshot = parse()
    assert snapshot.software.driver_version == "580.159.04"
    assert snapshot.software.cuda_driver_version == "13.0"
    gpu = _only_gpu(snapshot)
    assert gpu.index == 0
    assert gpu.name == "NVIDIA H100 80GB HBM3"
    assert gpu.uuid == "GPU-e21d4b0e-eeed-ec2c-7467-89cbdf2a2b78"
    assert gpu.pci_bus_id == "00000000:00:06.0"
    assert gpu.architecture == "Hopper"
    assert gpu.power_draw_w == pytest.approx(74, abs=1)
    assert gpu.power_draw_avg_w == pytest.approx(74.3, abs=0.1)
    assert gpu.power_limit_w == 700
    assert gpu.power_default_limit_w == 700
    assert gpu.power_max_limit_w == 700
    assert gpu.power_min_limit_w == 200
    # The new format has no "Enforced Power Limit" line.
    assert gpu.power_enforced_limit_w is None
    assert gpu.missing["power_enforced_limit_w"] == Missing.NOT_IN_SOURCE
    assert gpu.temp_c == 43
    assert gpu.temp_memory_c == 46
    assert gpu.temp_tlimit_margin_c == 44
    assert gpu.temp_slowdown_c == 89
    assert gpu.temp_shutdown_c == 95
    assert gpu.temp_max_operating_c == 87
    assert gpu.temp_memory_max_c is None
    assert gpu.missing["temp_memory_max_c"] == Missing.NOT_IN_SOURCE
    assert gpu.temp_target_c is None
    assert gpu.missing["temp_target_c"] == Missing.REPORTED_NA
    assert (gpu.pcie_gen_current, gpu.pcie_gen_max, gpu.pcie_gen_gpu_max) == (5, 5, 5)
    assert (gpu.pcie_width_current, gpu.pcie_width_max) == (16, 16)
    assert gpu.pcie_replay_count == 0
    assert gpu.clock_event_reasons_active == ["idle"]
    assert gpu.clock_event_reasons_supported is not None
    assert len(gpu.clock_event_reasons_supported) == 9
    assert gpu.clock_event_durations_us == {
        "sw_power_cap": 33534556,
        "sync_boost": 0,
        "sw_thermal_slowdown": 0,
        "hw_thermal_slowdown": 0,
        "hw_power_brake_slowdown": 0,
    }
    assert gpu.persistence_mode is True
    assert gpu.mig_enabled is False
    assert gpu.ecc_enabled is True
    assert gpu.ecc_uncorrected_volatile == 0
    assert gpu.ecc_uncorrected_aggregate == 0
    assert gpu.ecc_corrected_volatile == 0
    assert (gpu.remapped_rows_correctable, gpu.remapped_rows_uncorrectable) == (0, 0)
    assert (gpu.remapped_rows_pending, gpu.remapped_rows_failure) == (False, False)
    assert gpu.retired_pages_sbe is None
    assert gpu.missing["retired_pages_sbe"] == Missing.REPORTED_NA
    assert gpu.fan_percent is None
    assert gpu.missing["fan_percent"] == Missing.REPORTED_NA
    assert gpu.memory_total_mib == 81559
    assert gpu.memory_used_mib == 0
    assert gpu.utilization_gpu_percent == 0
    assert (gpu.clock_graphics_mhz, gpu.clock_sm_mhz, gpu.clock_mem_mhz) == (345, 345, 2619)
    assert (gpu.clock_graphics_max_mhz, gpu.clock_sm_max_mhz, gpu.clock_mem_max_mhz) == (1980, 1980, 2619)
    assert gpu.pstate == "P0"
    assert gpu.compute_mode == "Default"
    assert gpu.nvlinks is None
    assert gpu.missing["nvlinks"] == Missing.NOT_IN_SOURCE
    for field in CONTRACT_FIELDS:
        assert getattr(gpu, field) is not None or field in gpu.missing, field
    assert snapshot.diagnostics == []


def test_text_and_xml_agree() -> None:
    text, xml = _only_gpu(_q()), _only_gpu(_xml())
    # Readings taken a second apart differ; everything else must be identical.
    volatile = {"power_draw_w", "power_draw_avg_w"}
    a = text.model_dump(exclude=volatile)
    b = xml.model_dump(exclude=volatile)
    assert a == b


def test_q_d_filtered_sections() -> None:
    snapshot = parse_query_text(*_read("q-d.txt"))
    gpu = _only_gpu(snapshot)
    assert snapshot.source.kind == "nvidia-smi-q"
    assert gpu.pci_bus_id == "00000000:00:06.0"
    assert gpu.power_draw_w == pytest.approx(74.21)  # instantaneous, not the "Power Samples" Max
    assert gpu.power_draw_avg_w == pytest.approx(74.23)
    assert (gpu.temp_slowdown_c, gpu.temp_shutdown_c, gpu.temp_max_operating_c) == (89, 95, 87)
    assert gpu.clock_event_reasons_active == ["idle"]
    assert gpu.ecc_enabled is True
    # -d POWER,TEMPERATURE,... leaves out the name and the PCIe section.
    for field in ("name", "pcie_gen_current", "pcie_width_max", "persistence_mode", "mig_enabled"):
        assert getattr(gpu, field) is None
        assert gpu.missing[field] == Missing.NOT_IN_SOURCE


def test_table() -> None:
    snapshot = parse_table(*_read("nvidia-smi.txt"))
    assert snapshot.source.kind == "nvidia-smi-table"
    assert snapshot.software.driver_version == "580.159.04"
    assert snapshot.software.cuda_driver_version == "13.0"
    gpu = _only_gpu(snapshot)
    assert gpu.name == "NVIDIA H100 80GB HBM3"
    assert gpu.pci_bus_id == "00000000:00:06.0"
    assert gpu.power_draw_w == 74
    assert gpu.power_limit_w == 700
    assert gpu.temp_c == 43
    assert gpu.persistence_mode is True
    assert gpu.ecc_enabled is True
    assert gpu.ecc_uncorrected_volatile == 0
    assert gpu.mig_enabled is False
    assert gpu.memory_used_mib == 0
    assert gpu.memory_total_mib == 81559
    assert gpu.missing["fan_percent"] == Missing.REPORTED_NA
    for field in CONTRACT_FIELDS:
        assert getattr(gpu, field) is not None or gpu.missing[field] == Missing.NOT_IN_SOURCE, field


def test_empty_nvlink_status_is_an_error() -> None:
    # nvidia-smi prints nothing on this VM (no NVLink); an empty file is still refused, as everywhere.
    with pytest.raises(ParseError, match="empty file") as info:
        parse_nvlink_status(*_read("nvlink-s.txt"))
    assert info.value.path == str(H100 / "nvlink-s.txt")
