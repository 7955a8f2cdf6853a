"""On a real GPU machine: the NVML probe and `nvidia-smi -q -x` must tell the same story."""

from __future__ import annotations

import shutil
import subprocess
from functools import cache

import pytest

from rigcheck.facts.pcie import normalize_bdf
from rigcheck.model import Gpu
from rigcheck.probe.nvml import probe_nvml


@cache
def _nvml_starts() -> bool:
    import pynvml

    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return False
    pynvml.nvmlShutdown()
    return True


pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(shutil.which("nvidia-smi") is None, reason="nvidia-smi is not installed"),
    pytest.mark.skipif(not _nvml_starts(), reason="NVML cannot start (no NVIDIA driver)"),
]

EXACT = (
    "name",
    "power_limit_w",
    "power_default_limit_w",
    "power_min_limit_w",
    "power_max_limit_w",
    "temp_shutdown_c",
    "temp_slowdown_c",
    "temp_max_operating_c",
    "pcie_gen_current",
    "pcie_gen_max",
    "pcie_width_current",
    "pcie_width_max",
    "persistence_mode",
    "ecc_enabled",
    "mig_enabled",
)
TLIMIT_DERIVED = ("temp_shutdown_c", "temp_slowdown_c", "temp_max_operating_c")

# Fields `nvidia-smi -q -x` fills that the NVML probe may leave empty, each with why. Every other field
# nvidia-smi fills, the probe must fill too: None there (whatever reason it records) fails the test.
SMI_ONLY: dict[str, str] = {
    "temp_tlimit_margin_c": (
        "nvidia-smi's 'GPU T.Limit Temp': the parser needs it to turn the thresholds, printed as offsets from "
        "T.Limit since driver 535, into degrees; NVML gives the thresholds in degrees, so the probe does not "
        "read the margin (nvmlDeviceGetMarginTemperature, R555+, is not in every driver the probe supports)"
    ),
    "processes": (
        "the compute processes running at the moment of each read: two reads a second apart legitimately differ, "
        "and a GPU with none is an empty list either side"
    ),
}
# Labels, not readings: never compared for emptiness.
NOT_READINGS = frozenset({"missing", "index", "read_error", "read_error_detail"})


def _smi_gpus() -> list[Gpu]:
    from rigcheck.readers.smi.query_xml import parse_query_xml

    xml = subprocess.run(["nvidia-smi", "-q", "-x"], capture_output=True, text=True, timeout=60, check=True).stdout
    return parse_query_xml(xml).gpus


def _filled(value: object) -> bool:
    return value is not None and value not in ([], {})


def test_smi_only_names_real_fields() -> None:
    assert set(SMI_ONLY) <= set(Gpu.model_fields)


def test_probe_fills_every_field_nvidia_smi_fills() -> None:
    """NVML gives at least what nvidia-smi prints (nvidia-smi is built on it): a field nvidia-smi fills and the
    probe leaves empty is a probe bug (a call not made, a wrong constant, an error swallowed), not a skip."""
    nvml = probe_nvml()
    smi = _smi_gpus()
    by_bus = {normalize_bdf(g.pci_bus_id or ""): g for g in smi}
    gaps: list[str] = []
    for g in nvml.gpus:
        assert g.pci_bus_id is not None
        other = by_bus[normalize_bdf(g.pci_bus_id)]
        for field in Gpu.model_fields:
            if field in NOT_READINGS or field in SMI_ONLY:
                continue
            if _filled(getattr(other, field)) and not _filled(getattr(g, field)):
                why = g.missing.get(field)
                gaps.append(
                    f"GPU {g.index} {field}: nvidia-smi {getattr(other, field)!r}, NVML probe empty"
                    + (f" ({why.value})" if why is not None else "")
                )
    assert not gaps, "\n".join(gaps)


def test_nvml_and_nvidia_smi_agree() -> None:
    nvml = probe_nvml()
    smi = _smi_gpus()
    assert len(nvml.gpus) == len(smi) > 0
    by_bus = {normalize_bdf(g.pci_bus_id or ""): g for g in smi}
    for g in nvml.gpus:
        assert g.pci_bus_id is not None
        other = by_bus[normalize_bdf(g.pci_bus_id)]
        for field in EXACT:
            mine, theirs = getattr(g, field), getattr(other, field)
            if theirs is None:
                continue  # nvidia-smi cannot say: nothing to compare (NVML may well know more)
            assert mine is not None, f"{field}: nvidia-smi says {theirs!r}, the NVML probe leaves it empty"
            if field in TLIMIT_DERIVED and other.temp_tlimit_margin_c is not None:
                # Driver >= 535 prints these as offsets from T.Limit; the parser makes them absolute with
                # the current temperature + the T.Limit margin, two integer readings of (possibly) different
                # sensors: after a load they can disagree by a degree or two. NVML gives them absolute.
                assert mine == pytest.approx(theirs, abs=2.0), field
            elif isinstance(mine, float):
                assert mine == pytest.approx(theirs, abs=0.5), field
            else:
                assert mine == theirs, field
        if other.power_draw_w is not None:
            assert g.power_draw_w is not None, "power_draw_w: nvidia-smi fills it, the NVML probe does not"
            assert g.power_draw_w == pytest.approx(other.power_draw_w, abs=max(25.0, 0.15 * other.power_draw_w))
        if other.temp_c is not None:
            assert g.temp_c is not None, "temp_c: nvidia-smi fills it, the NVML probe does not"
            assert g.temp_c == pytest.approx(other.temp_c, abs=3)
