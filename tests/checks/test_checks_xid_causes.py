"""checks/doctor/xid.py: an Xid 45 judged by the fault it names, the latest Xid 154 of a GPU deciding, and "No NVIDIA
graphics adapter probed!" read as a driver that took no GPU.

Real lines: tests/calibration/cases (open-gpu-kernel-modules issue #1150), tests/fixtures/kernel-log-extra (020,
021) and tests/fixtures/not-ready (bigdata133); the lines built in a test are labelled synthetic.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rigcheck.checks.doctor.xid import check_xid
from rigcheck.model import Finding, Severity, Snapshot
from rigcheck.probe.kernel_log import parse_kernel_events
from tests.support.cli import Rigcheck

HERE = Path(__file__).parent.parent
XID45_CASE = HERE / "calibration" / "cases" / "incident-kernel-log-hgx-xid45-caused-by-xid149-145.txt"
EXTRA = HERE / "fixtures" / "kernel-log-extra"
NOT_READY = HERE / "fixtures" / "not-ready"


def _check(text: str) -> list[Finding]:
    return check_xid(Snapshot(kernel_events=parse_kernel_events(text)))


# --- Xid 45 "caused by previous Xid N" ------------------------------------------------------------------


def test_xid45_caused_by_nvlink_faults_fails_each_gpu_naming_the_fault() -> None:
    findings = _check(XID45_CASE.read_text())
    by_bus = {f.subject: f for f in findings}
    assert len(by_bus) == 4
    assert {(f.id, f.severity) for f in findings} == {("xid.hardware", Severity.FAIL)}
    dc = next(f for f in findings if "0000:dc:00.0" in f.message)
    assert "2 x Xid 149 (NVLink NETIR (fabric/network interface) error), judged by that fault" in dc.message
    ed = next(f for f in findings if "0000:ed:00.0" in f.message)
    assert "Xid 145 (NVLink RLW (link-layer) error)" in ed.message
    assert "reset the GPU" in (ed.advice or "")


def test_doctor_fails_the_xid45_incident(rigcheck: Rigcheck) -> None:
    code, _, _ = rigcheck("doctor", "--from", str(XID45_CASE), "--json")
    assert code == 1


@pytest.mark.parametrize(
    ("cited", "finding_id", "severity"),
    [
        (13, "xid.application", Severity.INFO),  # an application's own fault: the GPU is fine
        (94, "xid.warning", Severity.WARN),  # a contained ECC error: watch it
        (79, "xid.hardware", Severity.FAIL),  # fallen off the bus
        (999, "xid.warning", Severity.WARN),  # not in rigcheck's table: look it up
    ],
)
def test_xid45_takes_the_cited_codes_catalog_verdict(cited: int, finding_id: str, severity: Severity) -> None:
    # synthetic: the line of issue #1150 with another cited code
    line = (
        "kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 "
        f"caused by previous Xid {cited}\n"
    )
    (finding,) = _check(line)
    assert (finding.id, finding.severity) == (finding_id, severity)
    assert f"Xid {cited}" in finding.message


def test_xid45_alone_is_still_an_application_cleanup() -> None:
    # synthetic: no cause named
    (finding,) = _check("kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001\n")
    assert (finding.id, finding.severity) == ("xid.application", Severity.INFO)
    assert "name their cause" not in finding.message


# --- Xid 154: the latest action per GPU decides ---------------------------------------------------------

REBOOT_020 = (EXTRA / "020-rtx4070-575-journal-xid154-node-reboot.txt").read_text()
# synthetic: the same GPU's recovery action back to None after the reboot, in the catalog's form
BACK_TO_NONE = (
    "Aug 12 01:31:40 err-Stealth-16-AI-Studio-A1VGG kernel: NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action "
    "changed from 0x2 (Node Reboot Required) to 0x0 (None)\n"
)


def test_a_later_none_clears_the_earlier_action_of_that_gpu() -> None:
    findings = _check(REBOOT_020 + BACK_TO_NONE)
    assert [(f.id, f.severity) for f in findings] == [("xid.recovered", Severity.INFO)]
    assert "recovered at Aug 12 01:31:40 after 0x2 (Node Reboot Required)" in findings[0].message
    assert "reboot the node" not in (findings[0].advice or "")


def test_an_action_after_the_none_still_fails() -> None:
    findings = _check(BACK_TO_NONE + REBOOT_020)
    assert any(f.id == "xid.hardware" and f.severity is Severity.FAIL for f in findings)
    assert "reboot the node" in next(f.advice or "" for f in findings if f.id == "xid.hardware")


def test_none_on_another_gpu_clears_nothing() -> None:
    findings = _check(REBOOT_020 + BACK_TO_NONE.replace("PCI:0000:01:00", "PCI:0000:02:00"))
    assert {(f.id, f.severity) for f in findings} >= {("xid.hardware", Severity.FAIL)}
    hardware = next(f for f in findings if f.id == "xid.hardware")
    assert "0000:01:00.0" in hardware.message


def test_the_fault_that_set_the_action_is_judged_by_its_own_line() -> None:
    # 021: Xid 79 (fallen off the bus), then 154 to GPU Reset Required; synthetic: back to None after the reset
    text = (EXTRA / "021-a4000-dmesg-T-xid79-154-gpu-reset-required.txt").read_text()
    text += (
        "[Sun Mar 29 19:31:02] NVRM: Xid (PCI:0000:5f:00): 154, GPU recovery action changed from 0x1 "
        "(GPU Reset Required) to 0x0 (None)\n"
    )
    by_id = {f.id: f for f in _check(text)}
    assert by_id["xid.hardware"].severity is Severity.FAIL
    assert "Xid 79" in by_id["xid.hardware"].message
    assert "Xid 154" not in by_id["xid.hardware"].message
    assert "after 0x1 (GPU Reset Required)" in by_id["xid.recovered"].message


# --- "No NVIDIA graphics adapter probed!" ---------------------------------------------------------------


def test_no_adapter_probed_is_a_driver_without_a_gpu() -> None:
    first = (NOT_READY / "bigdata133-dmesg-probe-not-called-3-devices.txt").read_text().splitlines()[0]
    assert first.endswith("NVRM: No NVIDIA graphics adapter probed!")
    findings = _check(first + "\n")
    assert [(f.id, f.severity) for f in findings] == [("xid.driver-no-device", Severity.FAIL)]
    assert "took no GPU" in findings[0].message
    assert "lspci" in (findings[0].advice or "")


def test_with_the_probe_not_called_line_it_is_one_finding() -> None:
    findings = _check((NOT_READY / "bigdata133-dmesg-probe-not-called-3-devices.txt").read_text())
    no_device = [f for f in findings if f.id == "xid.driver-no-device"]
    assert len(no_device) == 1
    assert "nouveau" in no_device[0].message
    assert not [f for f in findings if f.id == "xid.driver-message" and "adapter probed" in f.message]
