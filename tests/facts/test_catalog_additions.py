"""GPUs the calibration cases name that the catalogue lacked: GeForce GTX 1070, GeForce RTX 3060 Ti, GB300.

Each entry's figures come from NVIDIA's specification pages (the URL in its source); the existing bands then apply:
the host link by the card's PCIe link, memory bandwidth as a share of the spec, matmul where a peak is held.
Real inputs: the CUDA bandwidthTest outputs of tests/calibration/cases (sources in its manifest.json).
"""

from __future__ import annotations

import json

import pytest

from rigcheck.facts import catalog
from rigcheck.facts.bands import PCIE_LINKS, band_for
from tests.calibration.runner import CASES_DIR, load_cases
from tests.support.cli import Rigcheck


@pytest.mark.parametrize(
    ("printed", "name", "bandwidth", "link"),
    [
        ("GeForce GTX 1070", "GeForce GTX 1070", 256, (3, 16)),
        ("NVIDIA GeForce GTX 1070", "GeForce GTX 1070", 256, (3, 16)),
        ("NVIDIA GeForce RTX 3060 Ti", "GeForce RTX 3060 Ti", 448, (4, 16)),
        ("NVIDIA GB300", "GB300", 8000, None),
        ("HGX GB200", "GB200", 8000, None),  # multinode nvbandwidth's device lines (calibration: 2x4 GB200)
    ],
)
def test_names_as_drivers_print_them_find_the_entry(
    printed: str, name: str, bandwidth: float, link: tuple[int, int] | None
) -> None:
    spec = catalog.lookup(printed)
    assert spec is not None
    assert spec.name == name
    assert spec.memory_bandwidth_gbps == bandwidth
    assert PCIE_LINKS.get(name) == link
    assert "https://www.nvidia.com/" in spec.source


def test_the_3060_is_not_the_3060_ti() -> None:
    plain, ti = catalog.lookup("NVIDIA GeForce RTX 3060"), catalog.lookup("NVIDIA GeForce RTX 3060 Ti")
    assert plain is not None
    assert ti is not None
    assert plain is not ti


def test_gb300_is_an_nvlink5_superchip_with_its_dense_tensor_peak() -> None:
    spec = catalog.lookup("NVIDIA GB300")
    assert spec is not None
    assert (spec.form_factor, spec.nvlink_links, spec.nvlink_generation) == ("superchip", 18, 5)
    assert (spec.bf16_tflops, spec.tf32_tflops) == (2500, 1250)  # 360 / 180 PFLOPS sparse per 72 GPUs, halved
    assert spec.board_power_w is None  # not published per GPU: no number stands in for it
    assert band_for(spec, "membw") is not None
    assert band_for(spec, "matmul_bf16") is not None
    assert band_for(spec, "hostlink_h2d") is None  # NVLink-C2C to its CPU, not a PCIe slot


def test_geforce_entries_hold_no_tensor_figure_they_have_no_source_for() -> None:
    for name in ("GeForce GTX 1070", "GeForce RTX 3060 Ti"):
        spec = catalog.lookup(name)
        assert spec is not None
        assert (spec.bf16_tflops, spec.fp16_tflops, spec.tf32_tflops) == (None, None, None)


def _hostlink(rigcheck: Rigcheck, case_file: str) -> dict[str, object]:
    _, out, _ = rigcheck("bench", "hostlink", "--from", str(CASES_DIR / case_file), "--json")
    judgements = json.loads(out)["judgement"]
    found = judgements[0] if isinstance(judgements, list) else judgements
    assert isinstance(found, dict)
    return found


def test_gtx_1070_host_copy_is_judged_against_gen3_x16(rigcheck: Rigcheck) -> None:
    judgement = _hostlink(rigcheck, "bandwidthtest-1xgtx1070-windows.txt")
    assert judgement["verdict"] == "pass"
    assert "PCIe Gen3 x16" in str(judgement["reason"])
    assert "GeForce GTX 1070" in str(judgement["reason"])


def test_rtx_3060_ti_at_a_gen3_rate_is_not_failed_as_the_cards_fault(rigcheck: Rigcheck) -> None:
    # A Gen4 card copying 12.1 GB/s: the slot may allow only Gen3, which the output does not say
    judgement = _hostlink(rigcheck, "bandwidthtest-1xrtx3060ti.txt")
    assert judgement["verdict"] == "unjudged"
    assert "Gen4 x16" in str(judgement["reason"])
    assert "Gen3" in str(judgement["reason"])


def test_calibration_names_the_gpu_where_the_output_does_not(rigcheck: Rigcheck) -> None:
    case = next(c for c in load_cases() if c.id == "nvbandwidth-8xh100-d2d")
    assert case.command[case.command.index("--gpu") + 1] == "H100 SXM5"
    bare = rigcheck("bench", "p2p", "--from", str(case.path), "--json")
    assert "the output does not name the GPU model: name the GPU with --model" in bare.stdout
    assert "pass" not in _verdicts(bare.json)
    named = rigcheck(*case.argv())
    assert named.code == 0
    assert "pass" in _verdicts(named.json)


def _verdicts(doc: object) -> list[object]:
    """Every "verdict" in a document, at any depth (the JSON's layout, pretty or compact, is not the point)."""
    if isinstance(doc, dict):
        return [v for k, v in doc.items() if k == "verdict"] + [x for v in doc.values() for x in _verdicts(v)]
    if isinstance(doc, list):
        return [x for v in doc for x in _verdicts(v)]
    return []
