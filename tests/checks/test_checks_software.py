from __future__ import annotations

import itertools

import pytest

from rigcheck.checks.doctor.software import check_software
from rigcheck.facts.software import (
    ARCH_DRIVERS,
    CUDA_TOOLKIT_DRIVERS,
    arch_from_compute_capability,
    normalize_arch,
    parse_version,
    version_lt,
)
from rigcheck.model import Host, Missing, Severity, Software
from tests.support.checkutil import ids, only
from tests.support.snapshots import make_gpu, make_snapshot


def run(gpus: list | None = None, host: Host | None = None, **sw: str | None) -> list:
    fields: dict = {
        "driver_version": "550.90.07",
        "cuda_driver_version": "12.4",
        "torch_version": "2.4.1+cu124",
        "torch_cuda_version": "12.4",
    }
    fields.update(sw)
    return check_software(
        make_snapshot(gpus if gpus is not None else [make_gpu(0)], software=Software(**fields), host=host or Host())
    )


def test_matching_versions_ok() -> None:
    found = run()
    assert ids(found) == ["software.ok"]
    assert "550.90.07" in found[0].message
    assert "Hopper" in found[0].message


def test_driver_missing_is_unknown_with_reason() -> None:
    sw = Software()
    sw.mark_missing("driver_version", Missing.ERROR)
    found = check_software(make_snapshot([make_gpu(0)], software=sw))
    f = only(found, "software.driver-unknown")
    assert f.severity is Severity.UNKNOWN
    assert "(error)" in f.message


@pytest.mark.parametrize(
    ("driver", "torch_cuda", "severity"),
    [
        ("470.82.01", "12.1", Severity.FAIL),  # below 525.60.13: no CUDA 12 at all
        ("525.60.13", "12.4", Severity.WARN),  # minor version compatibility only
        ("550.54.13", "12.4", Severity.WARN),
        ("550.54.14", "12.4", None),  # exactly CUDA 12.4 GA's driver
        ("440.33", "11.0", Severity.FAIL),
        ("410.48", "10.1", Severity.FAIL),  # no minor version compatibility before CUDA 11
    ],
)
def test_driver_vs_torch_cuda(driver: str, torch_cuda: str, severity: Severity | None) -> None:
    found = run(
        [make_gpu(0, architecture="Turing", compute_capability="7.5")],
        driver_version=driver,
        torch_cuda_version=torch_cuda,
        cuda_driver_version=None,
    )
    if severity is None:
        assert "software.driver-too-old-for-torch" not in ids(found)
    else:
        f = only(found, "software.driver-too-old-for-torch")
        assert f.severity is severity
        assert driver in f.message


def test_windows_driver_uses_windows_column() -> None:
    # CUDA 12.4 GA: Linux >= 550.54.14, Windows >= 551.61.
    found = run(driver_version="551.23", host=Host(os="Microsoft Windows 11 Pro"))
    assert only(found, "software.driver-too-old-for-torch").severity is Severity.WARN
    assert "software.driver-too-old-for-torch" not in ids(run(driver_version="551.23"))


def test_cuda_driver_version_older_than_torch_when_driver_unknown() -> None:
    found = run(driver_version=None, cuda_driver_version="11.4", torch_cuda_version="12.1")
    f = only(found, "software.cuda-driver-too-old")
    assert f.severity is Severity.FAIL
    assert "11.4" in f.message
    assert "12.1" in f.message
    f2 = only(
        run(driver_version=None, cuda_driver_version="12.2", torch_cuda_version="12.4"), "software.cuda-driver-too-old"
    )
    assert f2.severity is Severity.WARN


@pytest.mark.parametrize(
    ("arch", "cc", "driver", "bad"),
    [
        ("Blackwell", "12.0", "565.57.01", True),
        ("Blackwell", "10.0", "570.86.15", False),
        ("Hopper", "9.0", "515.65.01", True),
        ("Hopper", "9.0", "525.85.12", False),
        (None, "8.6", "450.80.02", True),  # sm_86 arrived with CUDA 11.1 (455.23)
        (None, "8.0", "450.80.02", False),
    ],
)
def test_architecture_newer_than_driver(arch: str | None, cc: str, driver: str, bad: bool) -> None:
    gpu = make_gpu(0, architecture=arch, compute_capability=cc, name="GPU under test")
    found = run([gpu], driver_version=driver, torch_cuda_version=None, cuda_driver_version=None)
    assert ("software.arch-too-new-for-driver" in ids(found)) is bad
    if bad:
        f = only(found, "software.arch-too-new-for-driver")
        assert f.severity is Severity.FAIL
        assert f.gpu == 0
        assert driver in f.message


def test_pascal_on_r590_is_dropped() -> None:
    gpu = make_gpu(0, architecture="Pascal", compute_capability="6.1", name="NVIDIA GeForce GTX 1080 Ti")
    f = only(run([gpu], driver_version="590.44.01", torch_cuda_version=None), "software.arch-dropped-by-driver")
    assert f.severity is Severity.FAIL
    assert "R580" in f.message


def test_nccl_info() -> None:
    f = only(run(nccl_version="2.21.5"), "software.nccl")
    assert f.severity is Severity.INFO
    assert "2.21.5" in f.message


def test_unknown_future_cuda_is_unknown() -> None:
    f = only(run(torch_cuda_version="14.0"), "software.torch-cuda-unknown")
    assert f.severity is Severity.UNKNOWN


def test_facts_tables() -> None:
    assert parse_version("580.159.04") == (580, 159, 4)
    assert parse_version("2.21.5+cuda12.4") == (2, 21, 5)
    assert parse_version("N/A") is None
    assert version_lt((570, 26), (570, 26, 1))
    assert not version_lt((570, 26, 0), (570, 26))
    assert normalize_arch("Ada Lovelace") == "ada"
    assert normalize_arch("Hopper") == "hopper"
    assert arch_from_compute_capability("8.9") == "ada"
    assert arch_from_compute_capability("12.0") == "blackwell"
    assert ARCH_DRIVERS["blackwell"].min_driver == "570.26"
    # Table 3 is ordered: a newer toolkit never needs an older driver.
    versions = [parse_version(CUDA_TOOLKIT_DRIVERS[k].linux) for k in sorted(CUDA_TOOLKIT_DRIVERS)]
    assert all(a is not None and b is not None and not version_lt(b, a) for a, b in itertools.pairwise(versions))
