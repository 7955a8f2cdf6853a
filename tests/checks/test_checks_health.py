from __future__ import annotations

from pathlib import Path

import pytest

from rigcheck.checks.doctor import run_checks
from rigcheck.checks.doctor.driver import absence_line
from rigcheck.checks.doctor.health import check_health
from rigcheck.cli.exits import exit_code_for
from rigcheck.model import Host, Missing, Severity, Snapshot
from rigcheck.model.snapshot import DriverState, PciGpu
from rigcheck.probe.driver import driver_state_from_text
from rigcheck.probe.live import probe_machine
from rigcheck.readers.from_file import load_file
from tests.support.checkutil import ids, only
from tests.support.fakenvml import SCENARIOS
from tests.support.snapshots import ecc_errors, gpu_lost, make_gpu, make_snapshot, no_gpu

FIXTURES = Path(__file__).parent.parent / "fixtures"
CORPUS = FIXTURES / "corpus"
TWO_GPU = FIXTURES / "sysfs/two-gpu"
NO_GPU_TREE = FIXTURES / "sysfs/no-gpu"


def run(**overrides: object) -> list:
    return check_health(make_snapshot([make_gpu(0, **overrides)]))


def test_healthy_gpu_is_ok() -> None:
    found = run()
    assert ids(found) == ["health.ok"]
    assert "ECC on, 0 uncorrected errors" in found[0].message


def test_placeholder_gives_one_fail_and_nothing_else_anywhere() -> None:
    snap = gpu_lost()
    found = run_checks(snap)
    lost = [f for f in found if f.gpu == 2 or (f.pair and 2 in f.pair)]
    assert [f.id for f in lost] == ["health.gpu-unreadable"]
    assert lost[0].severity is Severity.FAIL
    assert "gpu_lost" in lost[0].message
    assert "Xid 79" in (lost[0].advice or "")


def test_no_gpu_fails_with_reason() -> None:
    found = check_health(no_gpu())
    f = only(found, "health.no-gpu")
    assert f.severity is Severity.FAIL  # a GPU health gate never passes a box with no GPU
    assert "not installed" in f.message
    assert "--cpu" in (f.advice or "")  # what still works without one
    assert exit_code_for(run_checks(no_gpu())) == 1


# --- driver state, from the live probe over the fake sysfs trees and a fake NVML -----------------------------
def _live(scenario: str, tree: Path = TWO_GPU) -> Snapshot:
    return probe_machine(SCENARIOS[scenario](), sysfs_root=tree)


def test_machine_without_nvidia_gpu_or_driver() -> None:
    found = check_health(_live("no_driver", NO_GPU_TREE))
    assert ids(found) == ["health.no-gpu"]
    assert found[0].severity is Severity.FAIL
    assert found[0].message == "no NVIDIA GPU found: no NVIDIA GPU on the PCI bus and no NVIDIA driver"
    assert absence_line(_live("no_driver", NO_GPU_TREE)) == (
        "no NVIDIA GPU visible: no NVIDIA GPU on the PCI bus and no NVIDIA driver"
    )


@pytest.mark.parametrize(
    ("scenario", "finding_id", "words"),
    [
        ("no_driver", "health.driver-not-loaded", "NVML's library (libnvidia-ml.so) is not here"),
        ("driver_not_loaded", "health.driver-not-loaded", "the NVIDIA driver is not loaded"),
        ("driver_version_mismatch", "health.driver-version-mismatch", "the loaded kernel module is 550.54.15"),
    ],
)
def test_gpu_box_with_a_broken_driver_fails(scenario: str, finding_id: str, words: str) -> None:
    snap = _live(scenario)
    found = run_checks(snap)
    f = only(found, finding_id)
    assert f.severity is Severity.FAIL
    assert words in f.message
    assert "2 NVIDIA GPUs on the PCI bus (0000:19:00.0, 0000:c1:00.0; driver: nvidia)" in f.message
    assert "health.no-gpu" not in ids(found)  # one finding says what is wrong
    assert exit_code_for(found) == 1
    line = absence_line(snap)
    assert line is not None
    assert line.startswith("no NVIDIA GPU visible: the NVIDIA driver does not work: ")


def test_version_mismatch_advice_is_to_reload_the_module() -> None:
    f = only(check_health(_live("driver_version_mismatch")), "health.driver-version-mismatch")
    assert "reboot" in (f.advice or "")
    assert "modprobe nvidia" in (f.advice or "")
    assert f.measured == "kernel module 550.54.15, libraries ?"


def _with_driver(state: DriverState) -> Snapshot:
    return Snapshot(gpu_absent_reason="x", driver=state)


def _gpus(*drivers: str | None) -> list[PciGpu]:
    return [PciGpu(bdf=f"0000:{i + 1:02x}:00.0", pci_class="0x030000", driver=d) for i, d in enumerate(drivers)]


@pytest.mark.parametrize(
    ("state", "finding_id", "advice"),
    [
        (
            DriverState(nvml="driver_not_loaded", pci_gpus=_gpus("vfio-pci", "vfio-pci")),
            "health.driver-not-loaded",
            "VM",
        ),
        (DriverState(nvml="library_not_found", pci_gpus=_gpus("nouveau")), "health.driver-not-loaded", "nouveau"),
        (DriverState(nvml="driver_not_loaded", pci_gpus=_gpus(None)), "health.driver-not-loaded", "modprobe"),
        (DriverState(nvml="driver_not_loaded", pci_gpus=[]), "health.no-gpu", "lspci"),  # leftover libraries only
        (DriverState(nvml="no_permission", pci_gpus=None), "health.driver-unusable", "/dev/nvidia"),
        (
            DriverState(nvml="error", nvml_error="Unknown Error", pci_gpus=_gpus("nvidia")),
            "health.driver-unusable",
            "container",
        ),
        (DriverState(nvml="error", pci_gpus=[]), "health.no-gpu", "lspci"),
        (DriverState(nvml="ok", pci_gpus=_gpus("nvidia")), "health.driver-unusable", "RmInitAdapter"),
        (DriverState(nvml="ok", pci_gpus=_gpus("vfio-pci")), "health.driver-unusable", "VM"),
        (DriverState(nvml="ok", pci_gpus=[]), "health.no-gpu", "lspci"),
        (DriverState(nvml=None), "health.no-gpu", "lspci"),
    ],
)
def test_which_finding_for_which_driver_state(state: DriverState, finding_id: str, advice: str) -> None:
    found = check_health(_with_driver(state))
    assert ids(found) == [finding_id]
    assert found[0].severity is Severity.FAIL
    assert advice in (found[0].advice or "")


def test_library_missing_beside_a_loaded_module_points_at_the_container() -> None:
    state = DriverState(nvml="library_not_found", kernel_module_version="550.54.15", pci_gpus=_gpus("nvidia"))
    f = only(check_health(_with_driver(state)), "health.driver-not-loaded")
    assert "--gpus all" in (f.advice or "")
    assert "550.54.15" in (f.advice or "")


@pytest.mark.parametrize("name", [p.name for p in sorted((CORPUS / "driver-errors").iterdir())])
def test_driver_error_outputs_are_fails(name: str) -> None:
    state = driver_state_from_text((CORPUS / "driver-errors" / name).read_text(encoding="utf-8"))
    assert state is not None
    found = check_health(_with_driver(state))
    assert len(found) == 1
    assert found[0].severity is Severity.FAIL
    assert found[0].id in {"health.driver-version-mismatch", "health.driver-not-loaded"}


def test_couldnt_communicate_is_driver_not_loaded() -> None:
    path = CORPUS / "driver-errors/203-container-nvidia-smi-failed-couldnt-communicate.txt"
    state = driver_state_from_text(path.read_text(encoding="utf-8"))
    assert state is not None
    f = only(check_health(_with_driver(state)), "health.driver-not-loaded")
    assert f.message.startswith("the NVIDIA driver is not loaded (NVIDIA-SMI has failed because it couldn't")


def test_mismatch_from_the_journal_names_both_versions() -> None:
    text = (CORPUS / "driver-errors/201-journal-api-mismatch-535-vs-530-octal-012.txt").read_text(encoding="utf-8")
    state = driver_state_from_text(text)
    assert state is not None
    f = only(check_health(_with_driver(state)), "health.driver-version-mismatch")
    assert f.message == (
        "NVIDIA driver/library version mismatch: the loaded kernel module is 530.30.02, the libraries are 535.54.03"
    )


def test_gpus_read_and_driver_ok_give_no_driver_finding() -> None:
    found = check_health(_live("healthy_8x_h100_nvlink"))
    assert not {f.id for f in found} & {"health.no-gpu", "health.driver-not-loaded", "health.driver-unusable"}


def test_gpu_every_call_fails_is_one_fail_naming_it() -> None:
    found = run_checks(_live("gpu_every_call_fails"))
    broken = [f for f in found if f.gpu == 1 or (f.pair and 1 in f.pair)]
    assert [f.id for f in broken] == ["health.gpu-unreadable"]
    assert broken[0].subject == "GPU1"
    assert broken[0].severity is Severity.FAIL
    assert "Unknown Error" in broken[0].message
    assert "ERR!" in (broken[0].advice or "")
    assert exit_code_for(found) == 1


def test_ecc_errors_fixture() -> None:
    found = check_health(ecc_errors())
    f = only(found, "health.ecc-uncorrected-volatile", "GPU1")
    assert f.severity is Severity.FAIL
    assert f.message.startswith("2 uncorrected")
    assert only(found, "health.remapped-rows-pending").severity is Severity.FAIL  # the row is in use until a reset
    assert only(found, "health.ok").gpu == 0


def test_aggregate_only_warns() -> None:
    f = only(run(ecc_uncorrected_aggregate=5), "health.ecc-uncorrected-aggregate")
    assert f.severity is Severity.WARN
    assert "5 uncorrected" in f.message


def test_remap_failure_fails() -> None:
    assert only(run(remapped_rows_failure=True), "health.remapped-rows-failure").severity is Severity.FAIL


def test_retired_pages_pending_warns() -> None:
    assert only(run(retired_pages_pending=True), "health.retired-pages-pending").severity is Severity.WARN


@pytest.mark.parametrize(
    ("dbe", "sbe", "severity"), [(1, 0, Severity.INFO), (10, 21, Severity.INFO), (10, 22, Severity.WARN)]
)
def test_dbe_retired_pages(dbe: int, sbe: int, severity: Severity) -> None:
    f = only(run(retired_pages_dbe=dbe, retired_pages_sbe=sbe), "health.retired-pages-dbe")
    assert f.severity is severity
    assert f"{dbe} pages retired" in f.message
    assert f"{dbe + sbe} retired in all" in f.message


def test_modes() -> None:
    found = run(persistence_mode=False, mig_enabled=True, compute_mode="Exclusive_Process", ecc_enabled=False)
    assert only(found, "health.persistence-off").severity is Severity.INFO
    assert only(found, "health.mig-enabled").severity is Severity.WARN
    cm = only(found, "health.compute-mode")
    assert cm.severity is Severity.INFO
    assert "Exclusive_Process" in cm.message
    assert only(found, "health.ecc-disabled").severity is Severity.INFO
    assert "health.ok" not in ids(found)


def test_persistence_off_not_reported_on_windows() -> None:
    snap = make_snapshot([make_gpu(0, persistence_mode=False)], host=Host(os="Microsoft Windows 11 Pro"))
    assert "health.persistence-off" not in ids(check_health(snap))


def test_ecc_counts_unreadable_is_unknown() -> None:
    found = run(
        missing={"ecc_uncorrected_volatile": Missing.NO_PERMISSION, "ecc_uncorrected_aggregate": Missing.NO_PERMISSION}
    )
    f = only(found, "health.memory-errors-unavailable")
    assert f.severity is Severity.UNKNOWN
    assert "no_permission" in f.message


def test_consumer_card_without_ecc_is_not_unknown() -> None:
    found = run(missing={"ecc_enabled": Missing.NOT_SUPPORTED, "ecc_uncorrected_volatile": Missing.NOT_SUPPORTED})
    assert "health.memory-errors-unavailable" not in ids(found)


def test_gpu_cut_off_by_a_truncated_file_fails_with_advice_to_save_it_again() -> None:
    """A GPU the saved output lost is unchecked, so it fails (closed), and the advice is about the file."""
    found = run(read_error=Missing.TRUNCATED, read_error_detail="the table stops before GPU 0")
    unreadable = only(found, "health.gpu-unreadable")
    assert unreadable.severity is Severity.FAIL
    assert unreadable.advice is not None
    assert "save the whole output again" in unreadable.advice
    assert "dmesg" not in unreadable.advice


_HANDLE_ERROR_NEW = (
    Path(__file__).parent.parent / "fixtures" / "smi-err-extra" / "008-4xrtxpro6000-610-gpu1-handle-error-new-form.txt"
)


def test_a_table_that_skips_an_index_warns_that_a_gpu_is_missing(tmp_path: Path) -> None:
    """Without its error line, the table of GPUs 0, 2 and 3 passed the machine without a word about GPU1."""
    lines = _HANDLE_ERROR_NEW.read_text(encoding="utf-8").splitlines()
    table = tmp_path / "table.txt"
    table.write_text("\n".join(lines[1:]) + "\n", encoding="utf-8")
    snap = load_file(str(table))
    assert [g.index for g in snap.gpus] == [0, 2, 3]
    (gap,) = [f for f in run_checks(snap) if f.id == "health.gpu-index-gap"]
    assert gap.severity is Severity.WARN
    assert gap.message == "the nvidia-smi table lists GPUs 0, 2, 3: GPU1 missing from it"
    # With the error line the GPU is a placeholder under its index: nothing is missing.
    assert not [f for f in run_checks(load_file(str(_HANDLE_ERROR_NEW))) if f.id == "health.gpu-index-gap"]
