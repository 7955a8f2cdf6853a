"""The whole doctor pipeline on every fake-NVML scenario: probe -> checks -> every report format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from rigcheck.checks.doctor import CHECKS, run_checks
from rigcheck.cli.exits import exit_code_for
from rigcheck.model import Severity, snapshot_from_json, snapshot_to_json
from rigcheck.model.doctor import doctor_document
from rigcheck.probe.live import probe_machine
from rigcheck.report.render import Format, render
from tests.support.fakenvml import SCENARIOS

SYSFS = Path(__file__).parent.parent / "fixtures" / "sysfs" / "two-gpu"

# The finding each scenario exists to produce (id, severity), and the exit code doctor gives.
HEADLINE: dict[str, tuple[str, Severity, int]] = {
    "healthy_8x_h100_nvlink": ("topology.nvlink", Severity.INFO, 0),
    "consumer_power_not_supported": ("power.readings-unavailable", Severity.UNKNOWN, 0),
    "gpu_lost_mid_read": ("health.gpu-unreadable", Severity.FAIL, 1),
    "old_driver_missing_calls": ("power.ok", Severity.OK, 0),
    "no_permission": ("health.ok", Severity.OK, 0),
    # the tree has two NVIDIA GPUs and a loaded module: NVML's library missing there is a broken driver
    "no_driver": ("health.driver-not-loaded", Severity.FAIL, 1),
    "driver_version_mismatch": ("health.driver-version-mismatch", Severity.FAIL, 1),
    "driver_not_loaded": ("health.driver-not-loaded", Severity.FAIL, 1),
    "gpu_every_call_fails": ("health.gpu-unreadable", Severity.FAIL, 1),
    "hot_throttling": ("thermal.sw-thermal-slowdown", Severity.FAIL, 1),  # under load: a verdict
    "pcie_sys_no_p2p": ("p2p.not-supported", Severity.WARN, 1),  # GPU1 at x8 of x16 fails (pcie.width-below-max)
    "ecc_errors_pending_remap": ("health.ecc-uncorrected-volatile", Severity.FAIL, 1),
    "gpu_off_bus": ("health.gpu-unreadable", Severity.FAIL, 1),
    "hgx_recovery_reset": ("fabric.recovery-action", Severity.FAIL, 1),
    "nvlink_replay_errors": ("fabric.nvlink-errors", Severity.WARN, 0),
    "busy_node_corrupt_inforom": ("fabric.inforom-invalid", Severity.WARN, 0),
}


def test_every_scenario_has_a_headline() -> None:
    assert set(HEADLINE) == set(SCENARIOS)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario_through_the_pipeline(name: str) -> None:
    snap = probe_machine(SCENARIOS[name](), sysfs_root=SYSFS)
    # The snapshot survives the trip to JSON and back, so --from replays exactly what was probed.
    replayed = snapshot_from_json(snapshot_to_json(snap))
    assert replayed == snap
    for check in CHECKS.values():
        check(replayed)  # each check alone, not only through run_checks
    findings = run_checks(replayed)
    finding_id, severity, exit_code = HEADLINE[name]
    assert any(f.id == finding_id and f.severity is severity for f in findings), [
        (f.id, f.severity.value) for f in findings
    ]
    doc = doctor_document(replayed, findings, exit_code=exit_code_for(findings), strict=False)
    assert doc.exit_code == exit_code
    assert json.loads(str(render(doc, Format.JSON)))["exit_code"] == exit_code
    assert str(render(doc, Format.MARKDOWN)).startswith("# rigcheck doctor")
    console = Console(record=True, width=160, color_system=None)
    # Printed as the CLI prints it (cli/common.emit): off a terminal a report's line is whole, never cropped.
    console.print(render(doc, Format.TERMINAL), crop=False)
    text = console.export_text()
    assert finding_id in text or severity is Severity.OK


def test_lost_gpu_keeps_what_was_read() -> None:
    snap = probe_machine(SCENARIOS["gpu_lost_mid_read"](), sysfs_root=SYSFS)
    lost = snap.gpus[1]
    assert lost.read_error is not None
    assert lost.name is not None  # read before it fell off the bus
    unreadable = [f for f in run_checks(snap) if f.gpu == 1]
    assert [f.id for f in unreadable] == ["health.gpu-unreadable"]


@pytest.mark.parametrize("name", [n for n in SCENARIOS if n != "no_driver"])
def test_every_null_says_why(name: str) -> None:
    snap = probe_machine(SCENARIOS[name](), sysfs_root=SYSFS)
    for gpu in snap.gpus:
        if gpu.read_error is not None and gpu.name is None:
            continue  # a placeholder: its read_error is the reason for everything
        for field in type(gpu).model_fields:
            if field in {"missing", "read_error", "read_error_detail"}:
                continue
            if getattr(gpu, field) is None:
                assert field in gpu.missing, f"GPU{gpu.index}.{field} is null without a reason"
