from __future__ import annotations

from pathlib import Path

import pytest

from rigcheck.checks.doctor import run_checks
from rigcheck.checks.doctor.pcie import check_pcie
from rigcheck.cli.exits import exit_code_for
from rigcheck.model import Missing, Severity
from rigcheck.readers.from_file import load_file
from tests.support.checkutil import ids, only
from tests.support.snapshots import make_gpu, make_snapshot

CORPUS = Path(__file__).parent.parent / "fixtures" / "corpus"
SNAPSHOTS = Path(__file__).parent.parent / "fixtures" / "snapshots"


def run(**overrides: object) -> list:
    return check_pcie(make_snapshot([make_gpu(0, **overrides)]))


def test_full_link_is_ok_with_bandwidth() -> None:
    found = run()
    assert ids(found) == ["pcie.ok"]
    assert "Gen5 x16" in found[0].message
    assert "63 GB/s" in found[0].message


def test_width_below_max_fails_with_bandwidths() -> None:
    f = only(run(pcie_gen_current=4, pcie_gen_max=4, pcie_gen_gpu_max=4, pcie_width_current=8), "pcie.width-below-max")
    assert f.severity is Severity.FAIL
    assert "does not idle down" in f.message
    assert "x8 of x16" in f.message
    assert "15.8 GB/s" in f.message
    assert "31.5 GB/s" in f.message


@pytest.mark.parametrize(
    "state",
    [
        {"pstate": "P8", "clock_event_reasons_active": [], "utilization_gpu_percent": 0.0},
        {"pstate": "P0", "clock_event_reasons_active": ["idle"], "utilization_gpu_percent": 50.0},
        {"pstate": "P0", "clock_event_reasons_active": [], "utilization_gpu_percent": 9.9},
    ],
)
def test_gen_below_max_at_idle_is_no_shortfall(state: dict) -> None:
    # GPUs drop the link generation at idle (smi-xml/005: two A5000s idle at Gen1 of Gen4): not a finding; the
    # ok line costs the link at its max generation and says why it reads lower now.
    found = run(pcie_gen_current=1, **state)
    assert ids(found) == ["pcie.ok"]
    ok = found[0]
    assert ok.severity is Severity.OK
    assert ok.message.startswith("PCIe Gen5 x16 (max Gen5 x16) (~63 GB/s per direction); Gen1 now: idle power saving")


@pytest.mark.parametrize(
    "state",
    [
        {"pstate": "P0", "clock_event_reasons_active": [], "utilization_gpu_percent": 10.0},
        {"pstate": "P2", "clock_event_reasons_active": ["sw_power_cap"], "utilization_gpu_percent": 40.0},
    ],
)
def test_gen_below_max_when_busy_but_not_loaded_warns(state: dict) -> None:
    f = only(run(pcie_gen_current=1, **state), "pcie.gen-below-max")
    assert f.severity is Severity.WARN
    assert "Gen1" in f.message
    assert "Gen5" in f.message
    assert "busy" in f.message


def test_width_shortfall_at_idle_is_costed_at_the_max_generation() -> None:
    # The 3090 pair of topo/019 (x8 slots) read at idle, Gen1: the cost is x8 against x16 at Gen4, not at Gen1.
    found = run(
        pcie_gen_current=1,
        pcie_gen_max=4,
        pcie_gen_gpu_max=4,
        pcie_width_current=8,
        pstate="P8",
        clock_event_reasons_active=["idle"],
    )
    assert ids(found) == ["pcie.width-below-max"]
    f = found[0]
    assert f.severity is Severity.FAIL  # idle or not: the width does not idle down
    assert "x8 of x16: ~15.8 GB/s of ~31.5 GB/s per direction at Gen4" in f.message


@pytest.mark.parametrize(
    "path",
    [
        CORPUS / "smi-xml/001-tesla-t4-515-v11.xml",  # a Tesla T4 at Gen3 x8 of x16, idle
    ],
)
def test_real_links_below_the_slot_width_exit_1(path: Path) -> None:
    """A real machine whose link trained at x8 of x16: it warned, exit 0; the host bandwidth is halved."""
    snap = load_file(str(path))
    findings = run_checks(snap)
    below = [f for f in findings if f.id == "pcie.width-below-max"]
    assert below
    assert all(f.severity is Severity.FAIL for f in below)
    assert exit_code_for(findings) == 1


def test_gen_below_max_under_load_fails() -> None:
    """Synthetic: a GPU at 100% utilization whose link reads Gen3 of Gen5: idle downclocking does not explain it."""
    found = run(pcie_gen_current=3, utilization_gpu_percent=100.0, power_draw_w=650.0, clock_event_reasons_active=[])
    f = only(found, "pcie.gen-below-max")
    assert f.severity is Severity.FAIL
    assert "under load" in f.message
    assert "reseat" in (f.advice or "")


def test_gen_below_max_loaded_by_power_alone_fails() -> None:
    found = run(
        pcie_gen_current=4, utilization_gpu_percent=None, power_draw_w=600.0, pstate="P0", clock_event_reasons_active=[]
    )
    assert only(found, "pcie.gen-below-max").severity is Severity.FAIL


def test_gen_below_max_unknown_idleness_is_info() -> None:
    found = run(pcie_gen_current=3, pstate=None, clock_event_reasons_active=None, utilization_gpu_percent=None)
    assert only(found, "pcie.gen-below-max").severity is Severity.INFO


def test_slot_limits_gen() -> None:
    f = only(run(pcie_gen_current=4, pcie_gen_max=4, pcie_gen_gpu_max=5), "pcie.slot-limits-gen")
    assert f.severity is Severity.INFO
    assert "Gen4" in f.message
    assert "Gen5" in f.message


@pytest.mark.parametrize(
    ("count", "severity"), [(0, None), (1, Severity.INFO), (100, Severity.INFO), (101, Severity.WARN)]
)
def test_replay_thresholds(count: int, severity: Severity | None) -> None:
    found = run(pcie_replay_count=count)
    if severity is None:
        assert "pcie.replays" not in ids(found)
    else:
        f = only(found, "pcie.replays")
        assert f.severity is severity
        assert str(count) in f.message


def test_missing_link_is_unknown_with_reason() -> None:
    found = run(missing={"pcie_width_current": Missing.GPU_LOST, "pcie_width_max": Missing.GPU_LOST})
    f = only(found, "pcie.link-unavailable")
    assert f.severity is Severity.UNKNOWN
    assert "gpu_lost" in f.message
    assert "pcie.ok" not in ids(found)


def _with_path(upstream_width: int, gpu_width: int = 8) -> list:
    from rigcheck.model.snapshot import PcieHop

    gpu = make_gpu(0, pcie_gen_current=4, pcie_gen_max=4, pcie_gen_gpu_max=4, pcie_width_current=gpu_width)
    snap = make_snapshot([gpu])
    bus = gpu.pci_bus_id
    assert bus is not None
    snap.system.pcie_paths[bus] = [
        PcieHop(bdf="0000:01:00.0", link_width=gpu_width, link_width_max=16),
        PcieHop(bdf="0000:00:01.1", link_width=gpu_width, link_width_max=upstream_width),
    ]
    return check_pcie(snap)


def test_a_port_wired_x8_is_the_slot_allowing_x8_not_a_link_trained_down() -> None:
    # A consumer board splitting the CPU's x16 into x8/x8 for two cards: the root port's max_link_width is 8, the
    # GPU's own max stays 16. As built, not a fault; the GPU-side max alone (no path) still fails, as before.
    found = _with_path(upstream_width=8)
    assert "pcie.width-below-max" not in ids(found)
    note = only(found, "pcie.slot-limits-width")
    assert note.severity is Severity.INFO
    assert "wired for x8" in note.message
    assert exit_code_for(found, strict=False) == 0


def test_a_port_wired_x16_with_the_link_at_x8_still_fails() -> None:
    found = _with_path(upstream_width=16)
    assert only(found, "pcie.width-below-max").severity is Severity.FAIL
    assert "pcie.slot-limits-width" not in ids(found)


def test_the_3090_rig_wired_x8_x8_is_as_built_and_still_fails_on_heat() -> None:
    # The 3090 pair's root ports (00:01.1, 00:01.2) are x8 each in its sysfs path: the board splits its lanes, so
    # x8 is what the slot allows. The box still exits 1: software thermal slowdown under load at 86 C.
    findings = run_checks(load_file(str(SNAPSHOTS / "2x-3090-phb-throttling.json")))
    assert "pcie.width-below-max" not in ids(findings)
    assert len([f for f in findings if f.id == "pcie.slot-limits-width"]) == 2
    assert exit_code_for(findings) == 1


def test_a_pstate_of_thousands_of_digits_is_no_pstate() -> None:
    # A fuzzed -q gave "P" and 5,000 digits: int() refused it (ValueError, exit 3) in the idle test.
    from rigcheck.checks.common import is_idle

    busy = {"utilization_gpu_percent": 50.0, "clock_event_reasons_active": []}
    assert is_idle(make_gpu(0, pstate="P" + "9" * 5000, **busy)) is False
    assert is_idle(make_gpu(0, pstate="P12", **busy)) is True
