"""Issue #11 items 3-4: recovery action, NVLink fabric, NVLink error counters, Fabric Manager."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigcheck.checks.doctor import run_checks
from rigcheck.checks.doctor.fabric import check_fabric
from rigcheck.errors import ParseError
from rigcheck.model import Severity, Snapshot
from rigcheck.model.snapshot import FabricManager, Gpu, Missing, NvLink
from rigcheck.probe.fabric_manager import fabric_manager_from_text, parse_fabric_manager, read_fabric_manager_live
from rigcheck.readers.from_file import detect_kind, load_file, load_files
from rigcheck.readers.smi.nvlink_errors import parse_nvlink_errors
from rigcheck.readers.smi.query_text import parse_query_text
from rigcheck.readers.smi.query_xml import parse_query_xml

CORPUS = Path(__file__).parent.parent / "fixtures" / "corpus"
FM_FAILED = CORPUS / "fabricmanager/201-2xa40-journal-nv-warn-nothing-to-do-failure.txt"
FM_LOG = CORPUS / "fabricmanager/202-fabricmanager-log-running-multicast-2025.txt"
FM_802 = CORPUS / "fabricmanager/203-hgx-vm-devicequery-cuda-802-system-not-yet-initialized.txt"


def _ids(snapshot: Snapshot) -> dict[str, Severity]:
    return {f.id: f.severity for f in check_fabric(snapshot)}


def _q(fabric: str, recovery: str = "None", name: str = "NVIDIA H100 80GB HBM3") -> str:
    """A `-q` GPU section in the R570 layout with the given Fabric block."""
    return (
        "==============NVSMI LOG==============\n\nDriver Version : 570.86.15\nAttached GPUs : 1\n"
        f"GPU 00000000:18:00.0\n    Product Name                          : {name}\n"
        f"    GPU Recovery Action                   : {recovery}\n    Fabric\n{fabric}    Processes : None\n"
    )


def test_fabric_block_read_as_printed() -> None:
    gpu = load_file(str(CORPUS / "smi-q-fabric/201-mnnvl-fabric-completed-success-clique2-health-unhealthy-grep.txt"))
    g = gpu.gpus[0]
    assert (g.fabric_state, g.fabric_status, g.fabric_clique_id) == ("Completed", "Success", 2)
    assert g.fabric_cluster_uuid == "dc6e40c4-d722-4357-9ba6-5291dd461278"
    assert g.fabric_health == "Unhealthy"
    assert g.missing["recovery_action"] is Missing.NOT_IN_SOURCE
    assert _ids(gpu)["fabric.unhealthy"] is Severity.FAIL


def test_older_fabric_block_is_na_not_a_finding() -> None:
    snap = load_file(str(CORPUS / "smi-q-fabric/202-laptop-ampere-q-fragment-fabric-na.txt"))
    g = snap.gpus[0]
    assert g.missing["fabric_state"] is Missing.REPORTED_NA
    assert g.missing["fabric_clique_id"] is Missing.NOT_IN_SOURCE  # that layout prints no CliqueId line
    assert _ids(snap) == {}


def test_xml_recovery_and_fabric() -> None:
    snap = parse_query_xml((CORPUS / "h100-vm/q.xml").read_text())
    g = snap.gpus[0]
    assert g.recovery_action == "None"
    assert g.missing["fabric_state"] is Missing.REPORTED_NA
    assert g.missing["fabric_cluster_uuid"] is Missing.REPORTED_NA


def test_completed_with_error_status_fails() -> None:
    fabric = (
        "        State                             : Completed\n"
        "        Status                            : Insufficient Resources\n"
        "        CliqueId                          : 0\n"
        "        ClusterUUID                       : 00000000-0000-0000-0000-000000000000\n"
    )
    snap = parse_query_text(_q(fabric))
    assert snap.gpus[0].fabric_status == "Insufficient Resources"
    assert _ids(snap) == {"fabric.registration-error": Severity.FAIL}


def test_clique_zero_fails_only_on_multi_node_parts() -> None:
    fabric = (
        "        State : Completed\n        Status : Success\n        CliqueId : 0\n"
        "        ClusterUUID : 00000000-0000-0000-0000-000000000000\n"
        "        Health\n            Summary : Healthy\n"
    )
    assert _ids(parse_query_text(_q(fabric, name="NVIDIA GB200")))["fabric.clique-zero"] is Severity.FAIL
    assert _ids(parse_query_text(_q(fabric))) == {"fabric.ok": Severity.OK}


@pytest.mark.parametrize(("action", "fails"), [("Reset", True), ("Drain and Reset", True), ("None", False)])
def test_recovery_action_other_than_none_fails(action: str, fails: bool) -> None:
    snap = parse_query_text(_q("        State : N/A\n        Status : N/A\n", recovery=action))
    assert snap.gpus[0].recovery_action == action
    assert ("fabric.recovery-action" in _ids(snap)) is fails


EXTRA = Path(__file__).parent.parent / "fixtures" / "fabricmanager-extra"


@pytest.mark.parametrize("state", ["In Progress", "Not Started"])
def test_not_registered_fails_with_wait_and_recheck(state: str) -> None:
    """Not ready is not healthy: CUDA answers 802 until registration completes; the action is to wait."""
    snap = parse_query_text(_q(f"        State : {state}\n        Status : N/A\n"))
    findings = check_fabric(snap)
    assert [(f.id, f.severity) for f in findings] == [("fabric.not-registered", Severity.FAIL)]
    assert "802" in findings[0].message
    assert findings[0].advice is not None
    assert findings[0].advice.startswith("wait a minute and re-check")


def test_real_fabric_block_in_progress_exits_1() -> None:
    """gpu-operator #2511: an R580 Fabric block still In Progress (was a warning, exit 0)."""
    snap = load_file(str(EXTRA / "gpuop2511-q-fabric-in-progress-580.txt"))
    assert snap.gpus[0].fabric_state == "In Progress"
    findings = run_checks(snap)
    bad = [f for f in findings if f.severity is Severity.FAIL]
    assert [f.id for f in bad] == ["fabric.not-registered"]
    assert bad[0].advice is not None
    assert "re-check" in bad[0].advice
    assert "restart" not in bad[0].message  # the reason says what is wrong, the advice what to do


def test_systemd_job_failed_line_is_a_failed_service() -> None:
    """gpu-operator #356: `service nvidia-fabricmanager start` printing "Job for ... failed" (was info, exit 0)."""
    text = (EXTRA / "gpuop356-service-start-job-failed.txt").read_text(encoding="utf-8")
    fm = fabric_manager_from_text(text)
    assert fm is not None
    assert fm.state == "failed"
    findings = run_checks(load_file(str(EXTRA / "gpuop356-service-start-job-failed.txt")))
    failed = [f for f in findings if f.severity is Severity.FAIL]
    assert [f.id for f in failed] == ["fabric.manager-failed"]
    assert failed[0].advice is not None
    assert failed[0].advice.startswith("restart the service")
    newer = "Jan 05 14:44:41 h systemd[1]: Failed to start nvidia-fabricmanager.service - NVIDIA fabric manager."
    fm = fabric_manager_from_text(newer)  # synthetic: newer systemd's wording of the same failure
    assert fm is not None
    assert fm.state == "failed"


def test_nvlink_errors_corpus() -> None:
    path = CORPUS / "nvlink-errors/201-h100-nvlink-e-18links-zero-elided.txt"
    text = path.read_text()
    assert detect_kind(text) == "nvlink-errors"
    snap = parse_nvlink_errors(text, str(path))
    links = snap.gpus[0].nvlinks or []
    assert [link.link for link in links] == [0, 1, 17]  # links 2-16 elided by the author
    assert all((lk.replay_errors, lk.recovery_errors, lk.crc_errors) == (0, 0, 0) for lk in links)
    assert links[0].missing["speed_gbps"] is Missing.NOT_IN_SOURCE
    assert any("[...]" in d.message for d in snap.diagnostics)
    assert _ids(snap) == {}


NVLINK_E = (
    "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-11111111-2222-3333-4444-555555555555)\n"
    "\t Link 0: Replay Errors: 3\n\t Link 0: Recovery Errors: 1\n"
    "\t Link 0: CRC FLIT Errors: 5\n\t Link 0: CRC Data Errors: 2\n"
    "\t Link 1: Replay Errors: 0\n\t Link 1: Recovery Errors: N/A\n\t Link 1: CRC Errors: 0\n"
    "GPU 1: NVIDIA GB300\n\t Link 0: Replay Errors: 0\n\t Link 0: Tx packets: 12\n"
)


def test_nvlink_errors_counters_and_judgement() -> None:
    snap = parse_nvlink_errors(NVLINK_E)
    a, b = snap.gpus
    link0, link1 = a.nvlinks or []
    assert (link0.replay_errors, link0.recovery_errors, link0.crc_errors) == (3, 1, 7)  # flit + data CRC
    assert link1.missing["recovery_errors"] is Missing.REPORTED_NA
    assert b.uuid is None
    assert b.name == "NVIDIA GB300"
    assert any("Tx packets" in d.message for d in snap.diagnostics)
    ids = _ids(snap)
    assert ids["fabric.nvlink-errors"] is Severity.WARN
    assert ids["fabric.nvlink-crc-errors"] is Severity.INFO


def test_nvlink_errors_bad_input() -> None:
    with pytest.raises(ParseError, match="nvlink -e"):
        parse_nvlink_errors("hello\nworld\n")
    with pytest.raises(ParseError, match="before any GPU header"):
        parse_nvlink_errors("\t Link 0: Replay Errors: 0\nGPU 0: X (UUID: GPU-1)\n")


def test_nvlink_e_and_s_merge_onto_one_link(tmp_path: Path) -> None:
    uuid = "GPU-11111111-2222-3333-4444-555555555555"
    status = tmp_path / "s.txt"
    status.write_text(f"GPU 0: NVIDIA A100-SXM4-80GB (UUID: {uuid})\n\t Link 0: 25 GB/s\n\t Link 1: 25 GB/s\n")
    errors = tmp_path / "e.txt"
    errors.write_text(NVLINK_E.split("GPU 1", maxsplit=1)[0])
    snap = load_files([str(status), str(errors)])
    link0 = (snap.gpus[0].nvlinks or [])[0]
    assert (link0.speed_gbps, link0.replay_errors, link0.crc_errors) == (25.0, 3, 7)


def test_fabric_manager_corpus_states() -> None:
    failed = fabric_manager_from_text(FM_FAILED.read_text())
    assert failed is not None
    assert failed.state == "failed"
    assert any("NV_WARN_NOTHING_TO_DO" in e for e in failed.errors)
    log = fabric_manager_from_text(FM_LOG.read_text())
    assert log is not None
    assert log.state == "running"
    assert log.errors == [FM_LOG.read_text().splitlines()[-1].strip()] or "non-fatal error 12028" in log.errors[-1]
    ready = fabric_manager_from_text(FM_802.read_text())
    assert ready is not None
    assert ready.state == "not_initialized"


@pytest.mark.parametrize(
    ("path", "finding", "severity"),
    [
        (FM_FAILED, "fabric.manager-failed", Severity.WARN),  # NOTHING_TO_DO, no GPU read: a PCIe box, likely
        (FM_802, "fabric.not-initialized", Severity.FAIL),
        (FM_LOG, "fabric.manager-errors", Severity.INFO),
    ],
)
def test_doctor_from_fabric_manager_text(path: Path, finding: str, severity: Severity) -> None:
    snap = load_file(str(path))
    assert snap.source.kind == "fabric-manager"
    findings = run_checks(snap)
    assert {f.id: f.severity for f in findings}[finding] is severity
    failed = [f.id for f in findings if f.severity is Severity.FAIL]
    # A healthy Fabric Manager log alone fails nothing (no "no GPU" either: a log does not list GPUs).
    assert failed == ([finding] if severity is Severity.FAIL else [])


FM_STOPPED = (
    Path(__file__).parent.parent / "fixtures" / "fabricmanager-extra" / "8xh20-journal-started-then-stopped.txt"
)


def test_a_journal_that_ends_with_the_service_stopped_is_inactive() -> None:
    """systemd's newer wording names the unit, the start script quotes the name: the last word is "Stopped"."""
    text = FM_STOPPED.read_text(encoding="utf-8")
    fm = fabric_manager_from_text(text)
    assert fm is not None
    assert fm.state == "inactive"  # it was "running", from the earlier "Successfully configured ..." line
    assert fm.detail is not None
    assert fm.detail.endswith('Stopped "Nvidia Fabric Manager"')
    started = text[: text.index("Stopping nvidia-fabricmanager.service")].rsplit("\n", 1)[0]
    fm = fabric_manager_from_text(started)
    assert fm is not None
    assert fm.state == "running"
    assert fm.detail is not None
    assert fm.detail.endswith("Started nvidia-fabricmanager.service - NVIDIA fabric manager service.")
    deactivated = "Jan 05 15:32:17 h systemd[1]: nvidia-fabricmanager.service: Deactivated successfully.\n"
    fm = fabric_manager_from_text(started + "\n" + deactivated)
    assert fm is not None
    assert fm.state == "inactive"


def test_systemctl_status_text() -> None:
    running = "● nvidia-fabricmanager.service - NVIDIA fabric manager service\n   Active: active (running) since x\n"
    fm = fabric_manager_from_text(running)
    assert fm is not None
    assert fm.state == "running"
    dead = running.replace("active (running)", "failed (Result: exit-code)")
    fm = fabric_manager_from_text(dead)
    assert fm is not None
    assert fm.state == "failed"
    with pytest.raises(ParseError, match="no Fabric Manager state"):
        parse_fabric_manager("nothing here\n")


def test_fabric_manager_failed_on_pcie_cards_is_a_warning() -> None:
    fm = fabric_manager_from_text(FM_FAILED.read_text())
    gpu = Gpu(index=0, name="NVIDIA A40")
    snap = Snapshot(gpus=[gpu], fabric_manager=fm)
    assert _ids(snap)["fabric.manager-failed"] is Severity.WARN
    snap.gpus[0].name = "NVIDIA H100 80GB HBM3"
    assert _ids(snap)["fabric.manager-failed"] is Severity.FAIL
    # A link to an NVSwitch says the switches are there, whatever the catalog says.
    switch = Gpu(index=0, name="NVIDIA A40", nvlinks=[NvLink(link=0, remote_device_type="switch")])
    assert (
        _ids(Snapshot(gpus=[switch], fabric_manager=FabricManager(state="inactive")))["fabric.manager-failed"]
        is Severity.FAIL
    )


def test_live_read_without_nvswitch_is_none(tmp_path: Path) -> None:
    assert read_fabric_manager_live(tmp_path / "absent") is None
    assert read_fabric_manager_live(tmp_path) is None  # the directory exists, but lists no switch


def test_limited_capacity_is_degraded() -> None:
    fabric = "        State : Completed\n        Status : Success\n        CliqueId : 4\n        Health\n"
    fabric += "            Summary : Limited Capacity\n"
    assert _ids(parse_query_text(_q(fabric))) == {"fabric.degraded": Severity.WARN}


def test_nvlink_e_count_on_a_cut_last_line_is_truncated_never_smaller() -> None:
    """ "CRC Errors: 1" with no line end may be the start of 12: null with its reason and a note, as -q does."""
    from rigcheck.model.snapshot import INPUT_ENDS_EARLY, Missing
    from rigcheck.readers.smi.nvlink_errors import parse_nvlink_errors

    head = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-abcdefab-cdef-abdc-abcd-abababababab)\n"
    body = "         Link 0: Replay Errors: 12\n         Link 0: CRC Errors: 1"
    cut = parse_nvlink_errors(head + body)
    (link,) = cut.gpus[0].nvlinks or []
    assert link.replay_errors == 12
    assert link.crc_errors is None
    assert link.missing["crc_errors"] is Missing.TRUNCATED
    assert any(d.message.startswith(INPUT_ENDS_EARLY) for d in cut.diagnostics)
    whole = parse_nvlink_errors(head + body + "\n")
    assert (whole.gpus[0].nvlinks or [])[0].crc_errors == 1
    assert not whole.diagnostics


def test_nvlink_e_counters_not_held_are_one_line_each_naming_every_nonzero_link() -> None:
    """Hopper drivers print ECC, Data Tx and Data Rx error counters too: one "line not read" per link and counter
    (3 x 18 x 8 lines on an HGX) became one line per counter, and a count that is not 0 is named, never dropped."""
    counters = ("Replay Errors", "Recovery Errors", "CRC Flit Errors", "CRC Data Errors", "ECC Errors")
    lines: list[str] = []
    for gpu in range(2):
        lines.append(f"GPU {gpu}: NVIDIA H100 80GB HBM3 (UUID: GPU-{gpu}aaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee)")
        for link in range(18):
            lines += [f"\t Link {link}: {name}: 0" for name in counters]
            lines.append(f"\t Link {link}: Data Tx Errors: 0")
            lines.append(f"\t Link {link}: Data Rx Errors: {7 if (gpu, link) == (1, 3) else 0}")
    snap = parse_nvlink_errors("\n".join(lines) + "\n")
    assert [d.message for d in snap.diagnostics] == [
        "'ECC Errors' counters of 36 link(s) are not held in the snapshot: all 0",
        "'Data Tx Errors' counters of 36 link(s) are not held in the snapshot: all 0",
        "'Data Rx Errors' counters of 36 link(s) are not held in the snapshot: not 0 on GPU1 link 3: 7",
    ]
    assert [len(g.nvlinks or []) for g in snap.gpus] == [18, 18]
    assert all(link.replay_errors == 0 for g in snap.gpus for link in g.nvlinks or [])


def test_nothing_to_do_on_an_nvswitch_baseboard_still_fails() -> None:
    """The same NV_WARN_NOTHING_TO_DO beside 8 SXM H100s read from the machine: their NVSwitches are not seen, a
    failure; with the log alone (no GPU read) it is a warning that says both readings."""
    log_only = load_file(str(FM_FAILED))
    board = Snapshot.model_validate_json(Path("tests/fixtures/snapshots/healthy-8x-h100.json").read_text())
    with_gpus = board.model_copy(update={"fabric_manager": log_only.fabric_manager})
    got = {f.id: f for f in run_checks(with_gpus)}["fabric.manager-failed"]
    assert got.severity is Severity.FAIL
    alone = {f.id: f for f in run_checks(log_only)}["fabric.manager-failed"]
    assert alone.severity is Severity.WARN
    assert "a failure on an NVSwitch baseboard" in alone.message
