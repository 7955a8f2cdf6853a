"""`lspci` as a `--from` input: the NVIDIA GPUs on the PCI bus and the driver bound to each (issue 24, "not ready
is not healthy": an NVIDIA device on the bus with no driver loaded fails, with the reason and the action).

Real outputs in tests/fixtures/lspci (README.md there names each source); inputs built here are labelled synthetic.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from rigcheck.checks.doctor import run_checks
from rigcheck.checks.doctor.driver import NO_MODULE_NOTE
from rigcheck.cli.exits import exit_code_for
from rigcheck.model import Finding, Severity
from rigcheck.readers.from_file import detect_kind, load_file, load_files
from rigcheck.readers.lspci import NO_MODULE_NOTE as PROBE_NOTE
from rigcheck.readers.lspci import pci_gpus, read_lspci
from tests.support.cli import Rigcheck

FIXTURES = Path(__file__).parent.parent / "fixtures"
LSPCI = FIXTURES / "lspci"
DRIVER_FINDINGS = {
    "health.no-gpu",
    "health.driver-not-loaded",
    "health.driver-unusable",
    "health.driver-version-mismatch",
    "health.gpu-no-driver",
}

# (bus id, device id, driver, whether the input shows the driver) of each NVIDIA GPU, as the source printed them.
READ = {
    "nvidia-nnk-grep-2x-rtx3090.txt": [
        ("0000:05:00.0", "0x2204", "nvidia", True),
        ("0000:0a:00.0", "0x2204", "nvidia", True),
    ],
    "nvidia-nnk-gtx1650-mobile.txt": [("0000:01:00.0", "0x1f91", "nvidia", True)],
    "nvidia-nnk-unindented-rtx3080.txt": [("0000:3e:00.0", "0x2206", "nvidia", True)],
    "nouveau-vv-gtx970.txt": [("0000:01:00.0", None, "nouveau", True)],
    "no-driver-v-gtx960m.txt": [("0000:02:00.0", None, None, True)],
    "no-driver-knn-wrapped-rtx3050.txt": [("0000:01:00.0", "0x25a2", None, True)],
    "vfio-nnk-quadro-t1000.txt": [("0000:01:00.0", "0x1fb9", "vfio-pci", True)],
    "vfio-k-grep-rtx3060.txt": [("0000:07:00.0", None, "vfio-pci", True)],
    "plain-grep-2x-quadro-p620.txt": [("0000:17:00.0", None, None, False), ("0000:65:00.0", None, None, False)],
    "numeric-n-gce-a100.txt": [("0000:00:04.0", "0x20b0", None, False)],
    "plain-grep-v100-unnamed-device.txt": [
        ("0000:5a:00.0", "0x1db6", None, False),
        ("0000:5e:00.0", "0x1db6", None, False),
    ],
    "smi-failed-lspci-n-gce-v100.txt": [("0000:00:04.0", "0x1db1", None, False)],
}


@pytest.mark.parametrize("name", sorted(READ))
def test_each_real_output_reads_its_gpus_and_drivers(name: str) -> None:
    gpus = pci_gpus(read_lspci((LSPCI / name).read_text()))
    assert [(g.bdf, g.device_id, g.driver, g.driver_known) for g in gpus] == READ[name]


def test_every_fixture_is_tested() -> None:
    assert {p.name for p in LSPCI.glob("*.txt")} == set(READ)


def test_the_cards_other_functions_are_not_gpus() -> None:
    read = read_lspci((LSPCI / "nvidia-nnk-grep-2x-rtx3090.txt").read_text())
    nvidia = [f for f in read.functions if f.nvidia]
    assert len(nvidia) == 4  # two GPUs and their HD audio functions
    assert [f.class_id for f in nvidia if not f.is_gpu] == [0x0403, 0x0403]
    assert [f.name for f in nvidia if f.is_gpu] == ["GA102 [GeForce RTX 3090]"] * 2


def test_a_wrapped_function_line_keeps_its_device_id_and_name() -> None:
    [gpu] = [f for f in read_lspci((LSPCI / "no-driver-knn-wrapped-rtx3050.txt").read_text()).functions if f.is_gpu]
    assert gpu.device_id == "0x25a2"
    assert gpu.name == "GA107M [GeForce RTX 3050 Mobile]"
    assert gpu.modules == ["nvidiafb", "nouveau", "nvidia_drm", "nvidia"]


def _health(findings: list[Finding]) -> list[tuple[str, Severity]]:
    return [(f.id, f.severity) for f in findings if f.id.startswith("health.")]


# What doctor --from concludes, and its exit code.
VERDICTS = {
    "nouveau-vv-gtx970.txt": ([("health.driver-not-loaded", Severity.FAIL)], 1),
    "no-driver-v-gtx960m.txt": ([("health.driver-not-loaded", Severity.FAIL)], 1),
    "no-driver-knn-wrapped-rtx3050.txt": ([("health.driver-not-loaded", Severity.FAIL)], 1),
    "smi-failed-lspci-n-gce-v100.txt": ([("health.driver-not-loaded", Severity.FAIL)], 1),
    "nvidia-nnk-grep-2x-rtx3090.txt": ([], 0),
    "nvidia-nnk-gtx1650-mobile.txt": ([], 0),
    "nvidia-nnk-unindented-rtx3080.txt": ([], 0),
    "vfio-nnk-quadro-t1000.txt": ([("health.gpu-passthrough", Severity.INFO)], 0),
    "vfio-k-grep-rtx3060.txt": ([("health.gpu-passthrough", Severity.INFO)], 0),
    "plain-grep-2x-quadro-p620.txt": ([("health.gpu-driver-unknown", Severity.INFO)], 0),
    "numeric-n-gce-a100.txt": ([("health.gpu-driver-unknown", Severity.INFO)], 0),
    "plain-grep-v100-unnamed-device.txt": ([("health.gpu-driver-unknown", Severity.INFO)], 0),
}


@pytest.mark.parametrize("name", sorted(VERDICTS))
def test_doctor_judges_the_bus_as_lspci_shows_it(name: str) -> None:
    findings = run_checks(load_file(str(LSPCI / name)))
    expected, code = VERDICTS[name]
    assert _health(findings) == expected
    assert exit_code_for(findings) == code


def test_no_driver_names_the_gpu_the_reason_and_the_action() -> None:
    findings = run_checks(load_file(str(LSPCI / "no-driver-v-gtx960m.txt")))
    [f] = [f for f in findings if f.id == "health.driver-not-loaded"]
    assert "0000:02:00.0" in f.message
    assert "none bound" in f.message
    assert "sudo modprobe nvidia" in (f.advice or "")  # its nvidia module is there: load it


def test_nouveau_says_blacklist_it() -> None:
    [f] = [f for f in run_checks(load_file(str(LSPCI / "nouveau-vv-gtx970.txt"))) if f.severity is Severity.FAIL]
    assert "driver: nouveau" in f.message
    assert "blacklist nouveau" in (f.advice or "")


def test_the_smi_error_with_lspci_below_names_the_bus() -> None:
    snap = load_file(str(LSPCI / "smi-failed-lspci-n-gce-v100.txt"))
    assert snap.source.kind == "nvidia-smi-error"
    assert snap.driver is not None
    assert snap.driver.nvml == "driver_not_loaded"
    assert "pci_gpus" not in snap.driver.missing
    [f] = [f for f in run_checks(snap) if f.id == "health.driver-not-loaded"]
    assert "0000:00:04.0" in f.message
    assert "driver: not shown" in f.message


def test_an_unknown_driver_is_never_a_fail() -> None:
    for name in ("plain-grep-2x-quadro-p620.txt", "numeric-n-gce-a100.txt"):
        findings = run_checks(load_file(str(LSPCI / name)))
        assert not {f.id for f in findings} & DRIVER_FINDINGS
        [note] = [f for f in findings if f.id == "health.gpu-driver-unknown"]
        assert "lspci -nnk" in (note.advice or "")


# Synthetic: lspci -nnk of a two-GPU box, the second GPU left without a driver (a made-up case, the lines in the
# format of the real outputs above).
MIXED = """\
17:00.0 3D controller [0302]: NVIDIA Corporation GA100 [A100 PCIe 40GB] [10de:20f1] (rev a1)
\tSubsystem: NVIDIA Corporation Device [10de:145f]
\tKernel driver in use: nvidia
\tKernel modules: nvidiafb, nouveau, nvidia_drm, nvidia
65:00.0 3D controller [0302]: NVIDIA Corporation GA100 [A100 PCIe 40GB] [10de:20f1] (rev a1)
\tSubsystem: NVIDIA Corporation Device [10de:145f]
\tKernel modules: nvidiafb, nouveau, nvidia_drm, nvidia
"""


def test_one_gpu_without_the_driver_beside_driven_ones_fails(tmp_path: Path) -> None:
    path = tmp_path / "lspci.txt"
    path.write_text(MIXED)
    findings = run_checks(load_file(str(path)))
    assert _health(findings) == [("health.gpu-no-driver", Severity.FAIL)]
    [f] = [f for f in findings if f.id == "health.gpu-no-driver"]
    assert "0000:65:00.0" in f.message
    assert "0000:17:00.0" not in f.message


def test_merged_with_an_nvidia_smi_table_a_gpu_nvml_lacks_fails(tmp_path: Path) -> None:
    # Synthetic lspci -k of the 2x 2080 Ti box of the real table (bus b4 and b5), with a third GPU no driver took.
    lspci = tmp_path / "lspci.txt"
    lspci.write_text(
        "b4:00.0 VGA compatible controller: NVIDIA Corporation TU102 [GeForce RTX 2080 Ti] (rev a1)\n"
        "\tKernel driver in use: nvidia\n"
        "b5:00.0 VGA compatible controller: NVIDIA Corporation TU102 [GeForce RTX 2080 Ti] (rev a1)\n"
        "\tKernel driver in use: nvidia\n"
        "b6:00.0 VGA compatible controller: NVIDIA Corporation TU102 [GeForce RTX 2080 Ti] (rev a1)\n"
        "\tKernel modules: nouveau\n"
    )
    table = FIXTURES / "corpus/smi/002-2x2080ti-550.txt"
    for paths in ([str(table), str(lspci)], [str(lspci), str(table)]):
        findings = run_checks(load_files(paths))
        [f] = [f for f in findings if f.id == "health.gpu-no-driver"]
        assert f.severity is Severity.FAIL
        assert "0000:b6:00.0" in f.message
        assert not {x.id for x in findings} & (DRIVER_FINDINGS - {"health.gpu-no-driver"})


def test_merged_with_nvidia_smis_failure_the_driver_not_loaded_names_the_bus() -> None:
    failure = FIXTURES / "corpus/driver-errors/203-container-nvidia-smi-failed-couldnt-communicate.txt"
    findings = run_checks(load_files([str(failure), str(LSPCI / "no-driver-v-gtx960m.txt")]))
    [f] = [f for f in findings if f.severity is Severity.FAIL and f.id.startswith("health.")]
    assert f.id == "health.driver-not-loaded"
    assert "0000:02:00.0" in f.message


def test_a_driver_line_cut_mid_name_is_unknown_not_a_verdict(tmp_path: Path) -> None:
    text = (LSPCI / "nouveau-vv-gtx970.txt").read_text()
    cut = text[: text.index("Kernel driver in use: nouveau") + len("Kernel driver in use: nouv")]  # synthetic cut
    path = tmp_path / "cut.txt"
    path.write_text(cut)
    snap = load_file(str(path))
    assert snap.driver is not None
    assert snap.driver.pci_gpus is not None
    assert [(g.driver, g.driver_known) for g in snap.driver.pci_gpus] == [(None, False)]
    assert any("ends inside" in d.message for d in snap.diagnostics)
    assert exit_code_for(run_checks(snap)) == 0
    whole = text[: text.index("\tKernel modules")].rstrip("\n")  # cut after a whole driver name: still read
    path.write_text(whole)
    assert [g.driver for g in load_file(str(path)).driver.pci_gpus or []] == ["nouveau"]  # type: ignore[union-attr]


def test_a_no_driver_listing_cut_at_its_modules_line_still_fails(tmp_path: Path) -> None:
    path = tmp_path / "cut.txt"
    path.write_text((LSPCI / "no-driver-v-gtx960m.txt").read_text().rstrip("\n"))  # no final newline
    assert exit_code_for(run_checks(load_file(str(path)))) == 1


def test_detected_as_lspci() -> None:
    for name in READ:
        kind = detect_kind((LSPCI / name).read_text())
        assert kind == ("nvidia-smi-error" if name.startswith("smi-failed") else "lspci"), name


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b"", "empty file"),
        (b"some notes about the GPU box\nnothing else\n", "not a recognised input"),
        (b"01:00.0 VGA compatible contr", "not a recognised input"),  # cut inside the first line
        (b"\tKernel driver in use: nvidia\n\tKernel modules: nouveau, nvidia\n", "not a recognised input"),
    ],
)
def test_bad_input_is_one_line_exit_2(data: bytes, needle: str, tmp_path: Path, rigcheck: Rigcheck) -> None:
    path = tmp_path / "lspci.txt"
    path.write_bytes(data)
    result = rigcheck("doctor", "--from", str(path))
    out, err = result.stdout, result.stderr
    assert result.code == 2
    assert out == ""
    assert needle in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_the_not_recognised_message_names_lspci(tmp_path: Path, rigcheck: Rigcheck) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello\n")
    result = rigcheck("doctor", "--from", str(path))
    assert "`lspci` (-k, -nn, -v)" in result.stderr


def test_no_nvidia_module_for_the_kernel_says_install_it(tmp_path: Path) -> None:
    # Synthetic: lspci -k of a GPU without a driver whose kernel has no nvidia module (only nvidiafb and nouveau).
    path = tmp_path / "lspci.txt"
    path.write_text(
        "01:00.0 3D controller: NVIDIA Corporation GA100 [A100 PCIe 40GB] (rev a1)\n"
        "\tSubsystem: NVIDIA Corporation Device 145f\n"
        "\tKernel modules: nvidiafb, nouveau\n"
    )
    snap = load_file(str(path))
    assert PROBE_NOTE == NO_MODULE_NOTE  # the reader's words are the check's
    assert any(d.source == "lspci" and NO_MODULE_NOTE in d.message for d in snap.diagnostics)
    [f] = [f for f in run_checks(snap) if f.id == "health.driver-not-loaded"]
    assert "install the NVIDIA driver for the running kernel" in (f.advice or "")


def test_an_lspci_of_another_machine_is_not_combined(tmp_path: Path, rigcheck: Rigcheck) -> None:
    # The real lspci of a GTX 960M laptop (bus 02) beside the real table of a 2x 2080 Ti box (bus b4, b5): no GPU in
    # common, so its unbound GPU must not fail the other machine.
    table = FIXTURES / "corpus/smi/002-2x2080ti-550.txt"
    lspci = LSPCI / "no-driver-v-gtx960m.txt"
    for argv in ([str(table), str(lspci)], [str(lspci), str(table)]):
        result = rigcheck("doctor", *(x for p in argv for x in ("--from", p)))
        err = result.stderr
        assert result.code == 2
        assert "no GPU in common (by PCI bus id)" in err


# Synthetic: `lspci -vmmk -nn` records in the format lspci(8) documents ("Slot:" first, "Driver:", "Module:").
VMM = """\
Slot:\t00:02.0
Class:\tVGA compatible controller [0300]
Vendor:\tIntel Corporation [8086]
Device:\tUHD Graphics 620 [5917]
Driver:\ti915
Module:\ti915

Slot:\t01:00.0
Class:\t3D controller [0302]
Vendor:\tNVIDIA Corporation [10de]
Device:\tGP108M [GeForce MX150] [1d10]
Driver:\tnouveau
Module:\tnouveau

Slot:\t02:00.0
Class:\tVGA compatible controller
Vendor:\tNVIDIA Corporation
Device:\tGP104 [GeForce GTX 1080]
Module:\tnouveau
Module:\tnvidia
"""


def test_machine_readable_records_are_read(tmp_path: Path) -> None:
    gpus = pci_gpus(read_lspci(VMM))
    assert [(g.bdf, g.device_id, g.driver, g.driver_known) for g in gpus] == [
        ("0000:01:00.0", "0x1d10", "nouveau", True),
        ("0000:02:00.0", None, None, True),  # "1080" of its name is not an id
    ]
    path = tmp_path / "vmm.txt"
    path.write_text(VMM)
    findings = run_checks(load_file(str(path)))
    assert _health(findings) == [("health.driver-not-loaded", Severity.FAIL)]
    numeric = pci_gpus(read_lspci("Slot:\t01:00.0\nClass:\t0302\nVendor:\t10de\nDevice:\t1d10\n"))  # -vmm -n
    assert [(g.device_id, g.driver_known) for g in numeric] == [("0x1d10", False)]


@pytest.mark.parametrize(
    "line",
    [
        "01:00.0 3D controller: NVIDIA Corporation" + " " * 200_000 + "x",
        "01:00.0 3D controller: NVIDIA Corporation GA100\n\tKernel modules:" + " " * 200_000 + "x",
        "Slot:\t01:00.0\nDevice:" + " " * 200_000 + "x",
        "01:00.0 3D controller: NVIDIA Corporation GA100" + " (rev" * 50_000,
    ],
)
def test_long_lines_read_in_linear_time(line: str) -> None:
    start = time.perf_counter()
    read_lspci(line + "\n")
    assert time.perf_counter() - start < 1.0


def test_a_kernel_log_with_lspci_below_judges_the_bus(tmp_path: Path) -> None:
    # Synthetic paste of two real outputs of different machines: a dmesg whose NVIDIA probe was not called, then
    # lspci -v of a GPU without a driver. Read as the kernel log it is, with the bus lspci shows.
    dmesg = (FIXTURES / "not-ready/bigdata133-dmesg-probe-not-called-3-devices.txt").read_text()
    path = tmp_path / "paste.txt"
    path.write_text(dmesg + (LSPCI / "no-driver-v-gtx960m.txt").read_text())
    snap = load_file(str(path))
    assert snap.source.kind == "kernel-log"
    [f] = [f for f in run_checks(snap) if f.id == "health.driver-not-loaded"]
    assert "0000:02:00.0" in f.message
