"""Layouts the corpus files do not cover: older -q sections, grep fragments, MIG and Windows tables,
inactive NVLinks. The texts follow nvidia-smi's formats (spacing abridged where it does not matter)."""

from __future__ import annotations

import pytest

from rigcheck.model import Missing
from rigcheck.readers.smi.nvlink_status import parse_nvlink_status
from rigcheck.readers.smi.query_text import parse_query_text
from rigcheck.readers.smi.query_xml import parse_query_xml
from rigcheck.readers.smi.table import parse_table

OLD_Q = """
==============NVSMI LOG==============

Timestamp                                 : Mon Mar  1 10:00:00 2021
Driver Version                            : 460.32.03
CUDA Version                              : 11.2

Attached GPUs                             : 2
GPU 00000000:3B:00.0
    Product Name                          : Tesla V100-PCIE-32GB
    Persistence Mode                      : Disabled
    GPU UUID                              : GPU-aaaaaaaa-0000-0000-0000-000000000001
    PCI
        Bus Id                            : 00000000:3B:00.0
        GPU Link Info
            PCIe Generation
                Max                       : 3
                Current                   : 1
            Link Width
                Max                       : 16x
                Current                   : 8x
        Replays Since Reset               : 3
    Fan Speed                             : N/A
    Performance State                     : P0
    Clocks Throttle Reasons
        Idle                              : Not Active
        Applications Clocks Setting       : Not Active
        SW Power Cap                      : Active
        HW Slowdown                       : Not Active
            HW Thermal Slowdown           : Not Active
            HW Power Brake Slowdown       : Active
        Sync Boost                        : Not Active
        SW Thermal Slowdown               : Not Active
        Display Clock Setting             : Not Active
    FB Memory Usage
        Total                             : 32510 MiB
        Used                              : 31000 MiB
        Free                              : 1510 MiB
    Compute Mode                          : Exclusive_Process
    Utilization
        Gpu                               : 100 %
    Ecc Mode
        Current                           : Enabled
        Pending                           : Enabled
    ECC Errors
        Volatile
            Single Bit
                Device Memory             : 4
                Register File             : 1
                Total                     : 5
            Double Bit
                Device Memory             : 2
                Register File             : 0
                Total                     : 2
        Aggregate
            Single Bit
                Device Memory             : 10
                Total                     : 10
            Double Bit
                Device Memory             : 7
                Total                     : 7
    Retired Pages
        Single Bit ECC                    : 1
        Double Bit ECC                    : 2
        Pending Page Blacklist            : Yes
    Remapped Rows                         : N/A
    Temperature
        GPU Current Temp                  : 84 C
        GPU Shutdown Temp                 : 90 C
        GPU Slowdown Temp                 : 87 C
        GPU Max Operating Temp            : 83 C
        Memory Current Temp               : 80 C
        Memory Max Operating Temp         : 85 C
    Power Readings
        Power Management                  : Supported
        Power Draw                        : 249.12 W
        Power Limit                       : 250.00 W
        Default Power Limit               : 250.00 W
        Enforced Power Limit              : 230.00 W
        Min Power Limit                   : 100.00 W
        Max Power Limit                   : 250.00 W
    Clocks
        Graphics                          : 1230 MHz
        SM                                : 1230 MHz
        Memory                            : 877 MHz
    Max Clocks
        Graphics                          : 1380 MHz
        SM                                : 1380 MHz
        Memory                            : 877 MHz
    Processes                             : None
GPU 00000000:D8:00.0
    Product Name                          : Tesla V100-PCIE-32GB
    Temperature
        GPU Current Temp                  : 40 C
    Processes                             : None
"""


def test_old_query_format() -> None:
    snapshot = parse_query_text(OLD_Q, "old.txt")
    assert snapshot.software.driver_version == "460.32.03"
    assert [g.index for g in snapshot.gpus] == [0, 1]
    gpu = snapshot.gpus[0]
    assert gpu.persistence_mode is False
    assert (gpu.pcie_gen_max, gpu.pcie_gen_current, gpu.pcie_width_max, gpu.pcie_width_current) == (3, 1, 16, 8)
    assert gpu.pcie_gen_gpu_max is None
    assert gpu.pcie_replay_count == 3
    assert gpu.clock_event_reasons_active == ["sw_power_cap", "hw_power_brake_slowdown"]
    assert gpu.compute_mode == "Exclusive_Process"
    assert gpu.utilization_gpu_percent == 100
    assert gpu.ecc_enabled is True
    assert gpu.ecc_uncorrected_volatile == 2  # the Double Bit total, not the sum with its parts
    assert gpu.ecc_uncorrected_aggregate == 7
    assert gpu.ecc_corrected_volatile == 5
    assert (gpu.retired_pages_sbe, gpu.retired_pages_dbe, gpu.retired_pages_pending) == (1, 2, True)
    for field in ("remapped_rows_correctable", "remapped_rows_pending", "remapped_rows_failure"):
        assert gpu.missing[field] == Missing.REPORTED_NA
    assert (gpu.temp_c, gpu.temp_shutdown_c, gpu.temp_slowdown_c, gpu.temp_max_operating_c) == (84, 90, 87, 83)
    assert (gpu.temp_memory_c, gpu.temp_memory_max_c) == (80, 85)
    assert gpu.temp_tlimit_margin_c is None
    assert gpu.missing["temp_tlimit_margin_c"] == Missing.NOT_IN_SOURCE
    assert gpu.power_draw_w == pytest.approx(249.12)
    assert gpu.power_draw_avg_w is None
    assert gpu.power_limit_w == 250
    assert gpu.power_enforced_limit_w == 230
    assert (gpu.power_min_limit_w, gpu.power_max_limit_w, gpu.power_default_limit_w) == (100, 250, 250)
    assert (gpu.clock_sm_mhz, gpu.clock_sm_max_mhz, gpu.clock_mem_max_mhz) == (1230, 1380, 877)
    second = snapshot.gpus[1]
    assert second.pci_bus_id == "00000000:D8:00.0"  # from the header: no PCI section
    assert second.temp_c == 40
    assert second.power_draw_w is None
    assert second.missing["power_draw_w"] == Missing.NOT_IN_SOURCE


FRAGMENT = """    Clocks Throttle Reasons
        Idle                              : Not Active
        Applications Clocks Setting       : Not Active
        SW Power Cap                      : Not Active
        HW Slowdown                       : Active
            HW Thermal Slowdown           : Active
            HW Power Brake Slowdown       : Not Active
        Sync Boost                        : Not Active
        SW Thermal Slowdown               : Active
--
    Clocks Throttle Reasons
        Idle                              : Active
"""


def test_grep_fragment_without_gpu_header() -> None:
    snapshot = parse_query_text(FRAGMENT, "paste.txt")
    assert len(snapshot.gpus) == 1
    gpu = snapshot.gpus[0]
    assert gpu.index == 0
    assert gpu.clock_event_reasons_active == ["hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown"]
    assert "display_clock_setting" not in (gpu.clock_event_reasons_supported or [])
    for field in ("name", "pci_bus_id", "temp_c", "power_draw_w", "pcie_gen_max"):
        assert gpu.missing[field] == Missing.NOT_IN_SOURCE
    assert snapshot.software.missing["driver_version"] == Missing.NOT_IN_SOURCE
    assert any("fragment" in d.message for d in snapshot.diagnostics)


def test_fragment_that_lost_its_indentation() -> None:
    text = "Temperature\nGPU Current Temp : 61 C\nGPU Slowdown Temp : 91 C\nPower Readings\nPower Draw : 120.5 W\n"
    gpu = parse_query_text(text, "flat.txt").gpus[0]
    assert (gpu.temp_c, gpu.temp_slowdown_c, gpu.power_draw_w) == (61, 91, 120.5)


def test_query_mig_devices_are_not_the_gpu() -> None:
    text = """GPU 00000000:07:00.0
    Product Name                          : NVIDIA A100-SXM4-80GB
    MIG Mode
        Current                           : Enabled
        Pending                           : Enabled
    MIG devices
        MIG Device
            GPU Instance ID               : 1
            FB Memory Usage
                Total                     : 9728 MiB
                Used                      : 13 MiB
    FB Memory Usage
        Total                             : 81920 MiB
        Used                              : 100 MiB
    Clocks Throttle Reasons               : N/A
    Processes                             : None
"""
    gpu = parse_query_text(text, "mig.txt").gpus[0]
    assert gpu.mig_enabled is True
    assert gpu.memory_total_mib == 81920
    assert gpu.memory_used_mib == 100
    assert gpu.clock_event_reasons_active is None
    assert gpu.missing["clock_event_reasons_active"] == Missing.REPORTED_NA


def test_q_ansi_and_tabs() -> None:
    text = (
        "GPU 00000000:01:00.0\n\tProduct Name\t: \x1b[1mNVIDIA A40\x1b[0m\n\tTemperature\n\t\tGPU Current Temp : 30 C\n"
    )
    gpu = parse_query_text(text, None).gpus[0]
    assert gpu.name == "NVIDIA A40"
    assert gpu.temp_c == 30


def test_deprecated_and_not_supported_values_are_reported_na() -> None:
    text = """GPU 00000000:01:00.0
    Persistence Mode : [Not Supported]
    Fan Speed : Requested functionality has been deprecated
    Performance State : [N/A]
    Temperature
        GPU Current Temp : Not Supported
    Power Readings
        Power Draw : [Insufficient Permissions]
        Power Limit : ERR!
"""
    gpu = parse_query_text(text, "x.txt").gpus[0]
    assert gpu.missing["persistence_mode"] == Missing.REPORTED_NA
    assert gpu.missing["fan_percent"] == Missing.REPORTED_NA
    assert gpu.missing["pstate"] == Missing.REPORTED_NA
    assert gpu.missing["temp_c"] == Missing.REPORTED_NA
    assert gpu.missing["power_draw_w"] == Missing.NO_PERMISSION
    assert gpu.missing["power_limit_w"] == Missing.ERROR


OLD_XML = """<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v10.dtd">
<nvidia_smi_log>
  <driver_version>450.80.02</driver_version>
  <gpu id="00000000:00:04.0">
    <product_name>Tesla P100-PCIE-16GB</product_name>
    <clocks_throttle_reasons>
      <clocks_throttle_reason_gpu_idle>Not Active</clocks_throttle_reason_gpu_idle>
      <clocks_throttle_reason_sw_power_cap>Active</clocks_throttle_reason_sw_power_cap>
      <clocks_throttle_reason_hw_thermal_slowdown>N/A</clocks_throttle_reason_hw_thermal_slowdown>
    </clocks_throttle_reasons>
    <ecc_errors>
      <volatile>
        <single_bit><device_memory>3</device_memory><total>3</total></single_bit>
        <double_bit><device_memory>1</device_memory><total>1</total></double_bit>
      </volatile>
      <aggregate>
        <single_bit><total>9</total></single_bit>
        <double_bit><total>4</total></double_bit>
      </aggregate>
    </ecc_errors>
    <retired_pages>
      <multiple_single_bit_retirement><retired_count>0</retired_count></multiple_single_bit_retirement>
      <double_bit_retirement><retired_count>1</retired_count></double_bit_retirement>
      <pending_retirement>No</pending_retirement>
    </retired_pages>
    <power_readings>
      <power_draw>N/A</power_draw>
      <power_limit>250.00 W</power_limit>
      <enforced_power_limit>250.00 W</enforced_power_limit>
    </power_readings>
  </gpu>
</nvidia_smi_log>
"""


def test_old_xml() -> None:
    snapshot = parse_query_xml(OLD_XML, "old.xml")
    gpu = snapshot.gpus[0]
    assert gpu.pci_bus_id == "00000000:00:04.0"  # from the id attribute: no <pci>
    assert gpu.clock_event_reasons_active == ["sw_power_cap"]
    assert gpu.clock_event_reasons_supported == ["idle", "sw_power_cap"]
    assert (gpu.ecc_uncorrected_volatile, gpu.ecc_uncorrected_aggregate, gpu.ecc_corrected_volatile) == (1, 4, 3)
    assert (gpu.retired_pages_sbe, gpu.retired_pages_dbe, gpu.retired_pages_pending) == (0, 1, False)
    assert gpu.power_draw_w is None
    assert gpu.missing["power_draw_w"] == Missing.REPORTED_NA
    assert gpu.power_enforced_limit_w == 250
    assert snapshot.software.missing["cuda_driver_version"] == Missing.NOT_IN_SOURCE


MIG_TABLE = """+-----------------------------------------------------------------------------+
| NVIDIA-SMI 470.57.02    Driver Version: 470.57.02    CUDA Version: 11.4     |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|                               |                      |               MIG M. |
|===============================+======================+======================|
|   0  A100-SXM4-40GB      On   | 00000000:00:04.0 Off |                   On |
| N/A   32C    P0    42W / 400W |      0MiB / 40536MiB |     N/A      Default |
|                               |                      |              Enabled |
+-------------------------------+----------------------+----------------------+

+-----------------------------------------------------------------------------+
| MIG devices:                                                                |
+------------------+----------------------+-----------+-----------------------+
| GPU  GI  CI  MIG |         Memory-Usage |        Vol|         Shared        |
|      ID  ID  Dev |           BAR1-Usage | SM     Unc| CE  ENC  DEC  OFA  JPG|
|                  |                      |        ECC|                       |
|==================+======================+===========+=======================|
|  0    1   0   0  |      0MiB / 20096MiB | 42      0 |  3   0    2    0    0 |
|                  |      0MiB / 32767MiB |           |                       |
+------------------+----------------------+-----------+-----------------------+
"""


def test_mig_table() -> None:
    snapshot = parse_table(MIG_TABLE, "mig.txt")
    assert len(snapshot.gpus) == 1
    gpu = snapshot.gpus[0]
    assert gpu.name == "A100-SXM4-40GB"
    assert gpu.mig_enabled is True
    assert gpu.ecc_enabled is True
    assert gpu.utilization_gpu_percent is None
    assert gpu.missing["utilization_gpu_percent"] == Missing.REPORTED_NA
    assert gpu.power_limit_w == 400
    assert gpu.memory_total_mib == 40536


WINDOWS_TABLE = """+---------------------------------------------------------------------------------------+
| NVIDIA-SMI 536.40                 Driver Version: 536.40       CUDA Version: 12.2     |
|-----------------------------------------+----------------------+----------------------+
| GPU  Name                     TCC/WDDM  | Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |
|                                         |                      |               MIG M. |
|=========================================+======================+======================|
|   0  NVIDIA GeForce RTX 3080      WDDM  | 00000000:04:00.0  On |                  N/A |
|  0%   31C    P8              22W / 336W |   1128MiB / 10240MiB |      3%   E. Process |
|                                         |                      |                  N/A |
+-----------------------------------------+----------------------+----------------------+
|   1  NVIDIA GeForce RTX 3080      WDDM  | 00000000:05:00.0 Off |                  N/A |
|  0%   N/A    P8             N/A /  N/A  |   1128MiB / 10240MiB |    ERR!      Default |
|                                         |                      |                  N/A |
+-----------------------------------------+----------------------+----------------------+
"""


def test_windows_table() -> None:
    snapshot = parse_table(WINDOWS_TABLE, "win.txt")
    first, second = snapshot.gpus
    assert first.name == "NVIDIA GeForce RTX 3080"
    assert first.persistence_mode is None
    assert first.missing["persistence_mode"] == Missing.NOT_IN_SOURCE
    assert first.compute_mode == "Exclusive_Process"
    assert first.power_limit_w == 336
    assert first.utilization_gpu_percent == 3
    assert second.index == 1
    assert second.missing["temp_c"] == Missing.REPORTED_NA
    assert second.missing["power_draw_w"] == Missing.REPORTED_NA
    assert second.missing["power_limit_w"] == Missing.REPORTED_NA
    assert second.missing["utilization_gpu_percent"] == Missing.ERROR


def test_nvlink_inactive_links_and_gpu_without_links() -> None:
    text = (
        "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-1)\n"
        "\t Link 0: 25 GB/s\n"
        "\t Link 1: <inactive>\n"
        "GPU 1: NVIDIA A100-SXM4-40GB (UUID: GPU-2)\n"
    )
    snapshot = parse_nvlink_status(text, "n.txt")
    first, second = snapshot.gpus
    assert first.nvlinks is not None
    up, down = first.nvlinks
    assert (up.link, up.active, up.speed_gbps) == (0, True, 25)
    assert (down.link, down.active, down.speed_gbps) == (1, False, None)
    assert down.missing["speed_gbps"] == Missing.REPORTED_NA
    assert up.missing["remote_pci_bus_id"] == Missing.NOT_IN_SOURCE
    assert second.nvlinks == []


def test_oldest_q_layout_titan_black_331() -> None:
    from pathlib import Path

    path = Path(__file__).parent.parent / "fixtures" / "smi-extra" / "001-1xtitanblack-331-old-temperature.txt"
    snap = parse_query_text(path.read_text(), str(path))
    assert snap.software.driver_version == "331.79"
    gpu = snap.gpus[0]
    assert (gpu.name, gpu.pci_bus_id, gpu.temp_c, gpu.fan_percent) == (
        "GeForce GTX TITAN Black",
        "0000:01:00.0",
        29,
        26,
    )
    assert gpu.memory_total_mib == 6143
    assert gpu.persistence_mode is False
    assert gpu.power_limit_w is None
    assert gpu.missing["power_limit_w"] == "reported_na"
    assert gpu.clock_event_reasons_active is None
    assert gpu.missing["clock_event_reasons_active"] == "reported_na"
    assert gpu.missing["temp_slowdown_c"] == "not_in_source"
