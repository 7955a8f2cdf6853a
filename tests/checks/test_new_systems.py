"""Outputs of the newest systems, read as their formats say (B300 on driver 610, GB200 on Grace): the table's
new version names, `topo -m`'s NUMA lists, and the SYS that a Grace superchip prints for every GPU-NIC path."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigcheck.checks.doctor import run_checks
from rigcheck.model import Missing, Severity
from rigcheck.readers.from_file import load_file, load_files, load_text
from rigcheck.readers.smi.query_text import parse_query_text
from rigcheck.readers.smi.query_xml import parse_query_xml

FIXTURES = Path(__file__).parent.parent / "fixtures"
B300 = FIXTURES / "smi-extra" / "004-7xb300-610-kmd-umd-version-header.txt"
GB200_TABLE = FIXTURES / "smi-extra" / "005-4xgb200-580-pci-domains.txt"
GB200_TOPO = FIXTURES / "topo-extra" / "004-4xgb200-nv18-8nic-numa-lists.txt"


def test_driver_610_names_its_versions_kmd_and_cuda_umd() -> None:
    """`KMD Version: 610.57.04  CUDA UMD Version: 13.3`: both were null (not_in_source)."""
    snap = load_file(str(B300))
    assert (snap.software.driver_version, snap.software.cuda_driver_version) == ("610.57.04", "13.3")
    assert len(snap.gpus) == 7
    assert {g.name for g in snap.gpus} == {"NVIDIA B300 SXM6 AC"}
    assert snap.gpus[0].power_limit_w == 1100.0


def test_the_q_readers_take_the_new_names_where_the_old_are_absent() -> None:
    text = (
        "==============NVSMI LOG==============\n\nTimestamp : Fri Aug 28 00:33:07 2026\n"
        "KMD Version : 610.57.04\nCUDA UMD Version : 13.3\n\nAttached GPUs : 1\nGPU 00000001:1A:00.0\n"
        "    Product Name : NVIDIA B300 SXM6 AC\n"
    )
    text_snap = parse_query_text(text)
    assert (text_snap.software.driver_version, text_snap.software.cuda_driver_version) == ("610.57.04", "13.3")
    xml = (
        '<?xml version="1.0" ?>\n<nvidia_smi_log><kmd_version>610.57.04</kmd_version>'
        "<cuda_umd_version>13.3</cuda_umd_version><attached_gpus>0</attached_gpus></nvidia_smi_log>\n"
    )
    xml_snap = parse_query_xml(xml)
    assert (xml_snap.software.driver_version, xml_snap.software.cuda_driver_version) == ("610.57.04", "13.3")


def test_a_numa_affinity_list_gives_its_first_node() -> None:
    """GB200 prints the Grace node, then the GPU memory's own nodes: "0,2-17". numa_node was not_in_source."""
    snap = load_file(str(GB200_TOPO))
    assert [(g.index, g.numa_node, g.cpu_affinity) for g in snap.gpus] == [
        (0, 0, "0-71"),
        (1, 0, "0-71"),
        (2, 1, "72-143"),
        (3, 1, "72-143"),
    ]
    for affinity, node in (("N/A", None), ("1", 1), ("0-1", 0), ("x", None)):
        row = f"GPU0     X      {affinity}\n"
        got = load_text(f"        GPU0    NUMA Affinity\n{row}").gpus[0].numa_node
        assert got == node, affinity


def test_a_grace_superchips_sys_to_every_nic_is_information() -> None:
    """It warned "loses GPUDirect RDMA ... fit a NIC on each CPU socket": on Grace, SYS is the C2C path."""
    snap = load_files([str(GB200_TABLE), str(GB200_TOPO)])
    assert {g.name for g in snap.gpus} == {"NVIDIA GB200"}
    (finding,) = [f for f in run_checks(snap) if f.id == "topology.nic-cross-socket"]
    assert finding.severity is Severity.INFO
    assert "NVLink-C2C" in finding.message
    assert "Grace Blackwell GPUDirect RDMA guide" in (finding.source or "")
    # The same matrix on GPUs without a Grace CPU still warns.
    for gpu in snap.gpus:
        gpu.name = "NVIDIA H100 80GB HBM3"
    (finding,) = [f for f in run_checks(snap) if f.id == "topology.nic-cross-socket"]
    assert finding.severity is Severity.WARN


VGPU_GUEST = FIXTURES / "smi-extra" / "006-vgpu-guest-rtxa6000-24q-535-sram-na.txt"


def test_a_vgpu_guests_dram_ecc_counts_are_read_beside_sram_counters_printed_na() -> None:
    """SRAM N/A, DRAM 0: the totals were null (reported_na) and doctor said the counts could not be read."""
    snap = load_file(str(VGPU_GUEST))
    gpu = snap.gpus[0]
    assert gpu.ecc_enabled is True
    assert (gpu.ecc_uncorrected_volatile, gpu.ecc_uncorrected_aggregate, gpu.ecc_corrected_volatile) == (0, 0, 0)
    assert any("the SRAM counters print N/A" in d.message for d in snap.diagnostics)
    assert not [f for f in run_checks(snap) if f.id == "health.memory-errors-unavailable"]


def test_sram_na_alone_or_a_dram_na_still_leaves_the_total_unknown() -> None:
    text = VGPU_GUEST.read_text(encoding="utf-8")
    dram_na = text.replace("DRAM Uncorrectable            : 0", "DRAM Uncorrectable            : N/A")
    gpu = parse_query_text(dram_na).gpus[0]
    assert gpu.ecc_uncorrected_volatile is None  # a DRAM count N/A is never summed around
    assert gpu.ecc_corrected_volatile == 0
    xml = (
        '<?xml version="1.0" ?>\n<nvidia_smi_log><driver_version>535.183.06</driver_version><attached_gpus>1'
        '</attached_gpus><gpu id="00000000:02:00.0"><product_name>NVIDIA RTXA6000-24Q</product_name>'
        "<ecc_mode><current_ecc>Enabled</current_ecc><pending_ecc>Enabled</pending_ecc></ecc_mode>"
        "<ecc_errors><volatile><sram_correctable>N/A</sram_correctable><sram_uncorrectable_parity>N/A"
        "</sram_uncorrectable_parity><sram_uncorrectable_secded>N/A</sram_uncorrectable_secded>"
        "<dram_correctable>0</dram_correctable><dram_uncorrectable>0</dram_uncorrectable></volatile>"
        "</ecc_errors></gpu></nvidia_smi_log>\n"
    )
    assert parse_query_xml(xml).gpus[0].ecc_uncorrected_volatile == 0


P4_VGPU = FIXTURES / "smi-extra" / "007-grid-p4-1q-vgpu-guest-513-v11.xml"


def test_a_vgpu_guests_zero_placeholders_are_implausible_not_readings() -> None:
    """`<gpu_temp>0 C</gpu_temp>` was read as 0 C ("thermal.ok ... in the guide's excellent range") and the
    `<max_clocks>` of 0 MHz as the GPU's maximum clocks."""
    snap = load_file(str(P4_VGPU))
    gpu = snap.gpus[0]
    assert gpu.temp_c is None
    assert gpu.missing["temp_c"] is Missing.IMPLAUSIBLE
    assert (gpu.clock_sm_max_mhz, gpu.missing["clock_sm_max_mhz"]) == (None, Missing.IMPLAUSIBLE)
    assert not [f for f in run_checks(snap) if f.id == "thermal.ok"]
    assert any("temp_c" in d.message and "0" in d.message for d in snap.diagnostics)


def test_processes_whose_memory_is_not_reported_are_said_to_run_not_to_hold_memory() -> None:
    (finding,) = [f for f in run_checks(load_file(str(P4_VGPU))) if f.id == "fabric.gpu-processes"]
    assert finding.message == (
        "3 processes run on the GPU (memory use not reported): pid 1188, pid 2124, C:\\Windows\\explorer.exe 15104"
    )


HANDLE_ERROR_NEW = FIXTURES / "smi-err-extra" / "008-4xrtxpro6000-610-gpu1-handle-error-new-form.txt"
NO_DEVICES = FIXTURES / "smi-err-extra" / "009-rtx5090-575-no-devices-were-found.txt"


def test_a_gpu_nvidia_smi_could_not_open_in_the_new_form_fails_under_its_index() -> None:
    """`... for GPU1: 0000:34:00.0: Unknown Error` (the index before the bus id): GPU1 vanished from the snapshot
    and doctor passed the machine (exit 0, 3 GPUs)."""
    snap = load_file(str(HANDLE_ERROR_NEW))
    assert [g.index for g in snap.gpus] == [0, 1, 2, 3]
    lost = snap.gpus[1]
    assert (lost.pci_bus_id, lost.read_error) == ("0000:34:00.0", Missing.ERROR)
    failed = [(f.id, f.gpu) for f in run_checks(snap) if f.severity is Severity.FAIL]
    assert ("health.gpu-unreadable", 1) in failed


@pytest.mark.parametrize(
    ("line", "index", "reason"),
    [
        ("Unable to determine the device handle for GPU0: 0000:03:00.0: GPU is lost.", 0, Missing.GPU_LOST),
        ("Unable to determine the device handle for GPU 3: 0000:41:00.0: Unknown Error", 3, Missing.ERROR),
        ("Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error", 0, Missing.ERROR),  # old form
    ],
)
def test_each_form_of_the_handle_error_alone_is_a_failed_gpu(line: str, index: int, reason: Missing) -> None:
    snap = load_text(line + "\n")
    assert [(g.index, g.read_error) for g in snap.gpus] == [(index, reason)]


def test_no_devices_were_found_alone_is_no_gpu_not_an_unknown_file() -> None:
    """It was refused as "not a recognised input" (exit 2); it is nvidia-smi saying the machine has no GPU."""
    snap = load_file(str(NO_DEVICES))
    assert snap.gpus == []
    assert snap.gpu_absent_reason == "No devices were found (nvidia-smi)"
    (finding,) = [f for f in run_checks(snap) if f.severity is Severity.FAIL]
    assert finding.id == "health.no-gpu"
