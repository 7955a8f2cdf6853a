"""The achievable bands of `rigcheck verify` (facts/bands.py) and the document `verify --explain` prints
(checks/verify/bands.py): every SKU people train on has them, below its peak, with a source, and they agree
with the measurements they are cited from."""

from __future__ import annotations

import pytest

from rigcheck.checks.verify.bands import effective_band, explain_bands
from rigcheck.errors import UsageError
from rigcheck.facts import catalog
from rigcheck.facts.bands import (
    CHECKS,
    MATMUL_CHECKS,
    allreduce_band,
    band_for,
    bands_for,
    judged_matmul_check,
    p2p_band,
    spec_p2p_band,
)
from rigcheck.model.site_config import parse_site_config

# The list, as the catalogue names them.
COVERAGE = (
    "H100 SXM5",
    "H100 PCIe",
    "H100 NVL",
    "H200 SXM",
    "B200",
    "A100 PCIe 40GB",
    "A100 PCIe 80GB",
    "A100 SXM4 40GB",
    "A100 SXM4 80GB",
    "L40S",
    "L4",
    "A10",
    "GeForce RTX 3090",
    "GeForce RTX 4090",
    "GeForce RTX 5090",
    "TITAN RTX",
    "RTX A6000",
    "RTX 6000 Ada Generation",
    "Tesla V100 SXM2 16GB",
    "Tesla V100 SXM2 32GB",
    "Tesla V100 PCIe 16GB",
    "Tesla V100 PCIe 32GB",
)

# shared/gpu-evidence/h100-2026-11-22/README.md
H100_BF16_BEST = 799.4
H100_BF16_8192 = 771.6
H100_TF32_8192 = 361.4
H100_COPY_RW = 2989.0
H100_H2D_PINNED = 55.1


def _spec(name: str) -> catalog.GpuSpec:
    spec = catalog.lookup(name)
    assert spec is not None, name
    return spec


@pytest.mark.parametrize("name", COVERAGE)
def test_every_covered_sku_has_a_matmul_and_membw_band_below_its_peak(name: str) -> None:
    spec = _spec(name)
    membw = band_for(spec, "membw")
    assert membw is not None
    assert membw.peak is not None
    assert membw.peak == spec.memory_bandwidth_gbps
    assert 0 < membw.expected_min < membw.peak
    assert membw.source
    check = judged_matmul_check(spec)
    assert check is not None
    matmul = band_for(spec, check)
    assert matmul is not None
    assert matmul.peak is not None
    assert 0 < matmul.expected_min < matmul.peak
    assert "http" in matmul.source


def test_a_band_exactly_where_the_catalogue_has_a_peak() -> None:
    for spec in catalog.GPUS:
        checks = {b.check for b in bands_for(spec)}
        for check, peak in (
            ("matmul_bf16", spec.bf16_tflops),
            ("matmul_fp16", spec.fp16_tflops),
            ("matmul_tf32", spec.tf32_tflops),
            ("membw", spec.memory_bandwidth_gbps),
        ):
            assert (check in checks) == (peak is not None), (spec.name, check)


def test_every_band_is_a_floor_strictly_below_its_peak_with_a_cited_source() -> None:
    for spec in catalog.GPUS:
        facts = [*bands_for(spec), spec_p2p_band(spec), allreduce_band(spec, gpus=8, nvswitch=True)]
        for band in facts:
            if band is None:
                continue
            assert band.check in CHECKS
            assert band.expected_min > 0
            assert band.peak is None or band.expected_min < band.peak, (spec.name, band)
            assert "http" in band.source, (spec.name, band.check)
            assert band.basis, (spec.name, band.check)


def test_judged_matmul_is_bf16_where_the_card_has_it_else_fp16_else_none() -> None:
    assert judged_matmul_check(_spec("NVIDIA H100 80GB HBM3")) == "matmul_bf16"
    assert judged_matmul_check(_spec("Tesla V100-SXM2-16GB")) == "matmul_fp16"
    assert judged_matmul_check(_spec("TITAN RTX")) == "matmul_fp16"
    assert judged_matmul_check(_spec("GeForce GTX 1080 Ti")) is None


@pytest.mark.parametrize(
    ("check", "measured"),
    [
        ("matmul_bf16", H100_BF16_BEST),
        ("matmul_bf16", H100_BF16_8192),
        ("matmul_tf32", H100_TF32_8192),
        ("membw", H100_COPY_RW),
        ("hostlink_h2d", H100_H2D_PINNED),
    ],
)
def test_h100_sxm_bands_agree_with_the_reference_run(check: str, measured: float) -> None:
    band = band_for(_spec("H100 SXM5"), check)
    assert band is not None
    assert band.expected_min < measured  # the healthy reference card passes
    assert band.expected_min >= 0.7 * measured  # and the floor is not absurdly low


def test_h100_hostlink_is_judged_against_its_gen5_x16_link() -> None:
    band = band_for(_spec("H100 SXM5"), "hostlink_d2h")
    assert band is not None
    assert band.peak == pytest.approx(63.02, abs=0.01)
    assert "Gen5 x16" in band.basis


@pytest.mark.parametrize(
    ("name", "check", "measured"),
    [  # the community torch runs the fractions are cited from (TORCH_MATMUL_DB, L4_MATMUL)
        ("GeForce RTX 3090", "matmul_bf16", 76.3),
        ("GeForce RTX 4090", "matmul_bf16", 160.5),
        ("RTX A6000", "matmul_bf16", 123.3),
        ("L40S", "matmul_bf16", 269.2),
        ("L4", "matmul_bf16", 56.9),
        ("L4", "matmul_fp16", 52.5),
        ("Tesla V100S PCIe 32GB", "matmul_fp16", 88.9),
        ("Tesla T4", "matmul_fp16", 42.7),
        ("H200 SXM", "matmul_bf16", 790.3),
        ("B200", "matmul_bf16", 1696.0),
    ],
)
def test_matmul_floors_sit_under_the_cited_measurements(name: str, check: str, measured: float) -> None:
    band = band_for(_spec(name), check)
    assert band is not None
    assert band.expected_min < measured


def test_geforce_floors_are_a_higher_fraction_of_their_fp32_accumulate_peak() -> None:
    geforce = band_for(_spec("GeForce RTX 4090"), "matmul_bf16")
    datacenter = band_for(_spec("H100 SXM5"), "matmul_bf16")
    assert geforce is not None
    assert geforce.peak
    assert datacenter is not None
    assert datacenter.peak
    assert geforce.expected_min / geforce.peak > datacenter.expected_min / datacenter.peak


def test_p2p_over_nv18_gen4_is_a_fraction_of_450() -> None:
    band = p2p_band(nvlinks=18, nvlink_generation=4, pcie_gen=5, pcie_width=16)
    assert band is not None
    assert band.peak == 450.0
    assert 0.7 * 450 <= band.expected_min < 371.0  # p2pBandwidthLatencyTest measured 371-377 GB/s
    assert "NVLink" in band.basis


def test_p2p_over_a_pcie_gen4_x16_pair() -> None:
    band = p2p_band(nvlinks=None, nvlink_generation=None, pcie_gen=4, pcie_width=16)
    assert band is not None
    assert band.peak == pytest.approx(31.51, abs=0.01)
    assert band.expected_min < 20.0  # GPU to GPU through the host measured 20-26 GB/s
    assert "PCIe Gen4 x16" in band.basis
    # no NVLinks (a 0 count) falls back to the PCIe link
    assert p2p_band(nvlinks=0, nvlink_generation=0, pcie_gen=4, pcie_width=16) == band


def test_p2p_tells_the_two_gen3_nvlinks_apart_by_link_count() -> None:
    a100 = p2p_band(nvlinks=12, nvlink_generation=3, pcie_gen=None, pcie_width=None)
    ga102 = p2p_band(nvlinks=4, nvlink_generation=3, pcie_gen=None, pcie_width=None)
    assert a100 is not None
    assert a100.peak == 300.0
    assert ga102 is not None
    assert ga102.peak == 56.25
    # the SKU's own chip decides where the count cannot: an A30 bridge is 4 GA100 links
    a30 = spec_p2p_band(_spec("A30"))
    assert a30 is not None
    assert a30.peak == 100.0


def test_p2p_is_none_when_nothing_is_known() -> None:
    assert p2p_band(nvlinks=None, nvlink_generation=None, pcie_gen=None, pcie_width=None) is None
    assert p2p_band(nvlinks=None, nvlink_generation=None, pcie_gen=4, pcie_width=3) is None


def test_allreduce_band_for_8_h100_on_nvswitch_per_condition_and_none_elsewhere() -> None:
    h100 = allreduce_band(_spec("H100 SXM5"), gpus=8, nvswitch=True)  # NVLS on, 8 GiB: the default condition
    assert h100 is not None
    assert h100.expected_min == 400.0
    assert h100.unit == "GB/s"
    assert h100.expected_min < 430.0  # the lowest published healthy NVLS-on figure (NVIDIA/nccl #1221)
    off = allreduce_band(_spec("H100 SXM5"), gpus=8, nvswitch=True, nvls=False)
    assert off is not None
    assert off.expected_min == 300.0  # NVLS off: under 330, the lowest published healthy figure
    assert "NVLS off" in off.basis
    h200 = allreduce_band(_spec("NVIDIA H200"), gpus=8, nvswitch=True)
    assert h200 is not None
    assert h200.expected_min == 400.0
    assert allreduce_band(_spec("GeForce RTX 4090"), gpus=2, nvswitch=False) is None
    assert allreduce_band(_spec("H100 SXM5"), gpus=4, nvswitch=True) is None
    assert allreduce_band(_spec("H100 SXM5"), gpus=8, nvswitch=False) is None
    # Under 256 MiB no condition has a published figure: no band rather than a guess.
    assert allreduce_band(_spec("H100 SXM5"), gpus=8, nvswitch=True, size_bytes=128 << 20) is None


def test_effective_band_is_the_catalogues_without_a_site_file() -> None:
    spec = _spec("H100 SXM5")
    band = effective_band(spec, "membw", None, gpu_name="NVIDIA H100 80GB HBM3")
    fact = band_for(spec, "membw")
    assert band is not None
    assert fact is not None
    assert (band.expected_min, band.peak, band.source) == (fact.expected_min, fact.peak, fact.source)
    assert effective_band(spec, "allreduce", None, gpu_name=spec.name) is None
    assert effective_band(None, "membw", None, gpu_name="Mystery GPU") is None


def test_effective_band_lays_the_site_floor_over_the_catalogues() -> None:
    site = parse_site_config(
        b'[bands."NVIDIA H100 80GB HBM3"]\nmatmul_bf16 = 750\n[bands."*"]\nmatmul_bf16 = 1\nmembw = 5\n', "site.toml"
    )
    spec = _spec("H100 SXM5")
    exact = effective_band(spec, "matmul_bf16", site, gpu_name="NVIDIA H100 80GB HBM3")
    assert exact is not None
    assert exact.expected_min == 750.0
    assert exact.peak == 989.4
    assert exact.source.startswith('site.toml: bands."NVIDIA H100 80GB HBM3".matmul_bf16')
    assert "ml-engineering" in exact.source  # the catalogue's source after the site's
    star = effective_band(spec, "membw", site, gpu_name=spec.name)
    assert star is not None
    assert star.expected_min == 5.0
    assert 'bands."*".membw' in star.source
    # an unknown card gets the site's floor alone
    unknown = effective_band(None, "membw", site, gpu_name="Mystery GPU")
    assert unknown is not None
    assert unknown.peak is None
    assert unknown.expected_min == 5.0


def test_explain_lists_every_covered_sku_with_bands_below_peak() -> None:
    doc = explain_bands(None, None, None)
    names = [g.name for g in doc.gpus]
    assert set(COVERAGE) <= set(names)
    for gpu in doc.gpus:
        assert gpu.bands, gpu.name
        order = [CHECKS.index(b.check) for b in gpu.bands]
        assert order == sorted(order), gpu.name
        for band in gpu.bands:
            assert band.source
            assert band.peak is None or band.expected_min < band.peak
    assert doc.site_config is None
    assert doc.notes
    assert doc.to_json_dict()["schema"] == "rigcheck.verify-bands/1"


def test_explain_one_gpu_by_its_nvml_name() -> None:
    doc = explain_bands(["NVIDIA H100 80GB HBM3"], None, None)
    assert [g.name for g in doc.gpus] == ["H100 SXM5"]
    checks = [b.check for b in doc.gpus[0].bands]
    assert checks == [*MATMUL_CHECKS, "membw", "hostlink_h2d", "hostlink_d2h", "p2p", "allreduce"]
    p2p = doc.gpus[0].bands[checks.index("p2p")]
    assert p2p.peak == 450.0  # the SKU's own 18 gen-4 links


def test_explain_a_pcie_card_has_a_pcie_p2p_band_and_no_allreduce() -> None:
    doc = explain_bands(["GeForce RTX 4090"], None, None)
    checks = [b.check for b in doc.gpus[0].bands]
    assert "allreduce" not in checks
    p2p = doc.gpus[0].bands[checks.index("p2p")]
    assert "PCIe Gen4 x16" in p2p.basis


def test_explain_with_a_site_file_names_it() -> None:
    site = parse_site_config(b'[bands."GeForce RTX 4090"]\nmatmul_bf16 = 150\n', "site.toml")
    doc = explain_bands(["GeForce RTX 4090"], site, "site.toml")
    assert doc.site_config == "site.toml"
    band = next(b for b in doc.gpus[0].bands if b.check == "matmul_bf16")
    assert band.expected_min == 150.0
    assert band.source.startswith("site.toml: ")
    assert any("site.toml" in n for n in doc.notes)


def test_explain_refuses_an_unknown_gpu_naming_close_candidates() -> None:
    with pytest.raises(UsageError, match="H100 SXM5") as info:
        explain_bands(["H100 SXM6"], None, None)
    assert "\n" not in str(info.value)
