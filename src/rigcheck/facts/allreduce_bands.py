"""All-reduce bus-bandwidth bands per condition, with the published healthy figures each floor sits under.

A node's all-reduce depends on more than its GPUs: whether NCCL used NVLink SHARP (NVLS: the NVSwitch reduces,
H100/H200 only, NCCL >= 2.17), the message size (busbw climbs to its peak over the GiB range), and, across
nodes, the network. So a band is chosen per condition and the verdict names the condition it assumed
("floor 300 (NVLS off, >= 1 GiB)"). Every floor sits under the LOWEST published healthy figure of its condition,
by the margin given beside it (`margin` below); a floor within 5% of that figure is marked close.

Which NVLS state a run had (:func:`nvls_state`), first to last: NCCL_NVLS_ENABLE=0 or NCCL_ALGO without NVLS
(off); NCCL's "NVLS multicast support is not available" (off: VMs without multicast, old Fabric Manager);
NCCL before 2.17 (off: no NVLS); NVLS channels built or support available (on); a busbw above what a ring
reaches on the part's NVLinks (on: only NVLS passes it); else unknown, judged against the NVLS-off floor, the
lower one, so that a healthy node is never failed for a state the file does not show.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from rigcheck.units import exact_size

GIB: Final = 1 << 30
MIB: Final = 1 << 20
CLOSE: Final = 0.05  # a floor this close under its lowest healthy figure is marked in the verdict

# Sources. ----------------------------------------------------------------------------------------------------
# NCCL's maintainer: ring (NVLS off) reaches ~370 GB/s busbw on NVLink4 (450 line rate); NVLS ~480 on 8 GPUs.
NCCL_MAINTAINER = "https://github.com/NVIDIA/nccl-tests/issues/212"
# 8x H100, NVLS off vs on: 370 -> 480 busbw (NCCL 2.30.4).
NVLS_ON_OFF = "https://github.com/NVIDIA/nccl/issues/2140"
# 8x H100 SXM, NCCL_ALGO=RING: 365-370 GB/s from 2 to 8 GPUs; NVLS: 480 on 8 (2-4 GiB).
RING_VS_NVLS = "https://github.com/NVIDIA/nccl/issues/1455"
# 8x H100 (8x400G RoCE), NCCL 2.19.3, 4-8 GiB: NCCL_NVLS_ENABLE=0 330 GB/s, =1 430 GB/s.
NVLS_330_430 = "https://github.com/NVIDIA/nccl/issues/1221"
# 8x H100, 16 GiB: NVLS 480.0, NCCL_NVLS_ENABLE=0 367.2 (ring).
ML_ENGINEERING_NET = "ml-engineering (Stas Bekman), network/README.md, https://github.com/stas00/ml-engineering"
# 8x H100 80GB HBM3 (DGX H100), NVLS: 422.25 at 256 MiB, 436.79 at 512 MiB, 466.33 at 1 GiB, 480.16 at 8 GiB
# (tests/fixtures/allreduce-bands/, NVIDIA DGX Cloud benchmarking recipe's sample output).
DGXC_RECIPE = "NVIDIA DGX Cloud Benchmarking NCCL recipe, sample all_reduce_perf output (8x H100 80GB HBM3)"
# 8x H200: 475 GB/s at 4 GiB (NCCL 2.20.3); 476.72 at 8 GiB (NCCL 2.19.3, Azure ND H200 v5).
H200_NVLS = "https://github.com/NVIDIA/nccl-tests/issues/272"
# 8x A100 SXM4 on NVSwitch (ring; A100 has no NVLS): ~200 GB/s busbw (nccl-tests #149); 235.26 at 8 GiB
# (microsoft/superbenchmark tests/data/nccl_allreduce.log, 8x A100-SXM4-40GB).
A100_RING = (
    "https://github.com/NVIDIA/nccl-tests/issues/149; microsoft/superbenchmark tests/data/nccl_allreduce.log "
    "(235.26 GB/s at 8 GiB)"
)
# An 8-GPU SXM board of Ampere or later is NVSwitch: NVIDIA lists the HGX A100, H100, H800, H200, B200 and B300
# 8-GPU baseboards as its NVSwitch platforms (NVIDIA AI Enterprise, NVSwitch platform support), and Fabric Manager
# exists for these "NVSwitch-based single-node HGX and DGX systems"; 4-GPU HGX boards join their GPUs directly.
HGX_NVSWITCH = (
    "NVIDIA AI Enterprise, NVIDIA NVSwitch, platform support (HGX A100/H100/H800/H200/B200/B300 8-GPU baseboards), "
    "https://docs.nvidia.com/ai-enterprise/release-8/8.0/infra-software/vgpu/features/nvswitch.html; "
    "NVIDIA Fabric Manager User Guide, https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide"
)
NVSWITCH_ARCHITECTURES: Final = frozenset({"Ampere", "Hopper", "Blackwell"})
NVSWITCH_BOARD_GPUS: Final = 8


@dataclass(frozen=True)
class Tier:
    """One condition's floor from ``min_bytes`` up: the floor, the lowest published healthy figure at or above
    that size, and where the figures come from."""

    min_bytes: int
    floor: float
    lowest_healthy: float
    evidence: str

    @property
    def margin(self) -> float:
        return 1 - self.floor / self.lowest_healthy


# 8 Hopper GPUs on NVSwitch (H100 SXM5, H200 SXM; H800/H20 have fewer links and no band here). -------------------
HOPPER_NVLS_ON: Final = (
    Tier(
        GIB,
        400.0,
        430.0,
        f"NVLS on: 430 at 4-8 GiB ({NVLS_330_430}), 466.33 at 1 GiB and 480.16 at 8 GiB "
        f"({DGXC_RECIPE}), ~480 ({NCCL_MAINTAINER}; {NVLS_ON_OFF}), 475-476.7 on H200 ({H200_NVLS})",
    ),
    Tier(256 * MIB, 370.0, 422.25, f"NVLS on: 422.25 at 256 MiB, 436.79 at 512 MiB ({DGXC_RECIPE})"),
)
HOPPER_NVLS_OFF: Final = (
    Tier(
        GIB,
        300.0,
        330.0,
        f"NVLS off (ring): 330 at 4-8 GiB ({NVLS_330_430}), 365-370 at 2-4 GiB "
        f"({RING_VS_NVLS}), 367.2 at 16 GiB ({ML_ENGINEERING_NET}), ~370 ({NCCL_MAINTAINER})",
    ),
)
# A ring on NVLink4 peaks ~370 (the maintainer's effective rate); a busbw this far above it needs NVLS.
HOPPER_RING_MAX: Final = 400.0
A100_TIERS: Final = (Tier(GIB, 180.0, 200.0, f"ring on NVSwitch: ~200, 235.26 at 8 GiB ({A100_RING})"),)

# Across nodes: the network bounds the busbw. A ring over k NICs carries busbw = k x the NIC rate, the node's
# aggregate (checks/fleet/collectives.py); tree algorithms pass it on two nodes. Healthy published runs reach
# 58-169% of the aggregate: 2x8 H100 8x400G IB 391.45 at 8 GiB (98%, a kubeflow mpi-operator note), 2x8 H100 A3
# Mega 8x200G 338.82 (169%, tests/fixtures/nccl-tests-extra/new-allreduce-16xh100-...),
# 4x8 H100 8x400G RoCE 320 (80%, nccl #1221), 2x8 H100 8x400G RoCE 231 at 8 GiB (58%, nccl #2409). Under 40% NCCL
# is not carrying the NICs at their rate: a socket fallback, GPUDirect RDMA off, NICs down or unused.
NETWORK_FRACTION: Final = 0.40
NETWORK_LOWEST_FRACTION: Final = 0.58
NETWORK_EVIDENCE: Final = (
    "2x8 H100 8x400G RoCE 231 GB/s at 8 GiB, 58% of the aggregate (https://github.com/NVIDIA/nccl/issues/2409); "
    "4x8 H100 8x400G 320, 80% (https://github.com/NVIDIA/nccl/issues/1221); 2x8 H100 8x400G IB 391.45, 98%; "
    "2x8 H100 A3 Mega 8x200G 338.82, 169% (lessizzmore/create-a3mega-ztan-fork ztan-NCCL-test-result)"
)
# No NIC known and no GPU class below: the least an RDMA-connected GPU node carries, a weak floor (5 GB/s) that
# the verdict says it is judged against; --nics gives the real one.
DEFAULT_NICS: Final = (1, 100.0)
# A healthy fabric reaches its share from a few hundred MiB: 2x8 H100 A3 Mega 8x200G 213.19 GB/s at 256 MiB
# (107% of its aggregate), 2x8 H100 8x400G IB 413.79 at 512 MiB (103%); under 256 MiB latency still weighs.
NETWORK_MIN_BYTES: Final = 256 * MIB

# Published cloud specifications, the NICs a node gives GPU-to-GPU traffic:
# Google Cloud, GPU machines' network bandwidth: A2 (8 A100) 100 Gbps in all; A3 High (8 H100) 4 NICs x 200 Gbps
# for GPUDirect-TCPX (1,000 Gbps with its host NIC); A3 Mega (8 H100) 8 x 200; A3 Ultra (8 H200) 8 CX-7, 3,200;
# A4 (8 B200) 8 CX-7, 3,200; A4X (GB200, 4 GPUs) 4 CX-7, 1,600; A4X Max (GB300, 4 GPUs) 4 CX-8, 3,200.
GCP_GPU_NETWORK = "https://cloud.google.com/compute/docs/gpus/gpu-network-bandwidth"
# AWS: p4d (8 A100) 400 Gbps EFA, p5 (8 H100) 3,200 Gbps EFA, P6-B200 3,200 Gbps EFAv4.
AWS_P4_P5_P6 = (
    "https://aws.amazon.com/ec2/instance-types/p4/; https://aws.amazon.com/ec2/instance-types/p5/; "
    "https://aws.amazon.com/ec2/instance-types/p6/"
)
# Azure ND H100 v5 / ND H200 v5: 8 x 400 Gb/s InfiniBand per VM.
AZURE_ND_H100 = "https://learn.microsoft.com/en-us/azure/virtual-machines/sizes/gpu-accelerated/ndh100v5-series"


@dataclass(frozen=True)
class Fabric:
    """The smallest NICs a published healthy multi-node cluster of one node class gives GPU traffic: what a run
    across such nodes is held to when nothing names its NICs (a bigger fabric only raises the figure)."""

    nodes: str  # "8x H100/H200": the node class, as the verdict names it
    gpus: int  # GPUs per node: more ranks than this span nodes
    nics: tuple[int, float]  # NICs per node, Gb/s each
    where: str  # the published cluster with that fabric, as the verdict names it
    source: str  # the published fabrics of the class, with their addresses


_HOPPER = Fabric(
    "8x H100/H200",
    8,
    (4, 200.0),
    "GCP A3 High",
    f"8x H100/H200: GCP A3 High 4x200 Gbps GPUDirect-TCPX; A3 Mega 8x200, A3 Ultra, Nebius and Azure 8x400 IB, AWS p5 "
    f"3,200 Gbps EFA are larger ({GCP_GPU_NETWORK}; {AWS_P4_P5_P6}; {AZURE_ND_H100}); calibration: 2x8 H100 A3 Mega "
    "338.82 GB/s, 2x8 H100 Nebius 8x400G IB 467.28 GB/s",
)
_A100 = Fabric(
    "8x A100",
    8,
    (1, 100.0),
    "GCP A2",
    f"8x A100: GCP A2 100 Gbps, AWS p4d 4x100 EFA ({GCP_GPU_NETWORK}; {AWS_P4_P5_P6})",
)
# By catalog name (facts/catalog.py), and "GB300" by the name the GPUs print (not in the catalog).
SMALLEST_FABRIC: Final[dict[str, Fabric]] = {
    "H100 SXM5": _HOPPER,
    "H200 SXM": _HOPPER,
    "A100 SXM4 40GB": _A100,
    "A100 SXM4 80GB": _A100,
    "B200": Fabric(
        "8x B200",
        8,
        (8, 400.0),
        "GCP A4",
        f"8x B200: GCP A4 8x400, AWS P6-B200 3,200 Gbps ({GCP_GPU_NETWORK}; {AWS_P4_P5_P6})",
    ),
    "GB200": Fabric(
        "4x GB200", 4, (4, 400.0), "GCP A4X", f"GB200 (4 GPUs a node): GCP A4X 4x400 CX-7 ({GCP_GPU_NETWORK})"
    ),
    "GB300": Fabric(
        "4x GB300", 4, (4, 800.0), "GCP A4X Max", f"GB300 (4 GPUs a node): GCP A4X Max 4x800 CX-8 ({GCP_GPU_NETWORK})"
    ),
}


def smallest_fabric(model: str | None, printed: list[str] | tuple[str, ...] = ()) -> Fabric | None:
    """The node class's smallest published fabric: by the catalog's model name, else a GPU name the output prints
    ("NVIDIA GB300"); None for a GPU of no HGX/DGX-class multi-node fabric (PCIe cards, unknown parts)."""
    if model is not None and model in SMALLEST_FABRIC:
        return SMALLEST_FABRIC[model]
    for name in printed:
        words = name.upper().replace("-", " ").split()
        if "GB300" in words:
            return SMALLEST_FABRIC["GB300"]
    return None


def assumed_nics(fabric: Fabric | None, remedy: str = "give --nics") -> tuple[tuple[int, float], str]:
    """(NICs per node, why) when nothing names them: the node class's smallest published fabric, so that a run at
    a few GB/s across H100 nodes fails; else the weak DEFAULT_NICS, and the verdict says it is only that."""
    if fabric is not None:
        count, gbit = fabric.nics
        why = (
            f"NICs not given, assumed the smallest published fabric for {fabric.nodes} nodes, {count}x{gbit:g} Gb/s "
            f"({fabric.where}); {remedy}"
        )
        return fabric.nics, why
    count, gbit = DEFAULT_NICS
    why = f"NICs not given and the GPU not known: judged only against the weak default {count}x{gbit:g} Gb/s; {remedy}"
    return DEFAULT_NICS, why


# GPUs over PCIe (no NVSwitch, no bridge): the busbw against the narrowest GPU link's rate per direction. A
# healthy 2x RTX 2080 Ti box without P2P (staged through host memory) reaches 4.00 GB/s at 1 GiB, 25% of its Gen3
# x16 rate (tests/fixtures/corpus/nccl-tests/001-2x2080ti-allreduce-pcie-no-p2p.txt); with P2P a pair runs higher.
PCIE_FRACTION: Final = 0.20
PCIE_LOWEST_FRACTION: Final = 0.254
PCIE_EVIDENCE: Final = (
    "2x RTX 2080 Ti without P2P: 4.00 GB/s at 1 GiB, 25% of Gen3 x16 (Anthony-Hoo/Anthony-Hoo.github.io "
    "posts/AutoDL_Multi-GPU_Interconnection_Test.md)"
)
PCIE_MIN_BYTES: Final = 256 * MIB


def size_text(size: int) -> str:
    """A message size as nccl-tests users name it: 1 GiB, 256 MiB (a size of KiB is written in bytes)."""
    return exact_size(size, ("GiB", "MiB"))


def is_nvswitch_board(architecture: str | None, form_factor: str | None, gpus: int) -> bool:
    """Whether ``gpus`` SXM GPUs of this architecture in one box sit on NVSwitch: an 8-GPU HGX/DGX board of
    Ampere or later is built with them (HGX_NVSWITCH); a 4-GPU board, V100's hybrid cube mesh, PCIe cards not."""
    return form_factor == "sxm" and architecture in NVSWITCH_ARCHITECTURES and gpus == NVSWITCH_BOARD_GPUS


def _version_tuple(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    parts = [p for p in text.split("+")[0].split(".") if p.isdigit()]
    return tuple(int(p) for p in parts) if parts else None


def nvls_state(
    *,
    env: Mapping[str, str],
    support: bool | None,
    channels: int | None,
    nccl_version: str | None,
    busbw: float | None,
    ring_max: float | None,
) -> tuple[bool | None, str]:
    """(NVLS on, off or unknown; how it is known) from what a run shows, first to last as the module says."""
    enable = env.get("NCCL_NVLS_ENABLE")
    if enable is not None and enable.strip() == "0":
        return False, "NCCL_NVLS_ENABLE=0"
    algo = env.get("NCCL_ALGO")
    if algo and not algo.startswith("^") and "nvls" not in algo.lower():
        return False, f"NCCL_ALGO={algo}"
    if support is False:
        return False, "NCCL: NVLS multicast support is not available"
    version = _version_tuple(nccl_version)
    if version is not None and version < (2, 17):
        return False, f"NCCL {nccl_version} (NVLS came in 2.17)"
    if channels:
        return True, "NCCL built NVLS channels"
    if support:
        return True, "NCCL: NVLS multicast support is available"
    if busbw is not None and ring_max is not None and busbw > ring_max:
        return True, f"busbw {busbw:g} GB/s is above what a ring reaches ({ring_max:g}): only NVLS passes it"
    return None, "NVLS state not shown (no NCCL_DEBUG=INFO lines, no NCCL_NVLS_ENABLE)"


def tier_for(tiers: tuple[Tier, ...], size: int) -> Tier | None:
    """The tier of the largest size measured: the highest ``min_bytes`` at or under it."""
    fitting = [t for t in tiers if t.min_bytes <= size]
    return max(fitting, key=lambda t: t.min_bytes) if fitting else None


@dataclass(frozen=True)
class Condition:
    """The band a node's all-reduce is held to and the condition it assumed, or why there is none."""

    floor: float | None
    condition: str  # "NVLS off, >= 1 GiB" (floor set) or the reason there is no band
    source: str | None
    lowest_healthy: float | None = None

    @property
    def close(self) -> bool:
        """The floor within CLOSE of the lowest published healthy figure."""
        return bool(self.floor and self.lowest_healthy and self.floor > self.lowest_healthy * (1 - CLOSE))


def node_condition(
    chip: str | None, *, gpus: int, nvswitch: bool, size: int, nvls: bool | None, nvls_why: str
) -> Condition:
    """One node's band: 8 Hopper GPUs (NVLS on, off or unknown) or 8 A100 on NVSwitch, at the largest size."""
    if not nvswitch or gpus != NVSWITCH_BOARD_GPUS:
        return Condition(None, f"no public all-reduce figure for {gpus} GPUs without NVSwitch", None)
    if chip == "GH100":
        tiers = HOPPER_NVLS_ON if nvls else HOPPER_NVLS_OFF
        state = "NVLS on" if nvls else "NVLS off" if nvls is False else "NVLS unknown, the NVLS-off floor"
    elif chip == "GA100":
        tiers, state = A100_TIERS, "ring (A100 has no NVLS)"
    else:
        return Condition(None, "no public all-reduce figure for this GPU on NVSwitch", None)
    tier = tier_for(tiers, size)
    if tier is None:
        smallest = min(t.min_bytes for t in tiers)
        return Condition(
            None,
            f"the largest size measured ({size_text(size)}) is under {size_text(smallest)}, the smallest with a "
            f"published figure ({state}): run up to 8 GiB (-e 8G)",
            None,
        )
    text = f"{state}, >= {size_text(tier.min_bytes)}" + (f"; {nvls_why}" if chip == "GH100" and nvls_why else "")
    return Condition(tier.floor, text, f"{tier.evidence}; margin {tier.margin:.0%}", tier.lowest_healthy)


def network_condition(nics: tuple[int, float], where: str, size: int | None = None) -> Condition:
    """Across nodes: NETWORK_FRACTION of the node's NIC aggregate (``nics``: count, Gb/s each), from
    NETWORK_MIN_BYTES (``size``: the largest measured; None: not checked)."""
    count, gbit = nics
    aggregate = count * gbit / 8
    if size is not None and size < NETWORK_MIN_BYTES:
        return Condition(
            None,
            f"across nodes, the largest size measured ({size_text(size)}) is under {size_text(NETWORK_MIN_BYTES)}, "
            "where a healthy fabric reaches its rate: run up to 8 GiB (-e 8G)",
            None,
        )
    floor = round(aggregate * NETWORK_FRACTION, 1)
    text = f"across nodes, {count}x{gbit:g} Gb/s NICs = {aggregate:g} GB/s ({where})"
    margin = 1 - NETWORK_FRACTION / NETWORK_LOWEST_FRACTION
    return Condition(
        floor,
        text,
        f"{NETWORK_FRACTION:.2f} x the NIC aggregate: {NETWORK_EVIDENCE}; margin {margin:.0%}",
        round(aggregate * NETWORK_LOWEST_FRACTION, 1),
    )


def pcie_condition(rate_gbps: float, link: str, size: int) -> Condition:
    """GPUs over PCIe: PCIE_FRACTION of the narrowest link's rate per direction, from 256 MiB."""
    if size < PCIE_MIN_BYTES:
        return Condition(
            None, f"the largest size measured ({size_text(size)}) is under {size_text(PCIE_MIN_BYTES)}: run to 1G", None
        )
    floor = round(rate_gbps * PCIE_FRACTION, 2)
    margin = 1 - PCIE_FRACTION / PCIE_LOWEST_FRACTION
    return Condition(
        floor,
        f"over PCIe, {link} {rate_gbps:g} GB/s per direction, with or without P2P",
        f"{PCIE_FRACTION:.2f} x the PCIe rate: {PCIE_EVIDENCE}; margin {margin:.0%}",
        round(rate_gbps * PCIE_LOWEST_FRACTION, 2),
    )


def parse_nics(text: str) -> tuple[int, float] | None:
    """--nics N×RATE: "8x400", "8x400G", "8×400Gb/s", "2x200gbps" -> (8, 400.0); None when it is not one."""
    body = text.strip().lower().replace("×", "x").replace(" ", "")
    count, sep, rate = body.partition("x")
    rate = rate.removesuffix("/s").removesuffix("bps").removesuffix("b").removesuffix("g")
    if not sep or not count.isdigit() or int(count) <= 0:
        return None
    try:
        gbit = float(rate)
    except ValueError:
        return None
    return (int(count), gbit) if gbit > 0 else None
