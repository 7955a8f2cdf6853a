from __future__ import annotations

from pathlib import Path

import pytest

from rigcheck.checks.doctor.thermal import check_thermal, is_loaded
from rigcheck.cli.exits import exit_code_for
from rigcheck.model import Missing, Severity, Snapshot
from tests.support.checkutil import ids, only
from tests.support.snapshots import RTX_3090, make_gpu, make_snapshot

FIXTURES = Path(__file__).parent.parent / "fixtures" / "snapshots"


def run(**overrides: object) -> list:
    # Card thresholds well above the guide's bands so that only the bands speak.
    overrides.setdefault("temp_slowdown_c", 110.0)
    overrides.setdefault("temp_shutdown_c", 120.0)
    return check_thermal(make_snapshot([make_gpu(0, **overrides)]))


@pytest.mark.parametrize(
    ("temp", "finding_id", "severity", "words"),
    [
        (70.0, "thermal.ok", Severity.OK, "excellent"),
        (75.0, "thermal.ok", Severity.OK, "excellent"),
        (75.5, "thermal.ok", Severity.OK, "good"),
        (79.0, "thermal.ok", Severity.OK, "good"),
        (80.0, "thermal.warm", Severity.INFO, "above the guide's 80 C 'good' band"),
        (83.9, "thermal.warm", Severity.INFO, "80 C"),
        (84.0, "thermal.throttle-range", Severity.WARN, "within the guide's 84-90 C"),
        (90.0, "thermal.throttle-range", Severity.WARN, "within the guide's 84-90 C"),
        (91.0, "thermal.throttle-range", Severity.WARN, "above the guide's 84-90 C"),
    ],
)
def test_guide_bands(temp: float, finding_id: str, severity: Severity, words: str) -> None:
    found = run(temp_c=temp)
    assert ids(found) == [finding_id]
    assert found[0].severity is severity
    assert words in found[0].message
    assert found[0].measured == f"{temp:.0f} C"


def test_warm_advice_mentions_lifespan() -> None:
    f = only(run(temp_c=82.0), "thermal.warm")
    assert "life" in (f.advice or "")


@pytest.mark.parametrize(
    ("temp", "expected"),
    [
        (83.0, None),  # 6 C below slowdown 89
        (84.5, "thermal.near-slowdown"),  # 4.5 C below
        (89.0, "thermal.at-slowdown"),
        (90.0, "thermal.near-shutdown"),  # shutdown 95 - 5
        (96.0, "thermal.near-shutdown"),
    ],
)
def test_card_thresholds_h100(temp: float, expected: str | None) -> None:
    found = check_thermal(make_snapshot([make_gpu(0, temp_c=temp)]))  # H100: slowdown 89, shutdown 95
    threshold_ids = {"thermal.near-slowdown", "thermal.at-slowdown", "thermal.near-shutdown"}
    got = [i for i in ids(found) if i in threshold_ids]
    assert got == ([expected] if expected else [])
    if expected:
        f = only(found, expected)
        assert f.severity is (Severity.WARN if expected == "thermal.near-slowdown" else Severity.FAIL)
        assert ("89 C" in f.message) or ("95 C" in f.message)


def test_ok_band_suppressed_when_near_slowdown() -> None:
    found = check_thermal(make_snapshot([make_gpu(0, temp_c=74.0, temp_slowdown_c=78.0)]))
    assert "thermal.ok" not in ids(found)
    assert only(found, "thermal.near-slowdown").severity is Severity.WARN


@pytest.mark.parametrize(
    ("reasons", "finding_id", "severity"),
    [
        (["hw_slowdown", "hw_thermal_slowdown"], "thermal.hw-thermal-slowdown", Severity.FAIL),
        (["sw_thermal_slowdown"], "thermal.sw-thermal-slowdown", Severity.WARN),
        (["hw_slowdown"], "thermal.hw-slowdown", Severity.WARN),
    ],
)
def test_slowdown_reasons(reasons: list[str], finding_id: str, severity: Severity) -> None:
    found = run(temp_c=70.0, clock_event_reasons_active=reasons)
    assert only(found, finding_id).severity is severity
    assert "thermal.ok" not in ids(found)


LOADED = {"utilization_gpu_percent": 98.0, "power_draw_w": 640.0}


@pytest.mark.parametrize(
    ("reasons", "finding_id"),
    [
        (["sw_thermal_slowdown"], "thermal.sw-thermal-slowdown"),
        (["hw_slowdown"], "thermal.hw-slowdown"),
        (["hw_slowdown", "hw_thermal_slowdown"], "thermal.hw-thermal-slowdown"),
    ],
)
def test_slowdown_under_load_fails_naming_the_cause_and_the_guide(reasons: list[str], finding_id: str) -> None:
    found = run(temp_c=86.0, clock_event_reasons_active=reasons, **LOADED)
    f = only(found, finding_id)
    assert f.severity is Severity.FAIL
    assert "under load (98% utilization, 640 W of 700 W)" in f.message
    if finding_id != "thermal.hw-slowdown":
        assert "84-90 C" in (f.advice or "")
        assert "airflow" in (f.advice or "")
        assert "fan curve" in (f.advice or "")
        assert "slot between cards" in (f.advice or "")


def test_loaded_is_utilization_or_half_the_power_limit() -> None:
    assert is_loaded(make_gpu(0, utilization_gpu_percent=50.0))
    assert is_loaded(make_gpu(0, utilization_gpu_percent=30.0, power_draw_w=360.0))  # over half of 700 W
    assert not is_loaded(make_gpu(0, utilization_gpu_percent=30.0, power_draw_w=300.0))
    assert not is_loaded(make_gpu(0, utilization_gpu_percent=None, power_draw_w=None))


def test_real_3090_box_hot_fan_at_100_with_sw_thermal_slowdown_fails() -> None:
    """The 2x RTX 3090 box (topo/019's rig) at 86 C, fan 100%, software thermal slowdown active under load:
    it exited 0 with "warnings to look at"; under load it is a verdict."""
    snap = Snapshot.model_validate_json((FIXTURES / "2x-3090-phb-throttling.json").read_text())
    found = check_thermal(snap)
    f = only([x for x in found if x.gpu == 0], "thermal.sw-thermal-slowdown")
    assert f.severity is Severity.FAIL
    assert "86 C, fan at 100%" in f.message
    assert [x.id for x in found if x.severity is Severity.FAIL] == ["thermal.sw-thermal-slowdown"]  # GPU1: 83 C, none
    assert exit_code_for(found) == 1  # `rigcheck thermal` and doctor: it exited 0


def test_healthy_loaded_gpu_at_75_c_passes() -> None:
    found = run(temp_c=75.0, clock_event_reasons_active=["sw_power_cap"], **LOADED)
    assert ids(found) == ["thermal.ok"]


def test_hw_slowdown_with_power_brake_is_left_to_power() -> None:
    found = run(temp_c=60.0, clock_event_reasons_active=["hw_slowdown", "hw_power_brake_slowdown"])
    assert "thermal.hw-slowdown" not in ids(found)


def test_slowdown_history_seconds() -> None:
    f = only(
        run(temp_c=60.0, clock_event_durations_us={"sw_thermal_slowdown": 90e6, "hw_thermal_slowdown": 30e6}),
        "thermal.slowdown-history",
    )
    assert f.severity is Severity.INFO
    assert "2.0 min" in f.message


def test_fan_at_100_percent_warns() -> None:
    found = check_thermal(make_snapshot([make_gpu(0, base=RTX_3090, temp_c=70.0, clock_event_reasons_active=[])]))
    f = only(found, "thermal.fan-at-max")
    assert f.severity is Severity.WARN
    assert "100%" in f.message
    assert "70 C" in f.message


def test_fan_99_is_fine() -> None:
    assert "thermal.fan-at-max" not in ids(run(temp_c=60.0, fan_percent=99.0))


def test_temperature_missing_is_unknown_with_reason() -> None:
    found = check_thermal(make_snapshot([make_gpu(0, missing={"temp_c": Missing.NO_PERMISSION})]))
    f = only(found, "thermal.temperature-unavailable")
    assert f.severity is Severity.UNKNOWN
    assert "no_permission" in f.message
