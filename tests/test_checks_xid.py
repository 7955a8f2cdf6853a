"""checks/xid.py: every finding id with its severity, on real kernel-log lines (reader tests: test_kernel_log.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigcheck.checks.xid import check_xid
from rigcheck.model import Severity, Snapshot
from rigcheck.probe.from_file import load_files
from rigcheck.probe.kernel_log import parse_kernel_events

LOGS = Path(__file__).parent / "fixtures" / "corpus" / "kernel-log"


def _ids(text: str) -> dict[str, Severity]:
    return {f.id: f.severity for f in check_xid(Snapshot(kernel_events=parse_kernel_events(text)))}


@pytest.mark.parametrize(
    ("prefix", "finding_id", "severity"),
    [
        ("201", "xid.hardware", Severity.FAIL),
        ("202", "xid.hardware", Severity.FAIL),  # Xid 94 on one GPU
        ("202", "xid.application", Severity.INFO),  # Xid 43 and 31 on the others
        ("206", "xid.warning", Severity.WARN),  # Xid 109
        ("205", "xid.sxid", Severity.WARN),
    ],
)
def test_real_logs(prefix: str, finding_id: str, severity: Severity) -> None:
    snap = load_files([str(next(LOGS.glob(prefix + "*")))])
    assert any(f.id == finding_id and f.severity is severity for f in check_xid(snap))


def test_fatal_sxid_fails() -> None:
    line = "[ 10.5] nvidia-nvswitch0: SXid (PCI:0000:00:07.0): 12028, Fatal, Link 40 egress non-posted PRIV error\n"
    assert _ids(line) == {"xid.sxid-fatal": Severity.FAIL}


def test_aer_corrected_is_counted_as_info() -> None:
    line = "[ 9.1] pcieport 0000:00:01.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)\n"
    assert _ids(line) == {"xid.aer-corrected": Severity.INFO}


def test_aer_uncorrected_non_fatal_warns() -> None:
    line = "[ 9.2] nvidia 0000:3b:00.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction Layer\n"
    assert _ids(line) == {"xid.aer-uncorrected": Severity.WARN}


def test_driver_message() -> None:
    line = "[ 3.0] NVRM: RmInitAdapter failed! (0x26:0x56:1474)\n"
    assert _ids(line) == {"xid.driver-message": Severity.WARN}


def test_unknown_code_is_a_warning_not_a_pass() -> None:
    assert _ids("NVRM: Xid (PCI:0000:01:00): 999, something new\n") == {"xid.warning": Severity.WARN}


def test_no_events_read_is_ok_and_no_log_says_nothing() -> None:
    from rigcheck.model.kernel_log import KernelLogRead

    assert [(f.id, f.severity) for f in check_xid(Snapshot(kernel_log=KernelLogRead(method="dmesg")))] == [
        ("xid.none", Severity.OK)
    ]
    assert check_xid(Snapshot()) == []


def test_unreadable_log_is_unknown_with_its_reason() -> None:
    from rigcheck.model.kernel_log import KernelLogRead

    read = KernelLogRead(method="dmesg", unreadable="dmesg: read kernel buffer failed: Operation not permitted")
    (finding,) = check_xid(Snapshot(kernel_log=read))
    assert (finding.id, finding.severity) == ("xid.log-unreadable", Severity.UNKNOWN)
    assert "Operation not permitted" in finding.message


def test_nvswitch_log_alone_is_not_a_box_without_gpus() -> None:
    """A kernel log of NVSwitch SXid lines names switches, not GPUs: it must not read as "no NVIDIA GPU"."""
    from rigcheck.checks import run_checks

    snap = load_files([str(next(LOGS.glob("205-*")))])
    found = {f.id: f.severity for f in run_checks(snap)}
    assert "health.no-gpu" not in found
    assert found["xid.sxid"] is Severity.WARN
