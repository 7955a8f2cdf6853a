"""checks/doctor/xid.py: every finding id with its severity, on real kernel-log lines (reader tests:
test_kernel_log.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigcheck.checks.doctor.xid import check_xid
from rigcheck.model import Severity, Snapshot
from rigcheck.probe.kernel_log import parse_kernel_events
from rigcheck.readers.from_file import load_files

LOGS = Path(__file__).parent.parent / "fixtures" / "corpus" / "kernel-log"


def _ids(text: str) -> dict[str, Severity]:
    return {f.id: f.severity for f in check_xid(Snapshot(kernel_events=parse_kernel_events(text)))}


@pytest.mark.parametrize(
    ("prefix", "finding_id", "severity"),
    [
        ("201", "xid.hardware", Severity.FAIL),
        ("202", "xid.warning", Severity.WARN),  # Xid 94 on one GPU: contained, reset when convenient
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
    line = "kernel: NVRM: API mismatch: the client has the version 535.54.03, but#012NVRM: this kernel module\n"
    assert _ids(line) == {"xid.driver-message": Severity.WARN}


def test_a_gpu_that_failed_to_initialize_fails() -> None:
    """W4: "RmInitAdapter failed!" was a host warn (doctor exit 0); the GPU serves nothing: a fail."""
    assert _ids("[ 3.0] NVRM: RmInitAdapter failed! (0x26:0x56:1474)\n") == {"xid.init-failed": Severity.FAIL}
    findings = check_xid(load_files([str(EXTRA / "005-gpuop1146-syslog-rminitadapter-0x24-0x72.txt")]))
    assert [(f.id, f.severity, f.gpu) for f in findings] == [("xid.init-failed", Severity.FAIL, 0)]


EXTRA = Path(__file__).parent.parent / "fixtures" / "kernel-log-extra"


@pytest.mark.parametrize(
    ("name", "severity", "words"),
    [
        ("011-cxl-aerinject-root-uce-uncorrectable-fatal-6x.txt", Severity.FAIL, "severity=Uncorrectable (Fatal)"),
    ],
)
def test_real_uncorrected_fatal_aer_fails(name: str, severity: Severity, words: str) -> None:
    """W1: kernel 6.x prints "Uncorrectable (Fatal)": it was judged corrected (info)."""
    (finding,) = check_xid(load_files([str(EXTRA / name)]))
    assert (finding.id, finding.severity) == ("xid.aer-uncorrected", severity)
    assert words in finding.message


@pytest.mark.parametrize(
    ("severity_text", "finding_id", "severity"),
    [
        ("Corrected", "xid.aer-corrected", Severity.INFO),
        ("Correctable", "xid.aer-corrected", Severity.INFO),
        ("Uncorrected (Non-Fatal)", "xid.aer-uncorrected", Severity.WARN),
        ("Uncorrectable (Non-Fatal)", "xid.aer-uncorrected", Severity.WARN),
        ("Uncorrected (Fatal)", "xid.aer-uncorrected", Severity.FAIL),
        ("Uncorrectable (Fatal)", "xid.aer-uncorrected", Severity.FAIL),
        ("Fatal", "xid.aer-uncorrected", Severity.FAIL),
        ("Something New", "xid.aer-uncorrected", Severity.WARN),  # unknown wording: never a corrected pass
    ],
)
def test_aer_severity_wordings_in_a_journal(severity_text: str, finding_id: str, severity: Severity) -> None:
    line = (
        f"Jun 30 11:07:05 node7 kernel: nvidia 0000:3b:00.0: AER: PCIe Bus Error: severity={severity_text}, "
        "type=Transaction Layer, (Requester ID)\n"
    )
    assert _ids(line) == {finding_id: severity}


def test_contained_ecc_is_a_warning_uncontained_fails() -> None:
    """W2: Xid 94 is contained ("restart the application; reset the GPU when convenient", XID-NOTES.md)."""
    findings = check_xid(load_files([str(EXTRA / "013-gpud1174-nvlink5-domain0019-xid149-145-94.txt")]))
    by_bus = {f.message.split(": kernel log", 1)[0]: (f.id, f.severity) for f in findings}
    assert by_bus["GPU1 (0000:9b:00.0)"] == ("xid.warning", Severity.WARN)
    assert by_bus["GPU3 (0019:01:00.0)"] == ("xid.hardware", Severity.FAIL)  # 149 Fatal
    assert by_bus["GPU2 (0018:01:00.0)"] == ("xid.warning", Severity.WARN)  # 145 Nonfatal
    advice = next(f.advice for f in findings if f.gpu == 1)
    assert "reset the GPU when convenient" in (advice or "")
    journal = "Jun 30 11:07:05 n7 kernel: NVRM: Xid (PCI:0000:9b:00): 95, pid=1234, name=python3, Uncontained\n"
    assert _ids(journal) == {"xid.hardware": Severity.FAIL}


def test_sxid_meanings_come_from_the_line_where_the_table_has_none() -> None:
    """W3: 20009 read "NVSwitch link fatal error" on a Non-fatal RX Short Error Rate line; 24007 an SOE halt."""
    findings = check_xid(load_files([str(EXTRA / "019-nvsentinel-gpud-sxid-20009-nonfatal-24007-20034-fatal.txt")]))
    by_code = {code: f for f in findings for code in (20009, 24007) if f"SXid {code}" in f.message}
    assert (by_code[20009].id, by_code[20009].severity) == ("xid.sxid", Severity.WARN)
    assert "the line says: Link 04 RX Short Error Rate" in by_code[20009].message
    assert "fatal error" not in by_code[20009].message
    assert "reboot" not in (by_code[20009].advice or "")
    assert (by_code[24007].id, by_code[24007].severity) == ("xid.sxid-fatal", Severity.FAIL)
    assert "the line says: Link 28 sourcetrack timeout error (First)" in by_code[24007].message
    assert "SOE" not in by_code[24007].message
    syslog = (
        "Jun 30 11:07:05 n7 kernel: [ 9.1] nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20009, Non-fatal, Link 9 RX "
        "Short Error Rate\n"
    )
    (f,) = check_xid(Snapshot(kernel_events=parse_kernel_events(syslog)))
    assert (f.severity, "the line says: Link 9 RX Short Error Rate" in f.message) == (Severity.WARN, True)


def test_gsp_timeout_in_syslog_012_framing_fails() -> None:
    """R2 in another framing: syslog, with a bus-less ordinal line."""
    line = "Mar 21 21:42:01 host kernel: [ 88.1] NVRM: GPU2 _kgspRpcRecvPoll: GSP RM heartbeat timed out\n"
    assert _ids(line) == {"xid.gsp-timeout": Severity.FAIL}


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
    from rigcheck.checks.doctor import run_checks

    snap = load_files([str(next(LOGS.glob("205-*")))])
    found = {f.id: f.severity for f in run_checks(snap)}
    assert "health.no-gpu" not in found
    assert found["xid.sxid"] is Severity.WARN


# Xid 154 names the driver's new recovery action; it was a fail whatever the action (issue 23).
@pytest.mark.parametrize(
    ("name", "action_words"),
    [
        ("020-", "reboot the node"),  # 0x2 (Node Reboot Required)
        ("021-", "reset the GPU"),  # 0x1 (GPU Reset Required), after Xid 79
        ("022-", "reset the GPU"),  # 0x1 (PF FLR): a later driver's label for the function-level reset
    ],
)
def test_real_xid154_lines_fail_naming_the_action(name: str, action_words: str) -> None:
    snap = load_files([str(next(EXTRA.glob(name + "*")))])
    (finding,) = [f for f in check_xid(snap) if f.id == "xid.hardware"]
    assert finding.severity is Severity.FAIL
    assert "Xid 154's new action: 0x" in finding.message
    (said,) = [part for part in finding.advice.split("; Xid ") if "154" in part]
    assert action_words in said


def test_xid154_back_to_none_does_not_fail() -> None:
    # Synthetic line in the catalog's form ("changed from 0x0 (None) to 0x2 (Node Reboot Required)"), the other way.
    line = (
        "[ 812.5] NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x1 (GPU Reset Required) "
        "to 0x0 (None)\n"
    )
    findings = check_xid(Snapshot(kernel_events=parse_kernel_events(line)))
    assert [(f.id, f.severity) for f in findings] == [("xid.recovered", Severity.INFO)]
    assert "usable again" in findings[0].advice


@pytest.mark.parametrize(
    ("label", "severity", "words"),
    [
        ("0x3 (Drain P2P)", Severity.FAIL, "peer-to-peer"),
        ("0x4 (Drain and Reset)", Severity.FAIL, "drain the node and reset the GPU"),
        ("0x2 (OS Reboot)", Severity.FAIL, "reboot the node"),
        ("0x7 (Something New)", Severity.FAIL, "contact NVIDIA support"),  # neither the words nor the value known
    ],
)
def test_xid154_each_action(label: str, severity: Severity, words: str) -> None:
    line = f"NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) to {label}\n"
    (finding,) = check_xid(Snapshot(kernel_events=parse_kernel_events(line)))
    assert finding.severity is severity
    assert words in finding.advice


def test_xid64_is_an_rma_not_a_reset() -> None:
    # Synthetic line in the wording of NVIDIA's dynamic page retirement guide ("XID 64 Dynamic Page Retirement: Fatal
    # error, unable to retire page"); it said "reset the GPU (`nvidia-smi -r` ...)".
    line = "NVRM: Xid (PCI:0000:3b:00): 64, Dynamic Page Retirement: Fatal error, unable to retire page (0x12b3c4)\n"
    (finding,) = check_xid(Snapshot(kernel_events=parse_kernel_events(line)))
    assert (finding.id, finding.severity) == ("xid.hardware", Severity.FAIL)
    assert "RMA" in finding.advice
    assert "support" in finding.advice
    assert "drain" in finding.advice
    assert "nvidia-smi -r" not in finding.advice
    assert "a100-gpu-mem-error-mgmt" in finding.source
