from __future__ import annotations

from pathlib import Path

import pytest

from rigcheck.checks.doctor.power import check_power
from rigcheck.model import Missing, Severity, Snapshot
from rigcheck.readers.from_file import load_file
from tests.support.checkutil import ids, only
from tests.support.snapshots import MX250, MX250_MISSING, RTX_3090, make_gpu, make_snapshot


def run(**overrides: object) -> list:
    return check_power(make_snapshot([make_gpu(0, **overrides)]))


def test_healthy_h100_is_ok_with_numbers() -> None:
    found = run()
    assert ids(found) == ["power.ok"]
    ok = found[0]
    assert ok.severity is Severity.OK
    assert ok.gpu == 0
    assert ok.subject == "GPU0"
    assert "700 W" in ok.message
    assert "74 W" in ok.message


@pytest.mark.parametrize(
    ("limit", "severity"),
    [
        (350.0, None),  # at default
        (400.0, None),  # above default
        (346.5, Severity.INFO),  # exactly 1% below: rounding
        (346.0, Severity.WARN),  # 1.14% below
        (280.0, Severity.WARN),
    ],
)
def test_limit_below_default_thresholds(limit: float, severity: Severity | None) -> None:
    found = check_power(
        make_snapshot(
            [
                make_gpu(
                    0,
                    base=RTX_3090,
                    power_limit_w=limit,
                    power_enforced_limit_w=limit,
                    clock_event_reasons_active=[],
                    power_draw_w=100.0,
                )
            ]
        )
    )
    if severity is None:
        assert "power.limit-below-default" not in ids(found)
        assert "power.ok" in ids(found)
    else:
        f = only(found, "power.limit-below-default")
        assert f.severity is severity
        assert f"{limit:.0f} W" in f.message
        assert "350 W" in f.message


def test_limit_below_default_message_percent() -> None:
    f = only(check_power(make_snapshot([make_gpu(0, base=RTX_3090)])), "power.limit-below-default")
    assert "20%" in f.message
    assert "-pl 350" in (f.advice or "")


def test_enforced_below_set_limit_is_info() -> None:
    f = only(run(power_enforced_limit_w=600.0), "power.enforced-below-limit")
    assert f.severity is Severity.INFO
    assert "600 W" in f.message
    assert "700 W" in f.message


def test_power_brake_active_fails_and_points_at_cables() -> None:
    found = run(clock_event_reasons_active=["hw_slowdown", "hw_power_brake_slowdown"])
    f = only(found, "power.brake-active")
    assert f.severity is Severity.FAIL
    assert "independent cable" in (f.advice or "")
    assert "pigtail" in (f.advice or "")
    assert "power.ok" not in ids(found)


def test_sw_power_cap_busy_below_max_warns() -> None:
    found = check_power(make_snapshot([make_gpu(0, base=RTX_3090)]))
    f = only(found, "power.capped-now")
    assert f.severity is Severity.WARN
    assert "279 W of 280 W" in f.message


def test_sw_power_cap_idle_is_info() -> None:
    f = only(run(clock_event_reasons_active=["idle", "sw_power_cap"]), "power.capped-now")
    assert f.severity is Severity.INFO
    assert "idle" in f.message
    assert "not throttling" in f.message
    assert "clocks reduced" not in f.message


def _a5000() -> Snapshot:
    # smi-xml/005: two RTX A5000 at idle (7 W and 14 W of 230 W), each with hours on the SW power cap counter.
    return load_file(str(Path(__file__).parent.parent / "fixtures" / "corpus" / "smi-xml" / "005-2xa5000-590-v13.xml"))


def test_sw_power_cap_far_below_the_limit_is_not_called_throttling() -> None:
    snap = _a5000()
    gpu = snap.gpus[0]
    assert (gpu.power_draw_w or 0) < 10
    # The reason as idle cards often report it; draw 7 W of 230 W: the cap holds nothing back.
    gpu.clock_event_reasons_active = ["sw_power_cap"]
    gpu.utilization_gpu_percent = 50.0  # even without the idle flag: the draw decides
    gpu.pstate = "P2"
    f = only(check_power(snap), "power.capped-now", "GPU0")
    assert f.severity is Severity.INFO
    assert f.message == (
        "the sw_power_cap reason is set while drawing 7 W of 230 W (3%): not throttling, the card is far below "
        "its power limit"
    )
    assert "50%" in (f.source or "")


def test_cap_counter_at_idle_is_not_time_lost_to_throttling() -> None:
    found = check_power(_a5000())
    f = only(found, "power.cap-history", "GPU0")
    assert f.severity is Severity.INFO
    assert f.message == "the software power cap reason has been set for 8.8 h since the driver loaded"
    assert "held the clocks" not in f.message
    assert "not time lost to throttling" in (f.advice or "")
    assert "7 W of 230 W" in (f.advice or "")


def test_sw_power_cap_at_max_limit_under_load_is_info() -> None:
    f = only(
        run(clock_event_reasons_active=["sw_power_cap"], utilization_gpu_percent=100.0, power_draw_w=699.0),
        "power.capped-now",
    )
    assert f.severity is Severity.INFO
    assert "699 W of 700 W" in f.message


@pytest.mark.parametrize(("draw", "at_cap"), [(664.0, False), (665.0, True), (700.0, True)])
def test_at_cap_threshold_95_percent(draw: float, at_cap: bool) -> None:
    found = run(power_draw_w=draw, clock_event_reasons_active=[], utilization_gpu_percent=100.0)
    assert ("power.at-cap" in ids(found)) is at_cap
    if at_cap:
        f = only(found, "power.at-cap")
        assert f.severity is Severity.INFO
        assert "running at its power cap" in f.message


@pytest.mark.parametrize(
    ("us", "severity"), [(500_000.0, Severity.INFO), (1_000_000.0, Severity.WARN), (42e6, Severity.WARN)]
)
def test_brake_history(us: float, severity: Severity) -> None:
    durations = {"hw_power_brake_slowdown": us, "sw_power_cap": 0.0}
    f = only(run(clock_event_durations_us=durations), "power.brake-history")
    assert f.severity is severity
    assert f"{us / 1e6:.1f} s" in f.message


def test_cap_history_reports_seconds() -> None:
    f = only(run(clock_event_durations_us={"sw_power_cap": 33534556.0}), "power.cap-history")
    assert f.severity is Severity.INFO
    assert "33.5 s" in f.message


def test_consumer_card_without_power_readings_is_unknown_with_reason() -> None:
    found = check_power(make_snapshot([make_gpu(0, base=MX250, missing=MX250_MISSING)]))
    assert ids(found) == ["power.readings-unavailable"]
    f = found[0]
    assert f.severity is Severity.UNKNOWN
    assert "power limit not available (not_supported)" in f.message


def test_nan_power_is_missing_not_a_pass() -> None:
    found = run(power_limit_w=float("nan"), power_enforced_limit_w=None, missing={})
    f = only(found, "power.readings-unavailable")
    assert "not a finite number" in f.message or "not recorded" in f.message
    assert "power.ok" not in ids(found)


def test_placeholder_gets_no_power_findings() -> None:
    from rigcheck.model import Gpu

    assert check_power(make_snapshot([Gpu(index=0, read_error=Missing.GPU_LOST)])) == []


def test_no_power_brake_is_said_only_where_the_clock_event_reasons_are_known() -> None:
    """`nvidia-smi -q -d POWER` holds limits and draw but no clock-event reasons: "no power brake" was said anyway."""
    known = make_gpu(0, power_limit_w=480.0, power_default_limit_w=480.0, clock_event_reasons_active=[])
    unknown = known.model_copy(update={"index": 1, "clock_event_reasons_active": None})
    found = check_power(make_snapshot([known, unknown]))
    assert only(found, "power.ok", "GPU0").message.endswith("; no power brake")
    assert "brake" not in only(found, "power.ok", "GPU1").message


def test_no_power_brake_needs_the_brake_reason_read() -> None:
    """A -q cut inside the clock-event-reasons block keeps the reasons it holds: one cut before the power-brake line
    must not say the brake is off."""
    cut = make_gpu(
        0,
        power_limit_w=480.0,
        power_default_limit_w=480.0,
        clock_event_reasons_active=[],
        clock_event_reasons_supported=["gpu_idle", "applications_clocks_setting", "sw_power_cap"],
    )
    read = ["gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_power_brake_slowdown"]
    whole = cut.model_copy(update={"index": 1, "clock_event_reasons_supported": read})
    found = check_power(make_snapshot([cut, whole]))
    assert "brake" not in only(found, "power.ok", "GPU0").message
    assert only(found, "power.ok", "GPU1").message.endswith("; no power brake")
