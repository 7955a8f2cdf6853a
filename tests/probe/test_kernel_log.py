"""Kernel-log events: the reader (every framing, old and new Xid formats), --since, the live read, the check."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from rigcheck.checks.doctor.xid import check_xid
from rigcheck.errors import UsageError
from rigcheck.facts.xid import XIDS, bus_key, severity_of
from rigcheck.inputs import read_input_text
from rigcheck.model import Severity, Snapshot
from rigcheck.probe.kernel_log import apply_since, parse_kernel_events, parse_since, read_live
from rigcheck.readers.from_file import detect_kind, load_files

CORPUS = Path(__file__).parent.parent / "fixtures" / "corpus"
LOGS = CORPUS / "kernel-log"
MANIFEST = [e for e in json.loads((CORPUS / "manifest.json").read_text()) if e["kind"] == "kernel-log"]


def _load(name: str) -> Snapshot:
    return load_files([str(next(LOGS.glob(name + "*")))])


@pytest.mark.parametrize("entry", MANIFEST, ids=[e["file"] for e in MANIFEST])
def test_every_xid_line_is_read_per_gpu(entry: dict[str, object]) -> None:
    """The manifest's hand-checked count of Xid lines per GPU, and its codes, are what the reader finds."""
    snap = load_files([str(CORPUS / str(entry["file"]))])
    facts = entry["facts"]
    assert isinstance(facts, dict)
    xids = [e for e in snap.kernel_events if e.kind == "xid"]
    per_gpu: dict[str, int] = {}
    for e in xids:
        assert e.pci_bus_id is not None
        per_gpu[e.pci_bus_id] = per_gpu.get(e.pci_bus_id, 0) + 1
    assert per_gpu == facts["xid_events_per_gpu"]
    want = [(x["pci_bus_id"], x["xid"], x["timestamp"] or None, x["message"]) for x in facts["xid_events"]]
    got = [(e.pci_bus_id, e.code, e.time, e.message) for e in xids]
    assert [(b, c, m) for b, c, _, m in got] == [(b, c, m) for b, c, _, m in want]
    # the printed time is the manifest's timestamp without its brackets (syslog: the syslog time first)
    assert all(
        t is None or (w or "").strip("[] ").endswith(t.strip()) or t in (w or "")
        for (_, _, t, _), (_, _, w, _) in zip(got, want, strict=True)
    )
    # every event lands on a GPU the snapshot holds
    keys = {g.pci_bus_id for g in snap.gpus}
    assert all(bus_key(e.pci_bus_id or "") in keys for e in snap.kernel_events if e.kind == "xid")


def test_new_format_fields_and_unknown_pid() -> None:
    snap = _load("202")
    first, last = snap.kernel_events[0], snap.kernel_events[-1]
    assert (first.code, first.pid, first.process, first.time) == (
        43,
        1045242,
        "pt_main_thread",
        "Wed Jul 31 23:14:18 2024",
    )
    assert first.pci_bus_id == "PCI:0000:00:05"
    assert (last.code, last.pid, last.process) == (94, None, None)
    assert last.message.startswith("Contained: SM")
    assert next(g.uuid for g in snap.gpus) == "GPU-efbdfde9-5798-a6e7-4c46-12518fa15375"


def test_old_format_uptime_and_syslog_and_journal_framings() -> None:
    old = _load("203").kernel_events
    assert [e.code for e in old] == [31, 13, 13, 13, 13, 32]
    assert old[0].time == "31543.449443"
    assert old[0].pid is None
    syslog = _load("204").kernel_events
    assert [(e.kind, e.code) for e in syslog] == [("xid", 79), ("nvrm", None)]
    assert syslog[0].time == "Jun  5 22:36:51"
    journal = _load("207").kernel_events
    assert len(journal) == 7
    assert all(e.time is None and e.process == "python3" for e in journal)


def test_sxid_lines_name_the_switch() -> None:
    events = _load("205").kernel_events
    assert len(events) == 19
    assert {e.kind for e in events} == {"sxid"}
    assert events[0].device == "nvidia-nvswitch1"
    assert events[0].code == 11004
    assert "Non-fatal" in events[0].message


def test_aer_and_iso_lines() -> None:
    text = (
        "2025-03-01T10:00:00,123456+00:00 pcieport 0000:00:01.0: PCIe Bus Error: severity=Corrected, "
        "type=Physical Layer, (Receiver ID)\n"
        "2025-03-01T10:00:01,000000+00:00 nvidia 0000:3b:00.0: PCIe Bus Error: severity=Uncorrected (Fatal), "
        "type=Transaction Layer, (Requester ID)\n"
        "2025-03-01T10:00:01,000000+00:00 nvidia 0000:3b:00.0:   device [10de:2330] error status/mask=00004000\n"
    )
    events = parse_kernel_events(text)
    assert [(e.kind, e.pci_bus_id) for e in events] == [("aer", "0000:00:01.0"), ("aer", "0000:3b:00.0")]
    assert events[0].time == "2025-03-01T10:00:00,123456+00:00"
    findings = {f.id: f for f in check_xid(Snapshot(kernel_events=events))}
    assert findings["xid.aer-uncorrected"].severity is Severity.FAIL


def test_bus_ids_in_every_spelling() -> None:
    assert bus_key("PCI:0000:9b:00") == bus_key("00000000:9B:00.0") == bus_key("0000:9b:00.0") == "0000:9b:00.0"
    assert bus_key("not a bus") is None


def test_hardware_xid_fails_naming_gpu_and_action() -> None:
    findings = check_xid(_load("201"))
    fail = next(f for f in findings if f.severity is Severity.FAIL)
    assert fail.id == "xid.hardware"
    assert fail.gpu == 0
    assert "0000:9b:00.0" in fail.message
    assert "5 x Xid 119" in fail.message
    assert "reset the GPU" in (fail.advice or "")


def test_fallen_off_bus_is_one_fault_reboot() -> None:
    fail = [f for f in check_xid(_load("204")) if f.severity is Severity.FAIL]
    assert len(fail) == 1
    assert "1 x Xid 79" in fail[0].message
    assert "reboot the node" in (fail[0].advice or "")


def test_fallen_off_bus_without_xid_line_fails() -> None:
    events = parse_kernel_events("[ 5.1] NVRM: GPU 0000:2b:00.0: GPU has fallen off the bus.\n")
    assert [f.id for f in check_xid(Snapshot(kernel_events=events))] == ["xid.hardware"]


EXTRA = Path(__file__).parent.parent / "fixtures" / "kernel-log-extra"


def test_the_drivers_three_line_fallen_off_the_bus_fails_that_gpu() -> None:
    """570's open module: "The NVIDIA GPU <bdf>" and two more NVRM lines under one timestamp, no Xid line."""
    path = EXTRA / "h100-570-open-fallen-off-bus-multiline.txt"
    text = read_input_text(str(path), "a saved output")
    assert detect_kind(text) == "kernel-log"  # it was "not a recognised input"
    off, probe = parse_kernel_events(text)
    assert (off.kind, off.pci_bus_id, off.time) == ("nvrm", "0000:b3:00.0", "1843.308145")
    assert off.message == (
        "The NVIDIA GPU 0000:b3:00.0 (PCI ID: 10de:26b5) installed in this system has fallen off the bus and is "
        "not responding to commands."
    )
    assert (probe.kind, probe.message) == ("nvrm", "The NVIDIA probe routine failed for 1 device(s).")
    findings = check_xid(load_files([str(path)]))
    fail = [f for f in findings if f.severity is Severity.FAIL]
    assert [(f.id, f.gpu) for f in fail] == [("xid.hardware", 0)]
    assert "0000:b3:00.0" in fail[0].message
    assert "1 x Xid 79" in fail[0].message
    driver = next(f for f in findings if f.id == "xid.driver-message")
    assert "probe routine failed" in driver.message


@pytest.mark.parametrize(
    ("framing", "expected_time"),
    [
        (  # journalctl -k: each line its own record
            "Jun 30 11:07:05 node7 kernel: NVRM: The NVIDIA GPU 0000:41:00.0\n"
            "Jun 30 11:07:05 node7 kernel: NVRM: (PCI ID: 10de:2330) installed in this system has\n"
            "Jun 30 11:07:05 node7 kernel: NVRM: fallen off the bus and is not responding to commands.\n",
            "Jun 30 11:07:05",
        ),
        (  # syslog: the message as one line, each newline written #012
            "Jun 30 11:07:05 node7 kernel: [ 88.5] NVRM: The NVIDIA GPU 0000:41:00.0#012NVRM: (PCI ID: 10de:2330) "
            "installed in this system has#012NVRM: fallen off the bus and is not responding to commands.\n",
            "Jun 30 11:07:05",
        ),
    ],
    ids=["journal", "syslog-012"],
)
def test_the_three_line_message_in_other_framings(framing: str, expected_time: str) -> None:
    (event,) = parse_kernel_events("Jun 30 11:07:04 node7 kernel: usb 1-1: new device\n" + framing)
    assert (event.pci_bus_id, event.time) == ("0000:41:00.0", expected_time)
    assert event.message.startswith("The NVIDIA GPU 0000:41:00.0 (PCI ID: 10de:2330) installed in this system has")
    assert event.message.endswith("fallen off the bus and is not responding to commands.")
    assert [f.id for f in check_xid(Snapshot(kernel_events=[event])) if f.severity is Severity.FAIL] == ["xid.hardware"]


def test_a_gpu_message_that_is_not_off_the_bus_is_a_driver_message_and_lines_after_it_stay_events() -> None:
    text = (
        "[ 3.1] NVRM: The NVIDIA GPU 0000:02:00.0\n"
        "       NVRM: (PCI ID: 10de:1db4) installed in this system is\n"
        "       NVRM: not supported by the NVIDIA 580.82 driver release.\n"
        "[ 3.2] NVRM: Xid (PCI:0000:03:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"
    )
    unsupported, xid = parse_kernel_events(text)
    assert unsupported.message.endswith("is not supported by the NVIDIA 580.82 driver release.")
    assert (xid.kind, xid.code) == ("xid", 79)
    findings = check_xid(Snapshot(kernel_events=[unsupported, xid]))
    assert [f.id for f in findings if f.id == "xid.driver-message"] == ["xid.driver-message"]


def test_an_xid_with_a_pid_and_no_process_name() -> None:
    (event,) = parse_kernel_events(read_input_text(str(EXTRA / "xid63-pid-without-name.txt"), "a saved output"))
    assert (event.code, event.pci_bus_id, event.pid, event.process) == (63, "PCI:0000:10:1c", 1896, None)
    assert event.message == "Row Remapper: New row marked for remapping, reset gpu to activate."


@pytest.mark.parametrize("name", ["203", "206"])
def test_application_xids_never_fail(name: str) -> None:
    findings = check_xid(_load(name))
    assert findings
    assert all(f.severity is not Severity.FAIL for f in findings)
    assert any(f.id == "xid.application" and f.severity is Severity.INFO for f in findings)


def test_nonfatal_line_is_not_fatal_and_fatal_is() -> None:
    by_gpu = {f.subject: f for f in check_xid(_load("208"))}
    assert by_gpu["GPU1"].severity is Severity.WARN
    assert "non-fatal" in (by_gpu["GPU1"].advice or "")
    assert by_gpu["GPU0"].severity is Severity.FAIL
    assert severity_of("xid", 144, "SAW_MVB Nonfatal XC0") == "warn"
    assert severity_of("sxid", 11004, "Non-fatal, Link 36") == "warn"
    assert severity_of("sxid", 99999, "Fatal, Link 1") == "fail"


def test_cleanup_names_its_cause() -> None:
    # Xid 45 "caused by previous Xid 149/145": judged by the NVLink fault it names (a fail), not as a warn
    findings = check_xid(_load("207"))
    assert {f.severity for f in findings} == {Severity.FAIL}
    assert any("Xid 149" in (f.advice or "") for f in findings)


def test_sxid_nonfatal_warns_per_switch() -> None:
    findings = check_xid(_load("205"))
    assert {f.id for f in findings} == {"xid.sxid"}
    assert len(findings) == 4


def test_catalog_covers_the_issue_codes() -> None:
    for code in (13, 31, 43, 45, 48, 63, 74, 79, 94, 95, 119, 120, 144, 149, 154):
        assert code in XIDS
    for code in (48, 74, 79, 95, 119, 120):
        assert XIDS[code].severity == "fail"
        assert XIDS[code].cause == "hardware"
    # W2: contained (XID-NOTES.md: "restart the application; reset the GPU when convenient"): a warn
    assert (XIDS[94].severity, XIDS[94].cause, XIDS[94].action) == ("warn", "hardware", "restart_app_reset_later")
    for code in (13, 31, 43):
        assert XIDS[code].severity == "info"


def test_detection_keeps_driver_errors_and_reads_kernel_logs() -> None:
    saved = next(p for p in (CORPUS / "driver-errors").iterdir() if p.name.startswith("201"))
    assert detect_kind(read_input_text(str(saved), "a saved output")) == "nvidia-smi-error"
    assert detect_kind("kernel: NVRM: Xid (PCI:0000:01:00): 13, Graphics Exception\n") == "kernel-log"
    assert detect_kind("[ 1.0] usb 1-1: new device\n") is None


def test_since_drops_older_events_but_keeps_untimed() -> None:
    snap = _load("201")
    apply_since(snap, datetime(2025, 2, 23, 16, 27), "2025-02-23 16:27")
    assert [e.time for e in snap.kernel_events] == ["Sun Feb 23 16:27:12 2025", "Sun Feb 23 16:30:13 2025"]
    assert snap.kernel_log is not None
    assert snap.kernel_log.before_since == 3
    untimed = _load("207")
    apply_since(untimed, datetime(2030, 1, 1), "2030-01-01")
    assert len(untimed.kernel_events) == 7  # no usable time: counted, never hidden
    apply_since(snap, datetime(2030, 1, 1), "2030-01-01")
    assert [f.id for f in check_xid(snap)] == ["xid.none"]


def test_parse_since() -> None:
    now = datetime(2025, 1, 2, 12, 0)
    assert parse_since("boot", now) is None
    assert parse_since("2h", now) == datetime(2025, 1, 2, 10, 0)
    assert parse_since("2025-01-01 08:00", now) == datetime(2025, 1, 1, 8, 0)
    with pytest.raises(UsageError):
        parse_since("yesterday-ish", now)


def test_live_read_falls_back_and_reports_no_permission() -> None:
    calls: list[list[str]] = []

    def denied(argv: list[str]) -> tuple[int, str, str]:
        calls.append(argv)
        if argv[0] == "dmesg":
            return 1, "", "dmesg: read kernel buffer failed: Operation not permitted\n"
        return 0, "No journal files were opened due to insufficient permissions.\n", ""

    events, read = read_live(denied)
    assert events == []
    assert read.unreadable is not None
    assert "Operation not permitted" in read.unreadable
    assert [c[0] for c in calls] == ["dmesg", "journalctl"]
    (finding,) = check_xid(Snapshot(kernel_log=read))
    assert finding.id == "xid.log-unreadable"
    assert finding.severity is Severity.UNKNOWN

    def journal(argv: list[str]) -> tuple[int, str, str]:
        if argv[0] == "dmesg":
            return 1, "", "dmesg: read kernel buffer failed: Operation not permitted\n"
        return (
            0,
            "2025-02-23T16:24:18+0000 host kernel: NVRM: Xid (PCI:0000:9b:00): 79, GPU has fallen off the bus.\n",
            "",
        )

    events, read = read_live(journal)
    assert read.method == "journalctl -k"
    assert [e.code for e in events] == [79]


def test_events_merge_with_other_files_deduplicated(tmp_path: Path) -> None:
    log = next(LOGS.glob("202*"))
    copy = tmp_path / "again.txt"
    copy.write_text(log.read_text())
    snap = load_files([str(log), str(copy)])
    assert len(snap.kernel_events) == 4  # the same lines twice: read once
    assert snap.source.kind == "combined"


def test_snapshot_json_unchanged_without_events() -> None:
    assert "kernel_events" not in Snapshot().model_dump(by_alias=True)
    assert "kernel_log" not in Snapshot().model_dump(by_alias=True)


# --- wordings of real logs that were misread (fixtures in kernel-log-extra, sources in its README) ---


def _extra(prefix: str) -> Path:
    return next(EXTRA.glob(prefix + "-*"))


def test_aer_lines_with_the_aer_prefix_of_kernels_4_19_to_5x() -> None:
    """R1: "pcieport 0000:00:1c.0: AER: PCIe Bus Error: ..." was refused (012) or skipped (008)."""
    text = read_input_text(str(_extra("012")), "a saved output")
    assert detect_kind(text) == "kernel-log"
    (event,) = parse_kernel_events(text)
    assert (event.kind, event.pci_bus_id, event.device, event.time) == (
        "aer",
        "0000:00:1c.0",
        "pcieport 0000:00:1c.0",
        None,
    )
    assert event.message == "PCIe Bus Error: severity=Corrected, type=Data Link Layer, (Transmitter ID)"
    aer = [e for e in load_files([str(_extra("008"))]).kernel_events if e.kind == "aer"]
    assert [(e.pci_bus_id, e.time) for e in aer] == [("0000:00:01.1", "1086487.613071")]


@pytest.mark.parametrize(
    "line",
    [
        "[Tue Mar  4 10:00:01 2025] pcieport 0000:00:01.1: AER: PCIe Bus Error: severity=Corrected, type=Physical "
        "Layer, (Receiver ID)",  # dmesg -T
        "Mar  4 10:00:01 node7 kernel: [ 12.5] pcieport 0000:00:01.1: AER: PCIe Bus Error: severity=Corrected, "
        "type=Physical Layer, (Receiver ID)",  # syslog
    ],
    ids=["dmesg-T", "syslog"],
)
def test_aer_prefix_in_other_framings(line: str) -> None:
    (event,) = parse_kernel_events(line + "\n")
    assert (event.kind, event.pci_bus_id) == ("aer", "0000:00:01.1")
    assert event.message.startswith("PCIe Bus Error: severity=Corrected")


def test_rminitadapter_names_its_gpu_and_fails_it() -> None:
    """W4: the bus id of "NVRM: GPU 0000:0a:00.0: RmInitAdapter failed!" was lost, and doctor passed (005)."""
    snap = load_files([str(_extra("005"))])
    assert [g.pci_bus_id for g in snap.gpus] == ["0000:0a:00.0"]
    assert snap.gpu_absent_reason is None
    events = snap.kernel_events
    assert len(events) == 6
    assert {(e.kind, e.pci_bus_id) for e in events} == {("nvrm", "0000:0a:00.0")}
    assert events[0].time == "Dec  2 11:49:53"
    assert events[0].message == "GPU 0000:0a:00.0: RmInitAdapter failed! (0x24:0x72:1568)"
    (finding,) = check_xid(snap)
    assert (finding.id, finding.severity, finding.gpu, finding.subject) == (
        "xid.init-failed",
        Severity.FAIL,
        0,
        "GPU0",
    )
    assert "6 x GPU 0000:0a:00.0: RmInitAdapter failed! (0x24:0x72:1568)" in finding.message


@pytest.mark.parametrize(
    ("line", "bus"),
    [
        ("[  21.09] NVRM: GPU at PCI:0000:0a:00: RmInitAdapter failed! (0x22:0x56:894)", "PCI:0000:0a:00"),
        ("Dec  2 11:49:53 w4 kernel: NVRM: GPU 0000:0a:00.0 RmInitAdapter failed! (0x24:0x72:1568)", "0000:0a:00.0"),
        ("[Mon Dec  2 11:49:53 2024] NVRM: RmInitAdapter failed! (0x26:0x56:1474)", None),
    ],
    ids=["gpu-at-pci", "journal-no-colon", "dmesg-T-no-bus"],
)
def test_rminitadapter_spellings(line: str, bus: str | None) -> None:
    (event,) = parse_kernel_events(line + "\n")
    assert (event.kind, event.pci_bus_id) == ("nvrm", bus)
    (finding,) = check_xid(Snapshot(kernel_events=[event]))
    assert (finding.id, finding.severity) == ("xid.init-failed", Severity.FAIL)


def test_gsp_timeouts_without_an_xid_line_fail_naming_the_drivers_ordinal() -> None:
    """R2: 016 and 017 hold GSP heartbeat timeouts and no Xid line; both were refused as not a kernel log."""
    for prefix, ordinal, count in (("016", "GPU0", 2), ("017", "GPU6", 3)):
        text = read_input_text(str(_extra(prefix)), "a saved output")
        assert detect_kind(text) == "kernel-log"
        events = parse_kernel_events(text)
        assert [(e.kind, e.device, e.pci_bus_id) for e in events] == [("nvrm", ordinal, None)] * count
        (finding,) = check_xid(load_files([str(_extra(prefix))]))
        assert (finding.id, finding.severity) == ("xid.gsp-timeout", Severity.FAIL)
        assert f"the driver's {ordinal} (its own numbering, not necessarily nvidia-smi's index" in finding.message
        assert "reset the GPU" in (finding.advice or "")
    last = parse_kernel_events(read_input_text(str(_extra("017")), "a saved output"))[-1]
    assert last.time == "84.300488"
    assert last.message.startswith("GPU6 _kgspLogRpcTimeout: ****")
    assert "GSP Timeout" in last.message
    first = parse_kernel_events(read_input_text(str(_extra("016")), "a saved output"))[-1]
    assert (first.time, first.message) == ("Mar 21 21:42:01", "GPU0 _kgspRpcRecvPoll: GSP RM heartbeat timed out")


def test_xid_119_and_its_gsp_lines_are_one_fault() -> None:
    """001: the `_kgspLogXid119` GSP Timeout banner and its Xid 119; a dmesg -T log where the Xid names GPU4 and a
    heartbeat line of GPU4 (the same fault) and one of GPU5 (another GPU, no Xid)."""
    findings = check_xid(load_files([str(_extra("001"))]))
    assert [(f.id, f.severity) for f in findings] == [("xid.hardware", Severity.FAIL)]
    assert "1 x Xid 119" in findings[0].message
    text = (
        "[Sun Feb 23 16:24:17 2025] NVRM: GPU4 _kgspRpcRecvPoll: GSP RM heartbeat timed out\n"
        "[Sun Feb 23 16:24:18 2025] NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after "
        "6s of waiting for RPC response from GPU4 GSP! Expected function 103 (GSP_RM_ALLOC) (0x2081 0x4).\n"
        "[Sun Feb 23 16:24:19 2025] NVRM: GPU5 _kgspRpcRecvPoll: GSP RM heartbeat timed out\n"
    )
    ids = [(f.id, f.severity) for f in check_xid(Snapshot(kernel_events=parse_kernel_events(text)))]
    assert ids == [("xid.hardware", Severity.FAIL), ("xid.gsp-timeout", Severity.FAIL)]
    gsp = [f for f in check_xid(Snapshot(kernel_events=parse_kernel_events(text))) if f.id == "xid.gsp-timeout"]
    assert "GPU5" in gsp[0].message
    assert "GPU4" not in gsp[0].message


def test_a_healthy_kernel_log_reads_as_no_xid_with_its_driver_version() -> None:
    """R3: 018 holds only the driver's loading lines; it was refused. Now: a kernel log, no events, xid.none."""
    path = _extra("018")
    text = read_input_text(str(path), "a saved output")
    assert detect_kind(text) == "kernel-log"
    snap = load_files([str(path)])
    assert snap.kernel_events == []
    assert snap.software.driver_version == "595.58.03"
    assert [(f.id, f.severity) for f in check_xid(snap)] == [("xid.none", Severity.OK)]
    assert load_files([str(_extra("017"))]).software.driver_version == "595.71.05"


@pytest.mark.parametrize(
    "text",
    [
        "Jun 30 11:07:05 node7 kernel: NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 "
        "19:39:15 UTC 2024\n",  # syslog
        "2025-06-30T11:07:05+0000 node7 kernel: nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver for UNIX "
        "platforms  535.183.01\n",  # journalctl -o short-iso
        "[Mon Jun 30 11:07:05 2025] nvidia-nvlink: Nvlink Core is being initialized, major device number 234\n",
        "[    4.1] nvidia-uvm: Loaded the UVM driver, major device number 510.\n",
    ],
    ids=["syslog-loading", "journal-modeset", "dmesg-T-nvlink", "dmesg-uvm"],
)
def test_driver_lines_make_a_kernel_log(text: str) -> None:
    assert detect_kind("[    1.0] usb 1-1: new high-speed USB device\n" + text) == "kernel-log"
    # other outputs that quote the driver further on in a line are not kernel logs
    for other in (
        "host1:1234:1240 [0] NCCL INFO cudaDriverVersion 12040, NVRM: loading NVIDIA UNIX x86_64 Kernel Module\n",
        "[2025-06-30 11:07:05] [INFO] [tid 12] Fabric Manager version 535.183.01 is running; NVRM: ok\n",
        "GPU 00000000:3B:00.0\n    Driver Model\n        Current : N/A\n",
    ):
        assert detect_kind(other) != "kernel-log"


def test_dmesg_H_relative_times_are_kept_as_printed() -> None:
    """M4: `dmesg -H` prints "[  +0.000004]" (time since the line before): kept as printed, never placed in time."""
    snap = load_files([str(_extra("004"))])
    (event,) = snap.kernel_events
    assert (event.kind, event.pci_bus_id, event.time) == ("aer", "0000:00:03.0", "+0.000004")
    apply_since(snap, datetime(2030, 1, 1), "2030-01-01")
    assert len(snap.kernel_events) == 1  # a relative time cannot be placed: counted, never hidden
    (minute,) = parse_kernel_events(
        "[Jan21 10:31] nvidia 0000:3b:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)\n"
    )
    assert minute.time == "Jan21 10:31"
