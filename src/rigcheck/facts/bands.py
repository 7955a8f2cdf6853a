"""What a healthy card reaches: the achievable band of each `rigcheck verify` check, per SKU, with sources.

Every band is a floor (``expected_min``) that a healthy card of that SKU reaches, a fraction of the theoretical
``peak`` in the catalogue (facts/catalog.py, facts/pcie.py, facts/nvlink.py). The fractions come from public
measurements, each cited below, and each floor sits at or under the LOW end of what those measurements show:
a card below it is slower than every healthy card measured, not merely an unlucky one.

Check ids: ``matmul_bf16`` / ``matmul_fp16`` / ``matmul_tf32`` (TFLOPS, dense), ``membw`` (GB/s, device copy
counting read + write, against the memory spec), ``hostlink_h2d`` / ``hostlink_d2h`` (GB/s, pinned, against the
PCIe link the slot allows, floors from published healthy copies per generation), ``p2p`` (GB/s one direction
between two GPUs, against the pair's link), ``allreduce`` (GB/s bus bandwidth across the node's GPUs).
"""

from __future__ import annotations

from dataclasses import dataclass

from rigcheck.facts.catalog import GpuSpec
from rigcheck.facts.nvlink import NVLINK_VARIANTS, NvlinkVariant, variant_for_chip
from rigcheck.facts.pcie import PCIE_SOURCE, pcie_bandwidth_gbps
from rigcheck.facts.sources import H100_REF_TOOLS

MATMUL_CHECKS = ("matmul_bf16", "matmul_fp16", "matmul_tf32")
HOSTLINK = ("hostlink_h2d", "hostlink_d2h")
CHECKS = (*MATMUL_CHECKS, "membw", "hostlink_h2d", "hostlink_d2h", "p2p", "allreduce")

# Sources of the fractions: short enough for a verdict's one line; the figures they give sit beside each fraction.
# rigcheck's reference H100 SXM5 run (facts/sources.py H100_REFERENCE_RUN): bf16 best 799.4 of 989.4
# TFLOPS (mamf-finder; 771.6 at 8192^3), tf32 361.4 of 494.7, device copy 2989 GB/s read+write of 3350, pinned
# h2d 55.1 GB/s of 63.0 (Gen5 x16), nvbandwidth copy-engine h2d/d2h 49.47/54.36 GB/s.
H100_EVIDENCE = H100_REF_TOOLS
# BF16 MAMF: A100 SXM 86.9%, GH200 83.6%, A100 PCIe 81.1%, H100 SXM 80.3%, B200 77.6%.
MAMF_TABLE = (
    "ml-engineering (Stas Bekman), Maximum Achievable Matmul FLOPS table, "
    "https://github.com/stas00/ml-engineering/tree/master/compute/accelerator#maximum-achievable-matmul-flops-comparison-table"
)
# Community torch matmul runs, best of 1024..10240 square (TFLOPS): RTX 3090 bf16 76.3-76.7, RTX 4090 bf16 160-173,
# RTX 2080 fp16 39.0, RTX A6000 bf16 123.3, L40S bf16 269.2, H100 bf16 783.7-789.2, H200 790.3, B200 1696.0,
# V100S fp16 88.9, T4 fp16 42.7.
TORCH_MATMUL_DB = (
    "community torch matmul runs, https://github.com/zzc0721/torch-performance-test-data/blob/main/database.md"
)
# NVIDIA L4 (72 W) of 121 TFLOPS: bf16 59.4 at 8192^3, 56.9 at 10240^3; fp16 53.8 and 52.5.
L4_MATMUL = "L4 torch matmul run, https://github.com/zzc0721/torch-performance-test-data/issues/120"
# Intra-device copy, read + write (p2pBandwidthLatencyTest's diagonal): V100 SXM2 ~750 of 900 GB/s, RTX 4090
# 918-924 of 1008.
DEVICE_COPY = (
    "p2pBandwidthLatencyTest device copies, https://github.com/ginkgo-project/ginkgo/issues/164, "
    "https://github.com/tinygrad/open-gpu-kernel-modules/issues/6"
)
# HGX H100 NV18: unidirectional P2P writes 371-377 GB/s of 450; NCCL's maintainer: ~370 of 450 effective.
NVLINK_P2P = (
    "NV18 p2pBandwidthLatencyTest, https://github.com/NVIDIA/nccl/issues/1264; NCCL's effective NVLink rate, "
    "https://github.com/NVIDIA/nccl-tests/issues/212"
)
# Gen4 x16 GPU to GPU: 25.6-26.2 GB/s between RTX 4090s without P2P; 20-22 GB/s one way through the host.
PCIE_P2P = (
    "GPU-to-GPU copies over PCIe, https://github.com/tinygrad/open-gpu-kernel-modules/issues/6, "
    "https://github.com/NVIDIA/nccl/issues/814"
)
PCIE_LINKS_SOURCE = "system interface of the SKU's datasheet"

# Fractions of the peak each floor is. --------------------------------------------------------------------------
# Datacenter / workstation tensor matmul: measured 74-87% (L40S 74%, H100 80%, A100 SXM 87%); 0.72 is the low end.
MATMUL_FRACTION = 0.72
# GeForce: the catalogue quotes the FP32-accumulate rate at the rated boost clock; cards boost higher and torch
# reaches 97-107% of it (3090 76.5/71, 4090 160-173/165.2, 2080 39.0/40.3).
GEFORCE_MATMUL_FRACTION = 0.85
# Volta / Turing (and Pascal packed FP16) non-GeForce: V100S 68%, T4 66% of their tensor figures.
PRE_AMPERE_MATMUL_FRACTION = 0.60
# Slot-powered or <=165 W boards hold their power cap under a large matmul: L4 43-59% (fp16/bf16, 8192-10240).
LOW_POWER_MATMUL_FRACTION = 0.40
LOW_POWER_W = 165.0
# TF32 runs a little further from its peak than BF16: H100 73% at 8192^3 against 78% for bf16.
TF32_SCALE = 0.9
TF32_CAP = 0.65
# Device copy: H100 89% (torch), 4090 91%, V100 83% (p2pBandwidthLatencyTest); the HBM 87-90%.
MEMBW_FRACTION = 0.80
# Pinned host copies: a floor per PCIe generation for an x16 link (scaled by lanes), under the LOWEST published
# healthy figure of that generation (the lower direction, GB/s) with a margin, and over the best healthy figure of
# the generation below (so a link trained one generation down, or to half its lanes, fails):
# - Gen3 x16: CUDA bandwidthTest h2d/d2h T4 9.7/11.1, V100 SXM2 9.6/11.4 (HOST_GEN3); P100 PCIe 12.2/12.9, NUMA-local
#   (https://github.com/mpicbg-scicomp/gearshifft/pull/82). Floor 8.0: 17% under 9.6; over what Gen2 x16 reaches
#   (8.0 encoded, and no generation's copies reach more than 91% of their encoded rate).
# - Gen4 x16: nvbandwidth CE 8x RTX 4090 h2d 23.90-26.38, d2h 26.25-27.11 (HOST_GEN4); A100 PCIe bandwidthTest h2d
#   24.1-25.8, d2h 25.4-26.2 at 100 MB-1 GB. Floor 20.0: 16% under 23.9, over Gen3's best 13.2.
# - Gen5 x16: nvbandwidth CE H100 SXM5 h2d 49.47, d2h 54.36 (H100_EVIDENCE); 8x RTX 5090 h2d 56.30-56.41, d2h
#   57.29-57.35 (HOST_GEN5). Floor 42.0: 15% under 49.47, over Gen4's best 27.1.
HOST_GEN3 = (
    "CUDA bandwidthTest T4 and V100 SXM2, "
    "https://github.com/router-gao/cuda-demo/blob/dca1c6b28a29b06f1468d2e1bdc2fc3054d7c6a2/cuda-samples/02-cuda-bandwidth.md"
)
HOST_GEN4 = (
    "nvbandwidth 8x RTX 4090, https://github.com/NVIDIA/nvbandwidth/issues/15; CUDA bandwidthTest A100 PCIe, "
    "https://github.com/jdh4/della-gpu-A100/blob/00d5c87254a67d0611cdf1f12b2dfe68aca2463d/README.md"
)
HOST_GEN5 = f"nvbandwidth 8x RTX 5090, https://github.com/tinygrad/open-gpu-kernel-modules/issues/29; {H100_EVIDENCE}"


@dataclass(frozen=True)
class HostlinkEvidence:
    """The host-copy floor of one PCIe generation on x16, and the published healthy figures it sits under."""

    floor_x16: float
    lowest_healthy: float  # the lowest published healthy x16 figure (GB/s, one direction, pinned)
    best_healthy: float  # the highest published healthy x16 figure
    source: str


HOSTLINK_EVIDENCE: dict[int, HostlinkEvidence] = {
    3: HostlinkEvidence(8.0, 9.6, 13.2, HOST_GEN3),
    4: HostlinkEvidence(20.0, 23.9, 27.11, HOST_GEN4),
    5: HostlinkEvidence(42.0, 49.47, 57.35, HOST_GEN5),
}
# A generation without published figures here (Gen1, Gen2, Gen6): half the encoded rate, under every measured
# generation's floor fraction (Gen3 0.51, Gen4 0.63, Gen5 0.67 of their encoded x16 rates).
HOSTLINK_UNMEASURED_FRACTION = 0.5
# NVLink P2P: 83% (p2pBandwidthLatencyTest on NV18) and NCCL's ~82% effective.
NVLINK_P2P_FRACTION = 0.78
# GPU to GPU over PCIe, often staged through host memory: 20-26 GB/s of 31.5 on Gen4 x16 (64-83%).
PCIE_P2P_FRACTION = 0.55
# The all-reduce floors are per condition (NVLS on/off, message size, across nodes): facts/allreduce_bands.py.

# The PCIe link each SKU is built for: (generation, width). Pre-Blackwell GeForce and every Ampere/Ada card are
# Gen4 x16, Hopper and Blackwell Gen5 x16 (the RTX 5060 Ti has eight lanes), Turing/Volta/Pascal Gen3 x16.
# GB200 reaches its Grace CPU over NVLink-C2C, not PCIe: no hostlink band.
PCIE_LINKS: dict[str, tuple[int, int]] = {
    "GeForce GTX 1080 Ti": (3, 16),
    "GeForce GTX 1070": (3, 16),
    "TITAN Xp": (3, 16),
    "TITAN V": (3, 16),
    "TITAN RTX": (3, 16),
    "GeForce RTX 2080 Ti": (3, 16),
    "GeForce RTX 2080 Super": (3, 16),
    "GeForce RTX 2080": (3, 16),
    "GeForce RTX 2070": (3, 16),
    "GeForce RTX 3090": (4, 16),
    "GeForce RTX 3090 Ti": (4, 16),
    "GeForce RTX 3080 Ti": (4, 16),
    "GeForce RTX 3080": (4, 16),
    "GeForce RTX 3070": (4, 16),
    "GeForce RTX 3060": (4, 16),
    "GeForce RTX 3060 Ti": (4, 16),
    "GeForce RTX 4090": (4, 16),
    "GeForce RTX 4080": (4, 16),
    "GeForce RTX 5090": (5, 16),
    "GeForce RTX 5080": (5, 16),
    "GeForce RTX 5070 Ti": (5, 16),
    "GeForce RTX 5060 Ti": (5, 8),
    "Quadro RTX 6000": (3, 16),
    "Quadro RTX 8000": (3, 16),
    "RTX A4000": (4, 16),
    "RTX A5000": (4, 16),
    "RTX A6000": (4, 16),
    "RTX 6000 Ada Generation": (4, 16),
    "RTX PRO 6000 Blackwell Workstation Edition": (5, 16),
    "RTX PRO 6000 Blackwell Max-Q Workstation Edition": (5, 16),
    "Tesla K20m": (2, 16),
    "Tesla P100 PCIe 16GB": (3, 16),
    "Tesla P100 SXM2 16GB": (3, 16),
    "Tesla V100 PCIe 16GB": (3, 16),
    "Tesla V100 PCIe 32GB": (3, 16),
    "Tesla V100S PCIe 32GB": (3, 16),
    "Tesla V100 SXM2 16GB": (3, 16),
    "Tesla V100 SXM2 32GB": (3, 16),
    "A100 PCIe 40GB": (4, 16),
    "A100 PCIe 80GB": (4, 16),
    "A100 SXM4 40GB": (4, 16),
    "A100 SXM4 80GB": (4, 16),
    "A10": (4, 16),
    "A30": (4, 16),
    "A40": (4, 16),
    "Tesla T4": (3, 16),
    "L4": (4, 16),
    "L40": (4, 16),
    "L40S": (4, 16),
    "H100 PCIe": (5, 16),
    "H100 SXM5": (5, 16),
    "H100 NVL": (5, 16),
    "H200 SXM": (5, 16),
    "H200 NVL": (5, 16),
    "B200": (5, 16),
}


@dataclass(frozen=True)
class BandFact:
    check: str
    unit: str
    expected_min: float
    peak: float | None
    source: str
    basis: str  # what the peak is: "BF16 dense tensor", "HBM3 spec", "PCIe Gen5 x16, 128b/130b", ...


def judged_matmul_check(spec: GpuSpec) -> str | None:
    """The matmul dtype `verify` measures: BF16 where the SKU has it, else FP16, else None (no tensor figure)."""
    if spec.bf16_tflops is not None:
        return "matmul_bf16"
    if spec.fp16_tflops is not None:
        return "matmul_fp16"
    return None


def _matmul_fraction(spec: GpuSpec) -> tuple[float, str, str]:
    """(fraction, class, source) of a SKU's tensor peak that a healthy card reaches."""
    if spec.name.startswith("GeForce"):
        return GEFORCE_MATMUL_FRACTION, "GeForce, FP32 accumulate", TORCH_MATMUL_DB
    if spec.board_power_w is not None and spec.board_power_w <= LOW_POWER_W:
        return LOW_POWER_MATMUL_FRACTION, f"power-capped board ({spec.board_power_w:g} W)", L4_MATMUL
    if spec.architecture in {"Pascal", "Volta", "Turing"}:
        return PRE_AMPERE_MATMUL_FRACTION, f"{spec.architecture}", TORCH_MATMUL_DB
    return MATMUL_FRACTION, "datacenter/workstation", f"{MAMF_TABLE}; {H100_EVIDENCE}"


def _matmul_bands(spec: GpuSpec) -> list[BandFact]:
    fraction, kind, source = _matmul_fraction(spec)
    tf32 = min(fraction * TF32_SCALE, TF32_CAP)
    rows = (
        ("matmul_bf16", spec.bf16_tflops, fraction, "BF16 dense tensor"),
        ("matmul_fp16", spec.fp16_tflops, fraction, "FP16 dense tensor"),
        ("matmul_tf32", spec.tf32_tflops, tf32, "TF32 dense tensor"),
    )
    return [
        BandFact(
            check,
            "TFLOPS",
            round(peak * frac, 1),
            peak,
            f"{frac:.2f} x peak ({kind}): {source}; peak: {spec.source}",
            f"{basis}, {peak:g} TFLOPS",
        )
        for check, peak, frac, basis in rows
        if peak is not None
    ]


def _membw_band(spec: GpuSpec) -> BandFact | None:
    if spec.memory_bandwidth_gbps is None:
        return None
    peak = spec.memory_bandwidth_gbps
    return BandFact(
        "membw",
        "GB/s",
        round(peak * MEMBW_FRACTION, 1),
        peak,
        f"{MEMBW_FRACTION:.2f} x memory spec: {H100_EVIDENCE}; {DEVICE_COPY}; peak: {spec.source}",
        f"memory bandwidth spec {peak:g} GB/s (device copy counted read + write)",
    )


def hostlink_band(check: str, gen: int, width: int, *, link: str = "as built") -> BandFact | None:
    """The pinned host-copy band (``hostlink_h2d`` / ``hostlink_d2h``) of a PCIe link: the generation's published
    x16 floor scaled by lanes (HOSTLINK_EVIDENCE), else half the encoded rate; ``link`` says whose link it is
    ("the slot's", "as built"...). None for an unknown generation or width."""
    rate = pcie_bandwidth_gbps(gen, width)
    if rate is None:
        return None
    peak = round(rate, 2)
    evidence = HOSTLINK_EVIDENCE.get(gen)
    if evidence is not None:
        floor = round(evidence.floor_x16 * width / 16, 1)
        under = 1 - evidence.floor_x16 / evidence.lowest_healthy
        why = (
            f"Gen{gen} x16 floor {evidence.floor_x16:g} GB/s x {width}/16 lanes, {under:.0%} under the lowest "
            f"published healthy Gen{gen} x16 copy ({evidence.lowest_healthy:g}): {evidence.source}"
        )
    else:
        floor = round(peak * HOSTLINK_UNMEASURED_FRACTION, 1)
        why = f"{HOSTLINK_UNMEASURED_FRACTION:.2f} x encoded rate (no published Gen{gen} copy at hand)"
    source = f"{why}; rate: {PCIE_SOURCE}"
    basis = f"PCIe Gen{gen} x{width}, {link}, encoded {peak:.1f} GB/s one direction"
    return BandFact(check, "GB/s", floor, peak, source, basis)


def older_hostlink_band(check: str, gen: int, width: int) -> BandFact | None:
    """Where the slot's generation is not known: the host-copy band of the card's own width ONE generation older,
    the commonest platform limit (a Gen4 card in a Gen3 host or VM: the A100 SXM4 copying 12.3 GB/s in
    HOST_GEN3's cloud instance; a Gen5 card in a Gen4 host). A figure between it and the card's own floor is the
    slot's to explain, not judged; under it no plausible slot explains it (half the lanes or worse). Only onto a
    generation with published copies (HOSTLINK_EVIDENCE): a Gen3 card in a Gen2 host is not a platform one meets,
    and Gen2 has no measured floor. None otherwise."""
    if gen - 1 not in HOSTLINK_EVIDENCE:
        return None
    return hostlink_band(check, gen - 1, width, link="one generation under the card's own (the slot's not known)")


def _hostlink_bands(spec: GpuSpec) -> list[BandFact]:
    """The SKU's host-copy bands on its own link as built: where the slot's link is not known."""
    link = PCIE_LINKS.get(spec.name)
    if link is None:
        return []
    bands = [hostlink_band(check, *link, link=f"as built ({spec.name}, {PCIE_LINKS_SOURCE})") for check in HOSTLINK]
    return [b for b in bands if b is not None]


def bands_for(spec: GpuSpec) -> list[BandFact]:
    """Every band of the SKU that does not depend on how it is connected (matmul, membw, hostlink)."""
    membw = _membw_band(spec)
    return [*_matmul_bands(spec), *([membw] if membw else []), *_hostlink_bands(spec)]


def band_for(spec: GpuSpec, check: str) -> BandFact | None:
    """One band of the SKU, or None where the SKU has none for that check (no BF16 before Ampere...)."""
    return next((b for b in bands_for(spec) if b.check == check), None)


def nvlink_p2p_band(variant: NvlinkVariant, links: int) -> BandFact | None:
    """The one-direction copy band of a pair joined by ``links`` links of one NVLink implementation."""
    if links <= 0:
        return None
    peak = variant.link_gbps * links
    return BandFact(
        "p2p",
        "GB/s",
        round(peak * NVLINK_P2P_FRACTION, 1),
        peak,
        f"{NVLINK_P2P_FRACTION:.2f} x NVLink line rate: {NVLINK_P2P}; rate: {variant.source}",
        f"NVLink gen {variant.generation}, {links} links x {variant.link_gbps:g} GB/s, one direction",
    )


def _variant(generation: int, links: int) -> NvlinkVariant | None:
    """The NVLink implementation of a generation; where one generation has two (gen 3: GA100 25 GB/s a link,
    GA102 bridges 14.0625), a count above the slower one's links tells them apart, else the slower (a floor)."""
    found = sorted((v for v in NVLINK_VARIANTS if v.generation == generation), key=lambda v: v.link_gbps)
    if not found:
        return None
    return next((v for v in found if links <= v.max_links), found[-1])


# A pair that cannot use peer access (GeForce RTX 4090 pairs: the driver disables P2P) copies through host
# memory, twice over the links: published healthy staged copies 5.70-5.72 GB/s on a 2x RTX 2080 Ti container (36%
# of Gen3 x16 as built, tests/fixtures/corpus/p2p/001-2x2080ti-cannot-access-peer.txt), 18.41-22.61 on RTX 4090s
# (58-72% of Gen4 x16, tests/fixtures/p2p-bands/, tests/calibration), 20.1-22.4 (nccl #814). 0.30: 17% under 36%.
STAGED_P2P_FRACTION = 0.30
STAGED_P2P = (
    "staged GPU copies through host memory, 2x RTX 2080 Ti 5.72 GB/s (Anthony-Hoo/Anthony-Hoo.github.io "
    "posts/AutoDL_Multi-GPU_Interconnection_Test.md), 2x RTX 4090 20.91, https://github.com/NVIDIA/nccl/issues/814"
)


def pcie_p2p_band(gen: int, width: int, *, staged: bool = False) -> BandFact | None:
    """The one-direction copy band of two GPUs on PCIe links of this generation and width; ``staged``: a pair
    without peer access, whose copies cross host memory (STAGED_P2P_FRACTION)."""
    rate = pcie_bandwidth_gbps(gen, width)
    if rate is None:
        return None
    peak = round(rate, 2)
    fraction, source = (STAGED_P2P_FRACTION, STAGED_P2P) if staged else (PCIE_P2P_FRACTION, PCIE_P2P)
    how = ", staged through host memory (no peer access)" if staged else ""
    return BandFact(
        "p2p",
        "GB/s",
        round(peak * fraction, 1),
        peak,
        f"{fraction:.2f} x PCIe encoded rate: {source}; rate: {PCIE_SOURCE}",
        f"PCIe Gen{gen} x{width} encoded, one direction, {peak:.1f} GB/s{how}",
    )


def p2p_band(
    *,
    nvlinks: int | None,
    nvlink_generation: int | None,
    pcie_gen: int | None,
    pcie_width: int | None,
    staged: bool = False,
) -> BandFact | None:
    """The band of one GPU pair's one-direction copy: NVLink (links x per-link rate) when the pair has NVLinks,
    else the PCIe link both GPUs sit on (``staged``: without peer access, through host memory); None when
    neither is known."""
    if nvlinks and nvlink_generation and not staged:
        variant = _variant(nvlink_generation, nvlinks)
        if variant is not None:
            return nvlink_p2p_band(variant, nvlinks)
    if pcie_gen and pcie_width:
        return pcie_p2p_band(pcie_gen, pcie_width, staged=staged)
    return None


def spec_p2p_band(spec: GpuSpec) -> BandFact | None:
    """The p2p band of two GPUs of this SKU as built: its own NVLinks where it has them, else its PCIe link."""
    if spec.nvlink_links and spec.nvlink_generation:
        variant = variant_for_chip(spec.chip) or _variant(spec.nvlink_generation, spec.nvlink_links)
        if variant is not None and variant.generation == spec.nvlink_generation:
            return nvlink_p2p_band(variant, spec.nvlink_links)
    link = PCIE_LINKS.get(spec.name)
    return pcie_p2p_band(*link) if link else None


def allreduce_band(
    spec: GpuSpec, *, gpus: int, nvswitch: bool, nvls: bool | None = True, size_bytes: int = 8 << 30
) -> BandFact | None:
    """The all-reduce bus-bandwidth band of ``gpus`` GPUs of this SKU in one box on NVSwitch, for one condition
    (NVLS on/off/unknown, the largest size measured; facts/allreduce_bands.py); None where no public figure
    gives one. NVLink SHARP lets the busbw pass the NVLink line rate, so no theoretical peak bounds it."""
    from rigcheck.facts.allreduce_bands import node_condition

    switch = nvswitch and spec.form_factor == "sxm"
    found = node_condition(spec.chip, gpus=gpus, nvswitch=switch, size=size_bytes, nvls=nvls, nvls_why="")
    if found.floor is None or found.source is None:
        return None
    basis = f"{gpus} GPUs on NVSwitch, {found.condition}"
    return BandFact("allreduce", "GB/s", found.floor, None, f"floor {found.floor:g} GB/s busbw: {found.source}", basis)
