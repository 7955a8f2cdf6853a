"""history's drift and escalation alerts: the Theil-Sen trend against outliers and noise, the -3% rule, rising
corrected ECC, the same Xid on three days (an application Xid left out), row remaps failing or growing; and the
ledger keeping what they need (a doctor document's Xids and remapped rows) through ``history add`` and ``show``."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from rigcheck.checks.history.drift import drift_alerts, fit_trends, theil_sen
from rigcheck.checks.history.escalation import remap_escalations, xid_escalations
from rigcheck.model.history import SightingRow, XidRow
from tests.support.cli import Rigcheck

START = datetime(2025, 3, 1, 6, 0, tzinfo=UTC)


def _when(day: int) -> str:
    return (START + timedelta(days=day)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _row(day: int, figures: dict[str, float], gpu: str = "GPU-a", node: str = "n1") -> SightingRow:
    return SightingRow(_when(day), node, gpu, None, "0000:18:00.0", 0, "pass", figures)


def _noise(day: int) -> float:
    return ((day * 7) % 5 - 2) / 100  # -2% .. +2%, fixed


def test_theil_sen_ignores_outliers_a_least_squares_line_would_follow() -> None:
    days = [float(d) for d in range(10)]
    values = [100.0 - d for d in range(10)]
    values[3], values[8] = 10.0, 500.0  # two wild runs
    trend = theil_sen(days, values)
    assert trend is not None
    assert trend.slope_per_day == pytest.approx(-1.0)
    assert (trend.start, trend.end, trend.days) == (pytest.approx(100.0), pytest.approx(91.0), 9.0)
    assert theil_sen([1.0, 1.0], [2.0, 3.0]) is None


def test_a_four_percent_fall_over_a_month_drifts_and_noise_does_not() -> None:
    falling = [_row(d, {"membw": 3000.0 * (1 - 0.04 * d / 30) * (1 + _noise(d))}) for d in range(31)]
    steady = [_row(d, {"membw": 3000.0 * (1 + _noise(d))}, gpu="GPU-b") for d in range(31)]
    alerts = drift_alerts(fit_trends(falling + steady))
    assert [(a.kind, a.gpu, a.created_at) for a in alerts] == [("drift", "GPU-a", _when(30))]
    assert "membw fell -4" in alerts[0].message
    two_percent = [_row(d, {"matmul_bf16": 900.0 * (1 - 0.02 * d / 30)}) for d in range(31)]
    assert drift_alerts(fit_trends(two_percent)) == []  # within healthy noise: no alert


def test_too_few_runs_or_days_are_no_trend() -> None:
    short = [_row(d, {"membw": 3000.0 - 100 * d}) for d in range(6)]  # 6 runs
    assert drift_alerts(fit_trends(short)) == []
    crowded = [_row(0, {"membw": 3000.0 - 100 * h}) for h in range(10)]  # 10 runs, one day
    assert drift_alerts(fit_trends(crowded)) == []


def test_rising_corrected_ecc_drifts_a_flat_zero_does_not() -> None:
    rising = [_row(d, {"counters": 0.002 * d}) for d in range(20)]
    flat = [_row(d, {"counters": 0.5 if d == 7 else 0.0}, gpu="GPU-b") for d in range(20)]  # one burst
    alerts = drift_alerts(fit_trends(rising + flat))
    assert [a.gpu for a in alerts] == ["GPU-a"]
    assert "corrected ECC errors rising" in alerts[0].message


def _xid(day: int, code: int, gpu: str = "GPU-a") -> XidRow:
    return XidRow(_when(day), "n1", gpu, None, "0000:18:00.0", code)


def test_the_same_xid_on_three_days_escalates_on_the_third() -> None:
    rows = [_xid(0, 79), _xid(0, 79), _xid(4, 79), _xid(9, 79), _xid(2, 48), _xid(5, 48)]
    rows += [_xid(d, 13, gpu="GPU-b") for d in range(5)]  # an application's fault, however often
    alerts = xid_escalations(rows)
    assert [(a.gpu, a.created_at) for a in alerts] == [("GPU-a", _when(9))]
    assert "Xid 79 again on 3 days" in alerts[0].message
    assert "hardware inspection" in alerts[0].message


def test_row_remaps_failing_or_growing_escalate() -> None:
    grow = [_row(d, {"remapped_rows_correctable": float(d // 2), "remapped_rows_uncorrectable": 0.0}) for d in range(8)]
    fail = [_row(2, {"remapped_rows_failure": 1.0}, gpu="GPU-b")]
    steady = [_row(d, {"remapped_rows_correctable": 2.0}, gpu="GPU-c") for d in range(8)]
    alerts = remap_escalations(grow + fail + steady)
    assert [(a.gpu, a.created_at) for a in alerts] == [("GPU-a", _when(6)), ("GPU-b", _when(2))]
    assert "grew in 3 runs" in alerts[0].message
    assert "no spare row" in alerts[1].message


def _doctor(day: int, xids: list[int], remapped: int) -> dict[str, Any]:
    gpu = {"index": 0, "uuid": "GPU-x", "pci_bus_id": "00000000:18:00.0", "remapped_rows_correctable": remapped}
    events = [{"kind": "xid", "code": c, "pci_bus_id": "PCI:0000:18:00", "message": "x"} for c in xids]
    snap = {"created_at": _when(day), "host": {"hostname": "n9"}, "gpus": [gpu], "kernel_events": events}
    return {"schema": "rigcheck.doctor/1", "exit_code": 1 if xids else 0, "snapshot": snap}


def test_doctor_documents_escalate_through_the_ledger(rigcheck: Rigcheck, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for day in range(5):
        doc = _doctor(day, [79] if day % 2 == 0 else [], remapped=day)
        (folder / f"{day}.json").write_text(json.dumps(doc))
    ledger = tmp_path / "l.sqlite"
    assert rigcheck("history", "add", folder, "--ledger", ledger).code == 0
    doc = rigcheck("history", "show", "--ledger", ledger, "--json").json
    got = sorted(
        (a["kind"], a["gpu"], a["created_at"], a["message"].split(": ")[1][:20])
        for a in doc["alerts"]
        if a["kind"] == "escalation"
    )
    assert got == [
        ("escalation", "GPU-x", _when(3), "remapped rows grew i"),
        ("escalation", "GPU-x", _when(4), "Xid 79 again on 3 da"),
    ]
    assert doc["rules"]["escalation_days"] == 3
    assert doc["rules"]["drift_drop"] == -0.03
