"""Driver-side health read live through NVML (fake NVML scenarios) and judged by checks/doctor/fabric.py: the recovery
action, the fabric, NVLink error counters, InfoROM validity, processes, and Fabric Manager wired into the live
probe where NVSwitches are present."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from rigcheck.checks.doctor import run_checks
from rigcheck.checks.doctor.fabric import check_fabric
from rigcheck.cli.exits import exit_code_for
from rigcheck.model import Severity, snapshot_from_json, snapshot_to_json
from rigcheck.model.snapshot import Missing
from rigcheck.probe.fabric_manager import read_fabric_manager_live
from rigcheck.probe.live import probe_machine
from rigcheck.probe.nvml import probe_nvml
from tests.support.fakenvml import SCENARIOS, FakeNvml, healthy_8x_h100_nvlink
from tests.support.fakenvml_parts import FakeFabric, FakeProcess

SYSFS = Path(__file__).parent.parent / "fixtures" / "sysfs" / "two-gpu"
CLUSTER = bytes.fromhex("dc6e40c4d72243579ba65291dd461278")


def test_healthy_board_reads_fabric_completed_success() -> None:
    snap = probe_nvml(healthy_8x_h100_nvlink(), sysfs_root=None)
    g = snap.gpus[0]
    assert (g.recovery_action, g.fabric_state, g.fabric_status) == ("None", "Completed", "Success")
    assert (g.fabric_clique_id, g.fabric_cluster_uuid, g.fabric_health) == (
        0,
        "00000000-0000-0000-0000-000000000000",
        "Healthy",
    )
    assert g.inforom_valid is True
    assert g.processes == []
    assert g.nvlinks is not None
    assert {(link.replay_errors, link.recovery_errors, link.crc_errors) for link in g.nvlinks} == {(0, 0, 0)}
    assert snap.missing_functions == []
    findings = check_fabric(snap)
    assert [f.id for f in findings if f.gpu == 0] == ["fabric.ok"]
    assert all(f.severity is Severity.OK for f in findings)


def test_recovery_action_reset_fails_the_node() -> None:
    snap = probe_machine(SCENARIOS["hgx_recovery_reset"](), sysfs_root=SYSFS)
    assert snap.gpus[3].recovery_action == "Reset"
    assert snap.gpus[2].recovery_action == "None"
    findings = run_checks(snap)
    bad = [f for f in findings if f.id == "fabric.recovery-action"]
    assert [(f.gpu, f.severity) for f in bad] == [(3, Severity.FAIL)]
    assert exit_code_for(findings) == 1


@pytest.mark.parametrize(
    ("code", "words"), [(1, "Reset"), (2, "Reboot"), (3, "Drain P2P"), (4, "Drain and Reset"), (99, "unknown (99)")]
)
def test_recovery_action_words(code: int, words: str) -> None:
    lib = healthy_8x_h100_nvlink()
    lib.gpus[0].recovery_action = code
    g = probe_nvml(lib, sysfs_root=None).gpus[0]
    assert g.recovery_action == words
    assert [f.severity for f in check_fabric(probe_nvml(lib, sysfs_root=None)) if f.id == "fabric.recovery-action"]


def test_replay_errors_read_per_link_and_warn() -> None:
    snap = probe_machine(SCENARIOS["nvlink_replay_errors"](), sysfs_root=SYSFS)
    assert snapshot_from_json(snapshot_to_json(snap)) == snap  # before the checks: checks/doctor/p2p.py touches it
    links = snap.gpus[2].nvlinks
    assert links is not None
    assert (links[4].replay_errors, links[4].recovery_errors, links[4].crc_errors) == (12, 0, 0)
    # link 5's part keeps only the flit CRC counter: the sum is the flit count
    assert (links[5].replay_errors, links[5].recovery_errors, links[5].crc_errors) == (3, 1, 40)
    findings = [f for f in run_checks(snap) if f.gpu == 2]
    errors = [f for f in findings if f.id == "fabric.nvlink-errors"]
    assert len(errors) == 1
    assert errors[0].severity is Severity.WARN
    assert "link 4: 12 replay" in errors[0].message
    assert "link 5: 3 replay, 1 recovery" in errors[0].message
    assert [f.severity for f in findings if f.id == "fabric.nvlink-crc-errors"] == [Severity.INFO]


def test_fabric_error_status_in_nvml_words() -> None:
    lib = healthy_8x_h100_nvlink()
    lib.gpus[1].fabric = FakeFabric(status=23)  # NVML_ERROR_INSUFFICIENT_RESOURCES
    snap = probe_nvml(lib, sysfs_root=None)
    assert snap.gpus[1].fabric_status == "Insufficient Resources"
    assert [(f.gpu, f.severity) for f in check_fabric(snap) if f.id == "fabric.registration-error"] == [
        (1, Severity.FAIL)
    ]


def test_fabric_in_progress_leaves_the_rest_unread() -> None:
    lib = healthy_8x_h100_nvlink()
    lib.gpus[0].fabric = FakeFabric(state=2, status=0)
    g = probe_nvml(lib, sysfs_root=None).gpus[0]
    assert g.fabric_state == "In Progress"
    assert g.fabric_status is None
    assert g.missing["fabric_status"] is Missing.NOT_SUPPORTED
    assert g.missing["fabric_clique_id"] is Missing.NOT_SUPPORTED


def test_multi_node_clique_and_cluster_uuid() -> None:
    lib = healthy_8x_h100_nvlink()
    for gpu in lib.gpus:
        gpu.fabric = FakeFabric(clique=0, cluster_uuid=CLUSTER)
    snap = probe_nvml(lib, sysfs_root=None)
    assert snap.gpus[0].fabric_cluster_uuid == "dc6e40c4-d722-4357-9ba6-5291dd461278"
    assert {f.id for f in check_fabric(snap) if f.severity is Severity.FAIL} == {"fabric.clique-zero"}


def test_v2_only_driver_falls_back_and_health_is_driver_too_old() -> None:
    lib = healthy_8x_h100_nvlink()
    for gpu in lib.gpus:
        gpu.fabric = FakeFabric(clique=3, health_summary=None)
    snap = probe_nvml(lib, sysfs_root=None)
    g = snap.gpus[0]
    assert (g.fabric_state, g.fabric_status, g.fabric_clique_id) == ("Completed", "Success", 3)
    assert g.fabric_health is None
    assert g.missing["fabric_health"] is Missing.DRIVER_TOO_OLD
    # the v3 read is tried once, then remembered as absent
    assert snap.missing_functions == ["nvmlDeviceGetGpuFabricInfoV_v3"]
    assert lib.count("nvmlDeviceGetGpuFabricInfoV_v3") == 1


def test_old_driver_without_the_calls() -> None:
    lib = SCENARIOS["old_driver_missing_calls"]()
    g = probe_nvml(lib, sysfs_root=None).gpus[0]
    for field in ("fabric_state", "fabric_status", "fabric_clique_id", "fabric_cluster_uuid", "fabric_health"):
        assert g.missing[field] is Missing.DRIVER_TOO_OLD, field
    assert g.missing["recovery_action"] is Missing.NOT_SUPPORTED  # the field id answers NotSupported
    assert g.processes == []  # read through the _v2 symbol
    assert lib.count("nvmlDeviceGetComputeRunningProcesses_v2") == 2


def test_pcie_card_fabric_not_supported() -> None:
    g = probe_nvml(SCENARIOS["pcie_sys_no_p2p"](), sysfs_root=None).gpus[0]
    assert g.fabric_state is None
    assert g.missing["fabric_state"] is Missing.NOT_SUPPORTED
    assert g.nvlinks == [] or g.missing.get("nvlinks") is Missing.NOT_SUPPORTED


def test_corrupt_inforom_and_processes() -> None:
    snap = probe_machine(SCENARIOS["busy_node_corrupt_inforom"](), sysfs_root=SYSFS)
    assert snapshot_from_json(snapshot_to_json(snap)) == snap
    g = snap.gpus[0]
    assert g.inforom_valid is False
    assert g.processes is not None
    assert [(p.pid, p.used_memory_mib) for p in g.processes] == [(4242, 30 * 1024.0), (4243, None)]
    assert g.processes[1].missing["used_memory_mib"] is Missing.NOT_SUPPORTED
    assert not [d for d in snap.diagnostics if "Inforom" in d.message]  # the answer, not a failed read
    findings = {f.id: f for f in run_checks(snap)}
    assert findings["fabric.inforom-invalid"].severity is Severity.WARN
    procs = findings["fabric.gpu-processes"]
    assert procs.severity is Severity.INFO
    assert "pid 4242 (30720 MiB)" in procs.message


def test_process_name_from_proc(tmp_path: Path) -> None:
    (tmp_path / "proc" / "4242").mkdir(parents=True)
    (tmp_path / "proc" / "4242" / "comm").write_text("python3\n")
    lib = FakeNvml([replace(SCENARIOS["busy_node_corrupt_inforom"]().gpus[0], processes=[FakeProcess(4242, 2**30)])])
    g = probe_nvml(lib, sysfs_root=tmp_path).gpus[0]
    assert g.processes is not None
    assert g.processes[0].name == "python3"
    assert (
        "python3 4242 (1024 MiB)"
        in {f.id: f for f in check_fabric(probe_nvml(lib, sysfs_root=tmp_path))}["fabric.gpu-processes"].message
    )


# --- Fabric Manager, live ---------------------------------------------------------------------------------------
def _fake_systemctl(tmp_path: Path, answer: str) -> str:
    script = tmp_path / "systemctl"
    script.write_text(f"#!/bin/sh\necho {answer}\n[ {answer} = active ]\n")
    script.chmod(0o755)
    return str(script)


def _nvswitch_root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    shutil.copytree(SYSFS, root, symlinks=True)
    devices = root / "proc" / "driver" / "nvidia-nvswitch" / "devices"
    devices.mkdir(parents=True)
    for bus in ("0000:05:00.0", "0000:06:00.0"):
        (devices / bus).write_text("")
    return root


@pytest.mark.parametrize(("answer", "state"), [("active", "running"), ("failed", "failed"), ("inactive", "inactive")])
def test_fabric_manager_live_states(tmp_path: Path, answer: str, state: str) -> None:
    root = _nvswitch_root(tmp_path)
    fm = read_fabric_manager_live(root / "proc/driver/nvidia-nvswitch/devices", _fake_systemctl(tmp_path, answer))
    assert fm is not None
    assert (fm.state, fm.nvswitches) == (state, 2)
    assert fm.detail == f"systemctl is-active nvidia-fabricmanager: {answer}"


def test_probe_machine_reads_fabric_manager_only_with_nvswitches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = _fake_systemctl(tmp_path, "failed")
    monkeypatch.setattr("rigcheck.probe.fabric_manager.shutil.which", lambda name: fake)
    assert probe_machine(healthy_8x_h100_nvlink(), sysfs_root=SYSFS).fabric_manager is None
    snap = probe_machine(healthy_8x_h100_nvlink(), sysfs_root=_nvswitch_root(tmp_path))
    assert snap.fabric_manager is not None
    assert snap.fabric_manager.state == "failed"
    failed = [f for f in run_checks(snap) if f.id == "fabric.manager-failed"]
    assert [f.severity for f in failed] == [Severity.FAIL]
    assert exit_code_for(run_checks(snap)) == 1
