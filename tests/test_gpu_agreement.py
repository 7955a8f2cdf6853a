"""On a real GPU machine: the NVML probe and `nvidia-smi -q -x` must tell the same story."""

from __future__ import annotations

import shutil
import subprocess
from functools import cache

import pytest

from rigcheck.model import Gpu
from rigcheck.probe.nvml import probe_nvml
from rigcheck.probe.sysfs import normalize_bdf


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


def _smi_gpus() -> list[Gpu]:
    from rigcheck.probe.smi.query_xml import parse_query_xml

    xml = subprocess.run(["nvidia-smi", "-q", "-x"], capture_output=True, text=True, timeout=60, check=True).stdout
    return parse_query_xml(xml).gpus


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
            if mine is None or theirs is None:
                continue  # one side cannot say (a reason is recorded); nothing to compare
            if field in TLIMIT_DERIVED and other.temp_tlimit_margin_c is not None:
                # Driver >= 535 prints these as offsets from T.Limit; the parser makes them absolute with
                # the current temperature + the T.Limit margin, two integer readings of (possibly) different
                # sensors: after a load they can disagree by a degree or two. NVML gives them absolute.
                assert mine == pytest.approx(theirs, abs=2.0), field
            elif isinstance(mine, float):
                assert mine == pytest.approx(theirs, abs=0.5), field
            else:
                assert mine == theirs, field
        if g.power_draw_w is not None and other.power_draw_w is not None:
            assert g.power_draw_w == pytest.approx(other.power_draw_w, abs=max(25.0, 0.15 * other.power_draw_w))
        if g.temp_c is not None and other.temp_c is not None:
            assert g.temp_c == pytest.approx(other.temp_c, abs=3)
