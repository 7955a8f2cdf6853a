"""Format classes a reader misread (issue 24): a kernel log with an API mismatch, typographic quotes in nvidia-smi's
failure text, a `topo -m` header whose names are a single space apart, a `-q` excerpt that ends inside the clock
event reasons. Real inputs in tests/fixtures/reader-formats (sources in its README)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigcheck.checks.doctor.driver import absence_finding
from rigcheck.checks.doctor.xid import check_xid
from rigcheck.errors import ParseError
from rigcheck.model import Severity
from rigcheck.model.snapshot import INPUT_ENDS_EARLY
from rigcheck.probe.driver import api_mismatch, ascii_quotes, driver_state_from_text
from rigcheck.readers.from_file import detect_kind, load_text
from rigcheck.readers.smi.topo import parse_topo

FIXTURES = Path(__file__).parent.parent / "fixtures" / "reader-formats"
CORPUS = Path(__file__).parent.parent / "fixtures" / "corpus"


def _text(prefix: str) -> str:
    return next(FIXTURES.glob(prefix + "*")).read_text(encoding="utf-8")


# --- a kernel log with the driver's API mismatch and GPUs that failed to initialize ---


def test_a_kernel_log_with_an_api_mismatch_and_rminitadapter_is_a_kernel_log_naming_the_gpu() -> None:
    text = _text("004")
    assert detect_kind(text) == "kernel-log"  # it was nvidia-smi's error output, the GPU's bus id lost
    snap = load_text(text, "dmesg.txt")
    assert [g.pci_bus_id for g in snap.gpus] == ["0000:98:00.0"]
    assert snap.driver is not None
    assert (snap.driver.nvml, snap.driver.library_version, snap.driver.kernel_module_version) == (
        "version_mismatch",
        "515.48.07",
        "510.73.05",
    )
    findings = check_xid(snap)
    init = [f for f in findings if f.id == "xid.init-failed"]
    assert len(init) == 1
    assert init[0].severity is Severity.FAIL
    assert init[0].gpu == 0
    assert "0000:98:00.0" in init[0].message
    assert "(0x62:0x65:1792)" in init[0].message
    # The mismatch is the driver's finding, once: not a second "the driver logged" warning.
    assert not [f for f in findings if f.id == "xid.driver-message"]
    mismatch = absence_finding(snap)
    assert mismatch is not None
    assert mismatch.id == "health.driver-version-mismatch"
    assert mismatch.severity is Severity.FAIL


def test_a_log_of_only_the_mismatch_stays_the_driver_state_and_a_log_of_only_rminitadapter_a_kernel_log() -> None:
    mismatch_only = _text("003")
    assert detect_kind(mismatch_only) == "nvidia-smi-error"
    assert api_mismatch(mismatch_only) == ("515.48.07", "510.73.05")
    assert detect_kind(_text("002")) == "kernel-log"
    corpus = (CORPUS / "driver-errors" / "201-journal-api-mismatch-535-vs-530-octal-012.txt").read_text()
    assert detect_kind(corpus) == "nvidia-smi-error"


def test_nvidia_smis_own_failure_beside_the_kernel_lines_keeps_the_gpus_the_kernel_names() -> None:
    # nvidia-smi's answer on that machine (issue #789: "No devices were found") pasted above its dmesg lines.
    text = "$ nvidia-smi\nNo devices were found\n$ sudo dmesg | grep NVRM\n" + _text("002")
    assert detect_kind(text) == "nvidia-smi-error"
    snap = load_text(text, "paste.txt")
    init = [f for f in check_xid(snap) if f.id == "xid.init-failed"]
    assert len(init) == 1
    assert "0000:98:00.0" in init[0].subject + init[0].message


# --- typographic quotes ---


def test_nvidia_smi_failed_with_a_typographic_apostrophe_is_the_driver_not_loaded() -> None:
    text = _text("001")
    assert "\u2018" in text
    assert detect_kind(text) == "nvidia-smi-error"  # it was "not a recognised input"
    state = driver_state_from_text(text)
    assert state is not None
    assert state.nvml == "driver_not_loaded"
    finding = absence_finding(load_text(text, "smi.txt"))
    assert finding is not None
    assert finding.id == "health.driver-not-loaded"


@pytest.mark.parametrize("mark", ["\u2019", "\u2018", "\u02bc", "\u2032", "\uff07", "\u00b4"])
def test_every_typographic_apostrophe_reads_as_one(mark: str) -> None:
    # Synthetic: the corpus's real container output with its apostrophe replaced as a web page or chat prints it.
    real = (CORPUS / "driver-errors" / "203-container-nvidia-smi-failed-couldnt-communicate.txt").read_text()
    assert "couldn't" in real
    state = driver_state_from_text(real.replace("'", mark))
    assert state is not None
    assert state.nvml == "driver_not_loaded"


def test_typographic_quotes_around_the_client_name_of_an_api_mismatch() -> None:
    # Synthetic: the newer mismatch wording with the client's name in typographic quotes.
    line = (
        "NVRM: API mismatch: the client \u2018Xorg\u2019 (pid 2211) has the version 595.84, "
        "but this kernel module has the version 595.71.05."
    )
    assert api_mismatch(line) == ("595.84", "595.71.05")


def test_ascii_quotes_keeps_positions() -> None:
    text = "couldn\u2019t \u201cquoted\u201d"
    assert ascii_quotes(text) == 'couldn\'t "quoted"'
    assert len(ascii_quotes(text)) == len(text)


# --- topo -m: a NIC name and "CPU Affinity" a single space apart ---


def test_topo_header_with_nic3_and_cpu_affinity_one_space_apart_and_the_numa_name_lost() -> None:
    topo = parse_topo(_text("005"), "topo.txt")  # it was refused: "row GPU0 has 2 values ..., the header names 1"
    assert topo.labels == [f"GPU{i}" for i in range(8)] + [f"NIC{i}" for i in range(4)]
    assert [(g.cpu_affinity, g.numa_affinity) for g in topo.gpus] == [("0-23", "0")] * 4 + [("24-47", "1")] * 4
    assert [n.name for n in topo.nics] == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]
    assert topo.matrix[0][11] == "PXB"
    assert topo.matrix[7][8] == "PIX"
    snap = load_text(_text("005"), "topo.txt")
    assert [g.numa_node for g in snap.gpus] == [0] * 4 + [1] * 4


# Synthetic, in nvidia-smi's own tab layout: the tab between the last NIC's name and "CPU Affinity" became a space.
TAB_GLUED = (
    "\tGPU0\tGPU1\tmlx5_0\tmlx5_3 CPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
    "GPU0\t X \tNV12\tSYS\tPIX\t0-31\t0\t\tN/A\n"
    "GPU1\tNV12\t X \tSYS\tPIX\t0-31\t0\t\tN/A\n"
    "mlx5_0\tSYS\tSYS\t X \tSYS\n"
    "mlx5_3\tPIX\tPIX\tSYS\t X \n"
)


def test_topo_tab_header_with_a_nic_and_cpu_affinity_in_one_cell() -> None:
    topo = parse_topo(TAB_GLUED, "topo.txt")
    assert topo.labels == ["GPU0", "GPU1", "mlx5_0", "mlx5_3"]
    assert [(g.cpu_affinity, g.numa_affinity, g.gpu_numa_id) for g in topo.gpus] == [("0-31", "0", "N/A")] * 2
    assert [n.name for n in topo.nics] == ["mlx5_0", "mlx5_3"]


def test_topo_rows_with_more_values_than_nvidia_smi_prints_are_still_refused() -> None:
    text = "\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV4\t0-15\t0\tN/A\t7\nGPU1\tNV4\t X \t0-15\t0\tN/A\t7\n"
    with pytest.raises(ParseError, match="values after the link codes"):
        parse_topo(text, "topo.txt")


# --- nvidia-smi -q: an excerpt that ends inside the clock event reasons ---


def test_q_excerpt_ending_inside_the_reasons_block_reads_its_whole_lines() -> None:
    snap = load_text(_text("006"), "q.txt")
    gpu = snap.gpus[0]
    assert gpu.clock_event_reasons_active == ["idle"]  # it was null (truncated): eight whole lines dropped
    assert set(gpu.clock_event_reasons_supported or ()) == {
        "idle",
        "applications_clocks_setting",
        "sw_power_cap",
        "hw_slowdown",
        "hw_thermal_slowdown",
        "hw_power_brake_slowdown",
        "sync_boost",
        "sw_thermal_slowdown",
    }
    assert not [d for d in snap.diagnostics if d.message.startswith(INPUT_ENDS_EARLY)]


def test_q_excerpt_cut_inside_a_reason_line_drops_that_line_only_and_says_so() -> None:
    text = _text("006")
    cut = text[: text.index("Not Active", text.index("Sync Boost"))]  # no line end: the paste stops mid-line
    snap = load_text(cut, "q.txt")
    gpu = snap.gpus[0]
    assert gpu.clock_event_reasons_active == ["idle"]
    assert "sync_boost" not in (gpu.clock_event_reasons_supported or ())
    assert "hw_power_brake_slowdown" in (gpu.clock_event_reasons_supported or ())
    assert [d for d in snap.diagnostics if d.message.startswith(INPUT_ENDS_EARLY)]
