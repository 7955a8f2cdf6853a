from __future__ import annotations

import pytest

from rigcheck.checks import run_checks
from rigcheck.checks.health import check_health
from rigcheck.model import Host, Missing, Severity
from tests.checkutil import ids, only
from tests.snapshots import ecc_errors, gpu_lost, make_gpu, make_snapshot, no_gpu


def run(**overrides: object) -> list:
    return check_health(make_snapshot([make_gpu(0, **overrides)]))


def test_healthy_gpu_is_ok() -> None:
    found = run()
    assert ids(found) == ["health.ok"]
    assert "ECC on, 0 uncorrected errors" in found[0].message


def test_placeholder_gives_one_fail_and_nothing_else_anywhere() -> None:
    snap = gpu_lost()
    found = run_checks(snap)
    lost = [f for f in found if f.gpu == 2 or (f.pair and 2 in f.pair)]
    assert [f.id for f in lost] == ["health.gpu-unreadable"]
    assert lost[0].severity is Severity.FAIL
    assert "gpu_lost" in lost[0].message
    assert "Xid 79" in (lost[0].advice or "")


def test_no_gpu_is_unknown_with_reason() -> None:
    found = check_health(no_gpu())
    f = only(found, "health.no-gpu")
    assert f.severity is Severity.UNKNOWN
    assert "not installed" in f.message


def test_ecc_errors_fixture() -> None:
    found = check_health(ecc_errors())
    f = only(found, "health.ecc-uncorrected-volatile", "GPU1")
    assert f.severity is Severity.FAIL
    assert f.message.startswith("2 uncorrected")
    assert only(found, "health.remapped-rows-pending").severity is Severity.WARN
    assert only(found, "health.ok").gpu == 0


def test_aggregate_only_warns() -> None:
    f = only(run(ecc_uncorrected_aggregate=5), "health.ecc-uncorrected-aggregate")
    assert f.severity is Severity.WARN
    assert "5 uncorrected" in f.message


def test_remap_failure_fails() -> None:
    assert only(run(remapped_rows_failure=True), "health.remapped-rows-failure").severity is Severity.FAIL


def test_retired_pages_pending_warns() -> None:
    assert only(run(retired_pages_pending=True), "health.retired-pages-pending").severity is Severity.WARN


@pytest.mark.parametrize(
    ("dbe", "sbe", "severity"), [(1, 0, Severity.INFO), (10, 21, Severity.INFO), (10, 22, Severity.WARN)]
)
def test_dbe_retired_pages(dbe: int, sbe: int, severity: Severity) -> None:
    f = only(run(retired_pages_dbe=dbe, retired_pages_sbe=sbe), "health.retired-pages-dbe")
    assert f.severity is severity
    assert f"{dbe} pages retired" in f.message
    assert f"{dbe + sbe} retired in all" in f.message


def test_modes() -> None:
    found = run(persistence_mode=False, mig_enabled=True, compute_mode="Exclusive_Process", ecc_enabled=False)
    assert only(found, "health.persistence-off").severity is Severity.INFO
    assert only(found, "health.mig-enabled").severity is Severity.WARN
    cm = only(found, "health.compute-mode")
    assert cm.severity is Severity.INFO
    assert "Exclusive_Process" in cm.message
    assert only(found, "health.ecc-disabled").severity is Severity.INFO
    assert "health.ok" not in ids(found)


def test_persistence_off_not_reported_on_windows() -> None:
    snap = make_snapshot([make_gpu(0, persistence_mode=False)], host=Host(os="Microsoft Windows 11 Pro"))
    assert "health.persistence-off" not in ids(check_health(snap))


def test_ecc_counts_unreadable_is_unknown() -> None:
    found = run(
        missing={"ecc_uncorrected_volatile": Missing.NO_PERMISSION, "ecc_uncorrected_aggregate": Missing.NO_PERMISSION}
    )
    f = only(found, "health.memory-errors-unavailable")
    assert f.severity is Severity.UNKNOWN
    assert "no_permission" in f.message


def test_consumer_card_without_ecc_is_not_unknown() -> None:
    found = run(missing={"ecc_enabled": Missing.NOT_SUPPORTED, "ecc_uncorrected_volatile": Missing.NOT_SUPPORTED})
    assert "health.memory-errors-unavailable" not in ids(found)
