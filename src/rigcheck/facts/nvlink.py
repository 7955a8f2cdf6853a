"""NVLink generations: bandwidth per link per direction and links per GPU on the flagship parts.

GB/s is 1e9 bytes per second in ONE direction (NVIDIA's "bidirectional" totals are twice these). nvidia-smi
nvlink -s prints the raw signalling figure (25.781 GB/s on V100 = 25.78125 Gbit/s x 8 lanes / 8), slightly
above the data rates quoted here.
"""

from __future__ import annotations

from dataclasses import dataclass

from rigcheck.facts import catalog
from rigcheck.facts.sources import A100_WP, GA102_WP, HOPPER_WP, PASCAL_WP, TURING_WP, VOLTA_WP

# The whitepapers are re-exported: callers cite them from this module.
__all__ = [
    "A100_WP",
    "BLACKWELL_SRC",
    "GA102_WP",
    "HOPPER_WP",
    "NVLINK_VARIANTS",
    "PASCAL_WP",
    "TURING_WP",
    "VOLTA_WP",
    "NvlinkVariant",
    "nvlink_pair_bandwidth_gbps",
    "variant_for",
    "variant_for_chip",
]

BLACKWELL_SRC = "NVIDIA Blackwell architecture / HGX B200 specifications (fifth-generation NVLink, 1.8 TB/s per GPU), https://www.nvidia.com/en-us/data-center/technologies/blackwell-architecture/"


@dataclass(frozen=True)
class NvlinkVariant:
    """One NVLink implementation: a generation as built into one family of chips."""

    generation: int
    chips: tuple[str, ...]  # GPU dies that carry it
    link_gbps: float  # per link, per direction
    max_links: int  # links per GPU on the flagship part
    flagship: str
    source: str
    note: str = ""

    @property
    def max_gbps(self) -> float:
        """The flagship part's total, per direction."""
        return self.link_gbps * self.max_links


NVLINK_VARIANTS: tuple[NvlinkVariant, ...] = (
    NvlinkVariant(1, ("GP100",), 20.0, 4, "Tesla P100 SXM2", PASCAL_WP, "4 links x 40 GB/s bidirectional = 160 GB/s"),
    NvlinkVariant(2, ("GV100",), 25.0, 6, "Tesla V100 SXM2", VOLTA_WP, "6 links, 300 GB/s bidirectional"),
    NvlinkVariant(
        2,
        ("TU102", "TU104"),
        25.0,
        2,
        "TITAN RTX / Quadro RTX 6000 and 8000 / RTX 2080 Ti (bridge)",
        TURING_WP,
        "TU102 has two x8 links (50 GB/s per direction, 100 GB/s total); TU104 (RTX 2080, 2080 Super) one",
    ),
    NvlinkVariant(3, ("GA100",), 25.0, 12, "A100 SXM4", A100_WP, "12 links, 600 GB/s bidirectional"),
    NvlinkVariant(
        3,
        ("GA102",),
        14.0625,
        4,
        "RTX 3090 / RTX A6000 / A40 (bridge)",
        GA102_WP,
        "four x4 links, 56.25 GB/s per direction, 112.5 GB/s total (quoted in the guide)",
    ),
    NvlinkVariant(
        4, ("GH100",), 25.0, 18, "H100 SXM5 / H200", HOPPER_WP, "18 links, 450 GB/s per direction, 900 GB/s total"
    ),
    NvlinkVariant(
        5,
        ("GB100", "GB200", "B300"),
        50.0,
        18,
        "B200 / GB200 / GB300",
        BLACKWELL_SRC,
        "18 links, 900 GB/s per direction, 1.8 TB/s total (GB300 NVL72: 130 TB/s for 72 GPUs, the same per GPU)",
    ),
)

# Architecture names that identify one NVLink implementation. "Ampere" is absent on purpose: GA100 and GA102
# links differ (25 vs 14.0625 GB/s), so the architecture alone cannot tell.
_BY_ARCHITECTURE: dict[str, NvlinkVariant] = {
    "pascal": NVLINK_VARIANTS[0],
    "volta": NVLINK_VARIANTS[1],
    "turing": NVLINK_VARIANTS[2],
    "hopper": NVLINK_VARIANTS[5],
    "blackwell": NVLINK_VARIANTS[6],
}


def variant_for_chip(chip: str) -> NvlinkVariant | None:
    c = chip.strip().upper()
    for v in NVLINK_VARIANTS:
        if c in v.chips:
            return v
    return None


def variant_for(architecture_or_gpu_name: str) -> NvlinkVariant | None:
    """The NVLink implementation of a chip ("GA102"), an architecture ("Volta") or a GPU name as NVML prints it.

    None when unknown, ambiguous ("Ampere"), or when the GPU has no NVLink (RTX 4090, RTX 5090).
    """
    key = architecture_or_gpu_name.strip()
    if not key:
        return None
    by_chip = variant_for_chip(key)
    if by_chip is not None:
        return by_chip
    by_arch = _BY_ARCHITECTURE.get(key.lower())
    if by_arch is not None:
        return by_arch
    spec = catalog.lookup(key)
    if spec is None or spec.nvlink_generation == 0:
        return None
    return variant_for_chip(spec.chip)


def nvlink_pair_bandwidth_gbps(architecture_or_gpu_name: str, links: int) -> float | None:
    """Theoretical NVLink bandwidth between two GPUs joined by ``links`` links, GB/s per direction.

    ``links`` is the count ``nvidia-smi topo -m`` prints (NV2 -> 2). None when the part or its NVLink is unknown.

    >>> nvlink_pair_bandwidth_gbps("GA102", 4)
    56.25
    """
    if links < 0:
        raise ValueError(f"links must be >= 0, got {links}")
    v = variant_for(architecture_or_gpu_name)
    if v is None:
        return None
    return v.link_gbps * links
