"""Not ready is not healthy: a GPU off the bus, GPUs the driver never took, a GPU on the bus without a driver beside
the ones NVML lists. Each fails, the reason (message) apart from the action (advice). Fabric registration and
Fabric Manager are in test_checks_fabric.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigcheck.checks.doctor import run_checks
from rigcheck.checks.doctor.health import check_health
from rigcheck.cli.exits import exit_code_for
from rigcheck.model import Severity, Snapshot
from rigcheck.model.snapshot import DriverState, PciGpu
from rigcheck.readers.from_file import load_file
from tests.support.snapshots import make_gpu, make_snapshot

FIXTURES = Path(__file__).parent.parent / "fixtures"
OFF_BUS = [
    FIXTURES / "corpus/kernel-log/204-syslog-gt630-xid79-fallen-off-bus-375.txt",
    FIXTURES / "kernel-log-extra/h100-570-open-fallen-off-bus-multiline.txt",
    FIXTURES / "kernel-log-extra/008-nvdocker1553-xid79-pid0-aer-prefix.txt",
]


@pytest.mark.parametrize("path", OFF_BUS, ids=lambda p: p.name[:12])
def test_a_gpu_off_the_bus_fails_with_reseat_or_rma(path: Path) -> None:
    findings = run_checks(load_file(str(path)))
    [off] = [f for f in findings if f.id == "xid.hardware" and "Xid 79" in f.message]
    assert off.severity is Severity.FAIL
    assert "fallen off the bus" in off.message
    advice = off.advice or ""
    assert "reseat the card" in advice  # was "reboot the node" alone
    assert "RMA" in advice
    assert exit_code_for(findings) == 1


def test_a_lost_gpu_snapshot_says_reseat_or_rma() -> None:
    snap = Snapshot.model_validate_json((FIXTURES / "snapshots/gpu-lost.json").read_text())
    [lost] = [f for f in check_health(snap) if f.id == "health.gpu-unreadable"]
    assert lost.severity is Severity.FAIL
    assert "gpu_lost" in lost.message
    assert "reseat the card" in (lost.advice or "")
    assert "RMA" in (lost.advice or "")


def test_driver_that_took_no_gpu_fails() -> None:
    """mattshma/bigdata #133: 'The NVIDIA probe routine was not called for 3 device(s)' (nouveau holds them):
    it was one warning, exit 0."""
    findings = run_checks(load_file(str(FIXTURES / "not-ready/bigdata133-dmesg-probe-not-called-3-devices.txt")))
    failed = [f for f in findings if f.severity is Severity.FAIL]
    assert [f.id for f in failed] == ["xid.driver-no-device"]
    assert "3 device(s)" in failed[0].message
    assert "nouveau" in (failed[0].advice or "")
    assert "modprobe nvidia" in (failed[0].advice or "")
    assert "xid.driver-message" not in {f.id for f in findings}  # the same line, judged once
    assert exit_code_for(findings) == 1


def test_a_clean_driver_load_still_passes() -> None:
    findings = run_checks(
        load_file(str(FIXTURES / "kernel-log-extra/018-ogkm1064-clean-boot-nvrm-loading-595-open.txt"))
    )
    assert [f.id for f in findings if f.severity is Severity.FAIL] == []


def _bus_snapshot(*drivers: str | None) -> Snapshot:
    """Synthetic: two GPUs NVML lists (18:00.0, 19:00.0) and, on the bus, those two plus one per driver given."""
    snap = make_snapshot([make_gpu(0), make_gpu(1)])
    bus = [PciGpu(bdf="0000:18:00.0", pci_class="0x030200", driver="nvidia")]
    bus.append(PciGpu(bdf="0000:19:00.0", pci_class="0x030200", driver="nvidia"))
    bus += [PciGpu(bdf=f"0000:{0x1A + k:02x}:00.0", pci_class="0x030200", driver=d) for k, d in enumerate(drivers)]
    snap.driver = DriverState(nvml="ok", kernel_module_version="570.86.15", pci_gpus=bus)
    return snap


def test_a_gpu_on_the_bus_without_a_driver_fails_beside_the_listed_ones() -> None:
    snap = _bus_snapshot(None)
    [f] = [f for f in check_health(snap) if f.id == "health.gpu-no-driver"]
    assert f.severity is Severity.FAIL
    assert "0000:1a:00.0" in f.message
    assert "NVML lists only the other 2 GPUs" in f.message
    assert (f.advice or "").startswith("load or reinstall the driver")


def test_every_gpu_on_the_bus_listed_passes_and_vfio_is_left_alone() -> None:
    assert not [f for f in check_health(_bus_snapshot()) if f.id == "health.gpu-no-driver"]
    assert not [f for f in check_health(_bus_snapshot("vfio-pci")) if f.id == "health.gpu-no-driver"]
    nouveau = [f for f in check_health(_bus_snapshot("nouveau")) if f.id == "health.gpu-no-driver"]
    assert "nouveau" in (nouveau[0].advice or "")
