"""The driver's state: NVIDIA GPUs on the PCI bus (sysfs), the kernel module's version, and the same facts read
from the text a broken driver leaves behind (the corpus files of tests/fixtures/corpus/driver-errors)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from rigcheck.model import Missing
from rigcheck.probe.driver import (
    api_mismatch,
    driver_state_from_text,
    kernel_module_version,
    parse_proc_version,
    probe_driver,
)
from rigcheck.probe.sysfs import pci_nvidia_gpus

CORPUS = Path(__file__).parent.parent / "fixtures" / "corpus"
MANIFEST: list[dict[str, Any]] = json.loads((CORPUS / "manifest.json").read_text(encoding="utf-8"))
ENTRIES = [e for e in MANIFEST if e["kind"] == "driver-errors"]
NOT_MODELLED = {"machine", "notes"}


def test_every_driver_error_file_is_in_the_manifest() -> None:
    files = {f"driver-errors/{p.name}" for p in (CORPUS / "driver-errors").iterdir()}
    assert files == {e["file"] for e in ENTRIES}
    assert len(ENTRIES) >= 3


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["file"] for e in ENTRIES])
def test_corpus_file(entry: dict[str, Any]) -> None:
    state = driver_state_from_text((CORPUS / entry["file"]).read_text(encoding="utf-8"))
    assert state is not None
    facts = entry["facts"]
    for key in set(facts) - NOT_MODELLED:
        assert getattr(state, key) == facts[key], key
    for key in ("kernel_module_version", "library_version"):
        assert (getattr(state, key) is None) == (state.missing.get(key) is Missing.NOT_IN_SOURCE)
    assert state.pci_gpus is None  # text never holds the bus
    assert state.missing["pci_gpus"] is Missing.NOT_IN_SOURCE


# --- formats seen in public reports (retyped with other versions and names, not copied) -------------------
DMESG_NEW = """[    9.424670] NVRM: API mismatch: the client 'Xorg' (pid 2211)
               NVRM: has the version 560.35.03, but this kernel module has
               NVRM: the version 560.28.03.  Please make sure that this
               NVRM: kernel module and all NVIDIA driver components
               NVRM: have the same version.
"""
DMESG_STAMPED = """[ 8957.099615] NVRM: API mismatch: the client has the version 550.90.07, but
[ 8957.099615] NVRM: this kernel module has the version 550.54.15.  Please
[ 8957.099615] NVRM: make sure that this kernel module and all NVIDIA driver
[ 8957.099615] NVRM: components have the same version.
"""
JOURNAL = """Aug 26 14:08:07 node3 kernel: NVRM: API mismatch: the client has the version 470.239.06, but
                                 NVRM: this kernel module has the version 470.223.02.  Please
"""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (DMESG_NEW, ("560.35.03", "560.28.03")),
        (DMESG_STAMPED, ("550.90.07", "550.54.15")),
        (JOURNAL, ("470.239.06", "470.223.02")),
        ("NVRM: API mismatch: the client has the version 1.2.3, but#012NVRM: this kernel module has", None),
        ("no mismatch here", None),
    ],
)
def test_api_mismatch_in_any_log_framing(text: str, expected: tuple[str, str] | None) -> None:
    assert api_mismatch(text) == expected


@pytest.mark.parametrize(
    ("line", "version"),
    [
        ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  470.223.02  Sat Oct  7 15:39:11 UTC 2023", "470.223.02"),
        (
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  560.35.03  Release Build  "
            "(dvs-builder@U16-I3-B05-3-1)  Fri Aug 16 21:42:42 UTC 2024",
            "560.35.03",
        ),
        ("NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  36.4.0  Release Build  (buildbrain@x)", "36.4.0"),
        ("NVRM version: NVIDIA UNIX ppc64le Kernel Module  418.116.00  Tue Oct 22 2019", "418.116.00"),
        ("[    6.25] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  570.148.06  Mon May  5 11:36:21 UTC 2025", None),
        ("GCC version:  gcc version 12.3.0", None),
    ],
)
def test_proc_version_line(line: str, version: str | None) -> None:
    assert parse_proc_version(line) == version


@pytest.mark.parametrize(
    ("text", "nvml", "error"),
    [
        ("$ nvidia-smi\nFailed to initialize NVML: Unknown Error\n", "error", "Unknown Error"),
        ("Failed to initialize NVML: Insufficient Permissions\n", "no_permission", "Insufficient Permissions"),
        ("Failed to initialize NVML: Driver/library version mismatch\r\n", "version_mismatch", None),
        (
            "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system. Please make sure that the NVIDIA "
            "Display Driver is properly installed and present in your system.\nPlease also try adding directory "
            "that contains libnvidia-ml.so to your system PATH.\n",
            "library_not_found",
            None,
        ),
        (
            "stderr: nvidia-container-cli: initialization error: nvml error: driver/library version mismatch: unknown",
            "version_mismatch",
            None,
        ),
    ],
)
def test_smi_failure_messages(text: str, nvml: str, error: str | None) -> None:
    state = driver_state_from_text(text)
    assert state is not None
    assert state.nvml == nvml
    assert state.nvml_error is not None
    if error is not None:
        assert state.nvml_error == error


def test_dmesg_mismatch_alone_is_a_version_mismatch() -> None:
    state = driver_state_from_text(DMESG_NEW)
    assert state is not None
    assert (state.nvml, state.library_version, state.kernel_module_version) == (
        "version_mismatch",
        "560.35.03",
        "560.28.03",
    )
    assert state.nvml_error is None  # no nvidia-smi line: NVML's own words are not in the text


def test_text_without_driver_facts_is_none() -> None:
    assert driver_state_from_text("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-x)\n") is None


# --- live: sysfs and the module -------------------------------------------------------------------------
def _device(root: Path, bdf: str, ids: tuple[str, str, str], driver: str | None) -> None:
    """A PCI device in a fake sysfs: ``ids`` = (vendor, class, device)."""
    vendor, pci_class, device = ids
    real = root / "sys/devices/pci0000:00" / bdf
    real.mkdir(parents=True)
    (real / "vendor").write_text(f"{vendor}\n")
    (real / "device").write_text(f"{device}\n")
    (real / "class").write_text(f"{pci_class}\n")
    if driver is not None:
        (root / "sys/bus/pci/drivers" / driver).mkdir(parents=True, exist_ok=True)
        os.symlink(f"../../../bus/pci/drivers/{driver}", real / "driver")
    listed = root / "sys/bus/pci/devices"
    listed.mkdir(parents=True, exist_ok=True)
    os.symlink(f"../../../devices/pci0000:00/{bdf}", listed / bdf)


def test_pci_scan_keeps_display_controllers_of_nvidia_only(tmp_path: Path) -> None:
    _device(tmp_path, "0000:01:00.0", ("0x10de", "0x030000", "0x2684"), "vfio-pci")  # a GeForce VGA, passed through
    _device(tmp_path, "0000:01:00.1", ("0x10de", "0x040300", "0x22ba"), "snd_hda_intel")  # its audio function
    _device(tmp_path, "0000:05:00.0", ("0x10de", "0x068000", "0x22a3"), None)  # an NVSwitch
    _device(tmp_path, "0000:41:00.0", ("0x10DE", "0x030200", "0x2330"), None)  # a 3D controller no driver has
    _device(tmp_path, "0000:81:00.0", ("0x10de", "0x038000", "0x1DB6"), "nouveau")
    _device(tmp_path, "0000:c1:00.0", ("0x1002", "0x030000", "0x744c"), "amdgpu")
    gpus, reason = pci_nvidia_gpus(tmp_path)
    assert reason is None
    assert gpus is not None
    assert [(g.bdf, g.pci_class, g.driver, g.device_id) for g in gpus] == [
        ("0000:01:00.0", "0x030000", "vfio-pci", "0x2684"),
        ("0000:41:00.0", "0x030200", None, "0x2330"),
        ("0000:81:00.0", "0x038000", "nouveau", "0x1db6"),
    ]


def test_pci_bus_not_listable(tmp_path: Path) -> None:
    assert pci_nvidia_gpus(tmp_path) == (None, Missing.NOT_SUPPORTED)


def test_module_version_falls_back_to_proc(tmp_path: Path) -> None:
    assert kernel_module_version(tmp_path) == (None, Missing.NOT_SUPPORTED)
    proc = tmp_path / "proc/driver/nvidia"
    proc.mkdir(parents=True)
    (proc / "version").write_text(
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024\n"
        "GCC version:  gcc version 11.4.0 (Ubuntu 11.4.0-1ubuntu1~22.04)\n"
    )
    assert kernel_module_version(tmp_path) == ("535.183.01", None)
    module = tmp_path / "sys/module/nvidia"
    module.mkdir(parents=True)
    (module / "version").write_text("535.183.06\n")  # the module's own attribute wins
    assert kernel_module_version(tmp_path) == ("535.183.06", None)


def test_probe_driver_names_every_missing_value(tmp_path: Path) -> None:
    state = probe_driver(tmp_path, "library_not_found", "NVMLError_LibraryNotFound: NVML Shared Library Not Found")
    assert state.nvml == "library_not_found"
    assert state.missing == {
        "kernel_module_version": Missing.NOT_SUPPORTED,
        "library_version": Missing.NOT_IN_SOURCE,
        "pci_gpus": Missing.NOT_SUPPORTED,
    }
