"""The `nvidia-smi` table layouts whose header names other columns than today's: a vGPU host's table and the table
of drivers before ~300. Real files from tests/fixtures/smi-extra/ (sources in its README), then each layout's
variations written here in the same shape."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigcheck.errors import ParseError
from rigcheck.model import Missing
from rigcheck.model.snapshot import INPUT_ENDS_EARLY
from rigcheck.readers.from_file import detect_kind
from rigcheck.readers.smi.table import parse_table

EXTRA = Path(__file__).parent.parent / "fixtures" / "smi-extra"
OLD = EXTRA / "002-1xgeforce8500gt-290.10-old-layout-2012.txt"
VGPU = EXTRA / "003-1gpu-vgpu-host-525-no-vgpus.txt"

# What a vGPU host's GPU row does not hold.
NOT_IN_VGPU_ROW = (
    "persistence_mode",
    "fan_percent",
    "temp_c",
    "pstate",
    "power_draw_w",
    "power_limit_w",
    "memory_used_mib",
    "memory_total_mib",
    "ecc_enabled",
    "ecc_uncorrected_volatile",
    "compute_mode",
    "mig_enabled",
)


# --- a vGPU host's table -------------------------------------------------------------------------------------------


def test_real_vgpu_host_table_525() -> None:
    snap = parse_table(VGPU.read_text(encoding="utf-8"), str(VGPU))
    assert detect_kind(VGPU.read_text(encoding="utf-8")) == "nvidia-smi-table"
    assert snap.software.driver_version == "525.147.01"
    assert snap.software.missing["cuda_driver_version"] == Missing.NOT_IN_SOURCE
    (gpu,) = snap.gpus
    assert (gpu.index, gpu.name, gpu.pci_bus_id, gpu.utilization_gpu_percent) == (
        0,
        "NVIDIA GeForce RTX 408...",
        "00000000:01:00.0",
        0,
    )
    for attr in NOT_IN_VGPU_ROW:
        assert getattr(gpu, attr) is None
        assert gpu.missing[attr] == Missing.NOT_IN_SOURCE, attr


VGPU_TWO_GPUS = """\
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 550.90.05              Driver Version: 550.90.05                 |
|---------------------------------+------------------------------+------------+
| GPU  Name                       | Bus-Id                       | GPU-Util   |
|      vGPU ID     Name           | VM ID     VM Name            | vGPU-Util  |
|=================================+==============================+============|
|   0  NVIDIA A40                 | 00000000:41:00.0             |  37%       |
|      3251634213  NVIDIA A40-8Q  | 2786912   win-render-01      |     30%    |
|      3251634214  NVIDIA A40-8Q  | 2787040   win-render-02      |      7%    |
+---------------------------------+------------------------------+------------+
|   1  NVIDIA A40                 | 00000000:C1:00.0             |   0%       |
+---------------------------------+------------------------------+------------+
"""


def test_vgpu_rows_are_not_gpus() -> None:
    snap = parse_table(VGPU_TWO_GPUS, "vgpu.txt")
    assert [(g.index, g.name, g.pci_bus_id, g.utilization_gpu_percent) for g in snap.gpus] == [
        (0, "NVIDIA A40", "00000000:41:00.0", 37),
        (1, "NVIDIA A40", "00000000:C1:00.0", 0),
    ]
    notes = [d for d in snap.diagnostics if "vGPU" in d.message]
    assert [(d.gpu, d.message.split(" (line")[0]) for d in notes] == [
        (0, "2 vGPU row(s) of GPU 0 not read (vGPUs of virtual machines, not GPUs)")
    ]
    assert all(g.missing["memory_total_mib"] == Missing.NOT_IN_SOURCE for g in snap.gpus)


def test_vgpu_table_cut_inside_a_vgpu_row_keeps_its_gpu_whole() -> None:
    text = VGPU_TWO_GPUS[: VGPU_TWO_GPUS.index("2787040")]
    snap = parse_table(text, "vgpu.txt")
    (gpu,) = snap.gpus
    assert (gpu.pci_bus_id, gpu.utilization_gpu_percent) == ("00000000:41:00.0", 37)
    assert Missing.TRUNCATED not in gpu.missing.values()
    assert any(d.message.startswith(INPUT_ENDS_EARLY) for d in snap.diagnostics)


def test_vgpu_table_cut_inside_a_gpu_row_marks_what_it_lost() -> None:
    text = VGPU_TWO_GPUS[: VGPU_TWO_GPUS.index("00000000:C1") + 5]
    first, second = parse_table(text, "vgpu.txt").gpus
    assert first.utilization_gpu_percent == 37
    assert (second.index, second.name) == (1, "NVIDIA A40")
    assert second.missing["pci_bus_id"] == Missing.TRUNCATED
    assert second.missing["utilization_gpu_percent"] == Missing.TRUNCATED
    assert second.missing["temp_c"] == Missing.NOT_IN_SOURCE  # not in this layout, cut or not


# --- the table of drivers before ~300 --------------------------------------------------------------------------------


def test_real_old_table_290() -> None:
    snap = parse_table(OLD.read_text(encoding="utf-8"), str(OLD))
    assert snap.software.driver_version == "290.10"
    assert snap.software.missing["cuda_driver_version"] == Missing.NOT_IN_SOURCE
    (gpu,) = snap.gpus
    assert (gpu.index, gpu.name, gpu.pci_bus_id) == (0, "GeForce 8500 GT", "0000:01:00.0")
    assert (gpu.fan_percent, gpu.temp_c, gpu.memory_used_mib, gpu.memory_total_mib) == (30, 62, 42, 255)
    assert gpu.compute_mode == "Default"
    # "17%" is the memory's percentage (42 of 255 MB), not the GPU's utilization, which is N/A.
    assert gpu.utilization_gpu_percent is None
    assert gpu.missing["utilization_gpu_percent"] == Missing.REPORTED_NA
    for attr in ("pstate", "power_draw_w", "power_limit_w", "ecc_enabled", "ecc_uncorrected_volatile"):
        assert gpu.missing[attr] == Missing.REPORTED_NA, attr
    assert gpu.missing["persistence_mode"] == Missing.NOT_IN_SOURCE
    assert not snap.diagnostics


OLD_TWO_GPUS = """\
+------------------------------------------------------+
| NVIDIA-SMI 3.295.41   Driver Version: 295.41         |
|-------------------------------+----------------------+----------------------+
| Nb.  Name                     | Bus Id        Disp.  | Volatile ECC SB / DB |
| Fan   Temp   Power Usage /Cap | Memory Usage         | GPU Util. Compute M. |
|===============================+======================+======================|
| 0.  Tesla C2050               | 0000:02:00.0  On     |         3          1 |
|  30%   51 C  P0    N/A /  N/A |   3%   70MB / 2687MB |   12%     Default    |
|-------------------------------+----------------------+----------------------|
| 1.  Tesla C2050               | 0000:03:00.0  Off    |         0          0 |
|  30%   48 C  P12   N/A /  N/A |   0%    6MB / 2687MB |    0%     E. Process |
|-------------------------------+----------------------+----------------------|
| Compute processes:                                               GPU Memory |
|  GPU  PID     Process name                                       Usage      |
|=============================================================================|
|  0.  12345    ./a.out                                               58MB    |
+-----------------------------------------------------------------------------+
"""


def test_old_table_two_gpus_with_ecc_counts() -> None:
    snap = parse_table(OLD_TWO_GPUS, "old.txt")
    first, second = snap.gpus
    assert [g.index for g in snap.gpus] == [0, 1]
    assert (first.ecc_enabled, first.ecc_corrected_volatile, first.ecc_uncorrected_volatile) == (True, 3, 1)
    assert (second.ecc_corrected_volatile, second.ecc_uncorrected_volatile) == (0, 0)
    assert (first.temp_c, first.pstate, first.utilization_gpu_percent, first.memory_used_mib) == (51, "P0", 12, 70)
    assert (second.temp_c, second.pstate, second.compute_mode) == (48, "P12", "Exclusive_Process")
    assert first.missing["power_draw_w"] == Missing.REPORTED_NA
    assert not any(d.message.startswith(INPUT_ENDS_EARLY) for d in snap.diagnostics)  # the process box closes it


def test_old_table_cut_in_the_second_gpu() -> None:
    text = OLD_TWO_GPUS[: OLD_TWO_GPUS.index("48 C")]
    first, second = parse_table(text, "old.txt").gpus
    assert first.memory_total_mib == 2687
    assert second.pci_bus_id == "0000:03:00.0"
    assert second.missing["temp_c"] == Missing.TRUNCATED
    assert second.missing["memory_total_mib"] == Missing.TRUNCATED


def test_a_whole_table_of_an_unknown_layout_is_not_called_truncated() -> None:
    text = OLD.read_text(encoding="utf-8").replace("Bus Id", "PCI   ")
    with pytest.raises(ParseError) as caught:
        parse_table(text, "other.txt")
    assert "layout this reader does not know" in str(caught.value)
    assert "truncated" not in str(caught.value)
