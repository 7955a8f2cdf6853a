"""The PCI bus as an input shows it, judged by the health check (checks/doctor/driver.py pci_driver_finding and
pci_bus_notes): built snapshots, every one synthetic; the real lspci outputs are read in tests/readers/test_lspci.py."""

from __future__ import annotations

from rigcheck.checks.doctor.health import check_health
from rigcheck.cli.exits import exit_code_for
from rigcheck.model import Severity, Snapshot
from rigcheck.model.snapshot import DriverState, Missing, PciGpu, Source
from tests.support.snapshots import make_gpu, make_snapshot


def _bus(*drivers: str | None, known: bool = True) -> Snapshot:
    """Synthetic: an lspci-only snapshot (no GPU NVML listed) with one GPU per driver given, on buses 1a, 1b ..."""
    gpus = [
        PciGpu(bdf=f"0000:{0x1A + k:02x}:00.0", pci_class="0x030200", driver=d if known else None, driver_known=known)
        for k, d in enumerate(drivers)
    ]
    state = DriverState(pci_gpus=gpus)
    state.mark_unset_missing(Missing.NOT_IN_SOURCE, ("nvml", "kernel_module_version", "library_version"))
    return make_snapshot([], source=Source(kind="lspci"), driver=state)


def _ids(snapshot: Snapshot) -> list[tuple[str, Severity]]:
    return [(f.id, f.severity) for f in check_health(snapshot)]


def test_no_gpu_with_the_nvidia_driver_fails_as_not_loaded() -> None:
    for drivers in ((None,), ("nouveau", None), ("nova_core",)):
        assert _ids(_bus(*drivers)) == [("health.driver-not-loaded", Severity.FAIL)]


def test_one_without_the_driver_beside_driven_ones_is_gpu_no_driver() -> None:
    [f] = check_health(_bus("nvidia", None, "nvidia"))
    assert (f.id, f.severity) == ("health.gpu-no-driver", Severity.FAIL)
    assert "0000:1b:00.0" in f.message
    assert "lspci shows nvidia on the other 2 GPUs" in f.message


def test_every_gpu_on_nvidia_says_nothing() -> None:
    assert _ids(_bus("nvidia", "nvidia")) == []


def test_a_driver_not_shown_is_an_info_line_never_a_fail() -> None:
    snap = _bus(None, None, known=False)
    assert _ids(snap) == [("health.gpu-driver-unknown", Severity.INFO)]
    assert exit_code_for(check_health(snap)) == 0


def test_vfio_is_left_to_the_vm_with_an_info_line() -> None:
    assert _ids(_bus("vfio-pci", "vfio-pci")) == [("health.gpu-passthrough", Severity.INFO)]
    # beside a GPU without a driver, that one still fails; the VM's GPU is not counted with it
    [f] = check_health(_bus("vfio-pci", None))
    assert (f.id, f.severity) == ("health.driver-not-loaded", Severity.FAIL)
    assert "0000:1a:00.0" not in f.message


def test_nvml_listed_gpus_and_an_unknown_driver_on_the_bus_are_not_a_fail() -> None:
    # NVML works and lists two GPUs; a third GPU on the bus whose driver the input does not show is not judged.
    snap = make_snapshot([make_gpu(0), make_gpu(1)])
    bus = [PciGpu(bdf=f"0000:{b}:00.0", pci_class="0x030200", driver="nvidia") for b in ("18", "19")]
    bus.append(PciGpu(bdf="0000:1a:00.0", pci_class="0x030200", driver=None, driver_known=False))
    snap.driver = DriverState(nvml="ok", kernel_module_version="570.86.15", pci_gpus=bus)
    assert [(f.id, f.severity) for f in check_health(snap) if f.id.startswith("health.gpu-")] == [
        ("health.gpu-driver-unknown", Severity.INFO)
    ]
